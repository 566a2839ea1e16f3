import { sql, type Insertable, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { AdapterRecords, DB } from '../../generated/db.js';

/** A stored record row as read back. */
export type RecordRow = Selectable<AdapterRecords>;
/** A record row to insert; `row_id` is assigned by SQLite. */
export type NewRecordRow = Omit<Insertable<AdapterRecords>, 'row_id'>;

/** The derived rows stored beside a record (STORAGE.md §4.5). */
export interface DerivedRows {
  /** search_text(fact), computed by the adapter. */
  readonly searchText: string;
  /** The document embedding, unit length, of the bound dimension. */
  readonly embedding: Float32Array;
}

/**
 * Inserts one record with its FTS5 row and its vector row (same `row_id`, the record's `scope_key`,
 * `is_current` 1 exactly for VALIDATED_CURRENT) inside the caller's write transaction. Returns the row_id.
 */
export async function insertRecord(trx: Transaction<DB>, record: NewRecordRow, derived: DerivedRows): Promise<bigint> {
  const inserted = await trx.insertInto('adapter_records').values(record).returning('row_id').executeTakeFirstOrThrow();
  const rowId = BigInt(inserted.row_id!);
  // The FTS rowid must equal the record's row_id; the generated type has no rowid column, hence raw SQL.
  await sql`INSERT INTO fact_fts (rowid, search_text) VALUES (${rowId}, ${derived.searchText})`.execute(trx);
  // vec0 refuses REAL for rowid and metadata integers: bind BigInt.
  await sql`INSERT INTO fact_vec (rowid, scope_key, is_current, embedding)
    VALUES (${rowId}, ${record.scope_key}, ${BigInt(record.lifecycle_state === 'VALIDATED_CURRENT' ? 1 : 0)}, ${new Uint8Array(derived.embedding.buffer, derived.embedding.byteOffset, derived.embedding.byteLength)})`.execute(trx);
  return rowId;
}

/** Reads one record by `record_id`, or undefined. */
export async function findRecord(trx: Transaction<DB> | Kysely<DB>, recordId: string): Promise<RecordRow | undefined> {
  return trx.selectFrom('adapter_records').selectAll().where('record_id', '=', recordId).executeTakeFirst();
}
