import t from 'tap';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { candidateRow, openEngine, RawDatabase, storeRow, tableCounts } from '../helpers/storage.js';

async function seededDatabase(dir: string): Promise<{ dbPath: string; recordId: string }> {
  const dbPath = join(dir, 'fenced.sqlite3');
  const engine = await openEngine(dbPath);
  const row = candidateRow();
  const rowId = await storeRow(engine, row);
  await engine.write((trx) => trx.insertInto('record_token_counts').values({ row_id: Number(rowId), fixed_tokens: 42 })
    .execute());
  await engine.close();
  return { dbPath, recordId: row.record_id };
}

const MUTATIONS = [
  "INSERT INTO adapter_records (record_id) VALUES ('x')",
  "UPDATE adapter_records SET fact = 'rewritten'",
  'DELETE FROM adapter_records',
  "INSERT INTO adapter_meta (key, value) VALUES ('k', 'v')",
  "UPDATE adapter_meta SET value = '3' WHERE key = 'contract_version'",
  'DELETE FROM adapter_meta',
  "INSERT INTO schema_migrations VALUES (2, 'x', 'y', 'z', 'w')",
  "UPDATE schema_migrations SET checksum = 'forged'",
  'DELETE FROM schema_migrations',
  // Schema 5's token counts (docs/decisions/0036-record-token-counts.md).
  'INSERT INTO record_token_counts (row_id, fixed_tokens) VALUES (99, 1)',
  'UPDATE record_token_counts SET fixed_tokens = 1',
  'DELETE FROM record_token_counts',
];

t.test('a raw better-sqlite3 connection cannot write fenced tables but can read them', async (t) => {
  const { dbPath, recordId } = await seededDatabase(t.testdir());
  const before = tableCounts(dbPath);
  const raw = new RawDatabase(dbPath);
  t.teardown(() => raw.close());
  for (const statement of MUTATIONS) {
    t.throws(() => raw.prepare(statement).run(),
      { message: /no such function: factlane_contract_v2_writer/ }, statement);
  }
  const row = raw.prepare('SELECT fact FROM adapter_records WHERE record_id = ?').get(recordId) as { fact: string };
  t.equal(row.fact, 'the build uses node 20', 'reads work and the row is unchanged');
  t.equal(raw.prepare('SELECT count(*) FROM record_token_counts').pluck().get(), 1, 'the record kept its token count');
  raw.close();
  t.same(tableCounts(dbPath), before, 'row counts unchanged');
});

t.test('a connection whose writer function answers 0 reaches the trigger marker', async (t) => {
  const { dbPath } = await seededDatabase(t.testdir());
  const raw = new RawDatabase(dbPath);
  t.teardown(() => raw.close());
  raw.function('factlane_contract_v2_writer', { deterministic: false }, () => 0);
  for (const statement of MUTATIONS) {
    t.throws(() => raw.prepare(statement).run(), { message: 'FACTLANE_STORAGE_V2_WRITER_REQUIRED' }, statement);
  }
});

t.test('the writer gate is open only inside the engine write transaction', async (t) => {
  const dir = t.testdir();
  const engine = await openEngine(join(dir, 'gate.sqlite3'));
  t.teardown(() => engine.close());
  const outside = await engine.read(async (db) =>
    (await (await import('kysely')).sql<{ w: number }>`SELECT factlane_contract_v2_writer() AS w`.execute(db))
      .rows[0]!.w);
  t.equal(outside, 0, 'closed outside a transaction');
  const inside = await engine.write(async (trx) =>
    (await (await import('kysely')).sql<{ w: number }>`SELECT factlane_contract_v2_writer() AS w`.execute(trx))
      .rows[0]!.w);
  t.equal(inside, 1, 'open inside');
  await t.rejects(engine.write(async () => { throw new Error('boom'); }), /boom/);
  const after = await engine.read(async (db) =>
    (await (await import('kysely')).sql<{ w: number }>`SELECT factlane_contract_v2_writer() AS w`.execute(db))
      .rows[0]!.w);
  t.equal(after, 0, 'closed again after a rollback');
});

const cli = spawnSync('sqlite3', ['--version'], { encoding: 'utf8' });
t.test('the Debian sqlite3 CLI cannot write fenced tables',
  { skip: cli.status === 0 ? false : 'sqlite3 CLI not installed' }, async (t) => {
  const { dbPath } = await seededDatabase(t.testdir());
  const before = tableCounts(dbPath);
  for (const statement of MUTATIONS) {
    const result = spawnSync('sqlite3', [dbPath, `${statement};`], { encoding: 'utf8' });
    t.not(result.status, 0, `${statement} fails`);
    t.match(result.stderr, /no such function: factlane_contract_v2_writer/, statement);
  }
  const read = spawnSync('sqlite3', [dbPath, 'SELECT count(*) FROM adapter_records;'], { encoding: 'utf8' });
  t.equal(read.stdout.trim(), '1', 'the CLI still reads');
  t.same(tableCounts(dbPath), before, 'row counts unchanged');
});
