import { createHash, type Hash } from 'node:crypto';
import { sql, type Kysely, type Transaction } from 'kysely';
import { UNCODED_SCOPE_MAX_RECORDS } from '@factlane/schema';
import type { DB } from '../../generated/db.js';
import { AdapterError } from '../core/adapter-error.js';
import { canonicalJson } from '../core/canonical-json.js';
import { removeEligibleVector } from './eligible-vectors.js';
import type { SqliteConnection } from './native.js';
import { STATISTICS_TABLE } from './schema-verification.js';
import { isBusyError, translateSqliteError } from './sqlite-errors.js';
import type { RecordRow } from './record-rows.js';

// The rows incident recovery reads and writes (OPERATIONS.md §5.4-§5.7, STORAGE.md §11). Inspection runs on any
// connection; the purge runs inside the recovery's one write transaction. The interlock row is recovery-interlock.ts's,
// the search for copies of the targets' content recovery-content.ts's.

/** The derived rows one record has: its FTS row, its `fact_vec` row and its eligible forms (STORAGE.md §4.5). */
export interface DerivedRows {
  readonly ftsText: string | null;
  readonly vector: { readonly scopeKey: string; readonly isCurrent: number; readonly embedding: Buffer } | null;
  readonly eligibleVector: { readonly scopeKey: string; readonly shard: number; readonly embedding: Buffer } | null;
  readonly eligibleCode: { readonly shardKey: string; readonly code: Buffer } | null;
  /** The record's scope holds more than UNCODED_SCOPE_MAX_RECORDS records: its current records have eligible forms. */
  readonly scopeCoded: boolean;
}

/** The records with these record_ids, by record_id. */
export function readRecordsById(connection: SqliteConnection, recordIds: readonly string[]): Map<string, RecordRow> {
  const read = connection.prepare('SELECT * FROM adapter_records WHERE record_id = ?');
  const found = new Map<string, RecordRow>();
  for (const recordId of recordIds) {
    const row = read.get(recordId) as RecordRow | undefined;
    if (row) found.set(recordId, row);
  }
  return found;
}

/** The record_ids of every record of these memories, oldest revision first. */
export function recordIdsOfMemories(
  connection: SqliteConnection, memoryIds: readonly string[],
): Map<string, RecordRow[]> {
  const read = connection.prepare('SELECT * FROM adapter_records WHERE memory_id = ? ORDER BY revision');
  return new Map(memoryIds.map((memoryId) => [memoryId, read.all(memoryId) as RecordRow[]]));
}

/** The memory ids of the records at `rowIds` (a derived row's rowid is its record's), sorted; orphan rows have none. */
export function memoryIdsOfRows(connection: SqliteConnection, rowIds: readonly number[]): string[] {
  const read = connection.prepare(`SELECT DISTINCT memory_id FROM adapter_records
    WHERE row_id IN (SELECT value FROM json_each(?)) ORDER BY memory_id`).pluck();
  return read.all(JSON.stringify(rowIds)) as string[];
}

/**
 * The memories joined to `memoryIds` by REPLACE, both ways and transitively: a REPLACE successor is a new memory whose
 * first record's parent is a record of the replaced one (CONTRACT.md §13.4), and it may carry the same content,
 * edited. The named memories themselves are left out; sorted.
 */
export function replaceLinkedMemories(connection: SqliteConnection, memoryIds: readonly string[]): string[] {
  const linked = connection.prepare(`
    SELECT c.memory_id AS id FROM adapter_records c JOIN adapter_records p ON p.record_id = c.parent_record_id
      WHERE p.memory_id = ? AND c.memory_id <> p.memory_id
    UNION
    SELECT p.memory_id AS id FROM adapter_records c JOIN adapter_records p ON p.record_id = c.parent_record_id
      WHERE c.memory_id = ? AND c.memory_id <> p.memory_id`).pluck();
  const seen = new Set(memoryIds);
  const found: string[] = [];
  for (let queue = [...seen]; queue.length > 0;) {
    const memoryId = queue.pop()!;
    for (const id of linked.all(memoryId, memoryId) as string[]) {
      if (seen.has(id)) continue;
      seen.add(id);
      found.push(id);
      queue.push(id);
    }
  }
  return found.sort();
}

