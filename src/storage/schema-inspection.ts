import { STORAGE_CONTRACT_VERSION } from '@factlane/schema';
import type { MigrationFile } from './migration-files.js';
import type { SqliteConnection } from './native.js';

/** One applied migration as recorded in `schema_migrations`, compared with the shipped file. */
export interface AppliedMigration {
  readonly version: number;
  readonly name: string;
  readonly checksum: string;
  /** True when a shipped file of that version exists and has the recorded checksum. */
  readonly checksumOk: boolean;
}

/** What a database file holds, read without changing it. */
export interface SchemaFindings {
  /** `EMPTY`: no schema objects; `FOREIGN`: objects but not FactLane's tables; `FACTLANE`: has both tables. */
  readonly kind: 'EMPTY' | 'FOREIGN' | 'FACTLANE';
  readonly applied: readonly AppliedMigration[];
  /** Highest applied version, 0 when none. */
  readonly schemaVersion: number;
  /** True when applied versions are exactly 1…n. */
  readonly contiguous: boolean;
  readonly contractVersion: string | null;
  readonly interlockPresent: boolean;
  /** The stored `embedding_profile` binding text, or null. */
  readonly bindingText: string | null;
  readonly meta: Readonly<Record<string, string>>;
  /** Dimension declared by the `fact_vec` table definition, or null when absent. */
  readonly vectorDimension: number | null;
}

/** Reads the vector dimension from a `CREATE VIRTUAL TABLE … vec0(… float[D] …)` statement. */
export function vectorDimensionOf(createSql: string | null | undefined): number | null {
  const match = createSql ? /\bembedding\s+float\[(\d+)\]/i.exec(createSql) : null;
  return match ? Number(match[1]) : null;
}

/**
 * Inspects a database through any connection (read-only is enough, sqlite-vec not needed). Throws the
 * raw SQLite error for a file that is not a database; callers translate it.
 */
export function inspectSchema(connection: SqliteConnection, shipped: readonly MigrationFile[]): SchemaFindings {
  const objects = connection.prepare('SELECT type, name, sql FROM sqlite_master').all() as { type: string; name: string; sql: string | null }[];
  const names = new Set(objects.map((o) => o.name));
  const empty: SchemaFindings = {
    kind: 'EMPTY', applied: [], schemaVersion: 0, contiguous: true, contractVersion: null,
    interlockPresent: false, bindingText: null, meta: {}, vectorDimension: null,
  };
  if (objects.length === 0) return empty;
  if (!names.has('schema_migrations') || !names.has('adapter_meta')) return { ...empty, kind: 'FOREIGN' };

  const shippedByVersion = new Map(shipped.map((file) => [file.version, file]));
  const rows = connection.prepare('SELECT version, name, checksum FROM schema_migrations ORDER BY version').all() as { version: number; name: string; checksum: string }[];
  const applied = rows.map((row) => ({ ...row, checksumOk: shippedByVersion.get(row.version)?.checksum === row.checksum }));
  const meta = Object.fromEntries((connection.prepare('SELECT key, value FROM adapter_meta').all() as { key: string; value: string }[]).map((r) => [r.key, r.value]));
  const vecSql = objects.find((o) => o.name === 'fact_vec' && o.type === 'table')?.sql;
  return {
    kind: 'FACTLANE',
    applied,
    schemaVersion: applied.at(-1)?.version ?? 0,
    contiguous: applied.every((row, index) => row.version === index + 1),
    contractVersion: meta.contract_version ?? null,
    interlockPresent: meta.sensitive_recovery_interlock !== undefined,
    bindingText: meta.embedding_profile ?? null,
    meta,
    vectorDimension: vectorDimensionOf(vecSql),
  };
}

/** Why a FactLane database cannot be served by this release, or null when it can. Messages are safe. */
export function schemaRefusal(findings: SchemaFindings, shipped: readonly MigrationFile[], bindingDimension: number | null): string | null {
  const latest = shipped.at(-1)?.version ?? 0;
  if (findings.kind === 'FOREIGN') return 'the file is an SQLite database FactLane did not create; point --db at a new file';
  if (findings.kind !== 'FACTLANE') return null;
  if (findings.schemaVersion > latest) {
    return `the database schema version ${findings.schemaVersion} is newer than this release (${latest}); run a newer FactLane`;
  }
  if (findings.contractVersion !== String(STORAGE_CONTRACT_VERSION)) {
    return `the database storage contract version ${findings.contractVersion ?? 'missing'} is not ${STORAGE_CONTRACT_VERSION}`;
  }
  if (!findings.contiguous || findings.applied.length === 0) return 'the applied migrations are not contiguous from 1; the database was altered outside FactLane';
  const tampered = findings.applied.filter((row) => !row.checksumOk);
  if (tampered.length > 0) {
    return `applied migration ${tampered.map((row) => String(row.version).padStart(4, '0')).join(', ')} does not match the checksum shipped with this release`;
  }
  if (findings.schemaVersion < latest) {
    return `the database schema version ${findings.schemaVersion} is older than this release (${latest}); run \`factlane-migrate up --db PATH --backup FILE\``;
  }
  if (bindingDimension !== null && findings.vectorDimension !== bindingDimension) {
    return `the vector table dimension ${findings.vectorDimension ?? 'missing'} does not match the embedding binding (${bindingDimension})`;
  }
  return null;
}

/** The `profile_id` of a stored binding text, or null when absent or malformed. */
export function bindingProfileId(bindingText: string | null): string | null {
  try {
    const id = bindingText === null ? null : (JSON.parse(bindingText) as { profile_id?: unknown }).profile_id;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}
