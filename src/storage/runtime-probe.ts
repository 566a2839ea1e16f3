import { AdapterError } from '../core/adapter-error.js';
import { SQLITE_MINIMUM_VERSION, SQLITE_VEC_MINIMUM_VERSION } from '@factlane/schema';
import { Database, loadFlock, loadSqliteVec, type SqliteConnection } from './native.js';

/** What the linked runtime offers, as read by probeRuntime. */
export interface RuntimeReport {
  readonly sqliteVersion: string;
  readonly sqliteVecVersion: string;
  readonly fts5: boolean;
}

/** Options of probeRuntime. */
export interface RuntimeProbeOptions {
  /** Source of the linked SQLite version; injectable so a test can present an older runtime. */
  readonly sqliteVersion?: (connection: SqliteConnection) => string;
}

function versionParts(version: string): number[] {
  return version.replace(/^v/, '').split(/[.-]/).slice(0, 3).map((part) => Number.parseInt(part, 10) || 0);
}

/** True when dotted `version` is at least `minimum` (numeric comparison, `v` prefix allowed). */
export function versionAtLeast(version: string, minimum: string): boolean {
  const have = versionParts(version);
  const need = versionParts(minimum);
  for (let i = 0; i < 3; i += 1) {
    if ((have[i] ?? 0) !== (need[i] ?? 0)) return (have[i] ?? 0) > (need[i] ?? 0);
  }
  return true;
}

/** The part of the runtime a probe failure names: recovery holds on each with its own code (OPERATIONS.md §5.3). */
export type RuntimeComponent = 'sqlite' | 'sqlite-vec' | 'flock';

/** A BACKEND_COMPATIBILITY_MISMATCH of the runtime probe, naming the component that failed. */
export class RuntimeRefusal extends AdapterError {
  readonly component: RuntimeComponent;

  constructor(component: RuntimeComponent, message: string, cause?: unknown) {
    super('BACKEND_COMPATIBILITY_MISMATCH', message, { cause });
    this.component = component;
  }
}

function refuse(message: string, cause?: unknown, component: RuntimeComponent = 'sqlite'): AdapterError {
  return new RuntimeRefusal(component, message, cause);
}

/**
 * Probes the runtime on an in-memory connection, before any file is created or opened (STORAGE.md §1):
 * SQLite ≥ 3.42.0 read from the linked library, FTS5 compiled in, sqlite-vec ≥ 0.1.6 loadable, and a
 * working flock binding. Any failure throws BACKEND_COMPATIBILITY_MISMATCH.
 */
export function probeRuntime(options: RuntimeProbeOptions = {}): RuntimeReport {
  const connection = new Database(':memory:');
  try {
    const sqliteVersion = options.sqliteVersion
      ? options.sqliteVersion(connection)
      : (connection.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
    if (!versionAtLeast(sqliteVersion, SQLITE_MINIMUM_VERSION)) {
      throw refuse(`linked SQLite ${sqliteVersion} is older than the required ${SQLITE_MINIMUM_VERSION}; reinstall `
        + `better-sqlite3 12.x`);
    }
    try {
      connection.exec('CREATE VIRTUAL TABLE temp.fts5_probe USING fts5(x)');
    } catch (error) {
      throw refuse('the linked SQLite has no FTS5 module', error);
    }
    let sqliteVecVersion: string;
    try {
      loadSqliteVec(connection);
      sqliteVecVersion = (connection.prepare('SELECT vec_version() AS v').get() as { v: string }).v;
    } catch (error) {
      throw refuse('the sqlite-vec extension cannot be loaded', error, 'sqlite-vec');
    }
    if (!versionAtLeast(sqliteVecVersion, SQLITE_VEC_MINIMUM_VERSION)) {
      throw refuse(`sqlite-vec ${sqliteVecVersion} is older than the required ${SQLITE_VEC_MINIMUM_VERSION}`, undefined,
        'sqlite-vec');
    }
    try {
      loadFlock();
    } catch (error) {
      throw refuse('the flock binding (fs-ext) is not built for this Node.js', error, 'flock');
    }
    return Object.freeze({ sqliteVersion, sqliteVecVersion, fts5: true });
  } finally {
    connection.close();
  }
}
