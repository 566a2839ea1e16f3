import { sql, type Transaction } from 'kysely';
import type { DB } from '../../generated/db.js';
import type { RecordRow } from './record-rows.js';
import { runShape } from './statement-shapes.js';

// The stored token counts of schema 5 (docs/decisions/0036-record-token-counts.md). A record's writer stores its count
// in the record's own transaction (insertRecord); rebuildTokenCounts counts the records that have none, written before
// schema 5 or by a raw writer, so that their searches need not count them either.

/**
 * The count a record's writer stores beside it, from the stored row (the adapter's fixedTokensOfRow: storage does not
 * know the public form); null when the record's text does not count by pieces.
 */
export type RecordCounter = (row: RecordRow) => Promise<number | null>;

/**
 * The same count, synchronous, once the adapter has loaded the encoder (rowTokenRecounter): `audit` recounts every
 * stored count with it inside its one read.
 */
export type RecordRecounter = (row: RecordRow) => number | null;

/** Loads a RecordRecounter (the encoder, about 250 ms): an operation calls it only once its own checks passed. */
export type RecounterLoader = () => Promise<RecordRecounter>;

/** Stores one record's count inside the caller's write transaction: for its writer (insertRecord) and the rebuild. */
export async function storeTokenCount(trx: Transaction<DB>, rowId: number, fixedTokens: number): Promise<void> {
  await runShape(trx, 'insertTokenCount', [rowId, fixedTokens], ([id, tokens]) =>
    trx.insertInto('record_token_counts').values({ row_id: id, fixed_tokens: tokens }).compile());
}

/** Records counted per statement round trip of the rebuild. */
const REBUILD_BATCH_RECORDS = 500;

/**
 * Inside the caller's write transaction, stores the count of every record that has none and is not QUARANTINED (a
 * purged tombstone is counted whole when read, and never stored). `onRows` hears the records read of the total.
 * Returns how many counts were stored. Running it again stores nothing.
 */
export async function rebuildTokenCounts(
  trx: Transaction<DB>, countRecord: RecordCounter, onRows?: (done: number, total: number) => void,
): Promise<number> {
  const uncounted = () => trx.selectFrom('adapter_records as r').where('r.lifecycle_state', '!=', 'QUARANTINED')
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('record_token_counts as t')
      .select('t.row_id').whereRef('t.row_id', '=', 'r.row_id'))));
  const { total } = await uncounted().select(({ fn }) => fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
  let after = 0;
  let done = 0;
  let stored = 0;
  for (;;) {
    const rows = await uncounted().selectAll('r').where('r.row_id', '>', after).orderBy('r.row_id')
      .limit(sql.lit(REBUILD_BATCH_RECORDS)).execute() as RecordRow[];
    if (rows.length === 0) return stored;
    for (const row of rows) {
      const fixedTokens = await countRecord(row);
      if (fixedTokens === null) continue;
      await storeTokenCount(trx, row.row_id, fixedTokens);
      stored += 1;
    }
    done += rows.length;
    after = rows.at(-1)!.row_id;
    onRows?.(done, Number(total));
  }
}
