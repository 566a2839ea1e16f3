import { LIFECYCLE_STATES } from '@factlane/schema';
import { Database, type SqliteConnection } from './native.js';
import { openReadOnlyConnection } from './write-connection.js';
import { checkAnswersOk } from './recovery-pragmas.js';
import { isCorruptionError, sqliteCode, translateSqliteError } from './sqlite-errors.js';
import { AdapterError } from '../core/adapter-error.js';

/**
 * Copies the database at `sourcePath` into `targetPath` with the SQLite online backup API, then switches
 * the copy to rollback-journal mode (no `-wal`/`-shm`), so it opens read-only even on read-only media
 * (OPERATIONS.md §4.1 steps 2-3). The target is new and empty, made 0600 by the caller (it keeps its mode).
 * `onPages` hears the pages copied of the total as SQLite reports them: after the first step (the total known,
 * nothing or little copied) and once the copy is complete.
 */
export async function onlineBackup(
  sourcePath: string, targetPath: string, onPages?: (copied: number, total: number) => void,
): Promise<void> {
  const source = openReadOnlyConnection(sourcePath);
  try {
    // After the first step, ask for every remaining page at once: a step-wise copy restarts whenever
    // another connection writes between steps.
    const done = await source.backup(targetPath, { progress: ({ totalPages, remainingPages }) => {
      onPages?.(totalPages - remainingPages, totalPages);
      return 0x7fffffff;
    } });
    onPages?.(done.totalPages - done.remainingPages, done.totalPages);
  } catch (error) {
    throw copyFailure(error);
  } finally {
    source.close();
  }
  // Opened inside the try: a copy SQLite cannot open (SQLITE_CANTOPEN, an I/O error) is the copy's failure too.
  let copy: SqliteConnection | undefined;
  try {
    copy = new Database(targetPath, { fileMustExist: true });
    copy.pragma('journal_mode = DELETE');
  } catch (error) {
    throw copyFailure(error, 'copy only');
  } finally {
    copy?.close();
  }
}

/**
 * A failure of the copy's writes. The source is read through a read-only connection, so SQLITE_FULL can only be the
 * copy's disk (the copy itself, or the -wal and -shm of a restored copy switched to WAL): said so, instead of
 * translateSqliteError's "the database or its disk is full", which sent operators to a database never written. While
 * the online backup runs, an I/O error may be either side and keeps its translation; in a step that opens the copy
 * alone (`copy only`: its journal mode switched, whose -wal and -shm SQLite grows first, where a full disk shows as
 * SQLITE_IOERR_SHMSIZE or another I/O error), it is the copy's side too.
 */
export function copyFailure(error: unknown, where: 'both files' | 'copy only' = 'both files'): unknown {
  const code = sqliteCode(error);
  if (code === 'SQLITE_FULL') {
    return new AdapterError('BACKEND_UNAVAILABLE',
      'the disk the copy is written to is full; nothing was published', { cause: error });
  }
  if (where === 'copy only' && code?.startsWith('SQLITE_IOERR')) {
    return new AdapterError('BACKEND_UNAVAILABLE', `the copy could not be written (${code}): check the disk it is `
      + 'written to (full?); the database was not touched and nothing was published', { cause: error });
  }
  return translateSqliteError(error);
}

/**
 * Switches a closed database file to WAL, as a restored database is served (OPERATIONS.md §4.2 step 3). The
 * setting is stored in the file; the connection that made it is the last to close, so SQLite removes the
 * `-wal` and `-shm` it created.
 */
export function setWalMode(path: string): void {
  let connection: SqliteConnection | undefined;
  try {
    connection = new Database(path, { fileMustExist: true });
    const mode = connection.pragma('journal_mode = WAL', { simple: true });
    if (mode !== 'wal') throw new AdapterError('VERIFY_FAILED', `the copy stayed in journal mode ${String(mode)}`);
  } catch (error) {
    throw copyFailure(error, 'copy only');
  } finally {
    connection?.close();
  }
}

/**
 * `PRAGMA integrity_check` of a database file read-only: true when it answers exactly `ok`, false when it answers
 * anything else or SQLite finds the file damaged on the way. Any other error (busy, I/O, memory) says nothing of the
 * file: it is thrown, translated, not reported as a failed check.
 */
export function integrityOk(path: string): boolean {
  const connection = openReadOnlyConnection(path, { loadVec: true });
  try {
    return checkAnswersOk(connection, 'integrity_check');
  } catch (error) {
    if (isCorruptionError(error) || sqliteCode(error) === 'SQLITE_NOTADB') return false;
    throw translateSqliteError(error);
  } finally {
    connection.close();
  }
}

/** Record counts per lifecycle state, read-only. */
export function lifecycleCounts(path: string): Record<string, number> {
  const connection = openReadOnlyConnection(path);
  try {
    const rows =
      connection.prepare('SELECT lifecycle_state AS state, count(*) AS n FROM adapter_records GROUP BY lifecycle_state')
        .all() as { state: string; n: number }[];
    // Every lifecycle of the contract, 0 where it has no record (OPERATIONS.md §4.1: counts per lifecycle).
    const counts: Record<string, number> = Object.fromEntries(LIFECYCLE_STATES.map((state) => [state, 0]));
    for (const row of rows) counts[row.state] = row.n;
    return counts;
  } finally {
    connection.close();
  }
}
