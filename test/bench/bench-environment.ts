import { existsSync, readFileSync, statSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';

/** Writes one progress line to stderr, so stdout carries only the JSON reports. */
export function progressLogger(suite: string): (message: string) => void {
  return (message) => process.stderr.write(`[bench ${suite}] ${message}\n`);
}

/**
 * The file-system type holding `path` (longest mount-point prefix in /proc/mounts), or 'unknown' off Linux.
 * Worth reporting because synchronous=FULL timings mean nothing without knowing whether fsync hits a disk
 * or tmpfs.
 */
export function fileSystemType(path: string): string {
  if (!existsSync('/proc/mounts')) return 'unknown';
  let best = { mountPoint: '', type: 'unknown' };
  for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
    const [, mountPoint, type] = line.split(' ');
    if (!mountPoint || !type) continue;
    const inside = path === mountPoint || path.startsWith(mountPoint.endsWith('/') ? mountPoint : `${mountPoint}/`);
    if (inside && mountPoint.length > best.mountPoint.length) best = { mountPoint, type };
  }
  return best.type;
}

/** Machine facts that change what the numbers mean: Node, CPU, memory, temp file system, SQLite builds. */
export function describeEnvironment(tempDir: string,
  runtime: { sqliteVersion: string; sqliteVecVersion: string }): Record<string, unknown> {
  const processors = cpus();
  return {
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpus: processors.length,
    cpu_model: processors[0]?.model ?? 'unknown',
    memory_gib: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    temp_fs: fileSystemType(tempDir),
    sqlite: runtime.sqliteVersion,
    sqlite_vec: runtime.sqliteVecVersion,
  };
}

/** Size in bytes of a database file and its -wal companion (a missing file counts 0). */
export function databaseBytes(dbPath: string): { db_bytes: number; wal_bytes: number } {
  const size = (path: string) => (existsSync(path) ? statSync(path).size : 0);
  return { db_bytes: size(dbPath), wal_bytes: size(`${dbPath}-wal`) };
}
