import { chmodSync, closeSync, existsSync, openSync, readSync, unlinkSync } from 'node:fs';
import { AdapterError } from '../core/adapter-error.js';
import type { DatabaseLease } from './database-lease.js';
import { Database } from './native.js';
import { sqliteCode, translateSqliteError } from './sqlite-errors.js';
import { fileBytes, WRITER_SIDECAR_SUFFIX } from './durable-files.js';

// The files of a database the engine creates (STORAGE.md §10): their mode, and their removal when the creation fails.

/**
 * A plain SQLITE_ERROR while a new database was being made (its file is removed again): sqlite-vec reports a write
 * the disk refused (full, a file size limit) that way. A governed error instead of a stack (CONTRACT.md §16.2); every
 * other error passes unchanged (a full disk or an I/O error is governed already, anything else is a fault).
 */
export function creationFailure(error: unknown): unknown {
  const code = sqliteCode(error);
  if (error instanceof AdapterError || code !== 'SQLITE_ERROR') return error;
  return new AdapterError('BACKEND_UNAVAILABLE', `the database could not be created (${code}); check the disk, `
    + 'its free space and any file size limit, then start again', { cause: error });
}

/**
 * BACKEND_UNAVAILABLE (not retryable) when the database file is absent but a -wal or -journal with bytes in it is
 * there: they hold the last writes of a database moved or deleted without them, and SQLite would replay them into the
 * new file (pages of another database: a corrupt one) or drop them (docs/decisions/0041). An empty one holds nothing.
 * The file is looked for again after its journal: SQLite makes a journal only beside a file that is there, so a file
 * found then is a start that created the database meanwhile (its -journal holds that creation), not a moved one.
 */
export function assertNoStrayJournal(path: string): void {
  // Not there, or under a file or a directory that cannot be searched (null): opening says why.
  const stray = ['-wal', '-journal'].find((suffix) => (fileBytes(`${path}${suffix}`) ?? 0) > 0);
  if (stray === undefined || existsSync(path)) return;
  throw new AdapterError('BACKEND_UNAVAILABLE', `the database file is missing but its ${stray} is there: it holds the `
    + 'last writes of a database that was moved or deleted without it, which SQLite would replay into a new one; '
    + `put the database back beside it, or move the ${stray} (and -shm) away, then start again`, { retryable: false });
}

/** Removes a database this process created but could not finish, when nobody else attached to it. */
export function removeUnfinishedDatabase(lease: DatabaseLease): void {
  if (!lease.tryUpgradeToExclusive()) return;
  try {
    lease.assertSameInode();
  } catch {
    return;
  }
  // The sidecar too: with the exclusive lease nobody else is attached, so nobody can be queued on it.
  for (const suffix of ['', '-wal', '-shm', WRITER_SIDECAR_SUFFIX]) {
    try {
      unlinkSync(lease.path + suffix);
    } catch {
      // Already absent.
    }
  }
}

/** Sets `path` to mode 0600 when this process may; a file of another owner keeps its mode. */
export function privateMode(path: string): void {
  try {
    chmodSync(path, 0o600);
  } catch {
    // Not ours (EPERM), or gone: the open that follows says what is wrong, if anything.
  }
}

// A rollback journal's header: its magic, at byte 16 the database's size in pages before the transaction, at byte 24
// the page size.
const JOURNAL_MAGIC = Buffer.from('d9d505f920a163d7', 'hex');
const JOURNAL_SIZE_BEFORE = 16;
const JOURNAL_PAGE_SIZE = 24;

/**
 * Rolls back the journal a creation killed midway left, and says whether the file may be read again (rolled back, or
 * the journal gone: another start rolled it back meanwhile). SQLite writes a new file's page 1 under a rollback
 * journal before it turns the file to WAL, and a process killed then leaves page 1 and a hot `-journal` that only a
 * read-write connection rolls back (a read-only one fails with SQLITE_READONLY_ROLLBACK, so every later start
 * refused the file). Only that state: a journal whose database was empty before its transaction, beside a file of at
 * most one page and no WAL with frames. Rolling it back leaves the empty file no one ever committed to, and creation
 * goes on. A journal of that kind beside a database that holds more (the operator put a
 * database back at the path a killed start left) is not its journal: left alone, the start refused. SQLite does the
 * rollback, under its locks, on the first read of a read-write connection, which writes nothing else.
 */
export function rollBackUnfinishedCreation(path: string, busyTimeoutMs: number): boolean {
  const header = Buffer.alloc(JOURNAL_PAGE_SIZE + 4);
  let read: number;
  try {
    const fd = openSync(`${path}-journal`, 'r');
    try {
      read = readSync(fd, header, 0, header.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    // Gone: another start rolled it back meanwhile, and the file can be read again.
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
  if (read < header.length || !header.subarray(0, 8).equals(JOURNAL_MAGIC)) return false;
  if (header.readUInt32BE(JOURNAL_SIZE_BEFORE) !== 0) return false;
  const size = fileBytes(path);
  if (size === null || size > header.readUInt32BE(JOURNAL_PAGE_SIZE) || fileBytes(`${path}-wal`) !== 0) return false;
  try {
    const connection = new Database(path, { fileMustExist: true });
    try {
      connection.pragma(`busy_timeout = ${busyTimeoutMs}`);
      connection.prepare('SELECT count(*) FROM sqlite_master').get();
    } finally {
      connection.close();
    }
  } catch (error) {
    throw translateSqliteError(error); // a file this user may not write: said as such
  }
  return true;
}
