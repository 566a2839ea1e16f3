import { sql, type Transaction } from 'kysely';
import { AdapterError } from '../core/adapter-error.js';
import { sha256Hex } from '../core/hashing.js';
import type { DB } from '../../generated/db.js';
import { rebuildEligibleVectors, vectorBytes } from './eligible-vectors.js';
import type { MigrationFile } from './migration-files.js';
import type { SqliteConnection } from './native.js';
import { inspectSchema } from './schema-inspection.js';
import { NEXT_VECTOR_TABLE, verifySchema, type VectorTableDefinitions } from './schema-verification.js';
import { translateSqliteError } from './sqlite-errors.js';


/** One record that has a vector: the row the new table must hold for it, and a digest of the text embedded. */
export interface VectorRow {
  readonly rowId: number;
  readonly scopeKey: string;
  readonly isCurrent: number;
  /** SHA-256 of the record's fact; a reused row_id with another fact is a change. */
  readonly factDigest: string;
}

/** A VectorRow with the fact text to embed. */
export interface VectorDocument extends VectorRow {
  readonly fact: string;
}

/** What a switch attempt found: switched, or the rows that changed since they were filled. */
export type SwitchOutcome = { readonly switched: true } | { readonly switched: false; readonly changes: VectorChanges };

/** Rows to (re-)embed into the new table, and row ids to drop from it. */
export interface VectorChanges {
  readonly embed: readonly VectorRow[];
  readonly remove: readonly number[];
}


/**
 * Every record that has a vector today, by row id: the `fact_vec` row's scope_key and is_current and the
 * digest of the record's fact. Works on any connection with sqlite-vec loaded (read-only included).
 */
export function readVectorRows(connection: SqliteConnection): VectorRow[] {
  // vec0 has no generated types and its rows join to records by rowid, hence raw SQL.
  type Row = { row_id: number; scope_key: string; is_current: number; fact: string };
  const rows = connection.prepare(`SELECT v.rowid AS row_id, v.scope_key, v.is_current, r.fact
    FROM fact_vec v JOIN adapter_records r ON r.row_id = v.rowid ORDER BY v.rowid`).all() as Row[];
  return rows.map((row) => ({
    rowId: row.row_id, scopeKey: row.scope_key, isCurrent: row.is_current, factDigest: sha256Hex(row.fact),
  }));
}

/**
 * The fact text of `rows`, in their order, with the digest of the text read now. A row whose record
 * vanished is left out (the switch's change check removes it from the new table). SQLite errors are
 * translated (it runs outside a write transaction).
 */
export function readDocuments(connection: SqliteConnection, rows: readonly VectorRow[]): VectorDocument[] {
  let facts: Map<number, string>;
  try {
    // One statement for any batch size; shared by the read-only dry run, which has no Kysely handle.
    facts =
      new Map((connection.prepare('SELECT row_id, fact FROM adapter_records WHERE row_id IN (SELECT value FROM '
        + 'json_each(?))')
      .all(JSON.stringify(rows.map((row) => row.rowId))) as {
        row_id: number; fact: string;
      }[]).map((r) => [r.row_id, r.fact]));
  } catch (error) {
    throw translateSqliteError(error);
  }
  return rows.flatMap((row) => {
    const fact = facts.get(row.rowId);
    return fact === undefined ? [] : [{ ...row, fact, factDigest: sha256Hex(fact) }];
  });
}

/**
 * Drops a leftover `fact_vec_next`, the work table of a reembed that did not finish (its shadow tables and their
 * indexes go with it); inside the caller's write. True when there was one.
 */
export function dropNextVectorTable(connection: SqliteConnection): boolean {
  const present = hasNextVectorTable(connection);
  if (present) connection.exec(`DROP TABLE ${NEXT_VECTOR_TABLE}`);
  return present;
}

/** True when the file holds `fact_vec_next`, the work table of a reembed that did not finish. */
export function hasNextVectorTable(connection: SqliteConnection): boolean {
  return connection.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(NEXT_VECTOR_TABLE)
    !== undefined;
}

/**
 * Drops any leftover `fact_vec_next` and creates it empty from `definitions.next`, with its indexes (so each batch
 * finds a partition's last chunk by index); inside the caller's write.
 */
export function recreateNextTable(connection: SqliteConnection, definitions: VectorTableDefinitions): void {
  dropNextVectorTable(connection);
  connection.exec(definitions.next);
  for (const index of definitions.nextIndexes) connection.exec(index);
}

/**
 * Writes one batch into `fact_vec_next` (replacing rows of the same id) and drops `remove`; inside the caller's write.
 */
