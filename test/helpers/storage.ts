import { randomUUID } from 'node:crypto';
import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process';
import { createRequire } from 'node:module';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { MIGRATIONS_DIR } from '../../src/core/package-info.js';
import { loadMigrationFiles } from '../../src/storage/migration-files.js';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { SQLiteVecEngine, type SQLiteVecEngineOptions } from '../../src/storage/sqlite-vec-engine.js';
import { insertRecordUnchecked, type NewRecordRow } from '../../src/storage/record-repository.js';
import { simhashCode } from '../../src/storage/simhash-projection.js';
import { floatVector } from '../../src/storage/eligible-vectors.js';

const require = createRequire(import.meta.url);
/** better-sqlite3 for raw peer connections (tests only: the product reaches it through storage/). */
export const RawDatabase: typeof import('better-sqlite3') = require('better-sqlite3');
export const sqliteVec: { load(db: unknown): void } = require('sqlite-vec');

/** The EXPLAIN QUERY PLAN details of `text`, every parameter bound to null, joined by ' | '. */
export function queryPlan(db: InstanceType<typeof RawDatabase>, text: string): string {
  const parameters = new Array((text.match(/\?/g) ?? []).length).fill(null);
  return (db.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...parameters) as { detail: string }[])
    .map((row) => row.detail).join(' | ');
}

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The TypeScript files under `dir`, at any depth, outside `dist` and `node_modules` (read by the structure tests). */
export function typeScriptFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'dist' || name === 'node_modules') return [];
    return statSync(path).isDirectory() ? typeScriptFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/**
 * The built operator commands (`npm ci` and `npm test` build them). A test runs these, not the TypeScript source:
 * one spawn takes about 0.2 s here, against 2-6 s through the tap TypeScript loader.
 */
export const ADMIN_BIN = join(REPO_ROOT, 'dist/bin/factlane-admin.js');
export const MIGRATE_BIN = join(REPO_ROOT, 'dist/bin/factlane-migrate.js');

/** Runs a built operator command (ADMIN_BIN, MIGRATE_BIN) to completion. */
export function runBin(bin: string, args: readonly string[]): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8' });
}
export const TEST_DIMENSION = 8;
export const TEST_BINDING = Object.freeze({
  vectorDimension: TEST_DIMENSION,
  bindingJson: JSON.stringify({ profile_id: 'test-profile', vector_dimension: TEST_DIMENSION }),
});

/** Opens (creating if needed) an engine on `dbPath` with the test binding. */
export function openEngine(dbPath: string, options: Partial<SQLiteVecEngineOptions> = {}): Promise<SQLiteVecEngine> {
  return SQLiteVecEngine.open({ dbPath, newDatabaseBinding: async () => TEST_BINDING, ...options });
}

/** A valid Candidate record row in GLOBAL_USER scope; override any column. */
export function candidateRow(overrides: Partial<NewRecordRow> = {}): NewRecordRow {
  return {
    record_id: randomUUID(), memory_id: randomUUID(), revision: 1, parent_record_id: null,
    scope: 'GLOBAL_USER', project_id: null, worktree_id: null, workflow_id: null, agent_id: null,
    scope_key: 'scope-global', memory_type: 'USER_FACT', fact: 'the build uses node 20',
    source_provenance: '{}', source_timestamp: null, created_at: '2026-01-01T00:00:00Z', last_verified_at: null,
    verified_by: 'UNVERIFIED', authority_role: 'UNRESOLVED', contribution_origin: '{}', freshness_policy: '{}',
    supersedes: '[]', contradiction_key: randomUUID(), contradiction_state: 'NONE', confidence: 0.5, tags: '[]',
    lifecycle_state: 'CANDIDATE', native_content_hash: randomUUID(), payload_fingerprint: randomUUID(),
    idempotency_key: randomUUID(), embedding_profile_id: 'test-profile', embedding_model_digest: 'digest',
    embedding_output_dimension: TEST_DIMENSION,
    ...overrides,
  };
}

