import { createHash } from 'node:crypto';
import type { Insertable } from 'kysely';
import type BetterSqlite3 from 'better-sqlite3';
import type { AdapterRecords } from '../../generated/db.js';
import type { SeededRandom } from './seeded-random.js';

/** Embedding dimension of every bench database (the local-hash-384 profile's). */
export const BENCH_VECTOR_DIMENSION = 384;

/** An exact scope tuple plus its vector partition key. */
export interface BenchScope {
  readonly scope: 'CROSS_PROJECT_WORKFLOW' | 'GLOBAL_USER' | 'PROJECT' | 'TOOL_ENVIRONMENT' | 'WORKFLOW';
  readonly project_id: string | null;
  readonly worktree_id: string | null;
  readonly workflow_id: string | null;
  readonly agent_id: string | null;
  readonly scope_key: string;
}

/**
 * Builds a scope with its scope_key. The digest only has to be stable and distinct per tuple here: the
 * storage layer stores scope_key as given, and the adapter's scope_digest is not under test.
 */
export function benchScope(tuple: Omit<BenchScope, 'scope_key'>): BenchScope {
  const parts = [tuple.scope, tuple.project_id, tuple.worktree_id, tuple.workflow_id, tuple.agent_id];
  const scopeKey = createHash('sha256').update(JSON.stringify(parts)).digest('hex');
  return Object.freeze({ ...tuple, scope_key: scopeKey });
}

/** One record revision ready to write: the adapter_records row and its derived FTS and vector rows. */
export interface BenchRecord {
  readonly row: Insertable<AdapterRecords>;
  readonly searchText: string;
  readonly isCurrent: boolean;
  /** The Float32 embedding as a Buffer view, which better-sqlite3 binds as a BLOB. */
  readonly embedding: Buffer;
}

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Makes one root record. Values are enum-valid and JSON columns hold plausible canonical JSON, because
 * only the CHECK constraints apply at this layer; a VALIDATED_CURRENT row carries OWNER verification as
 * the adapter would write it, a CANDIDATE row is unverified.
 */
export function makeBenchRecord(rng: SeededRandom, scope: BenchScope, fact: string, isCurrent: boolean,
  createdAt: string): BenchRecord {
  const vector = rng.unitVector(BENCH_VECTOR_DIMENSION);
  const contentHash = sha256Hex(`${scope.scope_key}\n${fact}`);
  const row: Insertable<AdapterRecords> = {
    record_id: rng.uuid(),
    memory_id: rng.uuid(),
    revision: 1,
    parent_record_id: null,
    scope: scope.scope,
    project_id: scope.project_id,
    worktree_id: scope.worktree_id,
    workflow_id: scope.workflow_id,
    agent_id: scope.agent_id,
    scope_key: scope.scope_key,
    memory_type: 'PROJECT_LEARNED_FACT',
    fact,
    source_provenance: '{"actor":"bench","host":"bench","kind":"OBSERVATION","ref":null,"session":null,"tool":"bench"}',
    source_timestamp: null,
    created_at: createdAt,
    last_verified_at: isCurrent ? createdAt : null,
    verified_by: isCurrent ? 'OWNER' : 'UNVERIFIED',
    authority_role: isCurrent ? 'PROJECT_CURRENT' : 'UNRESOLVED',
    contribution_origin: '{"contributor_class":"AGENT","contributor_ref":"bench"}',
    freshness_policy: '{"kind":"NONE","max_age_days":null,"review_after":null,"source":"DEFAULT"}',
    supersedes: '[]',
    contradiction_key: sha256Hex(`${scope.scope_key}\n${fact.split(' ', 3).join(' ')}`),
    contradiction_state: 'NONE',
    confidence: isCurrent ? 0.9 : 0.5,
    tags: '["bench"]',
    lifecycle_state: isCurrent ? 'VALIDATED_CURRENT' : 'CANDIDATE',
    native_content_hash: contentHash,
    payload_fingerprint: sha256Hex(`payload\n${contentHash}`),
    idempotency_key: rng.uuid(),
    embedding_profile_id: 'local-hash-384',
    embedding_model_digest: 'sha256:bench',
    embedding_output_dimension: BENCH_VECTOR_DIMENSION,
  };
  return { row, searchText: fact.toLowerCase(), isCurrent,
    embedding: Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength) };
}

/** The columns makeBenchRecord fills (row_id is assigned by SQLite). */
const RECORD_COLUMNS = [
  'record_id', 'memory_id', 'revision', 'parent_record_id', 'scope', 'project_id', 'worktree_id', 'workflow_id',
  'agent_id', 'scope_key', 'memory_type', 'fact', 'source_provenance', 'source_timestamp', 'created_at',
  'last_verified_at', 'verified_by', 'authority_role', 'contribution_origin', 'freshness_policy', 'supersedes',
  'contradiction_key', 'contradiction_state', 'confidence', 'tags', 'lifecycle_state', 'native_content_hash',
  'payload_fingerprint', 'idempotency_key', 'embedding_profile_id', 'embedding_model_digest',
  'embedding_output_dimension',
] as const;

/** The three inserts of one record, shared by the raw baseline and the engine's prepared-statement paths. */
export const INSERT_RECORD_SQL = `insert into adapter_records ` +
  `(${RECORD_COLUMNS.join(', ')}) values (${RECORD_COLUMNS.map((c) => `@${c}`).join(', ')})`;
export const INSERT_FTS_SQL = 'insert into fact_fts (rowid, search_text) values (?, ?)';
export const INSERT_VEC_SQL = 'insert into fact_vec (rowid, scope_key, is_current, embedding) values (?, ?, ?, ?)';

/**
 * The three inserts prepared once on one connection. `insert` must run inside a transaction whose writer
 * gate is open, or the fence trigger refuses the adapter_records row.
 */
export class BenchRecordStatements {
  readonly #record: BetterSqlite3.Statement;
  readonly #fts: BetterSqlite3.Statement;
  readonly #vec: BetterSqlite3.Statement;

  constructor(connection: BetterSqlite3.Database) {
    this.#record = connection.prepare(INSERT_RECORD_SQL);
    this.#fts = connection.prepare(INSERT_FTS_SQL);
    this.#vec = connection.prepare(INSERT_VEC_SQL);
  }

  /** Inserts the record, its FTS row and its vector row; returns the shared row_id. */
  insert(record: BenchRecord): bigint {
    const rowId = BigInt(this.#record.run(record.row).lastInsertRowid);
    this.#fts.run(rowId, record.searchText);
    // vec0 refuses REAL for rowid and metadata integers, and better-sqlite3 binds JS numbers as REAL.
    this.#vec.run(rowId, record.row.scope_key, record.isCurrent ? 1n : 0n, record.embedding);
    return rowId;
  }
}

const BENCH_EPOCH_MS = Date.UTC(2026, 0, 1);

/** The contract-shaped UTC timestamp `n` seconds after 2026-01-01, so created_at values are distinct and repeatable. */
export function benchTimestamp(secondsAfterEpoch: number): string {
  return `${new Date(BENCH_EPOCH_MS + secondsAfterEpoch * 1000).toISOString().slice(0, 19)}Z`;
}
