import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync, constants, existsSync, fchmodSync, fchownSync, fsyncSync, lstatSync, mkdirSync, openSync,
  readdirSync, readSync, realpathSync, renameSync, rmdirSync, statSync, unlinkSync, writeSync,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { AdapterError } from '../core/adapter-error.js';

/** Every file SQLite may read or write for the database at `path`: the file, its WAL, shared memory and journal. */
export function sqliteFiles(path: string): string[] {
  return ['', ...SQLITE_COMPANION_SUFFIXES].map((suffix) => `${path}${suffix}`);
}

/**
 * True when anything has the name `path`, a dangling symbolic link included: a target a command must not overwrite.
 * `existsSync` follows links, so a link to a missing file passes it, and SQLite would then open through the link.
 */
export function nameTaken(path: string): boolean {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false; // as existsSync: a parent that is no directory, or cannot be searched; the write then says why
  }
}

/** The files SQLite keeps beside a database. */
const SQLITE_COMPANION_SUFFIXES = ['-wal', '-shm', '-journal'] as const;

/** The writer queue's sidecar lock file's suffix: `<db>-writer`, beside the database (STORAGE.md §2, §6). */
export const WRITER_SIDECAR_SUFFIX = '-writer';

/**
 * The file whose -wal, -shm, -journal or -writer `path` would be, when its name ends in one of those suffixes and that
 * file exists: SQLite would take a database written at `path` for that file's companion, and replay or delete it (the
 * writer queue, for a -writer, would lock it).
 */
export function companionOwner(path: string): string | undefined {
  const suffix = [...SQLITE_COMPANION_SUFFIXES, WRITER_SIDECAR_SUFFIX].find((name) => path.endsWith(name));
  const owner = suffix === undefined ? undefined : path.slice(0, -suffix.length);
  return owner !== undefined && existsSync(owner) && statSync(owner).isFile() ? owner : undefined;
}

/** The manifest `factlane-admin backup` writes beside a backup FILE: FILE.manifest.json (OPERATIONS.md §4.1). */
export function backupManifestPath(path: string): string {
  return `${path}.manifest.json`;
}

/**
 * BACKEND_UNAVAILABLE (not retryable) when `path` is a non-empty file with a backup's manifest beside it: a backup is
 * restored, never opened for writing, which switches it to WAL mode and leaves it matching its manifest no more, so it
 * could not be restored (docs/decisions/0032). An absent or empty file is no backup: it is created as usual. Checked
 * before anything opens the file for writing, and by the commands that change files first (a backup of it, a mode).
 */
export function assertNotABackup(path: string): void {
  if (!existsSync(backupManifestPath(path)) || !existsSync(path) || statSync(path).size === 0) return;
  throw new AdapterError('BACKEND_UNAVAILABLE', 'the database is a backup (its FILE.manifest.json lies beside it): '
    + 'opening it for writing would change it, and it would no longer restore; restore it with factlane-admin restore '
    + '--from FILE --db NEW and use NEW (to use this file as a database anyway, move its manifest away)',
  { retryable: false });
}

/**
 * The size and SHA-256 (64 lower-case hex digits) of a file, read through one descriptor in chunks: a backup may
 * be larger than the 2 GiB Node reads into one buffer.
 */
export function fileDigest(path: string): { bytes: number; sha256: string } {
  const hash = createHash('sha256');
  const chunk = Buffer.allocUnsafe(1 << 20);
  const fd = openSync(path, 'r');
  let bytes = 0;
  try {
    for (let read = readSync(fd, chunk); read > 0; read = readSync(fd, chunk)) {
      hash.update(chunk.subarray(0, read));
      bytes += read;
    }
  } finally {
    closeSync(fd);
  }
  return { bytes, sha256: hash.digest('hex') };
}

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
      try {
        mkdirSync(dir, { mode: 0o700 });
      } catch (error) {
        // Another process starting on the same new path made it first (STORAGE.md §10 step 4: continue as if it
        // existed); it is that process's to set up, and anything but a directory is still an error.
        if ((error as NodeJS.ErrnoException).code === 'EEXIST' && statSync(dir).isDirectory()) continue;
        throw error;
      }
      created.push(dir);
      chmodDirectory(dir, 0o700);
      fsyncPath(dirname(dir));
    }
  } catch (error) {
    removeDirectories(created);
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new AdapterError('BACKEND_UNAVAILABLE', `cannot create the directory the database goes in (${code})`);
  }
  return created;
}

/**
 * Gives the open file `fd` the owner and group of `original` when this process runs as root: a file that replaces
 * another (a sanitized database image, a host config) owned by root would lock its user out. Run by the user, it is
 * theirs. Through the descriptor, never by name: the user who owns the directory could swap the name for a link to
 * a file of root's between the file's creation and a chown by path.
 */
export function keepOwner(original: string, fd: number): void {
  if (process.geteuid?.() !== 0) return;
  const { uid, gid } = statSync(original);
  fchownSync(fd, uid, gid);
}

/**
 * Run as root, BACKEND_UNAVAILABLE (not retryable) when a user other than root could change what `file`'s path
 * names: a directory on the way (its nearest existing ancestors, up to `/`) owned by another user, or writable by
 * group or others without the sticky bit. SQLite writes a copy by name, and that user could swap the name for a link
 * to a file of root's between its creation and SQLite's open (decision 0044). Run by anyone else, it returns.
 */
