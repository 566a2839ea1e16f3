import t from 'tap';
import { sql } from 'kysely';
import { ftsSecureDeleteSettable, readPostflight } from '../../src/storage/recovery-repository.js';
import type { SqliteConnection } from '../../src/storage/native.js';
import type { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import { openLocalHashEngine } from '../helpers/mcp.js';
import { digestsByRecord, secretScenario } from '../helpers/recovery.js';

// What recovery reads to decide (OPERATIONS.md §5.7): the postflight's count of the derived rows a target still has,
// and the digests that say a record and its derived rows are unchanged. Each derived table is a term of both, the
// record's token count (record_token_counts, decision 0036) among them.

/** Every derived row of one record, one table at a time, as the storage layer's writer deletes it. */
const DERIVED_DELETES = [
  ['fact_fts', (id: bigint) => sql`DELETE FROM fact_fts WHERE rowid = ${id}`],
  ['fact_vec', (id: bigint) => sql`DELETE FROM fact_vec WHERE rowid = ${id}`],
  ['eligible_vectors', (id: bigint) => sql`DELETE FROM eligible_vectors WHERE row_id = ${id}`],
  ['eligible_codes', (id: bigint) => sql`DELETE FROM eligible_codes WHERE rowid = ${id}`],
  ['record_token_counts', (id: bigint) => sql`DELETE FROM record_token_counts WHERE row_id = ${id}`],
] as const;

/** The replacement's row id in the scenario's file. */
async function replacementRow(engine: SQLiteVecEngine, recordId: string): Promise<bigint> {
  const row = await engine.read((db) => db.selectFrom('adapter_records').select('row_id')
    .where('record_id', '=', recordId).executeTakeFirstOrThrow());
  return BigInt(row.row_id!);
}

t.test('the postflight counts each derived row a record still has, its token count included', async (t) => {
  // The REPLACE successor is current in a coded scope: it has a row in every derived table.
  const s = await secretScenario(t.testdir(), { coded: true });
  const engine = await openLocalHashEngine(s.dbPath);
  t.teardown(() => engine.close());
  const rowId = await replacementRow(engine, s.replacementId);
  const remaining = async () => (await engine.read((db) => readPostflight(db, [s.replacementId]))).derivedRows;
  t.equal(await remaining(), DERIVED_DELETES.length, 'one row in each derived table');
  for (const [index, [table, remove]] of DERIVED_DELETES.entries()) {
    await engine.write((trx) => remove(rowId).execute(trx));
    t.equal(await remaining(), DERIVED_DELETES.length - index - 1, `without its ${table} row`);
  }
});

t.test('each derived row, and a changed token count, is part of its record\'s digest and of no other', async (t) => {
  const s = await secretScenario(t.testdir(), { coded: true });
  const engine = await openLocalHashEngine(s.dbPath);
  t.teardown(() => engine.close());
  const rowId = await replacementRow(engine, s.replacementId);
  let before = digestsByRecord(s.dbPath);
  const changedSince = (what: string) => {
    const after = digestsByRecord(s.dbPath);
    const changed = [...after].filter(([id, digest]) => before.get(id) !== digest).map(([id]) => id);
    t.strictSame(changed, [s.replacementId], `${what}: only that record's digest changes`);
    t.equal(after.size, before.size, `${what}: the same records`);
    before = after;
  };
  await engine.write((trx) => sql`UPDATE record_token_counts SET fixed_tokens = fixed_tokens + 1
    WHERE row_id = ${rowId}`.execute(trx));
  changedSince('a token count raised by one');
  for (const [table, remove] of DERIVED_DELETES) {
    await engine.write((trx) => remove(rowId).execute(trx));
    changedSince(`without its ${table} row`);
  }
});

t.test('preflight check 15 answers, and a busy writer is thrown, even when the failed insert ended the transaction',
  async (t) => {
  // The finally always ran ROLLBACK: after an error that ended the transaction (a full disk, an I/O error) SQLite
  // answers "cannot rollback - no transaction is active", and that error replaced the check's answer.
  const connection = (failure: string | null, endsTransaction: boolean) => {
    let open = false;
    return {
      get inTransaction() { return open; },
      exec(text: string) {
        if (text === 'BEGIN') open = true;
        else if (text === 'ROLLBACK') {
          if (!open) throw new Error('cannot rollback - no transaction is active');
          open = false;
        } else if (failure) {
          if (endsTransaction) open = false;
          throw Object.assign(new Error(`${failure} on insert`), { code: failure });
        }
      },
    } as unknown as SqliteConnection;
  };
  t.equal(ftsSecureDeleteSettable(connection(null, false)), true, 'settable');
  t.equal(ftsSecureDeleteSettable(connection('SQLITE_ERROR', false)), false, 'refused by FTS5');
  t.equal(ftsSecureDeleteSettable(connection('SQLITE_FULL', true)), false, 'an error that ended the transaction');
  t.throws(() => ftsSecureDeleteSettable(connection('SQLITE_BUSY', true)), { code: 'BACKEND_BUSY' },
    'busy, as before');
});
