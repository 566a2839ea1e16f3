import { FENCE_TRIGGER_NAMES, FENCED_TABLE_OF, STORAGE_CONTRACT_VERSION } from '@factlane/schema';
import { AdapterError } from '../core/adapter-error.js';
import { renderMigration, type MigrationFile } from './migration-files.js';
import { Database, loadSqliteVec, type SqliteConnection } from './native.js';
import { onOneSnapshot } from './read-snapshot.js';
import { vectorDimensionOf, type SchemaFindings } from './schema-inspection.js';

/** One named check with its outcome; `detail` is safe to print (no paths, no content). */
export interface CheckResult {
  readonly name: string;
  readonly status: 'PASS' | 'FAIL';
  readonly detail: string;
}

/** Meta keys every FactLane database holds (STORAGE.md §4.1). */
export const REQUIRED_META_KEYS = Object.freeze([
  'contract_version', 'database_id', 'created_at', 'created_by', 'embedding_profile',
]);

/** One row of sqlite_master. */
export interface SchemaObject { type: string; name: string; tbl_name: string; sql: string | null }

/**
 * SQLite's statistics tables. Only `ANALYZE` (or `PRAGMA optimize`) makes them, no raw writer can create a table of
 * that name, and they hold no FactLane data: an operator's ANALYZE is not a schema change (decision 0043).
 */
export const STATISTICS_TABLE = /^sqlite_stat[1-4]$/;

function schemaObjects(connection: SqliteConnection): Map<string, SchemaObject> {
  const rows = connection.prepare('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name')
    .all() as SchemaObject[];
  return new Map(rows.map((row) => [row.name, row]));
}

function secureDelete(connection: SqliteConnection): number | null {
  try {
    const row = connection.prepare("SELECT v FROM fact_fts_config WHERE k = 'secure-delete'").get() as {
      v: number;
    } | undefined;
    return row?.v ?? null;
  } catch {
    return null;
  }
}

function check(name: string, ok: boolean, passDetail: string, failDetail: string): CheckResult {
  return Object.freeze({ name, status: ok ? 'PASS' : 'FAIL', detail: ok ? passDetail : failDetail });
}

/** Builds the reference schema (shipped files 1…version at `dimension`) in an in-memory database. */
function referenceObjects(shipped: readonly MigrationFile[], version: number, dimension: number): {
  objects: Map<string, SchemaObject>; secureDelete: number | null;
} {
  const reference = new Database(':memory:');
  try {
    loadSqliteVec(reference);
    for (const file of shipped.filter((f) => f.version <= version)) reference.exec(renderMigration(file, dimension));
    return { objects: schemaObjects(reference), secureDelete: secureDelete(reference) };
  } finally {
    reference.close();
  }
}

/** The vector table a `factlane-admin reembed` fills beside `fact_vec` (STORAGE.md §4.6, OPERATIONS.md §7). */
export const NEXT_VECTOR_TABLE = 'fact_vec_next';

/** The `fact_vec` and `fact_vec_next` definitions at one dimension. */
export interface VectorTableDefinitions {
  readonly current: string;
  readonly next: string;
  /** The indexes the shipped files create on `fact_vec`'s shadow tables (schema 4: its chunks by partition). */
  readonly currentIndexes: readonly string[];
  /** The same indexes on `fact_vec_next`'s shadow tables. */
  readonly nextIndexes: readonly string[];
}

/**
 * The `fact_vec` definition exactly as the shipped migrations 1…`schemaVersion` create it at `dimension`
 * (built in an in-memory reference database, as `verify` builds its reference), and the same definition
 * named `fact_vec_next`, each with the indexes the shipped files put on its shadow tables (`fact_vec_chunks`…;
 * the next table's are named `…fact_vec_next…`). Throws SCHEMA_MISMATCH when the shipped files define no
 * `fact_vec`.
 */
