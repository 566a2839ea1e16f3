// Reembed test helpers: a fault-injecting local-hash provider, a fixture database bound to the 8-dimension
// test profile, raw readers of the binding and vector table, and a raw writer acting as another process.
import { AdapterError } from '../../src/core/adapter-error.js';
import type { RuntimeProvenance } from '../../src/embedding/embedding-provider.js';
import { LocalHashProvider } from '../../src/embedding/local-hash-provider.js';
import type { NewRecordRow } from '../../src/storage/record-repository.js';
import { RawDatabase, candidateRow, openEngine, sqliteVec, storeRow, unitVector, withRaw } from './storage.js';

/**
 * Local-hash provider with fault injection: embedDocuments call `failOnCall` throws; status checks after the first
 * report another digest.
 */
export class FaultyProvider extends LocalHashProvider {
  #calls = 0;
  #checks = 0;
  constructor(readonly options: { failOnCall?: number; driftAfterFirstCheck?: boolean; failStatus?: boolean }) {
    super();
  }
  override async statusCheck(): Promise<RuntimeProvenance> {
    this.#checks += 1;
    if (this.options.failStatus) throw new AdapterError('EMBEDDING_UNAVAILABLE', 'provider down');
    const provenance = await super.statusCheck();
    return this.options.driftAfterFirstCheck && this.#checks > 1
      ? { ...provenance, digest: 'f'.repeat(64) } : provenance;
  }
  override async embedDocuments(texts: readonly string[]): Promise<Float32Array[]> {
    this.#calls += 1;
    if (this.#calls === this.options.failOnCall) throw new AdapterError('EMBEDDING_UNAVAILABLE', 'provider went away');
    return super.embedDocuments(texts);
  }
}

export interface VecRow { rowid: number; scope_key: string; is_current: number; dim: number }


/** The binding, vector rows, records and whether fact_vec_next exists. */
export function readDb(dbPath: string) {
  return withRaw(dbPath, (db) => {
    const bindingText =
      db.prepare("SELECT value FROM adapter_meta WHERE key = 'embedding_profile'").pluck().get() as string;
    return {
      bindingText, binding: JSON.parse(bindingText),
      vec: db.prepare('SELECT rowid, scope_key, is_current, vec_length(embedding) AS dim FROM fact_vec ORDER BY ' +
        'rowid').all() as VecRow[],
      records: db.prepare('SELECT * FROM adapter_records ORDER BY row_id').all() as Record<string, unknown>[],
      hasNext: db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'fact_vec_next'").pluck().get() === 1,
    };
  });
}

export const storedEmbedding = (dbPath: string, rowId: number) => withRaw(dbPath, (db) =>
  new Float32Array(
    (db.prepare('SELECT embedding FROM fact_vec WHERE rowid = ?').pluck().get(BigInt(rowId)) as Buffer).buffer.slice(0),
  ));

/**
 * A test-profile database with records in three scopes and every lifecycle; HISTORICAL and QUARANTINED have no vector.
 */
export async function fixture(dbPath: string): Promise<void> {
  const engine = await openEngine(dbPath);
  await storeRow(engine, candidateRow({ fact: 'the build uses node 20', scope_key: 'scope-a' }), 1);
  await storeRow(
    engine,
    candidateRow({ fact: 'deploys run on fridays', scope_key: 'scope-a', lifecycle_state: 'VALIDATED_CURRENT' }), 2,
  );
  await storeRow(
    engine, candidateRow({ fact: 'the old linter config', scope_key: 'scope-b', lifecycle_state: 'SUPERSEDED' }), 3,
  );
  await storeRow(
    engine, candidateRow({ fact: 'tests run with tap', scope_key: 'scope-c', lifecycle_state: 'VALIDATED_CURRENT' }), 4,
  );
  for (const lifecycle of ['HISTORICAL', 'QUARANTINED'] as const) {
    const rowId = await storeRow(engine, candidateRow(
      { fact: `a ${lifecycle.toLowerCase()} fact`, scope_key: 'scope-b', lifecycle_state: lifecycle },
    ));
    // What compaction and recovery leave: the record without its vector.
    await engine.write(async (_trx, raw) => raw.prepare('DELETE FROM fact_vec WHERE rowid = ?').run(rowId));
  }
  await engine.close();
}

/**
 * Inserts a record with its FTS and (old-dimension) vector rows and supersedes `supersede`, as another writer would.
 */
export function rawWrite(dbPath: string, row: NewRecordRow, supersede: number): void {
  const raw = new RawDatabase(dbPath);
  sqliteVec.load(raw);
  raw.function('factlane_contract_v2_writer', { deterministic: false }, () => 1);
  const columns = Object.keys(row);
  const rowId = raw.prepare(`INSERT INTO adapter_records (${columns.join(', ')}) VALUES ` +
    `(${columns.map((c) => `@${c}`).join(', ')})`).run(row).lastInsertRowid;
  raw.prepare('INSERT INTO fact_fts (rowid, search_text) VALUES (?, ?)').run(BigInt(rowId), row.fact);
  raw.prepare('INSERT INTO fact_vec (rowid, scope_key, is_current, embedding) VALUES (?, ?, 0, ?)').run(
    BigInt(rowId), row.scope_key, Buffer.from(unitVector(1).buffer),
  );
  raw.prepare("UPDATE adapter_records SET lifecycle_state = 'SUPERSEDED' WHERE row_id = ?").run(supersede);
  raw.prepare('UPDATE fact_vec SET is_current = 0 WHERE rowid = ?').run(BigInt(supersede));
  raw.close();
}
