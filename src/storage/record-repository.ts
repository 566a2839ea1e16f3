import { sql, type Transaction } from 'kysely';
import { AdapterError, REREAD_AND_RETRY } from '../core/adapter-error.js';
import type { DB } from '../../generated/db.js';
import { keepEligibleFormsOnInsert, removeEligibleVector, vectorBytes } from './eligible-vectors.js';
import { assertRecordInvariants } from './record-invariants.js';
import type { Reader } from './read-snapshot.js';
import type { NewRecordRow, RecordRow } from './record-rows.js';
import { runShape } from './statement-shapes.js';
import { storeTokenCount } from './token-count-repository.js';

export type { NewRecordRow, RecordRow } from './record-rows.js';
export type { Reader } from './read-snapshot.js';

/** The exact scope tuple, absent identities null. */
export interface ScopeColumns {
  readonly scope: string;
  readonly project_id: string | null;
  readonly worktree_id: string | null;
  readonly workflow_id: string | null;
  readonly agent_id: string | null;
}

/** The five-key scope tuple of a record. */
export function scopeOf(row: RecordRow): ScopeColumns {
  const { scope, project_id, worktree_id, workflow_id, agent_id } = row;
  return { scope, project_id, worktree_id, workflow_id, agent_id };
}

/** The derived rows stored beside a record (STORAGE.md §4.5). */
export interface DerivedRows {
  /** search_text(fact), computed by the adapter. */
  readonly searchText: string;
  /** The document embedding, unit length, of the bound dimension. */
  readonly embedding: Float32Array;
  /**
   * The o200k count of the record's public form without its changing pieces (decision 0036), computed by the
   * adapter; a record written without one is counted whole when read.
   */
  readonly fixedTokens?: number | null;
}

/**
 * created_at as a sortable key: the contract prints whole seconds without a fraction (`…:00Z`), which
 * would sort after `…:00.500000Z` as text; padding the short form to six fraction digits fixes that.
 */
export function createdAtKey(column = 'created_at') {
  const ref = sql.ref(column);
  return sql<string>`CASE WHEN length(${ref}) = 20 THEN substr(${ref}, 1, 19) || '.000000Z' ELSE ${ref} END`;
}
const CREATED_AT_ORDER = createdAtKey();

/** The scope tuple as the first five arguments of a statement shape (runShape), in inScope's order. */
export function scopeArgs(scope: ScopeColumns): [string, string | null, string | null, string | null, string | null] {
  return [scope.scope, scope.project_id, scope.worktree_id, scope.workflow_id, scope.agent_id];
}

/** The scope tuple back from the first five slots of a shape. */
export function scopeSlots(slots: readonly unknown[]): ScopeColumns {
  return {
    scope: slots[0], project_id: slots[1], worktree_id: slots[2], workflow_id: slots[3], agent_id: slots[4],
  } as ScopeColumns;
}

/** Records of the exact scope tuple (IS matches null identities); the base of every scoped query. */
export function inScope(reader: Reader, scope: ScopeColumns) {
  return reader.selectFrom('adapter_records').selectAll()
    .where('scope', '=', scope.scope).where('project_id', 'is', scope.project_id)
    .where('worktree_id', 'is', scope.worktree_id)
    .where('workflow_id', 'is', scope.workflow_id).where('agent_id', 'is', scope.agent_id);
}

/**
 * Inserts one root record with its FTS5 row and vector row (same `row_id`, the record's `scope_key`,
 * `is_current` 1 exactly for VALIDATED_CURRENT), its token count when given and, in a coded scope, the eligible
 * vector forms (eligible-vectors.ts: keepEligibleFormsOnInsert), inside the caller's write transaction, after the
 * storage-level checks of STORAGE.md §7.3. Returns the row_id.
 */
export async function insertRecord(trx: Transaction<DB>, record: NewRecordRow, derived: DerivedRows): Promise<bigint> {
  assertRecordInvariants(record, null);
  return insertRecordUnchecked(trx, record, derived);
}

/**
 * Writes a successor of the live record `parent` (STORAGE.md §7.2 steps 3-4) inside the caller's write transaction:
 * the storage-level checks of §7.3 first, before the CAS, as §7.3 orders; then the CAS that supersedes `parent`
 * (supersedeRecord); then the successor with its derived rows, as insertRecord writes them. Returns its row_id.
 */
export async function insertSuccessor(
  trx: Transaction<DB>, parent: RecordRow, successor: NewRecordRow, derived: DerivedRows,
): Promise<bigint> {
  assertRecordInvariants(successor, parent);
  await supersedeRecord(trx, parent);
  return insertRecordUnchecked(trx, successor, derived);
}

/**
 * The rows of insertRecord without the §7.3 checks: for test fixtures and benchmarks that need states
 * only compaction or recovery produce. Product code calls insertRecord or insertSuccessor.
 */
