// Raw reads of every vector table (fact_vec and the eligible forms), checked against the lifecycle table of STORAGE.md
// §4.5 and the coded-scope rule of schema 3 without going through the storage code under test.
import type { Test } from 'tap';
import { UNCODED_SCOPE_MAX_RECORDS } from '@factlane/schema';
import { floatVector } from '../../src/storage/eligible-vectors.js';
import { simhashCode } from '../../src/storage/simhash-projection.js';
import { RawDatabase, sqliteVec } from './storage.js';

/** What the vector tables hold for one record, read raw. */
export interface RecordForms {
  readonly recordId: string;
  readonly lifecycle: string;
  readonly scopeKey: string;
  readonly fts: boolean;
  /** fact_vec: null when absent. */
  readonly vector: { readonly isCurrent: number; readonly bytes: Buffer } | null;
  /** eligible_vectors: null when absent. */
  readonly eligible: { readonly scopeKey: string; readonly shard: number; readonly bytes: Buffer } | null;
  /** eligible_codes: null when absent. */
  readonly code: { readonly shardKey: string; readonly bits: Buffer } | null;
  /** The record's scope holds more than UNCODED_SCOPE_MAX_RECORDS records (any lifecycle). */
  readonly scopeCoded: boolean;
}

/** Every record's forms and the shard table, read on a read-only connection with sqlite-vec loaded. */
export function readVectorForms(
  dbPath: string,
): { records: RecordForms[]; shards: { scope_key: string; shard: number; size: number }[] } {
  const db = new RawDatabase(dbPath, { readonly: true });
  try {
    sqliteVec.load(db);
    const fts = db.prepare('SELECT 1 FROM fact_fts WHERE rowid = ?');
    const vec = db.prepare('SELECT is_current, embedding FROM fact_vec WHERE rowid = ?');
    const eligible = db.prepare('SELECT scope_key, shard, embedding FROM eligible_vectors WHERE row_id = ?');
    const code = db.prepare('SELECT shard_key, simhash_v1 FROM eligible_codes WHERE rowid = ?');
    const rows = db.prepare('SELECT row_id, record_id, lifecycle_state, scope_key FROM adapter_records ORDER BY row_id')
      .all() as { row_id: number; record_id: string; lifecycle_state: string; scope_key: string }[];
    const recordsOf = new Map<string, number>();
    for (const row of rows) recordsOf.set(row.scope_key, (recordsOf.get(row.scope_key) ?? 0) + 1);
    const records = rows.map((row) => {
      const v = vec.get(BigInt(row.row_id)) as { is_current: number; embedding: Buffer } | undefined;
      const e = eligible.get(row.row_id) as { scope_key: string; shard: number; embedding: Buffer } | undefined;
      const c = code.get(BigInt(row.row_id)) as { shard_key: string; simhash_v1: Buffer } | undefined;
      return {
        recordId: row.record_id, lifecycle: row.lifecycle_state, scopeKey: row.scope_key,
        fts: fts.get(row.row_id) !== undefined,
        vector: v ? { isCurrent: Number(v.is_current), bytes: v.embedding } : null,
        eligible: e ? { scopeKey: e.scope_key, shard: e.shard, bytes: e.embedding } : null,
        code: c ? { shardKey: c.shard_key, bits: c.simhash_v1 } : null,
        scopeCoded: recordsOf.get(row.scope_key)! > UNCODED_SCOPE_MAX_RECORDS,
      };
    });
    const counts = (table: string) =>
      Number((db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n);
    const shards = db.prepare('SELECT scope_key, shard, size FROM eligible_shards ORDER BY scope_key, shard').all() as
      { scope_key: string; shard: number; size: number }[];
    // Rows of a vector table that belong to no record would not show above.
    const orphans = counts('eligible_vectors') + counts('eligible_codes') - records.filter((r) => r.eligible).length
      - records.filter((r) => r.code).length;
    if (orphans !== 0) throw new Error(`${orphans} eligible row(s) without a record`);
    return { records, shards };
  } finally {
    db.close();
  }
}

/**
 * Asserts the lifecycle table of STORAGE.md §4.5 for every record (FTS row, float vector, and eligible forms exactly
 * for the current records of coded scopes), that each eligible form holds the record's own float bytes and the
 * SimHash of them in a shard of its own scope, that the shard sizes count exactly those vectors, and that exactly the
 * coded scopes have shards.
 */
export function assertLifecycleTable(t: Test, dbPath: string, label: string): void {
  const { records, shards } = readVectorForms(dbPath);
  const wrong = records.filter((r) => {
    const current = r.lifecycle === 'VALIDATED_CURRENT';
    const hasVector = ['CANDIDATE', 'VALIDATED_CURRENT', 'SUPERSEDED'].includes(r.lifecycle);
    if (r.fts !== (r.lifecycle !== 'QUARANTINED')) return true;
    if ((r.vector !== null) !== hasVector || (r.vector && r.vector.isCurrent !== (current ? 1 : 0))) return true;
    const formsExpected = current && r.scopeCoded;
    if ((r.eligible !== null) !== formsExpected || (r.code !== null) !== formsExpected) return true;
    if (!formsExpected) return false;
    const bytesMatch = r.eligible!.bytes.equals(r.vector!.bytes);
    const vector = floatVector(r.vector!.bytes);
    return !bytesMatch || r.eligible!.scopeKey !== r.scopeKey
      || r.code!.shardKey !== `${r.scopeKey}/${r.eligible!.shard}`
      || !Buffer.from(simhashCode(vector)).equals(r.code!.bits);
  });
  t.strictSame(wrong.map((r) => `${r.recordId} ${r.lifecycle}`), [],
    `${label}: every record's vector forms follow the lifecycle table`);
  const counted = new Map<string, number>();
  for (const r of records) {
    if (!r.eligible) continue;
    const key = `${r.eligible.scopeKey}/${r.eligible.shard}`;
    counted.set(key, (counted.get(key) ?? 0) + 1);
  }
  t.strictSame(shards.filter((s) => s.size !== (counted.get(`${s.scope_key}/${s.shard}`) ?? 0) ), [],
    `${label}: shard sizes count their vectors`);
  t.ok([...counted.keys()].every((key) => shards.some((s) => `${s.scope_key}/${s.shard}` === key)),
    `${label}: every shard in use is listed`);
  const coded = new Set(records.filter((r) => r.scopeCoded).map((r) => r.scopeKey));
  t.strictSame([...new Set(shards.map((s) => s.scope_key))].sort(), [...coded].sort(),
    `${label}: exactly the scopes of more than ${UNCODED_SCOPE_MAX_RECORDS} records have shards`);
}
