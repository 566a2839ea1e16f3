import { Database, loadSqliteVec, type SqliteConnection } from './native.js';
import { translateSqliteError } from './sqlite-errors.js';

// The pragmas and file-level statements of incident recovery (OPERATIONS.md §5.3 checks 12-17, §5.6 sealing).

/** The journal mode, lower case. */
export function journalMode(connection: SqliteConnection): string {
  return String(connection.pragma('journal_mode', { simple: true })).toLowerCase();
}

/** True when the check answers exactly `ok`. */
export function checkAnswersOk(connection: SqliteConnection, check: 'quick_check' | 'integrity_check'): boolean {
  const rows = connection.prepare(`PRAGMA ${check}`).pluck().all();
  return rows.length === 1 && rows[0] === 'ok';
}

/** True when `quick_check` and `integrity_check` both answer exactly `ok`. */
export function bothIntegrityChecksOk(connection: SqliteConnection): boolean {
  return checkAnswersOk(connection, 'quick_check') && checkAnswersOk(connection, 'integrity_check');
}

/** Turns `secure_delete` on for the connection and reads it back (check 14). */
export function enableSecureDelete(connection: SqliteConnection): boolean {
  connection.pragma('secure_delete = ON');
  return Number(connection.pragma('secure_delete', { simple: true })) === 1;
}

/** True when the schema has the `fact_fts` table. */
export function ftsPresent(connection: SqliteConnection): boolean {
  const statement = connection.prepare("SELECT 1 FROM sqlite_master WHERE name = 'fact_fts' AND type = 'table'");
  return statement.get() !== undefined;
}

/** `wal_checkpoint(TRUNCATE)`: true when it returns (0, 0, 0): not busy, and the WAL holds no frame afterwards. */
export function checkpointTruncate(connection: SqliteConnection): boolean {
  type CheckpointRow = { busy: number; log: number; checkpointed: number };
  const row = (connection.pragma('wal_checkpoint(TRUNCATE)') as unknown[])[0] as CheckpointRow | undefined;
  return row !== undefined && row.busy === 0 && row.log === 0 && row.checkpointed === 0;
}

/** `VACUUM INTO` an existing empty file: a copy of the live content only, without free pages or WAL frames. */
export function vacuumInto(connection: SqliteConnection, imagePath: string): void {
  try {
    connection.prepare('VACUUM INTO ?').run(imagePath);
  } catch (error) {
    throw translateSqliteError(error);
  }
}

/**
 * Opens a sanitized image on its own read-write connection with sqlite-vec loaded and no writer function, so the
 * fences refuse any write to the fenced tables. The image comes out of VACUUM INTO in rollback-journal mode; the
 * first open switches it to WAL (§5.6 step 2).
 */
export function openImage(imagePath: string): SqliteConnection {
  let connection: SqliteConnection | undefined;
  try {
    connection = new Database(imagePath, { fileMustExist: true });
    loadSqliteVec(connection);
    connection.pragma('journal_mode = WAL');
    return connection;
  } catch (error) {
    connection?.close();
    throw translateSqliteError(error);
  }
}

/** FTS5 `integrity-check` of `fact_fts` on a connection with no transaction open; true when it passes. */
export function ftsIntegrityOk(connection: SqliteConnection): boolean {
  try {
    connection.exec("INSERT INTO fact_fts (fact_fts, rank) VALUES ('integrity-check', 1)");
    return true;
  } catch {
    return false;
  }
}
