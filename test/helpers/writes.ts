// Write-path test helpers: valid memory_store / memory_update request builders, a per-test database with
// MemoryAdapters of any write profile, host id and clock on one engine, and raw read-only views of the
// rows on disk (records, FTS, vectors) to prove what a request wrote or did not write.
import type { Test } from 'tap';
import { createHash, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { MemoryAdapter } from '../../src/adapter/memory-adapter.js';
import { AdapterError } from '../../src/core/adapter-error.js';
import { LocalHashProvider } from '../../src/embedding/local-hash-provider.js';
import type { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import type { WriteProfile } from '../../schema/enums.js';
import { openLocalHashEngine } from './mcp.js';
import { withRaw } from './storage.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = Record<string, any>;

/** The fixed "now" of write tests. */
export const NOW = '2026-11-30T10:00:00Z';
export const fixedClock = (iso: string = NOW) => () => new Date(iso);

/** 64 lower-case hex digits derived from `seed`. */
export function hex64(seed: string): string {
  return createHash('sha256').update(seed).digest('hex');
}
export const HASH_A = hex64('source-a');
export const HASH_B = hex64('source-b');

/** The §6.4 public record keys, sorted. */
export const PUBLIC_RECORD_KEYS = [
  'authority_role', 'confidence', 'contradiction_state', 'contribution_origin', 'created_at', 'fact',
  'freshness_policy', 'last_verified_at',
  'lifecycle_state', 'memory_id', 'memory_type', 'parent_record_id', 'relevance_score', 'retrieval_rank', 'record_id',
  'revision', 'scope',
  'source_provenance', 'source_timestamp', 'supersedes', 'tags', 'verified_by',
].sort();
/** The §6.5 contradiction summary item keys, sorted. */
export const CONTRADICTION_ITEM_KEYS = [
  'authority_role', 'contradiction_key', 'contradiction_state', 'lifecycle_state', 'memory_id', 'record_id',
  'source_class',
].sort();
/** Internal columns that never appear in an envelope (§6.4). */
export const HIDDEN_KEYS = [
  'contradiction_key', 'native_content_hash', 'payload_fingerprint', 'idempotency_key', 'embedding_profile_id',
  'embedding_model_digest', 'embedding_output_dimension', 'row_id', 'scope_key',
];

/** A complete, valid source_provenance (five required keys). */
export function provenance(overrides: Json = {}): Json {
  return {
    source_class: 'repo_file', source_ref: 'package.json', source_hash: HASH_A, review_ref: 'review/1',
    extraction_method: 'manual_read', ...overrides
  };
}

/** A local-hash provider that runs `hook` once, inside its next embedding call: between a write's pre-check and its
 * write transaction, where another writer's commit makes a race. */
export class RacingProvider extends LocalHashProvider {
  hook: (() => Promise<unknown>) | null = null;
  override async embedDocuments(texts: readonly string[]): Promise<Float32Array[]> {
    const hook = this.hook;
    this.hook = null;
    if (hook) await hook();
    return super.embedDocuments(texts);
  }
}

/** A valid Candidate memory_store request in GLOBAL_USER with a fresh idempotency key. */
export function storeRequest(overrides: Json = {}): Json {
  return {
    scope: 'GLOBAL_USER', fact: 'The build uses Node 20', memory_type: 'USER_FACT', source_provenance: provenance(),
    freshness_policy: { kind: 'never' }, idempotency_key: `store-${randomUUID()}`, ...overrides,
  };
}

/** A valid current memory_store request: both timestamps, `never` freshness (fresh at any clock). */
export function currentRequest(overrides: Json = {}): Json {
  return storeRequest({
    requested_lifecycle_state: 'VALIDATED_CURRENT', source_timestamp: '2026-11-01T00:00:00Z',
    last_verified_at: '2026-11-29T00:00:00Z', ...overrides
  });
}

/** A REVERIFY request for a record of an envelope (its scope, memory_id and revision). */
export function reverifyRequest(record: Json, overrides: Json = {}): Json {
  return {
    ...scopeFields(record.scope), memory_id: record.memory_id, expected_revision: record.revision, mode: 'REVERIFY',
    idempotency_key: `update-${randomUUID()}`, ...overrides,
  };
}

/** A REPLACE request for a record of an envelope, with every required replacement field. */
export function replaceRequest(record: Json, replacement: Json = {}, overrides: Json = {}): Json {
  return {
    ...scopeFields(record.scope), memory_id: record.memory_id, expected_revision: record.revision, mode: 'REPLACE',
    idempotency_key: `update-${randomUUID()}`,
    replacement: {
      fact: 'The build uses Node 22', source_provenance: provenance({ source_hash: HASH_B }),
      freshness_policy: { kind: 'never' }, source_timestamp: '2026-11-20T00:00:00Z', ...replacement
    },
    ...overrides,
  };
}

/** The request fields of a five-key scope object (absent identities left out). */
export function scopeFields(scope: Json): Json {
  return Object.fromEntries(Object.entries(scope).filter(([, value]) => value !== null));
}

/** Row counts of the record, FTS and vector tables plus every record's lifecycle and every vector's is_current. */
export interface DiskState {
  readonly records: number;
  readonly fts: number;
  readonly vec: number;
  readonly lifecycles: Record<string, string>;
  readonly currentVectors: Record<string, number>;
}


/** What is on disk, read on a raw read-only connection with sqlite-vec loaded. */
export function diskState(dbPath: string): DiskState {
  return withRaw(dbPath, (db) => {
    const count = (table: string) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    const records =
      db.prepare('SELECT row_id, record_id, lifecycle_state FROM adapter_records ORDER BY row_id').all() as {
        row_id: number; record_id: string; lifecycle_state: string;
      }[];
    const vectors =
      db.prepare('SELECT rowid, is_current FROM fact_vec').all() as { rowid: number; is_current: number }[];
    return {
      records: count('adapter_records'), fts: count('fact_fts'), vec: count('fact_vec'),
      lifecycles: Object.fromEntries(records.map((r) => [r.record_id, r.lifecycle_state])),
      currentVectors: Object.fromEntries(vectors.map((v) => [String(v.rowid), Number(v.is_current)])),
    };
  });
}

/** The stored row of a record (all columns), or undefined. */
export function rawRecord(dbPath: string, recordId: string): Json | undefined {
  return withRaw(
    dbPath, (db) => db.prepare('SELECT * FROM adapter_records WHERE record_id = ?').get(recordId) as Json | undefined,
  );
}

/** The FTS text and vector is_current stored for a record's row_id. */
export function derivedRows(dbPath: string, recordId: string): {
  searchText: string | undefined; isCurrent: number | undefined; vectorBytes: number | undefined;
} {
  return withRaw(dbPath, (db) => {
    const row =
      db.prepare(
        'SELECT row_id FROM adapter_records WHERE record_id = ?',
      ).get(recordId) as { row_id: number } | undefined;
    if (!row) return { searchText: undefined, isCurrent: undefined, vectorBytes: undefined };
    const fts =
      db.prepare(
        'SELECT search_text FROM fact_fts WHERE rowid = ?',
      ).get(row.row_id) as { search_text: string } | undefined;
    const vec = db.prepare('SELECT is_current, embedding FROM fact_vec WHERE rowid = ?').get(BigInt(row.row_id)) as {
      is_current: number; embedding: Buffer;
    } | undefined;
    return {
      searchText: fts?.search_text, isCurrent: vec === undefined ? undefined : Number(vec.is_current),
      vectorBytes: vec?.embedding.length,
    };
  });
}

/** Live (CANDIDATE or VALIDATED_CURRENT) records per memory_id, across the whole database. */
export function liveCounts(dbPath: string): Record<string, number> {
  return withRaw(dbPath, (db) => {
    const rows =
      db.prepare(
        "SELECT memory_id, count(*) AS n FROM adapter_records WHERE lifecycle_state IN ('CANDIDATE', " +
          "'VALIDATED_CURRENT') GROUP BY memory_id",
      ).all() as { memory_id: string; n: number }[];
    return Object.fromEntries(rows.map((r) => [r.memory_id, r.n]));
  });
}

/** All records of a memory, revision ascending. */
export function memoryRows(dbPath: string, memoryId: string): Json[] {
  return withRaw(dbPath, (db) => db.prepare('SELECT * FROM adapter_records WHERE memory_id = ? ORDER BY ' +
    'revision').all(memoryId) as Json[]);
}

/** A fresh local-hash-384 database in the test's own folder, and adapters on its one engine. */
export interface WriteBench {
  readonly dbPath: string;
  readonly engine: SQLiteVecEngine;
  adapter(writeProfile: WriteProfile, options?: { hostId?: string; clock?: () => Date }): MemoryAdapter;
  state(): DiskState;
}

export async function openWriteBench(t: Test, name = 'writes.sqlite3'): Promise<WriteBench> {
  const dbPath = join(t.testdir(), name);
  const engine = await openLocalHashEngine(dbPath);
  t.teardown(() => engine.close());
  return {
    dbPath, engine,
    adapter: (writeProfile, options = {}) => new MemoryAdapter({
      engine, provider: new LocalHashProvider(), writeProfile, hostId: options.hostId ?? 'host-a',
      clock: options.clock ?? fixedClock(),
    }),
    state: () => diskState(dbPath),
  };
}

export async function store(adapter: MemoryAdapter, request: Json): Promise<Json> {
  return (await adapter.execute('memory_store', request)) as Json;
}

export async function update(adapter: MemoryAdapter, request: Json): Promise<Json> {
  return (await adapter.execute('memory_update', request)) as Json;
}

/**
 * Runs `run`, asserts it is refused with the governed `code` (and `message`, if given), and that nothing
 * changed on disk: the row counts of adapter_records, fact_fts and fact_vec, every lifecycle and every
 * vector's is_current. Returns the error.
 */
export async function refused(
  t: Test, bench: WriteBench, run: () => Promise<unknown>, code: string, message?: RegExp | string, name = code,
): Promise<AdapterError | undefined> {
  const before = bench.state();
  const error = await run().then(() => undefined, (e: unknown) => e);
  if (!(error instanceof AdapterError)) {
    t.fail(`${name}: expected AdapterError ${code}, got ${error === undefined ? 'success' : String(error)}`);
    return undefined;
  }
  t.equal(error.code, code, `${name}: ${error.message}`);
  if (message !== undefined) t.match(error.message, message, `${name}: message`);
  t.strictSame(bench.state(), before, `${name}: nothing written`);
  return error;
}