/** A unit vector with a 1 at `hot` (and a little elsewhere), of the test dimension. */
export function unitVector(hot: number, dimension = TEST_DIMENSION): Float32Array {
  const v = new Float32Array(dimension).fill(0.01);
  v[hot % dimension] = 1;
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

/**
 * Stores one fixture record (any lifecycle) with its FTS and vector rows through the engine's gated write; returns
 * its row_id.
 */
export function storeRow(engine: SQLiteVecEngine, row: NewRecordRow, hot = 0): Promise<bigint> {
  return engine.write((trx) => insertRecordUnchecked(trx, row, { searchText: row.fact, embedding: unitVector(hot) }));
}

/**
 * Overwrites the first page of b-tree `name` (a table or an index) on disk, header included, as a failing disk would;
 * the WAL is checkpointed into the file first. The database must be closed.
 */
export function damageFirstPage(dbPath: string, name: string): void {
  const raw = new RawDatabase(dbPath);
  raw.pragma('wal_checkpoint(TRUNCATE)');
  const pageSize = raw.pragma('page_size', { simple: true }) as number;
  const page = raw.prepare('SELECT pageno FROM dbstat WHERE name = ? ORDER BY pageno LIMIT 1').pluck()
    .get(name) as number;
  raw.close();
  const fd = openSync(dbPath, 'r+');
  try {
    writeSync(fd, Buffer.alloc(pageSize, 0x55), 0, pageSize, (page - 1) * pageSize);
  } finally {
    closeSync(fd);
  }
}

/** Runs `read` on a raw read-only connection with sqlite-vec loaded, then closes it. */
export function withRaw<T>(dbPath: string, read: (db: InstanceType<typeof RawDatabase>) => T): T {
  const db = new RawDatabase(dbPath, { readonly: true });
  try {
    sqliteVec.load(db);
    return read(db);
  } finally {
    db.close();
  }
}

/** Row counts of the record, FTS and vector tables, read on a raw read-only connection. */
export function tableCounts(
  dbPath: string,
): { records: number; fts: number; vec: number; meta: number; migrations: number } {
  return withRaw(dbPath, (db) => {
    const count = (table: string) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    return {
      records: count('adapter_records'), fts: count('fact_fts'), vec: count('fact_vec'), meta: count('adapter_meta'),
      migrations: count('schema_migrations'),
    };
  });
}

/** The tap TypeScript loader, for child processes that run test helpers or source files. */
export const TS_IMPORT = pathToFileURL(join(REPO_ROOT, 'node_modules/@tapjs/typescript/dist/esm/import.mjs')).href;

/** The pid of a process that has already ended: a temporary name of a killed run carries one. */
export function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '0']).pid!;
}

/** Spawns a TypeScript helper script from test/helpers with the tap TypeScript loader. */
export function spawnTsHelper(script: string, args: string[]): ChildProcess {
  return spawn(process.execPath, ['--import', TS_IMPORT, join(REPO_ROOT, 'test/helpers', script), ...args],
    { stdio: ['pipe', 'pipe', 'pipe'] });
}

