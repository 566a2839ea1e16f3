import { STORAGE_CONTRACT_VERSION } from '@factlane/schema';
import { AdapterError } from '../core/adapter-error.js';
import type { MigrationFile } from './migration-files.js';
import { Database, loadSqliteVec, type SqliteConnection } from './native.js';

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
  /** True when applied versions are exactly 1…n with n ≥ 1 (false for an empty ledger). */
  readonly contiguous: boolean;
  readonly contractVersion: string | null;
  readonly interlockPresent: boolean;
  /** The stored `embedding_profile` binding text, or null. */
  readonly bindingText: string | null;
  readonly meta: Readonly<Record<string, string>>;
  /** Dimension declared by the `fact_vec` table definition, or null when absent. */
  readonly vectorDimension: number | null;
  /** The vec0 tables that miss a shadow table of their own (missingShadowTables); empty when every one is whole. */
  readonly damagedVectorTables: readonly DamagedVectorTable[];
}

/** A vec0 table whose definition makes shadow tables the file no longer has. */
export interface DamagedVectorTable {
  readonly table: string;
  readonly missing: readonly string[];
}

const VEC0_TABLE = /^CREATE\s+VIRTUAL\s+TABLE\s+"?(\w+)"?\s+USING\s+vec0\s*\(/i;
const SHADOW_TABLES = new Map<string, readonly string[]>();

/**
 * The shadow tables sqlite-vec creates for one vec0 definition, learnt by running the definition in an in-memory
 * database (sqlite-vec's own rule, whatever columns the table has); remembered per definition.
 */
function shadowTablesOf(createSql: string, table: string): readonly string[] {
  let names = SHADOW_TABLES.get(createSql);
  if (names === undefined) {
    const scratch = new Database(':memory:');
    try {
      loadSqliteVec(scratch);
      // One statement only (prepare refuses more): the text comes from the file, and exec would run whatever a
      // tampered sqlite_master appended to it, while SQLite itself compiles only the first statement.
      scratch.prepare(createSql).run();
      names = scratch.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name <> ? ORDER BY name").pluck()
        .all(table) as string[];
    } finally {
      scratch.close();
    }
    SHADOW_TABLES.set(createSql, names);
  }
  return names;
}

/**
 * The vec0 tables of a file that miss shadow tables (a raw writer dropped one). sqlite-vec does not check them when it
 * connects, and a point lookup on a table without its `_rowids` ends the process with a segmentation fault, so
 * nothing may query such a table: the file is damaged (`BACKEND_CORRUPT`, assertVectorTablesWhole).
 */
export function damagedVectorTables(connection: SqliteConnection): DamagedVectorTable[] {
  return missingShadowTables(schemaObjects(connection));
}

type SchemaRow = { type: string; name: string; sql: string | null };

function schemaObjects(connection: SqliteConnection): SchemaRow[] {
  return connection.prepare('SELECT type, name, sql FROM sqlite_master').all() as SchemaRow[];
}

function missingShadowTables(objects: readonly SchemaRow[]): DamagedVectorTable[] {
  const tables = new Set(objects.filter((o) => o.type === 'table').map((o) => o.name));
  const damaged: DamagedVectorTable[] = [];
  for (const object of objects) {
    const table = object.type === 'table' && object.sql !== null ? VEC0_TABLE.exec(object.sql)?.[1] : undefined;
    if (table === undefined) continue;
    const missing = shadowTablesOf(object.sql!, table).filter((name) => !tables.has(name));
    if (missing.length > 0) damaged.push({ table, missing });
  }
  return damaged.sort((a, b) => a.table.localeCompare(b.table));
}

/** What a damaged vector table lacks, for a message or an audit sample: `fact_vec (fact_vec_rowids missing)`. */
export function vectorDamageText(damaged: readonly DamagedVectorTable[]): string {
  return damaged.map((d) => `${d.table} (${d.missing.join(', ')} missing)`).join('; ');
}

/** BACKEND_CORRUPT when a vec0 table of the file misses a shadow table: querying it could crash the process. */
export function assertVectorTablesWhole(findings: SchemaFindings): void {
  if (findings.damagedVectorTables.length === 0) return;
  const damage = vectorDamageText(findings.damagedVectorTables);
  throw new AdapterError('BACKEND_CORRUPT',
    `a vector table lost a shadow table: ${damage}; run factlane-admin verify, then restore a backup `
    + '(factlane-admin restore)');
}

/** Reads the vector dimension from a `CREATE VIRTUAL TABLE … vec0(… float[D] …)` statement. */
export function vectorDimensionOf(createSql: string | null | undefined): number | null {
  const match = createSql ? /\bembedding\s+float\[(\d+)\]/i.exec(createSql) : null;
  return match ? Number(match[1]) : null;
}

/** The findings of a file with no schema object (an empty or a new file). */
export const EMPTY_FINDINGS: SchemaFindings = Object.freeze({
  kind: 'EMPTY', applied: [], schemaVersion: 0, contiguous: false, contractVersion: null,
  interlockPresent: false, bindingText: null, meta: {}, vectorDimension: null, damagedVectorTables: [],
});

/**
 * Inspects a database through any connection (read-only is enough, sqlite-vec not needed). Throws the
 * raw SQLite error for a file that is not a database; callers translate it.
 */
export function inspectSchema(connection: SqliteConnection, shipped: readonly MigrationFile[]): SchemaFindings {
  const objects = schemaObjects(connection);
  const names = new Set(objects.map((o) => o.name));
  if (objects.length === 0) return EMPTY_FINDINGS;
  if (!names.has('schema_migrations') || !names.has('adapter_meta')) return { ...EMPTY_FINDINGS, kind: 'FOREIGN' };

  const shippedByVersion = new Map(shipped.map((file) => [file.version, file]));
  const rows = connection.prepare('SELECT version, name, checksum FROM schema_migrations ORDER BY version').all() as {
    version: number; name: string; checksum: string;
  }[];
  const applied = rows.map((row) => ({
    ...row, checksumOk: shippedByVersion.get(row.version)?.checksum === row.checksum,
  }));
  const meta = Object.fromEntries((connection.prepare('SELECT key, value FROM adapter_meta').all() as {
    key: string; value: string;
  }[]).map((r) => [r.key, r.value]));
  const vecSql = objects.find((o) => o.name === 'fact_vec' && o.type === 'table')?.sql;
  return {
    kind: 'FACTLANE',
    applied,
    schemaVersion: applied.at(-1)?.version ?? 0,
    // An empty ledger is not contiguous from 1: a FactLane file always records its first migration.
    contiguous: applied.length > 0 && applied.every((row, index) => row.version === index + 1),
    contractVersion: meta.contract_version ?? null,
    interlockPresent: meta.sensitive_recovery_interlock !== undefined,
    bindingText: meta.embedding_profile ?? null,
    meta,
    vectorDimension: vectorDimensionOf(vecSql),
    damagedVectorTables: missingShadowTables(objects),
  };
}

/** Why a FactLane database cannot be served by this release, or null when it can. Messages are safe. */
export function schemaRefusal(
  findings: SchemaFindings, shipped: readonly MigrationFile[], bindingDimension: number | null,
): string | null {
  const latest = shipped.at(-1)?.version ?? 0;
  if (findings.kind === 'FOREIGN')
    return 'the file is an SQLite database FactLane did not create; point --db at a new file';
  if (findings.kind !== 'FACTLANE') return null;
  if (findings.schemaVersion > latest) {
    return `the database schema version ${findings.schemaVersion} is newer than this release (${latest}); run a newer `
      + `FactLane`;
  }
  if (findings.contractVersion !== String(STORAGE_CONTRACT_VERSION)) {
    return `the database storage contract version ${findings.contractVersion ?? 'missing'} is not `
      + `${STORAGE_CONTRACT_VERSION}`;
  }
  if (!findings.contiguous)
    return 'the applied migrations are not contiguous from 1; the database was altered outside FactLane';
  const tampered = findings.applied.filter((row) => !row.checksumOk);
  if (tampered.length > 0) {
    return `applied migration ${tampered.map((row) => String(row.version).padStart(4, '0')).join(', ')} does not match `
      + `the checksum shipped with this release`;
  }
  if (findings.schemaVersion < latest) {
    return `the database schema version ${findings.schemaVersion} is older than this release (${latest}); run `
      + `\`factlane-migrate up --db PATH --backup FILE\``;
  }
  if (bindingDimension !== null && findings.vectorDimension !== bindingDimension) {
    return `the vector table dimension ${findings.vectorDimension ?? 'missing'} does not match the embedding binding `
      + `(${bindingDimension})`;
  }
  return null;
}

/**
 * MAINTENANCE_IN_PROGRESS when the database's recovery interlock is present (OPERATIONS.md §5.8): a purge committed
 * and its sealing is not done. Names the operation, so the operator knows which plan finishes it (a plan is found by
 * its operation_id; the interlock holds no path). `why`, when given, says what this refusal protects.
 */
export function assertNoInterlock(findings: SchemaFindings, why?: string): void {
  if (!findings.interlockPresent) return;
  let operation: unknown;
  try {
    const interlock = JSON.parse(findings.meta.sensitive_recovery_interlock ?? '{}') as { operation_id?: unknown };
    operation = interlock.operation_id;
  } catch {
    operation = undefined;
  }
  const named = typeof operation === 'string' && /^[\w.:-]{1,128}$/.test(operation) ? ` ${operation}` : '';
  throw new AdapterError('MAINTENANCE_IN_PROGRESS', `the sensitive-memory recovery${named} committed its purge and is `
    + `not sealed${why ? ` (${why})` : ''}; rerun factlane-admin recover with the plan whose operation_id it is`);
}

/** The `vector_dimension` of a stored binding text when it is an integer, or null when absent or malformed. */
export function bindingDimension(bindingText: string | null): number | null {
  try {
    const dimension = bindingText === null ? null
      : (JSON.parse(bindingText) as { vector_dimension?: unknown }).vector_dimension;
    return Number.isInteger(dimension) ? dimension as number : null;
  } catch {
    return null;
  }
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