export function vectorTableDefinitions(
  shipped: readonly MigrationFile[], schemaVersion: number, dimension: number,
): VectorTableDefinitions {
  const { objects } = referenceObjects(shipped, schemaVersion, dimension);
  const current = objects.get('fact_vec')?.sql ?? undefined;
  const head = /^CREATE VIRTUAL TABLE fact_vec\b/;
  if (!current || !head.test(current))
    throw new AdapterError('SCHEMA_MISMATCH', 'the shipped migrations define no fact_vec vector table');
  const currentIndexes = [...objects.values()]
    .filter((object) => object.type === 'index' && object.sql !== null && object.tbl_name.startsWith('fact_vec_'))
    .map((object) => object.sql!);
  return {
    current, next: current.replace(head, `CREATE VIRTUAL TABLE ${NEXT_VECTOR_TABLE}`),
    currentIndexes, nextIndexes: currentIndexes.map((index) => index.replaceAll('fact_vec_', `${NEXT_VECTOR_TABLE}_`)),
  };
}

/** The largest vector dimension sqlite-vec's vec0 accepts. */
const MAX_VECTOR_DIMENSION = 8192;

/**
 * The objects `fact_vec_next` would bring at the dimension its definition in `actual` names, exactly as reembed
 * creates them (its shadow tables and their indexes); empty when the file holds no such table. STORAGE.md §4.6 allows
 * this work table while a reembed is unfinished, so verify, and the backup and restore checks built on it, accept it.
 */
function workTableObjects(
  actual: Map<string, SchemaObject>, shipped: readonly MigrationFile[], version: number,
): Map<string, SchemaObject> {
  const table = actual.get(NEXT_VECTOR_TABLE);
  const sql = table?.type === 'table' ? table.sql ?? '' : '';
  const dimension = /^CREATE VIRTUAL TABLE fact_vec_next USING vec0\b/i.test(sql) ? vectorDimensionOf(sql) : null;
  if (dimension === null || !(dimension >= 1 && dimension <= MAX_VECTOR_DIMENSION)) return new Map();
  const work = new Database(':memory:');
  try {
    loadSqliteVec(work);
    const definitions = vectorTableDefinitions(shipped, version, dimension);
    for (const statement of [definitions.next, ...definitions.nextIndexes]) work.exec(statement);
    return schemaObjects(work);
  } catch {
    // A definition no release writes: the table is then simply an object that differs.
    return new Map();
  } finally {
    work.close();
  }
}

function bindingWellFormed(text: string | null, tableDimension: number | null): boolean {
  if (text === null) return false;
  try {
    const binding = JSON.parse(text) as Record<string, unknown>;
    return typeof binding === 'object' && binding !== null && typeof binding.profile_id === 'string' &&
      Number.isInteger(binding.vector_dimension) && binding.vector_dimension === tableDimension;
  } catch {
    return false;
  }
}

/**
 * The `factlane-migrate verify` checks (STORAGE.md §12.3) on a connection to a FactLane database:
 * contiguous versions, shipped checksums, every schema object exactly as the shipped files define it at
 * the database's version and dimension (tables, indexes, the fences of that version, the FTS5 secure-delete option),
 * contract version, meta keys, binding well-formed, FTS5 integrity and quick_check. Read-only.
 */
export function verifySchema(
  connection: SqliteConnection, findings: SchemaFindings, shipped: readonly MigrationFile[],
): CheckResult[] {
  return onOneSnapshot(connection, () => verifyChecks(connection, findings, shipped));
}

