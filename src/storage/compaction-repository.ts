import { sql, type Transaction } from 'kysely';
import type { DB } from '../../generated/db.js';
import { AdapterError } from '../core/adapter-error.js';
import { createdAtKey, findRecord, inScope, type Reader, type ScopeColumns } from './record-repository.js';

/**
 * Compacts one record (STORAGE.md §8) inside the caller's write transaction: a SUPERSEDED record with its FTS row
 * and a vector whose `is_current` is 0 (and no eligible vector form) becomes HISTORICAL and loses its vector row;
 * nothing else changes. Returns false for a HISTORICAL record already without a vector (nothing to do). Errors:
 * NOT_FOUND (unknown record_id), COMPACTION_NOT_ELIGIBLE (not SUPERSEDED), COMPACTION_STATE_INVALID (a derived row
 * missing, a vector still current, or a HISTORICAL record still holding a vector); the caller's transaction then rolls
 * back.
 */
export async function compactRecord(trx: Transaction<DB>, recordId: string): Promise<boolean> {
  const record = await findRecord(trx, recordId);
  if (record === undefined) throw new AdapterError('NOT_FOUND', 'no record has this record_id');
  const rowId = BigInt(record.row_id);
  const vector =
    (await sql<{ is_current: number }>`SELECT is_current FROM fact_vec WHERE rowid = ${rowId}`.execute(trx)).rows[0];
  if (record.lifecycle_state === 'HISTORICAL') {
    if (vector === undefined) return false;
    throw new AdapterError('COMPACTION_STATE_INVALID', 'the HISTORICAL record still holds a vector row');
  }
  if (record.lifecycle_state !== 'SUPERSEDED')
    throw new AdapterError('COMPACTION_NOT_ELIGIBLE',
      `only SUPERSEDED records are compacted; this one is ${record.lifecycle_state}`);
  const hasFts = (await sql`SELECT 1 AS present FROM fact_fts WHERE rowid = ${rowId}`.execute(trx)).rows.length > 0;
  const eligible =
    (await sql`SELECT 1 AS present FROM eligible_vectors WHERE row_id = ${rowId}`.execute(trx)).rows.length > 0;
  if (!hasFts || vector === undefined || Number(vector.is_current) !== 0 || eligible) {
    throw new AdapterError('COMPACTION_STATE_INVALID',
      'the SUPERSEDED record is missing its FTS or vector row, or its vector is still current');
  }
  const updated = await trx.updateTable('adapter_records').set({ lifecycle_state: 'HISTORICAL' })
    .where('row_id', '=', record.row_id).where('lifecycle_state', '=', 'SUPERSEDED').executeTakeFirst();
  if (updated.numUpdatedRows !== 1n)
    throw new AdapterError('COMPACTION_STATE_INVALID', 'the record changed while it was being compacted');
  await sql`DELETE FROM fact_vec WHERE rowid = ${rowId}`.execute(trx);
  return true;
}

/**
 * The record_ids of up to `limit` records of the exact scope ready for compaction (OPERATIONS.md §2: SUPERSEDED,
 * with their FTS row and a vector whose `is_current` is 0, no eligible form), oldest first by `created_at`, then
 * `record_id`.
 */
export async function readyForCompaction(reader: Reader, scope: ScopeColumns, limit: number): Promise<string[]> {
  const rows = await inScope(reader, scope).clearSelect().select('record_id')
    .where('lifecycle_state', '=', 'SUPERSEDED')
    .where(sql<boolean>`EXISTS (SELECT 1 FROM fact_fts f WHERE f.rowid = adapter_records.row_id)`)
    .where(sql<boolean>`(SELECT v.is_current FROM fact_vec v WHERE v.rowid = adapter_records.row_id) = 0`)
    .where(sql<boolean>`NOT EXISTS (SELECT 1 FROM eligible_vectors e WHERE e.row_id = adapter_records.row_id)`)
    .orderBy(createdAtKey()).orderBy('record_id').limit(limit).execute();
  return rows.map((row) => row.record_id);
}
