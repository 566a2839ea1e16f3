import type { Transaction } from 'kysely';
import type { DB } from '../../generated/db.js';
import { AdapterError } from '../core/adapter-error.js';
import { rebuildEligibleVectors } from './eligible-vectors.js';
import { renderMigration, type MigrationFile } from './migration-files.js';
import { rebuildTokenCounts, type RecordCounter } from './token-count-repository.js';
import type { SqliteConnection } from './native.js';
import { sqliteCode, translateSqliteError } from './sqlite-errors.js';

/** One file applied by applyMigrations. */
export interface AppliedStep {
  readonly version: number;
  readonly name: string;
  readonly checksum: string;
}

/** What a rebuild may use: `onRows` hears the rows rebuilt of the total; `countRecord` counts a record's tokens. */
interface RebuildOptions {
  readonly onRows?: (done: number, total: number) => void;
  readonly countRecord?: RecordCounter;
}

/** What a file's derived rows are, named as progress names them. */
export type DerivedRows = 'eligible_vectors' | 'token_counts';

/** What applyMigrations tells as it goes: a file as it begins and once applied, and rows rebuilt of the total. */
export interface MigrationProgress {
  readonly onStarting?: (file: MigrationFile) => void;
  readonly onStep?: (step: AppliedStep) => void;
  readonly onRebuilt?: (done: number, total: number, rows: DerivedRows) => void;
}

/** Rebuilds a file's derived rows: `rows` names them. */
interface DerivedRebuild {
  readonly rows: DerivedRows;
  readonly run: (trx: Transaction<DB>, options: RebuildOptions) => Promise<unknown>;
}

const eligibleForms: DerivedRebuild = {
  rows: 'eligible_vectors', run: (trx, { onRows }) => rebuildEligibleVectors(trx, onRows),
};
// Without a counter (a caller that has no public form to count, such as a test), records stay without counts: they
// are counted whole when read, as before schema 5.
const tokenCounts: DerivedRebuild = {
  rows: 'token_counts',
  run: async (trx, { onRows, countRecord }) =>
    countRecord === undefined ? 0 : rebuildTokenCounts(trx, countRecord, onRows),
};

/**
 * Derived rows a file's SQL cannot compute, rebuilt by code in the same transaction: the eligible vector forms come
 * from fact_vec through the seeded SimHash projection (schema 2), schema 3 recreates fact_vec and keeps them for large
 * scopes only, and schema 4 recreates the codes' table in larger chunks; schema 5's token counts come from the records
 * through the adapter's counter, and its eligible forms are laid out again in the shards of decision 0035, which a
 * schema-4 file kept in the older layout. Each rebuild a pending file asks for runs once, after the last pending file:
 * the code writes the newest schema (schema 6's shard generations, say), and no file's SQL reads rebuilt rows.
 */
const DERIVED_REBUILDS: ReadonlyMap<string, readonly DerivedRebuild[]> = new Map([
  ['0002_eligible_vectors.sql', [eligibleForms]],
  ['0003_small_scope_vectors.sql', [eligibleForms]],
  ['0004_vec0_chunks.sql', [eligibleForms]],
  ['0005_record_token_counts.sql', [eligibleForms, tokenCounts]],
]);

/**
 * Applies `pending` in version order inside the caller's open write transaction (writer gate open), each followed
 * by its `schema_migrations` row, the last one first by the rebuilds of derived rows the files ask for
 * (DERIVED_REBUILDS, each once). Runs nothing outside that transaction, so a failure anywhere rolls back every file.
 * `onStarting` hears each file as it begins and `onStep` as it is done, `onRebuilt` the derived rows rebuilt of the
 * total as a rebuild goes, with which rows they are; `countRecord` counts the records' tokens (schema 5: without it,
 * records are left without counts).
 */
export async function applyMigrations(
  trx: Transaction<DB>,
  connection: SqliteConnection,
  pending: readonly MigrationFile[],
  options: {
    vectorDimension: number; appliedAt: string; appliedBy: string; countRecord?: RecordCounter;
    /** The error to throw for SQLite's refusal of a file's SQL (refusedMigration); default the error itself. */
    explainRefusal?: (file: MigrationFile, error: unknown) => unknown;
  } & MigrationProgress,
): Promise<AppliedStep[]> {
  const steps: AppliedStep[] = [];
  const rebuilds = [...new Set(pending.flatMap((file) => DERIVED_REBUILDS.get(file.fileName) ?? []))];
  for (const [index, file] of pending.entries()) {
    // Migration files hold several statements; Kysely prepares one at a time, so they run through exec
    // on the same connection, inside the transaction Kysely holds.
    options.onStarting?.(file);
    try {
      connection.exec(renderMigration(file, options.vectorDimension));
    } catch (error) {
      throw options.explainRefusal?.(file, error) ?? error;
    }
    for (const rebuild of index === pending.length - 1 ? rebuilds : []) {
      const { onRebuilt } = options;
      const onRows = onRebuilt && ((done: number, total: number) => onRebuilt(done, total, rebuild.rows));
      await rebuild.run(trx, { onRows, countRecord: options.countRecord });
    }
    await trx.insertInto('schema_migrations').values({
      version: file.version, name: file.name, checksum: file.checksum,
      applied_at: options.appliedAt, applied_by: options.appliedBy,
    }).execute();
    const step = { version: file.version, name: file.name, checksum: file.checksum };
    steps.push(step);
    options.onStep?.(step);
  }
  return steps;
}

/**
 * SQLite's own refusal of a file applied to an existing database (migrate up: a table the file creates is already
 * there, say a raw writer's) as SCHEMA_MISMATCH naming the file and SQLite's words; busy, a full disk, I/O and damage
 * keep their codes (translateSqliteError). Not for a new database: there a refusal is the disk's (creationFailure).
 */
export function refusedMigration(file: MigrationFile, error: unknown): unknown {
  const translated = translateSqliteError(error);
  if (translated !== error || sqliteCode(error) === undefined) return translated;
  return new AdapterError('SCHEMA_MISMATCH', `${file.fileName} cannot be applied to this database (SQLite: `
    + `${(error as Error).message}); factlane-migrate verify names what differs from the release's schema; nothing `
    + 'was migrated', { cause: error });
}
