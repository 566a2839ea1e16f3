import { sql, type Transaction } from 'kysely';
import { CODED_SCOPE_KEYS_QUERY, UNCODED_SCOPE_MAX_RECORDS } from '@factlane/schema';
import type { DB } from '../../generated/db.js';
import { BoundedMap } from '../core/bounded-map.js';
import { nextShard, shardsOfNewScope } from './eligible-shards.js';
import { simhashCode } from './simhash-projection.js';
import { runShape } from './statement-shapes.js';

// The eligible vector forms (STORAGE.md §4.5, docs/decisions/0017-eligible-vector-layout.md): for every
// VALIDATED_CURRENT record of a coded scope, a copy of its float vector (eligible_vectors), its SimHash code in one
// shard of its scope (eligible_codes) and the shard's size and generation (eligible_shards). Nothing else is in them,
// so a CURRENT semantic query never scores or counts a Candidate. fact_vec stays the float source; these rows are
// rebuilt from it.
// Since schema 3 (docs/decisions/0027-small-scope-vectors.md) a scope is coded only once it holds more than
// UNCODED_SCOPE_MAX_RECORDS records: a smaller scope keeps each vector once, in fact_vec, and is searched exactly
// there, with the eligibility filter inside the KNN (before k) over at most that many vectors.

/** A rebuild reports its progress every this many vectors (one progress line per report on the operator's stderr). */
export const REBUILD_REPORT_ROWS = 1000;

