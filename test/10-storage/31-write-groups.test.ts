// Writes of one process that wait together share one transaction (docs/decisions/0045-writes-share-a-commit.md):
// they commit in call order, each write's error undoes its own rows only, an error that ends the transaction fails
// its own write while the others run again, and a busy group is retried whole. What every tool call sees
// is what it saw one transaction at a time: its checks run on the locked state, earlier writes of its group included.
import t, { type Test } from 'tap';
import { sql } from 'kysely';
import { UNCODED_SCOPE_MAX_RECORDS } from '@factlane/schema';
import { closeSync, copyFileSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AdapterError } from '../../src/core/adapter-error.js';
import { MemoryAdapter } from '../../src/adapter/memory-adapter.js';
import { searchText } from '../../src/core/text.js';
import { freshBindingJson } from '../../src/embedding/embedding-binding.js';
import { LocalHashProvider, localHashEmbedding } from '../../src/embedding/local-hash-provider.js';
import { MIGRATIONS_DIR } from '../../src/core/package-info.js';
import { SYSTEM_CLOCK, formatTimestamp } from '../../src/core/time.js';
import { auditFile } from '../../src/maintenance/audit-operation.js';
import { insertRecordUnchecked } from '../../src/storage/record-repository.js';
import { loadMigrationFiles } from '../../src/storage/migration-files.js';
import { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import { MAX_GROUP_WRITES } from '../../src/storage/write-connection.js';
import { LOCAL_HASH, openLocalHashEngine } from '../helpers/mcp.js';
import {
  currentStore, factsOf, fixtureRow, insertFixtures, movableClock, scopeRequest, scopeTuple, search, type Json,
} from '../helpers/reads.js';
import {
  candidateRow, openEngine, RawDatabase, sqliteVec, tableCounts, unitVector, withRaw,
} from '../helpers/storage.js';
import { assertLifecycleTable } from '../helpers/vector-forms.js';
import { currentRequest, storeRequest } from '../helpers/writes.js';

const require = createRequire(import.meta.url);
/** fs-ext for the test's own hold of the writer lock (the product reaches it through storage/native.ts). */
const fsExt: { flockSync(fd: number, flags: string): void } = require('fs-ext');
const SHIPPED = loadMigrationFiles(MIGRATIONS_DIR);
const auditFailures = (dbPath: string) => auditFile(dbPath, SHIPPED).checks.filter((c) => c.status === 'FAIL')
  .map((c) => `${c.name}: ${c.samples.join(' ')}`);
type Engine = Awaited<ReturnType<typeof openEngine>>;

/** One write of a candidate row with its FTS and vector rows; `after` runs inside the transaction once it is in. */
function writeRow(engine: Engine, fact: string, after: () => void = () => {}, runs?: Map<string, number>) {
  return engine.write(async (trx, raw) => {
    runs?.set(fact, (runs.get(fact) ?? 0) + 1);
    const row = candidateRow({ fact });
    const rowId = await insertRecordUnchecked(trx, row, { searchText: fact, embedding: unitVector(fact.length) });
    after.call(raw);
    return rowId;
  });
}

/** Every table a record's rows live in, counted raw, and the facts stored. */
function stored(dbPath: string): { counts: ReturnType<typeof tableCounts>; facts: string[] } {
  const facts = withRaw(dbPath, (db) => db.prepare('SELECT fact FROM adapter_records ORDER BY row_id').pluck().all());
  return { counts: tableCounts(dbPath), facts: facts as string[] };
}

t.test('writes that wait together commit in one transaction, in call order, as one turn of the queue', async (t) => {
  const dbPath = join(t.testdir(), 'group.sqlite3');
  const engine = await openEngine(dbPath);
  t.teardown(() => engine.close());
  const before = engine.writerQueueTurns!.locked;
  const WRITES = MAX_GROUP_WRITES + 3;
  const rowIds = await Promise.all(Array.from({ length: WRITES }, (_, n) => writeRow(engine, `grouped fact ${n}`)));
  t.same(rowIds, [...rowIds].sort((a, b) => (a < b ? -1 : 1)), 'row ids in call order');
  t.equal(engine.writerQueueTurns!.locked - before, 2, `${WRITES} writes in two turns of at most ${MAX_GROUP_WRITES}`);
  const { counts, facts } = stored(dbPath);
  t.same(facts, Array.from({ length: WRITES }, (_, n) => `grouped fact ${n}`));
  t.same([counts.records, counts.fts, counts.vec], [WRITES, WRITES, WRITES]);
  await engine.close();
  t.same(auditFailures(dbPath), []);
});

t.test("a write's error in a group undoes its own rows only; the others commit", async (t) => {
  const dbPath = join(t.testdir(), 'one-fails.sqlite3');
  const engine = await openEngine(dbPath);
  t.teardown(() => engine.close());
  const refuse = () => { throw new AdapterError('INVALID_ENVELOPE', 'refused after its rows were written'); };
  const writes = ['kept 0', 'refused 1', 'kept 2', 'kept 3'].map((fact) =>
    writeRow(engine, fact, fact.startsWith('refused') ? refuse : undefined));
  const settled = await Promise.allSettled(writes);
  t.same(settled.map((s) => s.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
  const refused = settled[1] as PromiseRejectedResult;
  t.equal((refused.reason as AdapterError).code, 'INVALID_ENVELOPE', 'the write gets its own error');
  const { counts, facts } = stored(dbPath);
  t.same(facts, ['kept 0', 'kept 2', 'kept 3']);
  t.same([counts.records, counts.fts, counts.vec], [3, 3, 3], 'no FTS or vector row of the refused write is left');
  await engine.close();
  t.same(auditFailures(dbPath), []);
});

t.test('an error after which SQLite has no transaction fails its write; the others of the group run again',
  async (t) => {
  const dbPath = join(t.testdir(), 'ended.sqlite3');
  const engine = await openEngine(dbPath);
  t.teardown(() => engine.close());
  const runs = new Map<string, number>();
  const turns = engine.writerQueueTurns!.locked;
  // As SQLITE_FULL or SQLITE_IOERR do: SQLite rolls the whole transaction back, then the statement throws.
  function endTransaction(this: { exec(text: string): void }): void {
    this.exec('ROLLBACK');
    throw new Error('the disk went away');
  }
  const writes = ['first', 'second', 'ends it', 'last'].map((fact) =>
    writeRow(engine, fact, fact === 'ends it' ? endTransaction : undefined, runs));
  const settled = await Promise.allSettled(writes);
  t.same(settled.map((s) => s.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  t.match(String((settled[2] as PromiseRejectedResult).reason), /the disk went away/);
  t.same(Object.fromEntries(runs), { first: 2, second: 2, 'ends it': 1, last: 1 },
    'the writes before it ran again in a new transaction, the one after it once');
  t.equal(engine.writerQueueTurns!.locked - turns, 2, 'the new transaction took a turn of its own (STORAGE.md §6)');
  t.same(stored(dbPath).facts, ['first', 'second', 'last']);
  await engine.close();
  t.same(auditFailures(dbPath), []);
});

t.test('a write whose FTS5 terms fill the disk fails alone, though FTS5 writes them when the next savepoint opens',
  async (t) => {
  const dir = t.testdir();
  const seed = join(dir, 'seed.sqlite3');
  const seeded = await openEngine(seed);
  await writeRow(seeded, 'seed');
  await seeded.close();
  // 4,000 distinct terms: FTS5 holds them in memory and writes part of them out at the next SAVEPOINT. With the file
  // capped a few pages past its size, that is where the disk fills: in the next write's SAVEPOINT, which once failed
  // the whole group (review of stop 48: margins 20-32 here).
  const many = Array.from({ length: 4000 }, (_, n) => `term${n}x${(n * 7919) % 10007}`).join(' ');
  const outcomes = new Map<string, number[]>();
  for (let margin = 0; margin <= 120; margin += 4) {
    const dbPath = join(dir, `margin-${margin}.sqlite3`);
    copyFileSync(seed, dbPath);
    const engine = await openEngine(dbPath);
    const pages = await engine.read(async (db) => (await sql<{ page_count: number }>`PRAGMA page_count`.execute(db))
      .rows[0]!.page_count);
    await engine.read((db) => sql`PRAGMA max_page_count = ${sql.raw(String(pages + margin))}`.execute(db));
    const settled = await startHeld(dbPath, () => [many, 'small 1', 'small 2'].map((fact) => writeRow(engine, fact)),
      50);
    await engine.close();
    const big = settled[0]!;
    if (settled.slice(1).some((s) => s.status !== 'fulfilled')) {
      t.fail(`margin ${margin}: a small write failed with the big one: ${settled.map((s) => s.status).join(', ')}`);
    }
    if (big.status === 'rejected') t.equal((big.reason as AdapterError).code, 'BACKEND_UNAVAILABLE');
    const facts = stored(dbPath).facts.map((fact) => (fact === many ? 'many' : fact));
    t.same(facts, ['seed', ...(big.status === 'fulfilled' ? ['many'] : []), 'small 1', 'small 2'],
      `margin ${margin}: what is stored is what was acknowledged`);
    outcomes.set(big.status, [...(outcomes.get(big.status) ?? []), margin]);
  }
  t.ok(outcomes.get('rejected')?.length, `the disk filled for the big write (margins ${outcomes.get('rejected')})`);
  t.ok(outcomes.get('fulfilled')?.length, 'and a larger cap let it through');
});

t.test('a busy error fails the whole group; the group is tried again whole and commits', async (t) => {
  const dbPath = join(t.testdir(), 'busy.sqlite3');
  const engine = await openEngine(dbPath, { retry: { retries: 5, baseDelayMs: 5, jitterRatio: 0 } });
  t.teardown(() => engine.close());
  const runs = new Map<string, number>();
  let busyOnce = true;
  const busy = () => {
    if (!busyOnce) return;
    busyOnce = false;
    throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
  };
  const writes = ['a', 'b busy once', 'c'].map((fact) =>
    writeRow(engine, fact, fact.startsWith('b') ? busy : undefined, runs));
  const rowIds = await Promise.all(writes);
  t.equal(rowIds.length, 3);
  t.equal(runs.get('a'), 2, 'the write before the busy one ran again');
  t.equal(runs.get('b busy once'), 2);
  t.same(stored(dbPath).facts.sort(), ['a', 'b busy once', 'c']);
  await engine.close();
  t.same(auditFailures(dbPath), []);
});

t.test('writes that meet a held database together wait the retry policy once, as one group, then BACKEND_BUSY',
  async (t) => {
  // Each write retried on its own: the retries of the process's writes ran one after another, each blocking the event
  // loop for its busy timeout, and BACKEND_BUSY came after (1 + writes x retries) busy timeouts, not 1 + retries
  // (70-80 s with 4 calls in flight, where STORAGE.md §6 bounds a request at about 36 s).
  const dbPath = join(t.testdir(), 'held.sqlite3');
  const engine = await openEngine(dbPath, { retry: { retries: 1, baseDelayMs: 10, jitterRatio: 0 } });
  t.teardown(() => engine.close());
  const holder = new RawDatabase(dbPath); // another writer inside its transaction (the writer queue is free)
  t.teardown(() => holder.close());
  holder.exec('BEGIN IMMEDIATE');
  const before = engine.writerQueueTurns!.locked;
  const outcomes = await Promise.allSettled(['a', 'b', 'c', 'd'].map((fact) => writeRow(engine, fact)));
  t.same(outcomes.map((outcome) => outcome.status), ['rejected', 'rejected', 'rejected', 'rejected']);
  for (const outcome of outcomes) {
    t.match((outcome as PromiseRejectedResult).reason, { code: 'BACKEND_BUSY', retryable: true });
  }
  t.equal(engine.writerQueueTurns!.locked - before, 2, 'two attempts in all: the first and one retry, of the group');
  holder.exec('ROLLBACK');
  t.same(stored(dbPath).facts, [], 'nothing written');
});

t.test('stores of one group decide on the locked state, the earlier stores of their group included', async (t) => {
  const dbPath = join(t.testdir(), 'stores.sqlite3');
  const provider = new LocalHashProvider();
  const engine = await SQLiteVecEngine.open({
    dbPath,
    newDatabaseBinding: async () => ({
      vectorDimension: LOCAL_HASH.outputDimension,
      bindingJson: freshBindingJson(LOCAL_HASH, await provider.statusCheck(), formatTimestamp(SYSTEM_CLOCK())),
    }),
  });
  t.teardown(() => engine.close());
  const adapter = new MemoryAdapter({ engine, provider, writeProfile: 'owner-current', hostId: 'h',
    clock: movableClock() });
  const store = (request: Json) => adapter.execute('memory_store', request) as Promise<Json>;
  const scope = { scope: 'PROJECT', project_id: 'groups' };
  const same = currentRequest({ ...scope, fact: 'The API listens on port 8080', idempotency_key: 'same-key' });
  const envelopes = await Promise.all([
    store(same),
    store(same),
    store(currentRequest({ ...scope, fact: 'The API listens on port 8080' })),
    store(currentRequest({ ...scope, fact: 'The API listens on port 9090', subject: 'api port' })),
    store(currentRequest({ ...scope, fact: 'The API listens on port 7070', subject: 'api port' })),
    store(storeRequest({ ...scope, fact: 'Deploys run on Fridays' })),
  ]);
  t.same(envelopes.map((e) => e.status), ['OK', 'OK', 'DUPLICATE', 'OK', 'CONTRADICTION', 'OK']);
  t.equal(envelopes[1]!.results[0].record_id, envelopes[0]!.results[0].record_id, 'the second is a replay');
  t.equal(envelopes[2]!.results[0].record_id, envelopes[0]!.results[0].record_id, 'the duplicate names the first');
  const facts = withRaw(dbPath, (db) => db.prepare('SELECT fact, lifecycle_state FROM adapter_records ORDER BY row_id')
    .all());
  t.same(facts, [
    { fact: 'The API listens on port 8080', lifecycle_state: 'VALIDATED_CURRENT' },
    { fact: 'The API listens on port 9090', lifecycle_state: 'VALIDATED_CURRENT' },
    { fact: 'The API listens on port 7070', lifecycle_state: 'CANDIDATE' },
    { fact: 'Deploys run on Fridays', lifecycle_state: 'CANDIDATE' },
  ]);
  await engine.close();
  assertLifecycleTable(t, dbPath, 'after a group of stores');
  t.same(auditFailures(dbPath), []);
});

t.test('a writer queue that fails around a group settles every gathered write with its error', async (t) => {
  const dbPath = join(t.testdir(), 'queue-fails.sqlite3');
  await (await openEngine(dbPath)).close();
  class FailingQueue {
    readonly turns = { locked: 0, queued: 0, bypassed: 0, passedStalled: 0, unqueued: 0 };
    async run(): Promise<never> {
      throw new Error('the lock file failed');
    }
    close(): void {}
    stopWaitingAt(): void {}
  }
  const { WriteConnection } = await t.mockImport<typeof import('../../src/storage/write-connection.js')>(
    '../../src/storage/write-connection.js', { '../../src/storage/writer-queue.js': { WriterQueue: FailingQueue } });
  const connection = WriteConnection.open({ path: dbPath });
  t.teardown(() => connection.close());
  let ran = 0;
  const work = async () => { ran += 1; };
  const settled = await Promise.allSettled([connection.write(work), connection.write(work), connection.write(work)]);
  t.same(settled.map((s) => s.status), ['rejected', 'rejected', 'rejected'], 'no write is left waiting');
  t.match(String((settled[2] as PromiseRejectedResult).reason), /the lock file failed/);
  t.equal(ran, 0);
});

/** Starts `writes` while the test holds `<db>-writer`, so that they all gather before the first turn comes. */
async function startHeld<T>(
  dbPath: string, writes: () => Promise<T>[], holdMs = 400,
): Promise<PromiseSettledResult<T>[]> {
  const fd = openSync(`${dbPath}-writer`, 'r');
  fsExt.flockSync(fd, 'exnb');
  const started = writes();
  await sleep(holdMs);
  closeSync(fd);
  return Promise.allSettled(started);
}

/** Every vec0 row is found by a KNN of its partition once, and none belongs to a record that is not stored. */
function assertVec0Rows(t: Test, dbPath: string, label: string): void {
  const db = new RawDatabase(dbPath, { readonly: true });
  sqliteVec.load(db);
  try {
    const stored = new Set(db.prepare('SELECT row_id FROM adapter_records').pluck().all() as number[]);
    const probe = new Uint8Array(localHashEmbedding('probe').buffer);
    const found: number[] = [];
    for (const key of db.prepare('SELECT DISTINCT scope_key FROM fact_vec').pluck().all()) {
      found.push(...db.prepare('SELECT rowid FROM fact_vec WHERE embedding MATCH ? AND k = 4096 AND scope_key = ?')
        .pluck().all(probe, key) as number[]);
    }
    const code = db.prepare('SELECT simhash_v1 FROM eligible_codes LIMIT 1').pluck().get();
    for (const key of db.prepare('SELECT DISTINCT shard_key FROM eligible_codes').pluck().all()) {
      found.push(...db.prepare('SELECT rowid FROM eligible_codes WHERE simhash_v1 MATCH vec_bit(?) AND k = 4096 '
        + 'AND shard_key = ?').pluck().all(code, key) as number[]);
    }
    const rows = db.prepare('SELECT (SELECT count(*) FROM fact_vec) + (SELECT count(*) FROM eligible_codes)')
      .pluck().get();
    t.equal(found.length, rows, `${label}: a KNN finds every vec0 row once`);
    t.same(found.filter((rowId) => !stored.has(rowId)), [], `${label}: no vec0 row of a refused write`);
  } finally {
    db.close();
  }
}

// A review's case (stop 46): refused writes among stores in a scope with eligible forms, and in the scope that the
// first refused write itself codes (its insert is the one that passes UNCODED_SCOPE_MAX_RECORDS), all in one group.
for (const padding of [UNCODED_SCOPE_MAX_RECORDS + 40, UNCODED_SCOPE_MAX_RECORDS]) {
  t.test(`refused writes of a group in a scope of ${padding} records leave no vector form behind`, async (t) => {
    const scope = scopeTuple('PROJECT', { project_id: 'coded' });
    const dbPath = join(t.testdir(), 'coded.sqlite3');
    const engine = await openLocalHashEngine(dbPath);
    t.teardown(() => engine.close());
    const padded = Array.from({ length: padding }, (_, i) => ({ row: fixtureRow(scope, `padding ${i}`) }));
    await insertFixtures(engine, padded);
    const adapter = new MemoryAdapter({ engine, provider: new LocalHashProvider(), writeProfile: 'owner-current',
      hostId: 'h', clock: movableClock() });
    const store = (fact: string) => adapter.execute('memory_store', currentStore(scope, fact)) as Promise<Json>;
    const refused = (fact: string) => engine.write(async (trx) => {
      await insertRecordUnchecked(trx, fixtureRow(scope, fact),
        { searchText: searchText(fact), embedding: localHashEmbedding(fact) });
      throw new AdapterError('INVALID_ENVELOPE', 'refused after every table was written');
    });
    const turns = engine.writerQueueTurns!.locked;
    const settled = await startHeld(dbPath, () => [
      refused('refused fact zero'), refused('refused fact one'),
      ...Array.from({ length: 9 }, (_, i) => (i % 3 === 1 ? refused(`refused fact ${i + 2}`) : store(`grouped ${i}`))),
    ]);
    t.ok(engine.writerQueueTurns!.locked - turns < settled.length, 'the writes shared turns');
    t.same(settled.map((s) => (s.status === 'fulfilled' ? (s.value as Json).status : (s.reason as AdapterError).code)),
      ['INVALID_ENVELOPE', 'INVALID_ENVELOPE', 'OK', 'INVALID_ENVELOPE', 'OK', 'OK', 'INVALID_ENVELOPE', 'OK', 'OK',
        'INVALID_ENVELOPE', 'OK']);
    const refusedRows = () => withRaw(dbPath, (db) => db.prepare("SELECT count(*) FROM adapter_records WHERE fact LIKE "
      + "'refused%'").pluck().get());
    t.equal(refusedRows(), 0, 'no record of a refused write');
    assertLifecycleTable(t, dbPath, 'after the group');
    assertVec0Rows(t, dbPath, 'after the group');
    for (let i = 0; i < 10; i += 1) await store(`later fact ${i}`);
    const found = factsOf(await search(adapter, { ...scopeRequest(scope), query: 'grouped 3',
      intent_class: 'CURRENT_PROJECT_STATE' }));
    t.ok(found.includes('grouped 3'), 'a search finds a grouped fact');
    t.notOk(found.some((fact) => fact.startsWith('refused')), 'and no refused one');
    await engine.close();
    assertLifecycleTable(t, dbPath, 'at the end');
    assertVec0Rows(t, dbPath, 'at the end');
    t.same(auditFailures(dbPath), []);
    t.same(stored(dbPath).counts.records, padding + 6 + 10, 'the padding, the six grouped stores, the ten later ones');
  });
}