export async function insertRecordUnchecked(
  trx: Transaction<DB>, record: NewRecordRow, derived: DerivedRows,
): Promise<bigint> {
  const columns = Object.keys(record)
    .filter((column) => record[column as keyof NewRecordRow] !== undefined) as (keyof NewRecordRow)[];
  const inserted = await runShape(trx, `insertRecord:${columns.join(',')}`, columns.map((column) => record[column]),
    (slots) =>
    trx.insertInto('adapter_records')
      .values(Object.fromEntries(columns.map((column, i) => [column, slots[i]])) as unknown as NewRecordRow)
      .returning('row_id').compile());
  const rowId = BigInt(inserted.rows[0]!.row_id!);
  // The FTS rowid must equal the record's row_id; the generated type has no rowid column, hence raw SQL.
  await runShape(trx, 'insertFts', [rowId, derived.searchText], ([id, text]) =>
    sql`INSERT INTO fact_fts (rowid, search_text) VALUES (${id}, ${text})`.compile(trx));
  // vec0 refuses REAL for rowid and metadata integers: bind BigInt.
  const vector = vectorBytes(derived.embedding);
  const current = record.lifecycle_state === 'VALIDATED_CURRENT';
  await runShape(trx, 'insertVector', [rowId, record.scope_key, BigInt(current ? 1 : 0), vector],
    ([id, scopeKey, isCurrent, embedding]) =>
    sql`INSERT INTO fact_vec (rowid, scope_key, is_current, embedding)
      VALUES (${id}, ${scopeKey}, ${isCurrent}, ${embedding})`.compile(trx));
  if (derived.fixedTokens != null) await storeTokenCount(trx, Number(rowId), derived.fixedTokens);
  await keepEligibleFormsOnInsert(trx, rowId, record.scope_key, current ? derived.embedding : null);
  return rowId;
}

/**
 * Compare-and-swap of STORAGE.md §7.2 step 3: marks `live` SUPERSEDED only if its row, revision and
 * lifecycle are unchanged, clears its vector's `is_current` and removes its eligible vector forms, if it has any.
 * VERSION_CONFLICT when no row matched.
 */
export async function supersedeRecord(trx: Transaction<DB>, live: RecordRow): Promise<void> {
  const result = await runShape(trx, 'supersedeRecord', [live.row_id, live.revision, live.lifecycle_state],
    ([rowId, revision, lifecycle]) =>
    trx.updateTable('adapter_records').set({ lifecycle_state: 'SUPERSEDED' }).where('row_id', '=', rowId)
      .where('revision', '=', revision).where('lifecycle_state', '=', lifecycle).compile());
  if (result.numAffectedRows !== 1n)
    throw new AdapterError('VERSION_CONFLICT',
      `a concurrent writer changed this memory first; ${REREAD_AND_RETRY}`);
  await runShape(trx, 'clearCurrentVector', [BigInt(live.row_id)], ([rowId]) =>
    sql`UPDATE fact_vec SET is_current = ${0n} WHERE rowid = ${rowId}`.compile(trx));
  if (live.lifecycle_state === 'VALIDATED_CURRENT') await removeEligibleVector(trx, BigInt(live.row_id));
}

/** Reads one record by `record_id`. */
export async function findRecord(reader: Reader, recordId: string): Promise<RecordRow | undefined> {
  return (await runShape(reader, 'findRecord', [recordId], ([id]) => reader.selectFrom('adapter_records').selectAll()
    .where('record_id', '=', id).compile())).rows[0] as RecordRow | undefined;
}

/** The record that an idempotency key created, if any. */
export async function findByIdempotencyKey(reader: Reader, key: string): Promise<RecordRow | undefined> {
  return (await runShape(reader, 'findByIdempotencyKey', [key], ([k]) => reader.selectFrom('adapter_records')
    .selectAll().where('idempotency_key', '=', k).compile())).rows[0] as RecordRow | undefined;
}

/**
 * A DUPLICATE match (CONTRACT.md §13.2): a non-quarantined record of the exact scope with the same
 * content hash; the current one, else the newest Candidate, else the newest.
 */
export async function findDuplicate(
  reader: Reader, scope: ScopeColumns, contentHash: string,
): Promise<RecordRow | undefined> {
  return (await runShape(reader, 'findDuplicate', [...scopeArgs(scope), contentHash], (slots) =>
    inScope(reader, scopeSlots(slots))
    .where('native_content_hash', '=', slots[5]).where('lifecycle_state', '!=', 'QUARANTINED')
    .orderBy(sql`CASE lifecycle_state WHEN 'VALIDATED_CURRENT' THEN 0 WHEN 'CANDIDATE' THEN 1 ELSE 2 END`)
    .orderBy(CREATED_AT_ORDER, 'desc').orderBy('record_id', 'asc').compile())).rows[0] as RecordRow | undefined;
}

/**
 * A current record of the exact scope with `contradictionKey` and the same content hash (`same`) or another, optionally
 * outside one memory.
 */
