import { chmodSync, unlinkSync } from 'node:fs';
import { AdapterError } from '../core/adapter-error.js';
import type { DatabaseLease } from './database-lease.js';
import { sqliteCode } from './sqlite-errors.js';
import { WRITER_SIDECAR_SUFFIX } from './durable-files.js';

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