/** True when the memory has a lineage fork: two live records, or a record of it with two successors. */
export function memoryForked(connection: SqliteConnection, memoryId: string): boolean {
  const row = connection.prepare(`SELECT
      (SELECT count(*) FROM adapter_records WHERE memory_id = ?
         AND lifecycle_state IN ('CANDIDATE', 'VALIDATED_CURRENT')) AS live,
      (SELECT count(*) FROM adapter_records p WHERE p.memory_id = ?
         AND (SELECT count(*) FROM adapter_records c WHERE c.parent_record_id = p.record_id) > 1) AS forked`)
    .get(memoryId, memoryId) as { live: number; forked: number };
  return row.live > 1 || row.forked > 0;
}

/** The derived rows of the record stored at `rowId` (vec0 rows read by rowid: a point lookup, sqlite-vec loaded). */
export function readDerivedRows(connection: SqliteConnection, rowId: number): DerivedRows {
  const id = BigInt(rowId);
  const fts = connection.prepare('SELECT search_text FROM fact_fts WHERE rowid = ?').pluck().get(id) as
    string | undefined;
  const vector = connection.prepare('SELECT scope_key, is_current, embedding FROM fact_vec WHERE rowid = ?').get(id) as
    { scope_key: string; is_current: number; embedding: Buffer } | undefined;
  const eligible = connection.prepare('SELECT scope_key, shard, embedding FROM eligible_vectors WHERE row_id = ?')
    .get(id) as { scope_key: string; shard: number; embedding: Buffer } | undefined;
  const code = connection.prepare('SELECT shard_key, simhash_v1 AS code FROM eligible_codes WHERE rowid = ?').get(id) as
    { shard_key: string; code: Buffer } | undefined;
  const records = connection.prepare(`SELECT count(*) FROM (SELECT 1 FROM adapter_records
    WHERE scope_key = (SELECT scope_key FROM adapter_records WHERE row_id = ?) LIMIT ${UNCODED_SCOPE_MAX_RECORDS + 1})`)
    .pluck().get(id) as number;
  return {
    ftsText: fts ?? null,
    vector: vector
      ? { scopeKey: vector.scope_key, isCurrent: Number(vector.is_current), embedding: vector.embedding }
      : null,
    eligibleVector: eligible
      ? { scopeKey: eligible.scope_key, shard: eligible.shard, embedding: eligible.embedding }
      : null,
    eligibleCode: code ? { shardKey: code.shard_key, code: code.code } : null,
    scopeCoded: records > UNCODED_SCOPE_MAX_RECORDS,
  };
}

/** The row_id and provenance of every QUARANTINED record (recovery tombstones among them). */
export function quarantinedRecords(
  connection: SqliteConnection,
): { row_id: number; source_provenance: string; lifecycle_state: string }[] {
  return connection.prepare(`SELECT row_id, source_provenance, lifecycle_state FROM adapter_records
    WHERE lifecycle_state = 'QUARANTINED'`).all() as
    { row_id: number; source_provenance: string; lifecycle_state: string }[];
}

/**
 * FTS rows, vectors and eligible forms without a record anywhere in the database (PM3), as `table:rowid`. A token count
 * without its record holds no content, so it does not hold a recovery: `audit` names it (token_counts).
 */
export function unattributableDerivedRows(connection: SqliteConnection): string[] {
  return connection.prepare(`SELECT 'fact_fts:' || rowid FROM fact_fts
      WHERE rowid NOT IN (SELECT row_id FROM adapter_records)
    UNION ALL SELECT 'fact_vec:' || rowid FROM fact_vec
      WHERE rowid NOT IN (SELECT row_id FROM adapter_records)
    UNION ALL SELECT 'eligible_vectors:' || row_id FROM eligible_vectors
      WHERE row_id NOT IN (SELECT row_id FROM adapter_records)
    UNION ALL SELECT 'eligible_codes:' || rowid FROM eligible_codes
      WHERE rowid NOT IN (SELECT row_id FROM adapter_records)`)
    .pluck().all() as string[];
}

