import {
  closeSync, constants, existsSync, lstatSync, mkdirSync, openSync, readFileSync,
  realpathSync, renameSync, statSync, unlinkSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { AdapterError } from '../core/adapter-error.js';
import { compactUtcStamp } from '../core/time.js';
import { chmodDirectory, createFile, fsyncPath } from '../storage/durable-files.js';
import { loadFlock } from '../storage/native.js';

/** A host's config file as found: where it really is (symlinks followed), its text and mode, or absent. */
export interface ConfigFile {
  /** The path the host reads, as named to the user. */
  readonly path: string;
  /** The file that is edited: the real path behind a symlink (a dotfile manager's link stays a link). */
  readonly target: string;
  /** The text, or null when the file does not exist. */
  readonly text: string | null;
  /** Permission bits of the existing file. */
  readonly mode: number | null;
}

const NEW_FILE_MODE = 0o600;
const NEW_DIRECTORY_MODE = 0o700;

/**
 * Runs one file step, turning a system error (EACCES, EISDIR, ENOTDIR, ENOSPC, ...) into BACKEND_UNAVAILABLE that
 * names the file, the step and the system code, so the user gets one line instead of a stack.
 */
function fileStep<T>(step: string, path: string, run: () => T): T {
  try {
    return run();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (error instanceof AdapterError || typeof code !== 'string') throw error;
    throw new AdapterError('BACKEND_UNAVAILABLE', `cannot ${step} ${path} (${code})`);
  }
}

/** Reads a config file; `text` null when it does not exist. BACKEND_UNAVAILABLE when it cannot be read. */
export function readConfigFile(path: string): ConfigFile {
  if (!existsSync(path)) {
    // A link whose target is missing (a dotfiles manager not run yet) is not replaced by a plain file.
    if (isLink(path)) {
      throw new AdapterError('VERIFY_FAILED', `${path} is a symbolic link to a file that does not exist; `
        + 'create its target or remove the link, then rerun');
    }
    return Object.freeze({ path, target: path, text: null, mode: null });
  }
  return fileStep('read', path, () => {
    const target = realpathSync(path);
    const stat = statSync(target);
    // A device, FIFO or socket (a config linked to /dev/null): reading a FIFO never ends, and the atomic replace
    // would put a regular file where the device was (as root, even /dev/null). A directory fails its read (EISDIR).
    if (!stat.isFile() && !stat.isDirectory()) {
      throw new AdapterError('VERIFY_FAILED', `${path} is not a regular file (a device, FIFO or socket); point it at `
        + 'a config file or remove it, then rerun');
    }
    return Object.freeze({ path, target, text: utf8Text(path, readFileSync(target)), mode: stat.mode & 0o7777 });
  });
}

/**
 * The file's bytes as UTF-8 text (TOML, JSON and YAML configs are UTF-8); VERIFY_FAILED when they are not, instead
 * of decoding them with replacement characters that the rewritten file would then keep in place of the user's bytes.
 */
function utf8Text(path: string, bytes: Buffer): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new AdapterError('VERIFY_FAILED', `${path} is not UTF-8 text; it was left as it was: fix its encoding or `
      + 'move it away, then rerun');
  }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Copies the existing file to `<file>.factlane-backup-<stamp>` beside it (a `-2`, `-3`... suffix when that name is
 * taken; never overwritten), with the same mode, fsynced. Returns the backup's path. BACKEND_UNAVAILABLE when the
 * copy cannot be made (the file itself is left as it was).
 */
export function backupConfigFile(file: ConfigFile, now: Date): string {
  return fileStep('back up', file.target, () => copyBeside(file, now));
}

function copyBeside(file: ConfigFile, now: Date): string {
  const base = `${file.target}.factlane-backup-${compactUtcStamp(now)}`;
  for (let attempt = 1; ; attempt += 1) {
    const backup = attempt === 1 ? base : `${base}-${attempt}`;
    try {
      // The text read before, not the name again: that may name another file by now.
      createFile(backup, file.text ?? '', file.mode ?? NEW_FILE_MODE, file.target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw error;
    }
    fsyncPath(dirname(backup));
    return backup;
  }
}

/**
 * Replaces (or creates) the file atomically with `text`: a temporary file beside it with the existing file's mode
 * (0600 for a new file), and its owner when run as root, written and fsynced, renamed over it, then the directory
 * fsynced. Missing parent
 * directories are created 0700. A reader sees the old file or the new one, never a part. BACKEND_UNAVAILABLE when
 * a step fails; the temporary file is removed, and the file is left as it was unless the rename was done.
 */
export function writeConfigAtomically(file: ConfigFile, text: string): void {
  fileStep('write', file.target, () => replaceFile(file, text));
}

function replaceFile(file: ConfigFile, text: string): void {
  createPrivateDirectories(dirname(file.target));
  const unique = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const temporary = join(dirname(file.target), `.${basename(file.target)}.factlane-${unique}.tmp`);
  try {
    // An existing file keeps its own mode. Run as root (sudo keeping HOME), the new file would be root's: the user
    // could no longer read their config, so it takes the existing file's owner.
    createFile(temporary, text, file.mode ?? NEW_FILE_MODE, file.text !== null ? file.target : undefined);
    renameSync(temporary, file.target);
  } catch (error) {
    try {
      unlinkSync(temporary);
    } catch {
      // Already renamed or never created.
    }
    throw error;
  }
  fsyncPath(dirname(file.target));
}

/**
 * Runs `work` (read, plan, back up, replace) holding an exclusive flock of the config file's directory, created first
 * if missing: two setups at once each read the file the other left, so the second sees the first's entry instead of
 * silently replacing it. BACKEND_UNAVAILABLE when the directory cannot be made or locked.
 */
export function withConfigLock<T>(path: string, work: () => T): T {
  const dir = dirname(path);
  const fd = fileStep('lock', dir, () => {
    createPrivateDirectories(dir);
    const opened = openSync(dir, constants.O_RDONLY);
    try {
      loadFlock()(opened, 'ex');
    } catch (error) {
      closeSync(opened);
      throw error;
    }
    return opened;
  });
  try {
    return work();
  } finally {
    closeSync(fd); // releases the lock
  }
}

/** Creates the missing directories of `dir`, each 0700 whatever the umask. Throws the system error. */
function createPrivateDirectories(dir: string): void {
  const missing: string[] = [];
  for (let at = dir; !existsSync(at); at = dirname(at)) missing.unshift(at);
  for (const created of missing) {
    mkdirSync(created, { mode: NEW_DIRECTORY_MODE });
    chmodDirectory(created, NEW_DIRECTORY_MODE);
    fsyncPath(dirname(created));
  }
}
