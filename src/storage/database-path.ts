import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { AdapterError } from '../core/adapter-error.js';
import { companionOwner } from './durable-files.js';

// The file `--db` names (CONTRACT.md §16.1), resolved once to an absolute real path before the engine takes its
// lease or opens a connection; recovery resolves every path of its run the same way (recovery-output-paths.ts).

/** True when `path` itself is a symbolic link; false when it is anything else or cannot be looked at (ENOTDIR). */
function isSymbolicLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Symbolic links one path may follow before it counts as a loop (Linux's own bound). */
const MAX_LINK_HOPS = 40;

/**
 * The absolute real path of `path`: its real path when it exists, else its nearest existing ancestor's real path and
 * the missing names. A dangling symbolic link (or a chain of them) is followed first, as the kernel follows it when a
 * file is created through it, so two names of one file, existing or not yet, resolve equal. Null for a loop of
 * symbolic links.
 */
export function realPathOf(path: string): string | null {
  let absolute = resolve(path);
  for (let hops = 0; !existsSync(absolute) && isSymbolicLink(absolute); hops += 1) {
    if (hops === MAX_LINK_HOPS) return null;
    // Relative to the link's real directory, as the kernel reads it: `dir` may itself be reached through a link.
    absolute = resolve(realpathSync(dirname(absolute)), readlinkSync(absolute));
  }
  if (existsSync(absolute)) return realpathSync(absolute);
  // The missing components by name: a slice after the parent's length would drop a character under `/`.
  let parent = dirname(absolute);
  const tail = [basename(absolute)];
  while (!existsSync(parent) && dirname(parent) !== parent) {
    tail.unshift(basename(parent));
    parent = dirname(parent);
  }
  return resolve(realpathSync(parent), ...tail);
}

/**
 * Resolves `--db` once to an absolute path (realPathOf): a new database is created where a dangling link points, as
 * SQLite would write through it, instead of failing on the link (CONTRACT.md §16.1). BACKEND_UNAVAILABLE for a loop.
 */
export function resolveDatabasePath(dbPath: string): string {
  // A trailing slash, `.` or `..` names a directory, which resolve() would turn into a file of that name.
  if (/(^|\/)\.{0,2}$/.test(dbPath)) throw new AdapterError('BACKEND_UNAVAILABLE', '--db must name a regular file');
  const path = realPathOf(dbPath);
  if (path === null) throw new AdapterError('BACKEND_UNAVAILABLE', '--db is a loop of symbolic links');
  if (companionOwner(path) !== undefined) {
    throw new AdapterError('BACKEND_UNAVAILABLE', '--db names the -wal, -shm, -journal or -writer file of another '
      + 'database; give that database itself');
  }
  return path;
}