/**
 * A digest of every record but the skipped ones, by row_id: the record row's every column with its FTS text, its
 * vector, its eligible forms and its token count. Two readings are equal exactly when none of those bytes changed.
 * Each record's hash takes its pieces as they are read: holding them all until the end took as much memory as the
 * database held (1.36 GiB at 100,000 records).
 */
export function recordDigests(connection: SqliteConnection, skip: ReadonlySet<number>): Map<number, string> {
  const hashes = new Map<number, Hash>();
  const records = connection.prepare('SELECT * FROM adapter_records ORDER BY row_id').iterate() as Iterable<RecordRow>;
  for (const row of records) {
    if (!skip.has(row.row_id)) hashes.set(row.row_id, createHash('sha256').update(canonicalJson(row)));
  }
  const add = (table: string, query: string) => {
    for (const row of connection.prepare(query).iterate() as Iterable<{ id: number | bigint }>) {
      const values = Object.values(row).map((value) => (Buffer.isBuffer(value) ? value.toString('base64') : value));
      hashes.get(Number(row.id))?.update(`\n${table}:${canonicalJson(values)}`);
    }
  };
  add('fact_fts', 'SELECT rowid AS id, search_text FROM fact_fts');
  add('fact_vec', 'SELECT rowid AS id, scope_key, is_current, embedding FROM fact_vec');
  add('eligible_vectors', 'SELECT row_id AS id, scope_key, shard, embedding FROM eligible_vectors');
  add('eligible_codes', 'SELECT rowid AS id, shard_key, simhash_v1 FROM eligible_codes');
  add('record_token_counts', 'SELECT row_id AS id, fixed_tokens FROM record_token_counts');
  return new Map([...hashes].map(([id, hash]) => [id, hash.digest('hex')]));
}

/** The tombstone columns a purge writes over a target record (OPERATIONS.md §5.5). */
export type TombstoneColumns = Pick<RecordRow,
  'fact' | 'source_provenance' | 'lifecycle_state' | 'contradiction_state' | 'verified_by' | 'authority_role'
  | 'confidence' | 'tags' | 'source_timestamp' | 'last_verified_at' | 'freshness_policy' | 'contradiction_key'
  | 'native_content_hash' | 'payload_fingerprint'>;

/**
 * Purges one target inside the recovery's write transaction: deletes its vector, eligible forms, FTS row and token
 * count, then overwrites the record with `tombstone`. BACKEND_UNAVAILABLE when the record is gone (the transaction
 * rolls back).
 */
export async function purgeRecord(trx: Transaction<DB>, rowId: number, tombstone: TombstoneColumns): Promise<void> {
  const id = BigInt(rowId);
  // vec0 and FTS5 rows are deleted with raw SQL: Kysely has no type for virtual tables.
  await sql`DELETE FROM fact_vec WHERE rowid = ${id}`.execute(trx);
  await removeEligibleVector(trx, id);
  await sql`DELETE FROM fact_fts WHERE rowid = ${id}`.execute(trx);
  // The tombstone changes pieces the count covers: it is counted whole when read (decision 0036).
  await trx.deleteFrom('record_token_counts').where('row_id', '=', rowId).execute();
  const updated = await trx.updateTable('adapter_records').set(tombstone).where('row_id', '=', rowId)
    .executeTakeFirst();
  if (updated.numUpdatedRows !== 1n) {
    throw new AdapterError('BACKEND_UNAVAILABLE', 'a target record vanished during the purge');
  }
}

/**
 * Drops SQLite's statistics tables (an operator's ANALYZE) inside the purge transaction: `sqlite_stat4` samples index
 * keys, a target's content hash and FTS5 terms among them, and no other step removes those. Statistics only steer the
 * query planner; an ANALYZE makes them again (decision 0043).
 */
