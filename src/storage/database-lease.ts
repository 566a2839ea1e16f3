import { closeSync, constants, fchmodSync, fstatSync, openSync, rmSync, statSync } from 'node:fs';
import { AdapterError } from '../core/adapter-error.js';
import { loadFlock } from './native.js';

/** Shared for runtimes and read-only commands, exclusive for migrate up, reembed and recover (STORAGE.md §9). */
export type LeaseMode = 'shared' | 'exclusive';

/**
 * An advisory flock on the database inode (STORAGE.md §9). The descriptor is opened before any SQLite
 * connection and must be released only after every connection of the process to the file is closed.
 */
export class DatabaseLease {
  #path: string;
  readonly mode: LeaseMode;
  /** True when acquiring the lease created the (empty) database file. */
  readonly createdFile: boolean;
  #fd: number | undefined;
  #flock = loadFlock();

  private constructor(path: string, mode: LeaseMode, fd: number, createdFile: boolean) {
    this.#path = path;
    this.mode = mode;
    this.#fd = fd;
    this.createdFile = createdFile;
  }

  /**
   * Opens a descriptor on `path` (creating the file with mode 0600 when `create` is set and it is absent)
   * and locks it without blocking. Errors: MAINTENANCE_IN_PROGRESS when a conflicting lease is held;
   * BACKEND_UNAVAILABLE when the path no longer names the locked inode or cannot be opened;
   * SOURCE_NOT_FOUND when the file is absent and `create` is not set.
   */
  static acquire(path: string, mode: LeaseMode, options: { create: boolean }): DatabaseLease {
    let fd: number;
    let createdFile = false;
    try {
      if (options.create) {
        try {
          fd = openSync(path, constants.O_RDONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
          createdFile = true;
        } catch (error) {
          // Another process created it first: continue as if it existed (STORAGE.md §10 step 4).
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
          fd = openSync(path, constants.O_RDONLY);
        }
        if (createdFile) privateNewFile(path, fd);
      } else {
        fd = openSync(path, constants.O_RDONLY);
      }
    } catch (error) {
      // With `create`, a missing file was created above: ENOENT there is the path changing under us, not absence.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && !options.create) {
        throw new AdapterError('SOURCE_NOT_FOUND', 'the database file does not exist; check --db');
      }
      // The code only (ENOTDIR: a parent is a file; EACCES: permissions), never the path: this text may reach a host.
      const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
      throw new AdapterError('BACKEND_UNAVAILABLE',
        `the database file cannot be opened (${code}); check the path and its permissions`, { cause: error });
    }
    const lease = new DatabaseLease(path, mode, fd, createdFile);
    try {
      lease.#lock(mode);
    } catch (error) {
      lease.release();
      throw error;
    }
    return lease;
  }

  #lock(mode: LeaseMode): void {
    try {
      this.#flock(this.#descriptor(), mode === 'shared' ? 'shnb' : 'exnb');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EAGAIN' || code === 'EWOULDBLOCK') {
        throw new AdapterError('MAINTENANCE_IN_PROGRESS', mode === 'shared'
          ? 'a FactLane maintenance operation holds the database; retry after it finishes'
          : 'the database is in use by another FactLane process; stop every FactLane process on it first');
      }
      throw new AdapterError('BACKEND_UNAVAILABLE', 'the database lease cannot be taken on this filesystem', {
        cause: error,
      });
    }
    this.assertSameInode();
  }

  /** The path the lease was taken through (or adopted, after a rename). */
  get path(): string {
    return this.#path;
  }

  /**
   * Names the locked inode by `path` from now on, after the caller renamed the file there while holding the lease
   * (recovery's promotion of its sanitized image, OPERATIONS.md §5.6). BACKEND_UNAVAILABLE when `path` does not
   * name the locked inode.
   */
  adoptPath(path: string): void {
    const previous = this.#path;
    this.#path = path;
    try {
      this.assertSameInode();
    } catch (error) {
      this.#path = previous;
      throw error;
    }
  }

  /** Throws BACKEND_UNAVAILABLE when the path no longer names the locked inode (file replaced or removed). */
  assertSameInode(): void {
    const held = fstatSync(this.#descriptor());
    let current;
    try {
      current = statSync(this.path);
    } catch {
      current = undefined;
    }
    if (!current || current.ino !== held.ino || current.dev !== held.dev) {
      throw new AdapterError('BACKEND_UNAVAILABLE', 'the database path changed while it was being opened; retry');
    }
  }

  /**
   * Tries to turn a shared lease exclusive without waiting; returns false when another holder exists, and the lease
   * then holds its shared lock again, or nothing (`held` false) when an exclusive holder took the file meanwhile.
   * Linux converts a flock by dropping the old lock first: a refused upgrade is left holding none.
   */
  tryUpgradeToExclusive(): boolean {
    const fd = this.#descriptor();
    try {
      this.#flock(fd, 'exnb');
      return true;
    } catch {
      try {
        this.#flock(fd, 'shnb');
      } catch {
        this.release();
      }
      return false;
    }
  }

  /** True while the descriptor is open. */
  get held(): boolean {
    return this.#fd !== undefined;
  }

  /** Closes the descriptor, dropping the lock. Call only after every SQLite connection to the file is closed. */
  release(): void {
    if (this.#fd === undefined) return;
    const fd = this.#fd;
    this.#fd = undefined;
    closeSync(fd);
  }

  #descriptor(): number {
    if (this.#fd === undefined) throw new AdapterError('BACKEND_UNAVAILABLE', 'the database lease is already released');
    return this.#fd;
  }
}

/**
 * Makes the file acquire just created mode 0600 whatever the umask; if that fails, closes `fd` and removes the file,
 * so a failed start leaves neither a descriptor nor an empty database behind.
 */
function privateNewFile(path: string, fd: number): void {
  try {
    fchmodSync(fd, 0o600);
  } catch (error) {
    closeSync(fd);
    rmSync(path, { force: true });
    throw error;
  }
}