export function writeNextVectors(
  connection: SqliteConnection, batch: readonly { row: VectorRow; embedding: Float32Array }[],
  remove: readonly number[] = [],
): void {
  // vec0 has no upsert and refuses REAL for rowid and metadata integers: delete first, bind BigInt.
  const drop = connection.prepare(`DELETE FROM ${NEXT_VECTOR_TABLE} WHERE rowid = ?`);
  const insert =
    connection.prepare(`INSERT INTO ${NEXT_VECTOR_TABLE} (rowid, scope_key, is_current, embedding) VALUES (?, ?, ?, `
      + `?)`);
  for (const rowId of remove) drop.run(BigInt(rowId));
  for (const { row, embedding } of batch) {
    drop.run(BigInt(row.rowId));
    insert.run(BigInt(row.rowId), row.scopeKey, BigInt(row.isCurrent), vectorBytes(embedding));
  }
}

/** Rows of `current` that `filled` lacks or holds differently, and filled row ids no longer current. */
function vectorChanges(current: readonly VectorRow[], filled: ReadonlyMap<number, VectorRow>): VectorChanges {
  const embed = current.filter((row) => {
    const had = filled.get(row.rowId);
    return !had || had.scopeKey !== row.scopeKey || had.isCurrent !== row.isCurrent
      || had.factDigest !== row.factDigest;
  });
  const live = new Set(current.map((row) => row.rowId));
  return { embed, remove: [...filled.keys()].filter((rowId) => !live.has(rowId)) };
}

/** What the switch writes besides the vectors. */
export interface SwitchInput {
  readonly filled: ReadonlyMap<number, VectorRow>;
  readonly definitions: VectorTableDefinitions;
  readonly shipped: readonly MigrationFile[];
  readonly profileId: string;
  readonly modelDigest: string;
  readonly dimension: number;
  /** Canonical JSON of the new binding (`adapter_meta.embedding_profile`). */
  readonly bindingJson: string;
}

/**
 * The switch of OPERATIONS.md §7, inside the caller's BEGIN IMMEDIATE write: when a record changed since
 * it was filled, returns the changes and writes nothing; otherwise replaces `fact_vec` with the shipped
 * definition at the new dimension, copies `fact_vec_next` into it, drops `fact_vec_next`, rebuilds the eligible
 * vector forms from it, sets the embedding provenance of every record with a vector, writes the binding, and runs
 * the verify checks of the schema and binding: VERIFY_FAILED (rolled back) if they fail.
 */
export async function switchVectorTable(
  trx: Transaction<DB>, connection: SqliteConnection, input: SwitchInput,
): Promise<SwitchOutcome> {
  const changes = vectorChanges(readVectorRows(connection), input.filled);
  if (changes.embed.length > 0 || changes.remove.length > 0) return { switched: false, changes };
  // sqlite-vec 0.1.9 cannot rename a vec0 table (its shadow tables keep the old name): drop, recreate, copy.
  connection.exec('DROP TABLE fact_vec');
  connection.exec(input.definitions.current);
  for (const index of input.definitions.currentIndexes) connection.exec(index);
  connection.exec(`INSERT INTO fact_vec (rowid, scope_key, is_current, embedding)
    SELECT rowid, scope_key, is_current, embedding FROM ${NEXT_VECTOR_TABLE}`);
  connection.exec(`DROP TABLE ${NEXT_VECTOR_TABLE}`);
  // The eligible forms derive from the float source, which just changed (STORAGE.md §4.5 rule 3).
  await rebuildEligibleVectors(trx);
  // Which records were re-embedded is the set of vec0 rowids, which Kysely's types do not know.
  await sql`UPDATE adapter_records SET embedding_profile_id = ${input.profileId},
    embedding_model_digest = ${input.modelDigest}, embedding_output_dimension = ${input.dimension}
    WHERE row_id IN (SELECT rowid FROM fact_vec)`.execute(trx);
  const updated = await trx.updateTable('adapter_meta').set({ value: input.bindingJson })
    .where('key', '=', 'embedding_profile').executeTakeFirst();
  if (updated.numUpdatedRows !== 1n)
    await trx.insertInto('adapter_meta').values({ key: 'embedding_profile', value: input.bindingJson }).execute();
  const failed = verifySchema(connection, inspectSchema(connection, input.shipped), input.shipped)
    .filter((check) =>
      ['schema_objects', 'binding_well_formed', 'fences_present'].includes(check.name) && check.status === 'FAIL');
  if (failed.length > 0) {
    throw new AdapterError('VERIFY_FAILED',
      `the switched schema failed verification (${failed.map((c) => c.name).join(', ')}); nothing was switched`);
  }
  return { switched: true };
}
