import { chmodSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, rmdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { AdapterError } from '../core/adapter-error.js';

/** fsync of a file or directory by path. */
export function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Creates the missing parent directories of `path`, each 0700 whatever the umask (STORAGE.md §2), and makes
 * their entries durable. Returns the directories it created, outermost first. BACKEND_UNAVAILABLE (with the
 * system code, never the path) when one cannot be created; the ones created before are removed again.
 */
export function createPrivateParents(path: string): string[] {
  const missing: string[] = [];
  for (let dir = dirname(path); !existsSync(dir); dir = dirname(dir)) missing.unshift(dir);
  const created: string[] = [];
  try {
    for (const dir of missing) {
      mkdirSync(dir, { mode: 0o700 });
      created.push(dir);
      chmodSync(dir, 0o700);
      fsyncPath(dirname(dir));
    }
  } catch (error) {
    removeDirectories(created);
    throw new AdapterError('BACKEND_UNAVAILABLE', `cannot create the directory the database goes in (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return created;
}

/** Removes directories created by createPrivateParents, innermost first, where they are still empty. */
export function removeDirectories(created: readonly string[]): void {
  for (const dir of [...created].reverse()) {
    try {
      rmdirSync(dir);
    } catch {
      // Not empty (someone else put a file there) or already gone: leave it.
    }
  }
}