function verifyChecks(
  connection: SqliteConnection, findings: SchemaFindings, shipped: readonly MigrationFile[],
): CheckResult[] {
  const results: CheckResult[] = [];
  results.push(check('versions_contiguous', findings.contiguous,
    `versions 1…${findings.schemaVersion}`, 'applied versions are not exactly 1…n'));
  const latest = shipped.at(-1)?.version ?? 0;
  const known = findings.schemaVersion <= latest;
  results.push(check('release_knows_version', known, `schema version ${findings.schemaVersion}`,
    `schema version ${findings.schemaVersion} is newer than this release`));
  // Versions past this release's have no shipped checksum: release_knows_version reports them.
  const tampered = findings.applied.filter((row) => row.version <= latest && !row.checksumOk).map((row) => row.version);
  results.push(check('checksums_match', tampered.length === 0, 'every applied migration matches its shipped checksum',
    `checksum differs for version ${tampered.join(', ')}`));
  results.push(check('contract_version', findings.contractVersion === String(STORAGE_CONTRACT_VERSION),
    `contract version ${STORAGE_CONTRACT_VERSION}`, `contract version is ${findings.contractVersion ?? 'missing'}`));
  const missingMeta = REQUIRED_META_KEYS.filter((key) => findings.meta[key] === undefined);
  results.push(check('meta_keys_present', missingMeta.length === 0, 'all meta keys present',
    `missing meta keys: ${missingMeta.join(', ')}`));
  results.push(check('binding_well_formed', bindingWellFormed(findings.bindingText, findings.vectorDimension),
    'embedding binding is well-formed and matches the vector table',
    'embedding binding is missing, malformed or disagrees with the vector table'));

  if (known && findings.vectorDimension !== null) {
    const reference = referenceObjects(shipped, findings.schemaVersion, findings.vectorDimension);
    const actual = schemaObjects(connection);
    const statistics = [...actual.values()].filter((o) => o.type === 'table' && STATISTICS_TABLE.test(o.name))
      .map((o) => o.name);
    for (const name of statistics) actual.delete(name);
    const work = workTableObjects(actual, shipped, findings.schemaVersion);
    const wanted = new Map([...reference.objects, ...work]);
    const differing = [...new Set([...wanted.keys(), ...actual.keys()])].filter((name) => {
      const a = actual.get(name);
      const r = wanted.get(name);
      return !a || !r || a.type !== r.type || a.tbl_name !== r.tbl_name || a.sql !== r.sql;
    });
    const workNote = work.size > 0 ? ` (and the ${work.size} of an unfinished reembed's ${NEXT_VECTOR_TABLE})` : '';
    const statisticsNote = statistics.length > 0 ? `; SQLite's statistics from ANALYZE: ${statistics.join(', ')}` : '';
    results.push(check('schema_objects', differing.length === 0,
      `${reference.objects.size} objects match the shipped definitions${workNote}${statisticsNote}`,
      `objects differ from the shipped definitions: ${differing.join(', ')}`));
    // Every table the database has keeps its fences, whatever the migrations it ran say: a migration that dropped
    // a fence would otherwise also drop it from the reference built from those migrations.
    const expected = FENCE_TRIGGER_NAMES.filter((name) =>
      actual.get(FENCED_TABLE_OF[name])?.type === 'table' || reference.objects.has(name));
    const fences = expected.filter((name) =>
      !actual.has(name) || actual.get(name)?.sql !== reference.objects.get(name)?.sql);
    results.push(check('fences_present', fences.length === 0, `${expected.length} fence triggers present`,
      `fence triggers missing or altered: ${fences.join(', ')}`));
    results.push(check('fts5_options', secureDelete(connection) === reference.secureDelete, 'FTS5 secure-delete is on',
      'FTS5 secure-delete option differs'));
  } else {
    results.push(check('schema_objects', false, '', 'no reference schema for this version or no vector table'));
  }
  results.push(integrityCheck(connection, 'fts5_integrity', "PRAGMA integrity_check('fact_fts')"));
  results.push(integrityCheck(connection, 'quick_check', 'PRAGMA quick_check'));
  return results;
}

function integrityCheck(connection: SqliteConnection, name: string, pragma: string): CheckResult {
  try {
    const rows = connection.prepare(pragma).pluck().all() as string[];
    return check(name, rows.length === 1 && rows[0] === 'ok', 'ok', `${rows.length} problem(s) reported`);
  } catch (error) {
    return check(name, false, '', `check could not run (${(error as { code?: string }).code ?? 'error'})`);
  }
}
