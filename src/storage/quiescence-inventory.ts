import { lstatSync, readdirSync, readFileSync, statSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { AdapterError } from '../core/adapter-error.js';
import { WRITER_SIDECAR_SUFFIX } from './durable-files.js';

// The quiescence inventory of incident recovery (OPERATIONS.md §5.3 checks 6 and 8). Leases are cooperative
// (STORAGE.md §9); these checks see what a lease cannot: another name for the file, and any process that has it open.

/** The database file and the SQLite sidecars that may exist beside it. */
export const DATABASE_FILE_SUFFIXES = ['', '-wal', '-shm'] as const;

/** The existing members of `<db>` + each suffix (default `''`, `-wal`, `-shm`), with their stat. */
function existingFiles(
  databasePath: string, suffixes: readonly string[] = DATABASE_FILE_SUFFIXES,
): { path: string; stats: Stats }[] {
  const files: { path: string; stats: Stats }[] = [];
  for (const suffix of suffixes) {
    try {
      files.push({ path: databasePath + suffix, stats: statSync(databasePath + suffix) });
    } catch {
      // Absent: nothing to alias or hold.
    }
  }
  return files;
}

/** The suffixes (`''`, `-wal`, `-shm`) of the database's files that have more than one hard link. */
export function hardLinkedFiles(databasePath: string): string[] {
  return existingFiles(databasePath)
    .filter(({ stats }) => stats.nlink > 1)
    .map(({ path }) => path.slice(databasePath.length) || 'db');
}

/**
 * BACKEND_UNAVAILABLE when the database, its -wal or its -shm has another name (a hard link): SQLite keeps the -wal
 * and -shm beside the name it opens, so two names of one file give two logs, and writers through both lose each
 * other's commits (docs/decisions/0031). The lease meets across names; the logs do not.
 */
export function assertOneName(path: string): void {
  const linked = hardLinkedFiles(path);
  if (linked.length === 0) return;
  const which = linked.map((suffix) => (suffix === 'db' ? 'the database file' : `its ${suffix}`)).join(' and ');
  throw new AdapterError('BACKEND_UNAVAILABLE', `${which} has another name (a hard link): SQLite keeps a -wal and -shm `
    + 'beside each name, so writes through two names corrupt the database; remove the other link (find it with '
    + 'find / -samefile; a hidden .NAME.PID.NONCE.tmp beside the file is one a killed backup or restore left) and '
    + 'start again');
}

/** Options of otherOpeners: where /proc is and which process is this one (injectable for tests). */
export interface InventoryOptions {
  readonly procRoot?: string;
  readonly selfPid?: number;
  /**
   * The user whose processes (with root's) count as holders when unreadable: the database file's owner;
   * default this process's effective user id.
   */
  readonly ownerUid?: number;
}

/**
 * How many other processes have the database, its `-wal`, `-shm` or writer sidecar open, matched by device and
 * inode through `/proc/<pid>/fd`. A process whose descriptor list cannot be read counts as holding them when it
 * belongs to the owner or root (check 8: a process that cannot be inspected is not known to be away). One whose list
 * reads but whose descriptors cannot be followed (EACCES: a container's init, a confined process) counts when it is
 * the owner's or root's and `/proc/locks` shows it holding a lock on one of those files, as every SQLite connection
 * to a WAL database does on its `-shm` (docs/decisions/0019). This process is left out.
 */
export function otherOpeners(databasePath: string, options: InventoryOptions = {}): number {
  const procRoot = options.procRoot ?? '/proc';
  const selfPid = options.selfPid ?? process.pid;
  const ownerUid = options.ownerUid ?? process.geteuid?.() ?? 0;
  // A process queued on the writer sidecar (STORAGE.md §6) holds the database as much as one that has it open.
  const suffixes = [...DATABASE_FILE_SUFFIXES, WRITER_SIDECAR_SUFFIX];
  const files = existingFiles(databasePath, suffixes).map(({ stats }) => stats);
  const wanted = new Set(files.map((stats) => `${stats.dev}:${stats.ino}`));
  if (wanted.size === 0) return 0;
  let lockHolders: ReadonlySet<number> | undefined;
  let holders = 0;
  for (const entry of readdirSync(procRoot)) {
    if (!/^[0-9]+$/.test(entry) || Number(entry) === selfPid) continue;
    const fdDir = join(procRoot, entry, 'fd');
    let descriptors: string[];
    try {
      descriptors = readdirSync(fdDir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue; // the process ended meanwhile
      if (processOwnedBy(join(procRoot, entry), ownerUid)) holders += 1;
      continue;
    }
    const seen = new Set<Opening>();
    for (const fd of descriptors) {
      seen.add(opens(join(fdDir, fd), wanted));
      if (seen.has('OPEN')) break; // the rest need no stat
    }
    if (seen.has('OPEN')) holders += 1;
    else if (seen.has('UNKNOWN') && processOwnedBy(join(procRoot, entry), ownerUid)) {
      lockHolders ??= lockingProcesses(procRoot, files);
      if (lockHolders.has(Number(entry))) holders += 1;
    }
  }
  return holders;
}

/** What one descriptor of a process is: one of the wanted files, another file, or not known (it cannot be followed). */
type Opening = 'OPEN' | 'OTHER' | 'UNKNOWN';

function opens(descriptorPath: string, wanted: ReadonlySet<string>): Opening {
  try {
    // stat follows the magic link to the open file itself, even when its name was unlinked or renamed.
    const stats = statSync(descriptorPath);
    return wanted.has(`${stats.dev}:${stats.ino}`) ? 'OPEN' : 'OTHER';
  } catch (error) {
    // ENOENT: a descriptor closed meanwhile; anything else (EACCES) leaves the descriptor unknown.
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'OTHER' : 'UNKNOWN';
  }
}

/**
 * The pids `/proc/locks` shows holding a lock (POSIX, flock or OFD) on one of `files`: each line names the holder's
 * pid and the file as `MAJOR:MINOR:INODE`, major and minor in hex. Empty when the table cannot be read.
 */
function lockingProcesses(procRoot: string, files: readonly { dev: number; ino: number }[]): ReadonlySet<number> {
  // glibc's dev_t: minor in bits 0-7 and 20-43, major in bits 8-19 and 44-63 (a JS number keeps 53 bits; kernel
  // device numbers fit in 32).
  const key = (dev: number, ino: number) => {
    const major = Math.floor(dev / 2 ** 8) % 2 ** 12 + Math.floor(dev / 2 ** 44) * 2 ** 12;
    const minor = dev % 2 ** 8 + Math.floor(dev / 2 ** 20) % 2 ** 24 * 2 ** 8;
    return `${major}:${minor}:${ino}`;
  };
  const wanted = new Set(files.map(({ dev, ino }) => key(dev, ino)));
  const pids = new Set<number>();
  let table: string;
  try {
    table = readFileSync(join(procRoot, 'locks'), 'utf8');
  } catch {
    return pids;
  }
  for (const line of table.split('\n')) {
    const match = /^\d+:\s+(?:->\s+)?\S+\s+\S+\s+\S+\s+(-?\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s/.exec(line);
    const file = match && `${parseInt(match[2]!, 16)}:${parseInt(match[3]!, 16)}:${match[4]}`;
    if (file && wanted.has(file)) pids.add(Number(match[1]));
  }
  return pids;
}

function processOwnedBy(processDir: string, ownerUid: number): boolean {
  try {
    const uid = lstatSync(processDir).uid;
    return uid === ownerUid || uid === 0;
  } catch {
    return false;
  }
}