export function assertRootOnlyPath(file: string): void {
  if (process.geteuid?.() !== 0) return;
  let dir = resolve(dirname(file));
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  // The path as written (a link on it can be changed by its directory's owner) and the real one (the directories a
  // link leads through are on the way too).
  for (const start of new Set([dir, realpathSync(dir)])) {
    for (let at = start; ; at = dirname(at)) {
      const { uid, mode } = statSync(at);
      if (uid !== 0 || ((mode & 0o022) !== 0 && (mode & 0o1000) === 0)) {
        throw new AdapterError('BACKEND_UNAVAILABLE', 'run as root, backup, restore and migrate up --backup write '
          + 'only where no other user can change the path: a directory on the way belongs to another user or is '
          + 'writable by others; write elsewhere, or run the command as that user', { retryable: false });
      }
      if (dirname(at) === at) break;
    }
  }
}

/**
 * Sets a directory this process just made to `mode`, through a descriptor that refuses a symbolic link: a name the
 * owner of the parent swapped meanwhile is not followed (ENOTDIR).
 */
export function chmodDirectory(dir: string, mode: number): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
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

/**
 * Writes all of `text` at the file's position: one write may take only part of it (a disk that fills meanwhile), and
 * the next one then says why (ENOSPC) instead of a file cut short passing for a whole one.
 */
export function writeAll(fd: number, text: string): void {
  const bytes = Buffer.from(text, 'utf8');
  for (let written = 0; written < bytes.length;) written += writeSync(fd, bytes, written, bytes.length - written);
}

/**
 * Creates `path` with `mode` whatever the umask, failing when it exists (exclusive create), writes `text` and fsyncs
 * it; with `ownerOf`, it takes that file's owner when run as root (keepOwner). Mode and owner go through the
 * descriptor, never the name. Throws the system error.
 */
export function createFile(path: string, text: string, mode: number, ownerOf?: string): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
  try {
    fchmodSync(fd, mode);
    if (ownerOf !== undefined) keepOwner(ownerOf, fd);
    writeAll(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** createFile with mode 0600. */
export function createPrivateFile(path: string, text = '', ownerOf?: string): void {
  createFile(path, text, 0o600, ownerOf);
}

/** True while process `pid` runs (EPERM: it runs, as another user). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * `.FILE.<pid>.<nonce>.tmp` beside `file`: the random nonce (16 hex digits) makes a name that another user of a shared
 * directory (`/tmp`, where root may write a backup) cannot plant a file, a `-journal` or a `-wal` under beforehand.
 * Files written together (a backup and its manifest) share one nonce. removeStaleTemporaries knows the shape.
 */
export function temporaryName(file: string, nonce = randomBytes(8).toString('hex')): string {
  return join(dirname(file), `.${basename(file)}.${process.pid}.${nonce}.tmp`);
}

/** The size of the file at `path`: 0 when there is none, null when it cannot be read. */
export function fileBytes(path: string): number | null {
  try {
    return statSync(path).size;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 0 : null;
  }
}

// What follows `.FILE.` in a temporary name, the pid captured; the nonce is optional (releases before stop 45).
const TEMPORARY_TAIL = /^(?:manifest\.json\.)?(\d+)(?:\.[0-9a-f]{16})?\.tmp(?:-journal|-wal|-shm)?$/;

/**
 * Removes what a run writing `file` killed before its own clean-up (kill -9, a power cut) left under its temporary
 * names: `.FILE.<pid>.<nonce>.tmp` and a backup's `.FILE.manifest.json.<pid>.<nonce>.tmp` (and the names without a
 * nonce that releases before stop 45 used), with their -journal, -wal or -shm, for a pid that no longer runs. A full
 * copy of the database under a hidden name would otherwise stay for good (OPERATIONS.md §4.1: a failed run leaves no
 * temporary file), and recover's state and receipt temporaries pile up. A running pid's files are another run's.
 */
export function removeStaleTemporaries(file: string): void {
  const directory = dirname(file);
  const prefix = `.${basename(file)}.`;
  let names: string[];
  try {
    names = readdirSync(directory);
  } catch {
    return; // the directory's own error comes with the temporary file
  }
  for (const name of names) {
    const pid = name.startsWith(prefix) ? TEMPORARY_TAIL.exec(name.slice(prefix.length))?.[1] : undefined;
    if (pid === undefined || isRunning(Number(pid))) continue;
    try {
      unlinkSync(join(directory, name));
    } catch {
      // Removed meanwhile.
    }
  }
}

/**
 * Replaces `path` atomically with `text`: a 0600 temporary file beside it, written and fsynced, renamed over `path`,
 * then the directory fsynced. A reader sees the old content or the new, never a part. Throws the system error; the
 * temporary file is removed on failure.
 */
export function writePrivateFileAtomic(path: string, text: string): void {
  removeStaleTemporaries(path);
  const temporary = temporaryName(path);
  try {
    createPrivateFile(temporary, text);
    renameSync(temporary, path);
  } catch (error) {
    try {
      unlinkSync(temporary);
    } catch {
      // Already renamed or never created.
    }
    throw error;
  }
  fsyncPath(dirname(path));
}
