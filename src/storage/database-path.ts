import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { AdapterError } from '../core/adapter-error.js';

// The file `--db` names (CONTRACT.md §16.1), resolved once to an absolute real path before the engine takes its
// lease or opens a connection.

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
 * Resolves `--db` once to an absolute path: the real path when it exists, else its parent's real path. A dangling
 * symbolic link (or a chain of them) is followed first, so a new database is created where the link points, as
 * SQLite would write through it, instead of failing on the link (CONTRACT.md §16.1).
 */
export function resolveDatabasePath(dbPath: string): string {
  let absolute = resolve(dbPath);
  for (let hops = 0; !existsSync(absolute) && isSymbolicLink(absolute); hops += 1) {
    if (hops === MAX_LINK_HOPS) throw new AdapterError('BACKEND_UNAVAILABLE', '--db is a loop of symbolic links');
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