export async function findCurrentWithKey(
  reader: Reader, scope: ScopeColumns, contradictionKey: string, contentHash: string, same: boolean,
  excludeMemoryId: string | null = null,
): Promise<RecordRow | undefined> {
  const args = excludeMemoryId === null ? [...scopeArgs(scope), contradictionKey, contentHash]
    : [...scopeArgs(scope), contradictionKey, contentHash, excludeMemoryId];
  return (await runShape(reader,
    `findCurrentWithKey:${same ? 'same' : 'other'}:${excludeMemoryId === null ? 'any' : 'outside'}`, args, (slots) => {
    let query = inScope(reader, scopeSlots(slots)).where('contradiction_key', '=', slots[5] as string)
      .where('lifecycle_state', '=', 'VALIDATED_CURRENT')
      .where('native_content_hash', same ? '=' : '!=', slots[6] as string);
    if (excludeMemoryId !== null) query = query.where('memory_id', '!=', slots[7] as string);
    return query.orderBy(CREATED_AT_ORDER, 'desc').orderBy('record_id', 'asc').compile();
  })).rows[0] as RecordRow | undefined;
}

/** The live record of a memory in the exact scope, if any. */
export async function findLiveRecord(
  reader: Reader, scope: ScopeColumns, memoryId: string,
): Promise<RecordRow | undefined> {
  // Literal states: SQLite can use the partial index ux_adapter_live_memory only when it sees the values;
  // bound, it walked every live record of the scope instead.
  return (await runShape(reader, 'findLiveRecord', [...scopeArgs(scope), memoryId], (slots) =>
    inScope(reader, scopeSlots(slots))
    .where('memory_id', '=', slots[5])
    .where('lifecycle_state', 'in', [sql.lit('CANDIDATE'), sql.lit('VALIDATED_CURRENT')])
    .compile())).rows[0] as RecordRow | undefined;
}

/** Where a memory exists: in the exact scope (any lifecycle), and anywhere at all. */
export async function memoryPresence(reader: Reader, scope: ScopeColumns, memoryId: string): Promise<MemoryPresence> {
  // By memory_id alone (a memory has a few revisions), the scope compared here: filtering by scope in SQL
  // made SQLite walk the scope's index instead.
  const rows = (await runShape(reader, 'memoryScopes', [memoryId], ([id]) => reader.selectFrom('adapter_records')
    .select(['scope', 'project_id', 'worktree_id', 'workflow_id', 'agent_id', 'lifecycle_state'])
    .where('memory_id', '=', id).compile())).rows;
  const inTheScope = rows.filter((row) => row.scope === scope.scope && row.project_id === scope.project_id
    && row.worktree_id === scope.worktree_id && row.workflow_id === scope.workflow_id
    && row.agent_id === scope.agent_id);
  return {
    inScope: inTheScope.length > 0,
    anywhere: rows.length > 0,
    purged: inTheScope.length > 0 && inTheScope.every((row) => row.lifecycle_state === 'QUARANTINED'),
  };
}

/**
 * Where a memory's records are: in the exact scope, in any scope; and whether those in the scope are all tombstones.
 */
export interface MemoryPresence {
  readonly inScope: boolean;
  readonly anywhere: boolean;
  /** Every record of the memory in the scope is a QUARANTINED tombstone of incident recovery. */
  readonly purged: boolean;
}

/** One item of the contradiction summary (CONTRACT.md §6.5). */
export interface ContradictionItem {
  readonly record_id: string;
  readonly memory_id: string;
  readonly contradiction_key: string;
  readonly contradiction_state: string;
  readonly lifecycle_state: string;
  readonly authority_role: string;
  readonly source_class: string;
}

// A literal LIMIT: with a bound one SQLite plans this query noticeably slower (about 10x on an empty
// summary), and every write envelope runs it.
const SUMMARY_LIMIT = sql.lit(16);

/**
 * The contradiction summary of the exact scope (by its `scope_key`): UNRESOLVED records whose conflict is live (a
 * current record of the scope with the same key and another content hash), by created_at then record_id, at most 16.
 */
export async function contradictionSummary(reader: Reader, scopeKey: string): Promise<ContradictionItem[]> {
  // scope_key is the digest of the exact tuple: idx_adapter_scope_key answers this without scanning the scope.
  const rows = (await runShape(reader, 'contradictionSummary', [scopeKey], ([key]) =>
    reader.selectFrom('adapter_records').selectAll().where('scope_key', '=', key)
    .where('contradiction_state', '=', 'UNRESOLVED').where('lifecycle_state', '!=', 'QUARANTINED')
    .where(({ exists, selectFrom }) => exists(selectFrom('adapter_records as c').select('c.row_id')
      .whereRef('c.scope_key', '=', 'adapter_records.scope_key')
      .whereRef('c.contradiction_key', '=', 'adapter_records.contradiction_key')
      .whereRef('c.native_content_hash', '!=', 'adapter_records.native_content_hash')
      .where('c.lifecycle_state', '=', 'VALIDATED_CURRENT')))
    .orderBy(CREATED_AT_ORDER).orderBy('record_id').limit(SUMMARY_LIMIT).compile())).rows as RecordRow[];
  return rows.map((row) => ({
    record_id: row.record_id, memory_id: row.memory_id, contradiction_key: row.contradiction_key,
    contradiction_state: row.contradiction_state,
    lifecycle_state: row.lifecycle_state, authority_role: row.authority_role,
    source_class: (JSON.parse(row.source_provenance) as { source_class: string }).source_class,
  }));
}