export async function dropStatistics(trx: Transaction<DB>): Promise<void> {
  const tables = await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`.execute(trx);
  for (const { name } of tables.rows) {
    if (STATISTICS_TABLE.test(name)) await sql`DROP TABLE ${sql.id(name)}`.execute(trx);
  }
}

/**
 * FTS5 `secure-delete` on, then (after the deletes) `rebuild` and `integrity-check`, inside the purge transaction.
 * The FTS5 commands are special INSERTs of the table's own name, which only raw SQL can say.
 */
export const ftsCommands = {
  secureDelete: (trx: Transaction<DB>) =>
    sql`INSERT INTO fact_fts (fact_fts, rank) VALUES ('secure-delete', 1)`.execute(trx),
  rebuild: (trx: Transaction<DB>) => sql`INSERT INTO fact_fts (fact_fts) VALUES ('rebuild')`.execute(trx),
  integrityCheck: (trx: Transaction<DB>) =>
    sql`INSERT INTO fact_fts (fact_fts, rank) VALUES ('integrity-check', 1)`.execute(trx),
};

/**
 * True when FTS5 `secure-delete` can be set: tried in a transaction that is always rolled back (preflight check 15),
 * on a connection with no transaction open.
 */
export function ftsSecureDeleteSettable(connection: SqliteConnection): boolean {
  connection.exec('BEGIN');
  try {
    connection.exec("INSERT INTO fact_fts (fact_fts, rank) VALUES ('secure-delete', 1)");
    return true;
  } catch (error) {
    // A writer holding the lock is not a missing FTS5 option: BACKEND_BUSY, which the caller holds on as such.
    if (isBusyError(error)) throw translateSqliteError(error);
    return false;
  } finally {
    // An error that ended the transaction (a full disk, an I/O error) left none to roll back: ROLLBACK would throw
    // "no transaction is active" over the answer or the error above.
    if (connection.inTransaction) connection.exec('ROLLBACK');
  }
}

/** What the postflight reads through the storage engine (OPERATIONS.md §5.7). */
export interface PostflightReading {
  readonly quickCheckOk: boolean;
  /** The target records, by record_id. */
  readonly rows: ReadonlyMap<string, RecordRow>;
  /** FTS, vector and eligible rows and token counts the targets still have: 0 after a purge. */
  readonly derivedRows: number;
}

/** Reads quick_check, the target records and their remaining derived rows through the engine's connection. */
export async function readPostflight(db: Kysely<DB>, recordIds: readonly string[]): Promise<PostflightReading> {
  // PRAGMA and the virtual tables have no Kysely types: raw SQL.
  const check = (await sql<{ quick_check: string }>`PRAGMA quick_check`.execute(db)).rows;
  const rows = await db.selectFrom('adapter_records').selectAll().where('record_id', 'in', [...recordIds])
    .execute() as RecordRow[];
  let derivedRows = 0;
  for (const row of rows) {
    const id = BigInt(row.row_id);
    const counted = await sql<{ n: number }>`SELECT (SELECT count(*) FROM fact_fts WHERE rowid = ${id})
      + (SELECT count(*) FROM fact_vec WHERE rowid = ${id})
      + (SELECT count(*) FROM eligible_vectors WHERE row_id = ${id})
      + (SELECT count(*) FROM eligible_codes WHERE rowid = ${id})
      + (SELECT count(*) FROM record_token_counts WHERE row_id = ${id}) AS n`.execute(db);
    derivedRows += Number(counted.rows[0]?.n ?? 0);
  }
  return {
    quickCheckOk: check.length === 1 && Object.values(check[0]!)[0] === 'ok',
    rows: new Map(rows.map((row) => [row.record_id, row])),
    derivedRows,
  };
}

/** `wal_checkpoint(TRUNCATE)` through the engine's connection; true when it returns (0, 0, 0). */
export async function checkpointThrough(db: Kysely<DB>): Promise<boolean> {
  type CheckpointRow = { busy: number; log: number; checkpointed: number };
  const row = (await sql<CheckpointRow>`PRAGMA wal_checkpoint(TRUNCATE)`.execute(db)).rows[0];
  return row !== undefined && row.busy === 0 && row.log === 0 && row.checkpointed === 0;
}