/** Resolves with the first stdout line of `child` that matches `pattern`; rejects if it exits first. */
export function waitForLine(child: ChildProcess, pattern: RegExp, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let stderr = '';
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${pattern}; stderr: ${stderr}`)), timeoutMs);
    child.stderr!.on('data', (chunk) => { stderr += chunk; });
    child.stdout!.on('data', (chunk) => {
      buffer += chunk;
      const line = buffer.split('\n').find((l) => pattern.test(l));
      if (line !== undefined) {
        clearTimeout(timer);
        resolve(line);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`helper exited with ${code} before ${pattern}; stderr: ${stderr}`));
    });
  });
}

/** The shipped migration files, in version order. */
export const SHIPPED_MIGRATIONS = loadMigrationFiles(MIGRATIONS_DIR);
/** The newest shipped schema version: a database the engine creates is at this version. */
export const SHIPPED_VERSION = SHIPPED_MIGRATIONS.at(-1)!.version;

/**
 * The file name of the migration `step` versions after the shipped ones: nextMigration('add_note') is e.g.
 * '0003_add_note.sql'.
 */
export function nextMigration(name: string, step = 1): string {
  if (!Number.isInteger(step) || step < 1) throw new RangeError(
    'a next migration comes at least one step after the shipped ones');
  return `${String(SHIPPED_VERSION + step).padStart(4, '0')}_${name}.sql`;
}

/**
 * A migrations folder: every shipped migration plus extra files. An extra must come
 * after the shipped ones (name it with nextMigration): one that reuses a shipped version would make the folder
 * invalid and a test fail for that reason instead of its own.
 */
export function migrationsDir(dir: string, name: string, extra: Record<string, string> = {}): string {
  const target = join(dir, name);
  mkdirSync(target);
  for (const file of SHIPPED_MIGRATIONS) {
    const sql = readFileSync(join(MIGRATIONS_DIR, file.fileName), 'utf8');
    writeFileSync(join(target, file.fileName), sql);
  }
  for (const [file, sql] of Object.entries(extra)) {
    const version = Number(/^(\d{4})_/.exec(file)?.[1]);
    if (version <= SHIPPED_VERSION) throw new Error(
      `extra migration ${file} reuses shipped version ${version}; name it with nextMigration()`);
    writeFileSync(join(target, file), sql);
  }
  return target;
}

/**
 * Records another checksum for applied migration `version`, as a database that applied a changed file would hold
 * (the runner refuses a released file that changed, so such a file cannot be applied any more).
 */
export function tamperAppliedChecksum(dbPath: string, version: number): void {
  const raw = new RawDatabase(dbPath);
  raw.function('factlane_contract_v2_writer', { deterministic: false }, () => 1);
  raw.prepare("UPDATE schema_migrations SET checksum = ? WHERE version = ?").run('0'.repeat(64), version);
  raw.close();
}

/** Writes the recovery interlock row with a gated raw connection, as the recovery operator would. */
export function writeInterlock(dbPath: string): void {
  const raw = new RawDatabase(dbPath);
  raw.function('factlane_contract_v2_writer', { deterministic: false }, () => 1);
  raw.prepare("INSERT INTO adapter_meta (key, value) VALUES ('sensitive_recovery_interlock', '{}')").run();
  raw.close();
}


/** The shipped definition of the vec0 table `table`, at `chunkSize`. */
function definitionAt(raw: InstanceType<typeof RawDatabase>, table: string, chunkSize: number): string {
  return (raw.prepare('SELECT sql FROM sqlite_master WHERE name = ?').pluck().get(table) as string)
    .replace(/chunk_size=\d+/, `chunk_size=${chunkSize}`);
}

/**
 * Recreates `fact_vec` as `chunkSize` makes it (schemas 1 and 2: 16; since schema 3: 8), rows and bytes kept, on a raw
 * connection inside the caller's transaction; the definition is the shipped one at that chunk size.
 */
function rechunkFactVec(raw: InstanceType<typeof RawDatabase>, chunkSize: number): void {
  const definition = definitionAt(raw, 'fact_vec', chunkSize);
  raw.exec(`${definition.replace('fact_vec', 'fact_vec_old_layout')};
    INSERT INTO fact_vec_old_layout (rowid, scope_key, is_current, embedding)
      SELECT rowid, scope_key, is_current, embedding FROM fact_vec ORDER BY rowid;
    DROP TABLE fact_vec; ${definition};
    INSERT INTO fact_vec (rowid, scope_key, is_current, embedding)
      SELECT rowid, scope_key, is_current, embedding FROM fact_vec_old_layout ORDER BY rowid;
    DROP TABLE fact_vec_old_layout;`);
}

/**
 * Recreates `eligible_codes` at `chunkSize` (schemas 2 and 3: 128; since schema 4: 512) with the same codes, in row id
 * order. Each code is bound again through vec_bit: INSERT … SELECT would lose the bit subtype vec0 asks for.
 */
function rechunkCodes(raw: InstanceType<typeof RawDatabase>, chunkSize: number): void {
  const definition = definitionAt(raw, 'eligible_codes', chunkSize);
  const codes = raw.prepare('SELECT rowid, shard_key, simhash_v1 FROM eligible_codes ORDER BY rowid').all() as
    { rowid: number; shard_key: string; simhash_v1: Buffer }[];
  raw.exec(`DROP TABLE eligible_codes; ${definition}`);
  const insert = raw.prepare('INSERT INTO eligible_codes (rowid, shard_key, simhash_v1) VALUES (?, ?, vec_bit(?))');
  for (const code of codes) insert.run(BigInt(code.rowid), code.shard_key, code.simhash_v1);
}

/**
 * Turns a database of this release back into what schema 1 made: the schema-2 eligible tables dropped (their fences
 * go with them), `fact_vec` back at chunk size 16, and the ledger back at version 1. Records, FTS rows and fact_vec
 * rows (with is_current) are exactly what the schema-1 code wrote, since this release still keeps them the same way.
 */
export function downgradeToSchemaOne(dbPath: string): void {
  inGatedTransaction(dbPath, (raw) => {
    toSchemaFour(raw);
    raw.exec('DROP TABLE eligible_codes; DROP TABLE eligible_vectors; DROP TABLE eligible_shards;');
    rechunkFactVec(raw, 16);
    raw.exec('DELETE FROM schema_migrations WHERE version > 1');
  });
}

/** The vectors schema 2 filled its first shard with. */
const SCHEMA_TWO_SHARD_ROWS = 256;

/**
 * Turns a database of this release back into what schema 2 made: `fact_vec` back at chunk size 16, `eligible_codes` at
 * 128, the eligible forms of every VALIDATED_CURRENT record, whatever its scope's size, each scope's in shard 0 (what
 * schema 2 wrote for a scope of at most SCHEMA_TWO_SHARD_ROWS current records; a larger one is refused), and the
 * ledger back at version 2.
 */
export function downgradeToSchemaTwo(dbPath: string): void {
  inGatedTransaction(dbPath, (raw) => {
    toSchemaFour(raw);
    rechunkFactVec(raw, 16);
    // The codes are written again below: their table is recreated empty at schema 2's chunk size.
    const codes = definitionAt(raw, 'eligible_codes', 128);
    raw.exec(`DROP TABLE eligible_codes; ${codes}; DELETE FROM eligible_vectors; DELETE FROM eligible_shards;`);
    const current = raw.prepare(`SELECT r.row_id, r.scope_key, v.embedding FROM adapter_records r
      JOIN fact_vec v ON v.rowid = r.row_id WHERE r.lifecycle_state = 'VALIDATED_CURRENT' ORDER BY r.row_id`).all() as
      { row_id: number; scope_key: string; embedding: Buffer }[];
    const sizes = new Map<string, number>();
    for (const row of current) {
      sizes.set(row.scope_key, (sizes.get(row.scope_key) ?? 0) + 1);
      raw.prepare('INSERT INTO eligible_vectors (row_id, scope_key, shard, embedding) VALUES (?, ?, 0, ?)')
        .run(row.row_id, row.scope_key, row.embedding);
      raw.prepare('INSERT INTO eligible_codes (rowid, shard_key, simhash_v1) VALUES (?, ?, vec_bit(?))')
        .run(BigInt(row.row_id), `${row.scope_key}/0`, simhashCode(floatVector(row.embedding)));
    }
    for (const [scopeKey, size] of sizes) {
      if (size > SCHEMA_TWO_SHARD_ROWS) throw new Error(
        `downgradeToSchemaTwo keeps one shard per scope: at most ${SCHEMA_TWO_SHARD_ROWS} current records`);
      raw.prepare('INSERT INTO eligible_shards (scope_key, shard, size) VALUES (?, 0, ?)').run(scopeKey, size);
    }
    raw.exec('DELETE FROM schema_migrations WHERE version > 2');
  });
}

/**
 * Turns a database of this release back into what schema 3 made: `eligible_codes` back at chunk size 128 with the
 * same codes (its index goes with the old table), no index on `fact_vec_chunks`, and the ledger back at version 3.
 */
export function downgradeToSchemaThree(dbPath: string): void {
  inGatedTransaction(dbPath, (raw) => {
    toSchemaFour(raw);
    rechunkCodes(raw, 128);
    raw.exec('DROP INDEX idx_fact_vec_chunks_partition');
    raw.exec('DELETE FROM schema_migrations WHERE version > 3');
  });
}

/** Schema 6 undone: the shards' generations dropped. */
function toSchemaFive(raw: InstanceType<typeof RawDatabase>): void {
  raw.exec('ALTER TABLE eligible_shards DROP COLUMN generation; DELETE FROM schema_migrations WHERE version > 5');
}

/**
 * Turns a database of this release back into what schema 5 made: no generation on `eligible_shards`, and the ledger
 * back at version 5.
 */
export function downgradeToSchemaFive(dbPath: string): void {
  inGatedTransaction(dbPath, toSchemaFive);
}

/** Schemas 6 and 5 undone: the token counts dropped too (their fences go with them), the shards' size index back. */
function toSchemaFour(raw: InstanceType<typeof RawDatabase>): void {
  toSchemaFive(raw);
  raw.exec(`DROP TABLE record_token_counts;
    CREATE INDEX idx_eligible_shards_size ON eligible_shards (scope_key, size, shard);
    DELETE FROM schema_migrations WHERE version > 4`);
}

/**
 * Turns a database of this release back into what schema 4 made: no `record_token_counts` (its fences go with it),
 * the shards' size index back, and the ledger back at version 4.
 */
export function downgradeToSchemaFour(dbPath: string): void {
  inGatedTransaction(dbPath, toSchemaFour);
}

/**
 * Runs `write` in one transaction on a raw connection with sqlite-vec loaded and the writer function answering 1, as a
 * maintenance command's gated connection would (an exception rolls it back), then closes it.
 */
export function inGatedTransaction(dbPath: string, write: (raw: InstanceType<typeof RawDatabase>) => void): void {
  const raw = new RawDatabase(dbPath);
  try {
    sqliteVec.load(raw);
    raw.function('factlane_contract_v2_writer', { deterministic: false }, () => 1);
    raw.transaction(() => write(raw))();
  } finally {
    raw.close();
  }
}
