import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type { DB } from '../../generated/db.js';
import type { SqliteConnection } from './native.js';
import { isCorruptionError } from './sqlite-errors.js';

/** Reads run on the root handle or inside a transaction. */
export type Reader = Kysely<DB> | Transaction<DB>;

// The executors of handles bound to a connection inside a snapshot of inSnapshot: work nested in it runs on that
// snapshot. Kept by executor, not by handle, so a wrapper of the handle (a Proxy) is still seen as inside.
const SNAPSHOTS = new WeakSet<object>();
// Compiled once: a search and a write's pre-check each run these.
const BEGIN = CompiledQuery.raw('begin');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');

/**
 * Runs `work` on one snapshot of the database: a deferred BEGIN ... COMMIT on the connection, held for the whole of
 * `work`, so every statement of it reads the same committed state and no write of this process runs in between
 * (writers of other processes go on: WAL). Statements each on their own snapshot could mix two states, and an answer
 * built from them may be one the database was never in. In the caller's transaction, or nested in another snapshot,
 * `work` simply runs there.
 */
export async function inSnapshot<T>(reader: Reader, work: (db: Reader) => Promise<T>): Promise<T> {
  if (reader.isTransaction || SNAPSHOTS.has(reader.getExecutor())) return work(reader);
  return reader.connection().execute(async (db) => {
    await db.executeQuery(BEGIN);
    SNAPSHOTS.add(db.getExecutor());
    try {
      const result = await work(db);
      await db.executeQuery(COMMIT);
      return result;
    } catch (error) {
      // Ends the snapshot; fails only when BEGIN did, and then there is nothing to end.
      await db.executeQuery(ROLLBACK).catch(() => undefined);
      throw error;
    } finally {
      SNAPSHOTS.delete(db.getExecutor());
    }
  });
}

/**
 * The same for a raw connection and synchronous work: checks that run several statements (verify, audit, the health
 * reading) read one committed state. Besides agreeing with each other, they must: FTS5 keeps the index structure one
 * check read, and after another process's commit a second check outside a transaction reads it stale and reports
 * corruption the file does not have. In a transaction already, `work` runs in it.
 */
export function onOneSnapshot<T>(connection: SqliteConnection, work: () => T): T {
  if (connection.inTransaction) return work();
  connection.exec('BEGIN');
  let changesBefore: number;
  let result: T;
  try {
    changesBefore = totalChanges(connection);
    result = work();
  } catch (error) {
    // Ends the snapshot; the work's error is the one to report.
    try {
      if (connection.inTransaction) connection.exec('ROLLBACK');
    } catch {
      // Nothing more to end.
    }
    throw error;
  }
  // A check may have caught an error (I/O, full, out of memory) that already ended the transaction.
  if (!connection.inTransaction) return result;
  try {
    connection.exec('COMMIT');
  } catch (error) {
    // SQLite reports again when a read ends the corruption a check met (and recorded: audit's lineage checks on a
    // damaged page), ending the transaction all the same. What was read stands; any other error, or one with rows
    // changed, is kept.
    const kept = isCorruptionError(error) && !connection.inTransaction && totalChanges(connection) === changesBefore;
    if (!kept) throw error;
  }
  return result;
}

/** Rows changed through the connection since it opened (its first use loads the schema, as any statement does). */
function totalChanges(connection: SqliteConnection): number {
  return connection.prepare('SELECT total_changes()').pluck().get() as number;
}