/** The bytes of a float32 vector as SQLite binds a vector blob (a view, no copy); floatVector reads them back. */
export function vectorBytes(vector: Float32Array): Uint8Array {
  return new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** A stored float32 vector blob as a Float32Array of its own (blobs need not be 4-byte aligned). */
export function floatVector(blob: Uint8Array): Float32Array {
  return new Float32Array(blob.buffer.slice(blob.byteOffset, blob.byteOffset + blob.byteLength));
}

// Codes by vector, so a code computed ahead of a write transaction is only looked up inside it: the writer lock
// (STORAGE.md §6) is then not held while a code is computed (0.2-0.7 ms of a store). Vectors are never changed after
// they are embedded or read, and a WeakMap lets each code go with its vector.
const CODES = new WeakMap<Float32Array, Uint8Array>();

/** The SimHash code of a vector that is, or is about to become, eligible: computed once per vector object. */
export function eligibleCode(vector: Float32Array): Uint8Array {
  let code = CODES.get(vector);
  if (code === undefined) {
    code = simhashCode(vector);
    CODES.set(vector, code);
  }
  return code;
}

// Scopes this process has seen coded (by a search or a write). Most scopes never are, and their current writes
// need no code: only a scope seen coded has its codes computed ahead of the write transaction. A scope coded by
// another process since gets the code inside the transaction instead, once. Nothing else depends on them. The latest
// 4,096 are kept.
const SEEN_CODED = new BoundedMap<string, true>(4096);

/** Marks `scopeKey` seen coded by this process (a search or a write found or made its shards). */
export function sawCoded(scopeKey: string): void {
  SEEN_CODED.set(scopeKey, true);
}

/**
 * Before the write transaction that makes `vector` VALIDATED_CURRENT in the scope: computes its code when this
 * process has seen the scope coded, so the insert inside only looks it up and the writer lock (STORAGE.md §6) is
 * not held meanwhile. True when the code is ready.
 */
export function codeAheadOfWrite(scopeKey: string, vector: Float32Array): boolean {
  if (!SEEN_CODED.has(scopeKey)) return false;
  eligibleCode(vector);
  return true;
}

/**
 * A shard's new generation (schema 6, decision 0054), given by every write that changes the shard's codes, in the
 * same transaction (with the shard's size): a random positive integer below 2^53 (0 is a shard's generation from
 * before schema 6), so that a search that kept the shard's codes reads them again.
 */
const NEW_GENERATION = sql`1 + abs(random() % 9007199254740990)`;

/**
 * Adds the eligible forms of one VALIDATED_CURRENT record inside the caller's write transaction: the float copy,
 * the SimHash code in the shard nextShard picks from the scope's shard sizes, and that shard's size.
 */
export async function addEligibleVector(
  trx: Transaction<DB>, rowId: bigint, scopeKey: string, embedding: Float32Array,
): Promise<void> {
  const held = (await runShape(trx, 'scopeShards', [scopeKey], ([key]) => sql<{ shard: number; size: number }>`
    SELECT shard, size FROM eligible_shards WHERE scope_key = ${key} ORDER BY shard`.compile(trx))).rows;
  sawCoded(scopeKey);
  // The shard nextShard picks, or none when it opens a new one, numbered after the last.
  const grown = held[nextShard(held.map((row) => row.size))];
  const shard = grown?.shard ?? (held.at(-1)?.shard ?? -1) + 1;
  if (grown !== undefined) {
    await runShape(trx, 'growShard', [scopeKey, shard], ([key, s]) =>
      sql`UPDATE eligible_shards SET size = size + 1, generation = ${NEW_GENERATION}
        WHERE scope_key = ${key} AND shard = ${s}`.compile(trx));
  } else {
    await runShape(trx, 'openShard', [scopeKey, shard], ([key, s]) =>
      sql`INSERT INTO eligible_shards (scope_key, shard, size, generation) VALUES (${key}, ${s}, 1, ${NEW_GENERATION})`
        .compile(trx));
  }
  await runShape(trx, 'insertEligibleVector', [rowId, scopeKey, shard, vectorBytes(embedding)], ([id, key, s, bytes]) =>
    sql`INSERT INTO eligible_vectors (row_id, scope_key, shard, embedding)
      VALUES (${id}, ${key}, ${s}, ${bytes})`.compile(trx));
  // vec0 refuses a REAL rowid: bind BigInt.
  const codeArgs = [rowId, `${scopeKey}/${shard}`, eligibleCode(embedding)] as const;
  await runShape(trx, 'insertEligibleCode', codeArgs, ([id, shardKey, code]) =>
    sql`INSERT INTO eligible_codes (rowid, shard_key, simhash_v1) VALUES (${id}, ${shardKey}, vec_bit(${code}))`
      .compile(trx));
}

/**
 * Keeps the eligible forms in step with one record just inserted (its `adapter_records` and `fact_vec` rows already
 * written) inside the caller's write transaction. A scope of at most UNCODED_SCOPE_MAX_RECORDS records keeps none.
 * The insert that brings the scope past that codes it: the forms of every VALIDATED_CURRENT record of the scope,
 * this one included, in row id order. In a scope coded before, a VALIDATED_CURRENT record gets its forms
 * (`embedding` is its float vector; null for any other lifecycle).
 */
export async function keepEligibleFormsOnInsert(
  trx: Transaction<DB>, rowId: bigint, scopeKey: string, embedding: Float32Array | null,
): Promise<void> {
  // A coded scope has a shard row (one primary-key probe); only a scope without one counts its records, at most one
  // past the threshold, which tells "not coded" from "coded by this insert". -1 means coded.
  const args = [scopeKey, scopeKey];
  const records = Number((await runShape(trx, 'scopeRecordCount', args, ([shardsKey, recordsKey]) => sql<{ n: number }>`
    SELECT CASE WHEN EXISTS (SELECT 1 FROM eligible_shards WHERE scope_key = ${shardsKey}) THEN -1
      ELSE (SELECT count(*) FROM (SELECT 1 FROM adapter_records WHERE scope_key = ${recordsKey}
        LIMIT ${sql.lit(UNCODED_SCOPE_MAX_RECORDS + 1)})) END AS n`.compile(trx))).rows[0]!.n);
  if (records === -1) {
    if (embedding !== null) await addEligibleVector(trx, rowId, scopeKey, embedding);
  } else if (records > UNCODED_SCOPE_MAX_RECORDS) {
    await codeScope(trx, scopeKey);
  }
}

/**
 * Adds the eligible forms of every VALIDATED_CURRENT record of a scope that has none yet, in row id order, from their
 * `fact_vec` floats (codeNewScope).
 */
async function codeScope(trx: Transaction<DB>, scopeKey: string): Promise<void> {
  // A join of a vec0 table by rowid has no Kysely builder (fact_vec has no generated rowid column), hence raw SQL.
  const { rows } = await sql<{ row_id: number; embedding: Uint8Array }>`
    SELECT r.row_id, v.embedding FROM adapter_records r JOIN fact_vec v ON v.rowid = r.row_id
    WHERE r.scope_key = ${scopeKey} AND r.lifecycle_state = 'VALIDATED_CURRENT' ORDER BY r.row_id`.execute(trx);
  await codeNewScope(trx, scopeKey, rows.map((row) => ({ rowId: row.row_id, bytes: row.embedding })));
}
/**
 * A current record's vector as codeNewScope takes it: its `fact_vec` blob as read, copied as it is into
 * `eligible_vectors` and turned into floats only for its code, a batch at a time (a rebuild holds every coded vector).
 */
interface NewScopeVector {
  readonly rowId: number;
  readonly bytes: Uint8Array;
}

/** Most vectors one statement of codeNewScope adds (4 bound values each). */
const NEW_SCOPE_BATCH_ROWS = 128;

/**
 * Codes a scope that has no eligible form yet, inside the caller's write transaction: the forms of `vectors` (its
 * VALIDATED_CURRENT records, in row id order) in the shards addEligibleVector would have put them in one by one
 * (shardsOfNewScope), the same rows and the same order in each vec0 partition, written a batch per statement instead
 * of four statements per vector; a scope without a current record gets an empty shard 0, the mark that it is coded.
 * `onAdded` hears each batch's size once it is written.
 */
async function codeNewScope(
  trx: Transaction<DB>, scopeKey: string, vectors: readonly NewScopeVector[], onAdded?: (count: number) => void,
  batchEnd = (start: number) => start + NEW_SCOPE_BATCH_ROWS,
): Promise<void> {
  sawCoded(scopeKey);
  const { shards, sizes } = shardsOfNewScope(vectors.length);
  const shardRows = sizes.length === 0 ? [sql`(${scopeKey}, 0, 0, ${NEW_GENERATION})`]
    : sizes.map((size, shard) => sql`(${scopeKey}, ${shard}, ${size}, ${NEW_GENERATION})`);
  await sql`INSERT INTO eligible_shards (scope_key, shard, size, generation) VALUES ${sql.join(shardRows)}`
    .execute(trx);
  for (let start = 0; start < vectors.length;) {
    const end = Math.min(vectors.length, Math.max(start + 1, batchEnd(start)));
    const batch = vectors.slice(start, end).map((vector, offset) => ({ ...vector, shard: shards[start + offset]! }));
    await sql`INSERT INTO eligible_vectors (row_id, scope_key, shard, embedding) VALUES ${sql.join(batch.map((v) =>
      sql`(${BigInt(v.rowId)}, ${scopeKey}, ${v.shard}, ${v.bytes})`))}`.execute(trx);
    // vec0 refuses a REAL rowid: bind BigInt.
    await sql`INSERT INTO eligible_codes (rowid, shard_key, simhash_v1) VALUES ${sql.join(batch.map((v) =>
      sql`(${BigInt(v.rowId)}, ${`${scopeKey}/${v.shard}`}, vec_bit(${simhashCode(floatVector(v.bytes))}))`))}`
      .execute(trx);
    onAdded?.(batch.length);
    start = end;
  }
}

/** Removes the eligible forms of one record (if it has any) inside the caller's write transaction. */
export async function removeEligibleVector(trx: Transaction<DB>, rowId: bigint): Promise<void> {
  // RETURNING names the shard the row was in, so the row is found once.
  type Held = { scope_key: string; shard: number };
  const held = (await runShape(trx, 'deleteEligibleVector', [rowId], ([id]) => sql<Held>`
    DELETE FROM eligible_vectors WHERE row_id = ${id} RETURNING scope_key, shard`.compile(trx))).rows[0];
  if (held === undefined) return;
  await runShape(trx, 'shrinkShard', [held.scope_key, held.shard], ([key, s]) =>
    sql`UPDATE eligible_shards SET size = size - 1, generation = ${NEW_GENERATION}
      WHERE scope_key = ${key} AND shard = ${s}`.compile(trx));
  await runShape(trx, 'deleteEligibleCode', [rowId], ([id]) =>
    sql`DELETE FROM eligible_codes WHERE rowid = ${id}`.compile(trx));
}

/**
 * Rebuilds every eligible form from the float source inside the caller's write transaction: empties the three
 * tables, then codes each scope of more than UNCODED_SCOPE_MAX_RECORDS records as the insert that takes a scope past
 * it does (codeNewScope): its `fact_vec` rows whose `is_current` is 1, in row id order (so a rebuild is deterministic),
 * and an empty shard for a coded scope without one. Used by `factlane-migrate up` (schemas 2, 3 and 4) and by the
 * reembed switch. Returns how many vectors it added.
 * `onRows` hears the vectors added of the total every REBUILD_REPORT_ROWS vectors and once at the end.
 */
export async function rebuildEligibleVectors(
  trx: Transaction<DB>, onRows?: (done: number, total: number) => void,
): Promise<number> {
  await sql`DELETE FROM eligible_codes`.execute(trx);
  await sql`DELETE FROM eligible_vectors`.execute(trx);
  await sql`DELETE FROM eligible_shards`.execute(trx);
  const coded = (await sql<{ scope_key: string }>`${sql.raw(CODED_SCOPE_KEYS_QUERY)}`.execute(trx)).rows
    .map((row) => row.scope_key);
  // A full scan of vec0 with a metadata filter, kept to the coded scopes (passed as one JSON array) in SQL so that the
  // floats of small scopes never reach JavaScript; the float vector comes back as its 4-byte-per-component blob.
  const { rows } = await sql<{ rowid: number; scope_key: string; embedding: Uint8Array }>`
    SELECT rowid, scope_key, embedding FROM fact_vec WHERE is_current = ${1n}
      AND scope_key IN (SELECT value FROM json_each(${JSON.stringify(coded)})) ORDER BY rowid`.execute(trx);
  const byScope = new Map<string, NewScopeVector[]>(coded.map((key) => [key, []]));
  for (const row of rows) byScope.get(row.scope_key)!.push({ rowId: row.rowid, bytes: row.embedding });
  // Batches end at each multiple of REBUILD_REPORT_ROWS of the vectors added, so progress is heard at exactly those.
  let added = 0;
  const onAdded = (count: number) => {
    added += count;
    if (added % REBUILD_REPORT_ROWS === 0 && added < rows.length) onRows?.(added, rows.length);
  };
  const toNextReport = (start: number) =>
    start + Math.min(NEW_SCOPE_BATCH_ROWS, REBUILD_REPORT_ROWS - (added % REBUILD_REPORT_ROWS));
  for (const [scopeKey, vectors] of byScope) await codeNewScope(trx, scopeKey, vectors, onAdded, toNextReport);
  onRows?.(rows.length, rows.length);
  return rows.length;
}
