import t, { type Test } from 'tap';
import { dirname, join } from 'node:path';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { fixedTokensOfRow, publicRecord, rowTokenRecounter } from '../../src/adapter/public-record.js';
import { auditFile } from '../../src/maintenance/audit-operation.js';
import { canonicalJson } from '../../src/core/canonical-json.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import type { RecordRow } from '../../src/storage/record-repository.js';
import { rebuildTokenCounts } from '../../src/storage/token-count-repository.js';
import { sortedJson } from '../helpers/mcp.js';
import {
  candidateStore, currentStore, fixtureRow, get, insertFixtures, openReadBench, scopeRequest, scopeTuple, search,
  type Json, type ReadBench,
} from '../helpers/reads.js';
import {
  ADMIN_BIN, downgradeToSchemaFour, inGatedTransaction, MIGRATE_BIN, runBin, withRaw,
} from '../helpers/storage.js';
import { RacingProvider, replaceRequest, reverifyRequest } from '../helpers/writes.js';

// Stored token counts (schema 5, docs/decisions/0036-record-token-counts.md). Every write stores the o200k count of
// its record's public form without the four pieces that change later; a search adds those pieces as they are then.
// The expected counts here come from a whole-text encode, never from the product's counting code.

const SCOPE = scopeTuple('PROJECT', { project_id: 'counts' });
const AS_TEXT = { allowedSpecial: new Set<string>(), disallowedSpecial: new Set<string>() };
const whole = (text: string) => encode(text, AS_TEXT).length;
const CHANGING = ['contradiction_state', 'lifecycle_state', 'relevance_score', 'retrieval_rank'] as const;
const BIG = { max_bytes: 8000, max_tokens: 1600, top_k: 8, max_memories: 8 };

/** The count the contract's budget implies for a record's fixed pieces: its core less the four changing pieces. */
function expectedFixed(record: Record<string, unknown>): number {
  const text = canonicalJson(record);
  const changing = CHANGING.reduce((sum, key) => sum + whole(`${key}":${canonicalJson(record[key])},"`), 0);
  return whole(text) - whole('{"') - whole('"}') - changing;
}

const counts = (dbPath: string) => withRaw(dbPath, (db) => new Map((db.prepare(
  'SELECT row_id, fixed_tokens FROM record_token_counts').all() as { row_id: number; fixed_tokens: number }[])
  .map((row) => [row.row_id, row.fixed_tokens])));
const records = (dbPath: string) => withRaw(dbPath, (db) =>
  db.prepare('SELECT * FROM adapter_records ORDER BY row_id').all() as RecordRow[]);

const FACTS = [
  'The fleet release pipeline signs every artifact with the hardware key kept in the build room safe, then uploads',
  'fleet: يستخدم خادم البناء الإصدار ٢٠ من Node',
  'Staging fleet deploys need the VPN: "vpn-staging" profile',
  'Fleet cache TTL is 3600 s; emoji 🚀 in the changelog is fine',
];

/** Current facts, a Candidate, a contradiction, a promotion and a REPLACE: every write path of the adapter. */
async function everyWrite(t: Test, bench: ReadBench): Promise<void> {
  const stored: Json[] = [];
  for (const fact of FACTS) {
    const envelope = await bench.owner.execute('memory_store', {
      ...candidateStore(SCOPE, fact), requested_lifecycle_state: 'VALIDATED_CURRENT',
      source_timestamp: '2026-11-01T00:00:00Z', last_verified_at: '2026-11-30T09:00:00Z', tags: ['ci', 'مشروع'],
    }) as Json;
    stored.push(envelope.results[0]);
  }
  const candidate = (await bench.delegate.execute('memory_store',
    candidateStore(SCOPE, 'Nightly fleet builds run at 02:00 UTC'))) as Json;
  // The same first 96 folded characters as a current fact, another content: a contradiction (CONTRACT.md §13.2).
  const conflicting = (await bench.owner.execute('memory_store', {
    ...candidateStore(SCOPE, `${FACTS[0]} to the mirror`), requested_lifecycle_state: 'VALIDATED_CURRENT',
    source_timestamp: '2026-11-01T00:00:00Z', last_verified_at: '2026-11-30T09:00:00Z',
  })) as Json;
  t.equal(conflicting.status, 'CONTRADICTION', 'a contradicting fact is stored');
  const promoted = (await bench.owner.execute('memory_update', reverifyRequest(candidate.results[0], {
    expected_record_id: candidate.results[0].record_id,
    verification: { source_timestamp: '2026-11-30T00:00:00Z' } }))) as Json;
  t.equal(promoted.status, 'OK', `the Candidate is promoted (${JSON.stringify(promoted.degradation)})`);
  const replaced = (await bench.owner.execute('memory_update',
    replaceRequest(stored[2]!, { fact: 'The fleet build uses Node 22' }))) as Json;
  t.equal(replaced.status, 'OK', 'a fact is replaced');
}

t.test('every write stores its record count, and a search fits its results from the stored counts', async (t) => {
  const bench = await openReadBench(t);
  await everyWrite(t, bench);
  const stored = counts(bench.dbPath);
  const rows = records(bench.dbPath);
  t.ok(rows.length >= 8, `${rows.length} records written`);
  t.strictSame([...stored.keys()].sort((a, b) => a - b), rows.map((row) => row.row_id), 'one count per record');
  for (const row of rows) {
    t.equal(stored.get(row.row_id), expectedFixed(publicRecord(row)),
      `${row.lifecycle_state} ${row.contradiction_state}`);
  }

  const request = { ...scopeRequest(SCOPE), query: 'fleet', intent_class: 'CURRENT_PROJECT_STATE' };
  for (const kind of ['KEYWORD', 'SEMANTIC', 'HYBRID']) {
    const envelope = await search(bench.owner, { ...request, retrieval_mode_kind: kind, ...BIG });
    t.ok(envelope.results.length >= 2, `${kind}: ${envelope.results.length} results`);
    t.equal(envelope.budget.serialized_tokens, whole(sortedJson(envelope.results)),
      `${kind}: the budget counts exactly`);
  }
  const history = await search(bench.owner, { ...request, retrieval_mode_kind: 'KEYWORD',
    retrieval_mode: 'REVIEW_HISTORY', intent_class: 'HISTORICAL_QUESTION', ...BIG });
  t.ok(history.results.some((r: Json) => r.lifecycle_state === 'SUPERSEDED'), 'history returns a superseded record');
  t.equal(history.budget.serialized_tokens, whole(sortedJson(history.results)), 'history: the budget counts exactly');
  // memory_get of a memory with two revisions, CURRENT and REVIEW_HISTORY.
  const getRequest = { ...scopeRequest(SCOPE), memory_id: rows.find((row) => row.revision === 2)!.memory_id };
  const gets = async () => [
    await get(bench.owner, getRequest), await get(bench.owner, { ...getRequest, retrieval_mode: 'REVIEW_HISTORY' }),
  ];
  for (const [index, envelope] of (await gets()).entries()) {
    t.equal(envelope.results.length, index + 1, `memory_get ${index === 0 ? 'CURRENT' : 'REVIEW_HISTORY'} records`);
    t.equal(envelope.budget.serialized_tokens, whole(sortedJson(envelope.results)),
      'memory_get: the budget counts exactly');
  }

  // The counts are what a search and memory_get add up: raised by 10 each, the budget grows by 10 a result.
  inGatedTransaction(bench.dbPath,
    (raw) => raw.exec('UPDATE record_token_counts SET fixed_tokens = fixed_tokens + 10'));
  const raised = await search(bench.owner, { ...request, retrieval_mode_kind: 'KEYWORD', ...BIG });
  t.equal(raised.budget.serialized_tokens, whole(sortedJson(raised.results)) + 10 * raised.results.length,
    'the search read the stored counts');
  for (const envelope of await gets()) {
    t.equal(envelope.budget.serialized_tokens, whole(sortedJson(envelope.results)) + 10 * envelope.results.length,
      'memory_get read the stored counts');
  }
});

// memory_store counts its record before the write transaction and again inside it only when the contradiction outcome
// changed under the lock (the pieces of verified_by and authority_role change with it). A writer racing in between:
for (const appears of [false, true]) {
  t.test(`a contradiction that ${appears ? 'appears' : 'goes'} under the store's lock: the count of the record written`,
    async (t) => {
    const bench = await openReadBench(t);
    const provider = new RacingProvider();
    const racer = bench.adapter('owner-current', { provider });
    const store = (fact: string) => currentStore(SCOPE, fact, { subject: 'node version' });
    if (appears) {
      provider.hook = () => bench.owner.execute('memory_store', store('The fleet build uses Node 20'));
    } else {
      const existing = ((await bench.owner.execute('memory_store', store('The fleet build uses Node 20'))) as Json)
        .results[0];
      provider.hook = () => bench.owner.execute('memory_update',
        replaceRequest(existing, { fact: 'The fleet runtime is Deno 2', subject: 'runtime' }));
    }
    const written = (await racer.execute('memory_store', store('The fleet build uses Node 22'))) as Json;
    t.equal(written.status, appears ? 'CONTRADICTION' : 'OK', 'the outcome of the locked state');
    t.equal(provider.hook, null, 'the race ran');
    const row = records(bench.dbPath).find((r) => r.fact === 'The fleet build uses Node 22')!;
    t.equal(counts(bench.dbPath).get(row.row_id), expectedFixed(publicRecord(row)), 'the stored count');
    const found = await search(bench.owner, { ...scopeRequest(SCOPE), query: 'Node 22', retrieval_mode_kind: 'KEYWORD',
      ...BIG, ...(appears ? { retrieval_mode: 'REVIEW_HISTORY', intent_class: 'HISTORICAL_QUESTION' }
        : { intent_class: 'CURRENT_PROJECT_STATE' }) });
    t.ok(found.results.length > 0, 'the record is found');
    t.equal(found.budget.serialized_tokens, whole(sortedJson(found.results)), 'the served budget');
  });
}

t.test('audit recounts every stored count: a wrong one fails token_counts, in audit, backup and restore', async (t) => {
  const bench = await openReadBench(t);
  await everyWrite(t, bench);
  await bench.engine.close();
  const rows = records(bench.dbPath);
  const recount = await rowTokenRecounter();
  for (const row of rows) t.equal(recount(row), expectedFixed(publicRecord(row)), `recounted: ${row.row_id}`);
  const tokenCounts = (report: { checks: readonly { name: string; status: string; samples: readonly string[] }[] }) =>
    report.checks.find((check) => check.name === 'token_counts')!;
  t.match(tokenCounts(auditFile(bench.dbPath, MaintenanceTarget.shippedMigrations(), recount)),
    { status: 'PASS', samples: [] }, 'every count the writers stored is the recount');

  const wrong = rows[rows.length - 2]!;
  inGatedTransaction(bench.dbPath, (raw) =>
    raw.prepare('UPDATE record_token_counts SET fixed_tokens = fixed_tokens + 1 WHERE row_id = ?').run(wrong.row_id));
  t.match(tokenCounts(auditFile(bench.dbPath, MaintenanceTarget.shippedMigrations(), recount)),
    { status: 'FAIL', count: 1, samples: [wrong.record_id] }, 'a count one token off is named by its record');
  t.match(tokenCounts(auditFile(bench.dbPath, MaintenanceTarget.shippedMigrations())), { status: 'PASS' },
    'without a recounter only the rows are checked');

  const audit = runBin(ADMIN_BIN, ['audit', '--db', bench.dbPath, '--json']);
  t.equal(audit.status, 3, 'factlane-admin audit: problems found');
  t.match(tokenCounts(JSON.parse(audit.stdout)), { status: 'FAIL', samples: [wrong.record_id] });
  const out = join(dirname(bench.dbPath), 'copy.sqlite3');
  const backup = runBin(ADMIN_BIN, ['backup', '--db', bench.dbPath, '--out', out, '--json']);
  t.equal(backup.status, 0, backup.stderr);
  t.match(tokenCounts(JSON.parse(backup.stdout).manifest.audit), { status: 'FAIL', samples: [wrong.record_id] },
    'the backup manifest records it');
  const restore = runBin(ADMIN_BIN, ['restore', '--from', out, '--db', join(dirname(bench.dbPath), 'back.sqlite3'),
    '--json']);
  t.equal(restore.status, 0, restore.stderr);
  t.match(tokenCounts(JSON.parse(restore.stdout).audit), { status: 'FAIL', samples: [wrong.record_id] },
    'the restore report records it');
});

t.test('a record without a count is counted whole, and the rebuild stores what its writer would have', async (t) => {
  const bench = await openReadBench(t);
  await everyWrite(t, bench);
  const written = counts(bench.dbPath);
  // Records as a raw writer or an older release leaves them: no counts, and a tombstone among them.
  await insertFixtures(bench.engine, [
    { row: fixtureRow(SCOPE, 'Written before schema 5: the fleet docs build uses mkdocs') },
    { row: fixtureRow(SCOPE, 'purged fleet tombstone', { lifecycle: 'QUARANTINED' }) },
  ]);
  inGatedTransaction(bench.dbPath, (raw) => raw.exec('DELETE FROM record_token_counts WHERE row_id % 2 = 0'));
  const request = { ...scopeRequest(SCOPE), query: 'fleet', intent_class: 'CURRENT_PROJECT_STATE',
    retrieval_mode_kind: 'KEYWORD', ...BIG };
  const before = await search(bench.owner, request);
  t.ok(before.results.length >= 3, 'records with and without counts are returned');
  t.equal(before.budget.serialized_tokens, whole(sortedJson(before.results)), 'mixed: the budget counts exactly');
  // memory_get of every memory (the tombstone's too), histories mixing records with and without counts.
  let longest = 0;
  for (const memoryId of new Set(records(bench.dbPath).map((row) => row.memory_id))) {
    const history = await get(bench.owner, { ...scopeRequest(SCOPE), memory_id: memoryId,
      retrieval_mode: 'REVIEW_HISTORY' });
    longest = Math.max(longest, history.results.length);
    t.equal(history.budget.serialized_tokens, whole(sortedJson(history.results)), `memory_get ${memoryId}: exact`);
  }
  t.ok(longest >= 2, 'a history of two records or more');

  const progress: [number, number][] = [];
  const rebuild = () => bench.engine.write((trx) => rebuildTokenCounts(trx, fixedTokensOfRow,
    (done, total) => progress.push([done, total])));
  const stored = await rebuild();
  const after = counts(bench.dbPath);
  const rows = records(bench.dbPath);
  const tombstone = rows.find((row) => row.lifecycle_state === 'QUARANTINED')!;
  t.equal(stored, rows.length - 1 - [...written.keys()].filter((id) => id % 2 === 1).length, 'every missing count');
  t.strictSame(progress, [[stored, stored]], 'one batch, reported of the total');
  t.notOk(after.has(tombstone.row_id), 'no count for a tombstone');
  for (const row of rows.filter((r) => r.lifecycle_state !== 'QUARANTINED')) {
    t.equal(after.get(row.row_id), expectedFixed(publicRecord(row)), `record ${row.row_id}`);
    if (written.has(row.row_id)) t.equal(after.get(row.row_id), written.get(row.row_id),
      'the same as its writer stored');
  }
  t.equal(await rebuild(), 0, 'a second run finds nothing to count');
  const again = await search(bench.owner, request);
  t.equal(again.budget.serialized_tokens, before.budget.serialized_tokens, 'the same budget from the stored counts');
});

t.test('factlane-migrate up from schema 4 stores the count of every record, as its writer would have', async (t) => {
  const bench = await openReadBench(t, 'schema4.sqlite3');
  await everyWrite(t, bench);
  const written = counts(bench.dbPath);
  await bench.engine.close();
  downgradeToSchemaFour(bench.dbPath);
  const index = () => withRaw(bench.dbPath, (db) => db.prepare(
    "SELECT name FROM sqlite_master WHERE name IN ('record_token_counts', 'idx_eligible_shards_size') ORDER BY name")
    .pluck().all());
  t.strictSame(index(), ['idx_eligible_shards_size'], 'schema 4: no counts, the shards\' size index');

  const up = runBin(MIGRATE_BIN, ['up', '--db', bench.dbPath, '--no-backup', '--json']);
  t.equal(up.status, 0, up.stderr);
  t.match(JSON.parse(up.stdout), { applied: [{ version: 5, name: 'record_token_counts' }] });
  t.match(up.stderr, /"derived_rows_rebuilt"/, 'the counting is reported as derived rows rebuilt');
  t.strictSame(index(), ['record_token_counts'], 'schema 5: the counts, and no index read by nothing');
  t.strictSame(counts(bench.dbPath), written, 'every record counted as its writer counted it');
  const audit = runBin(ADMIN_BIN, ['audit', '--db', bench.dbPath, '--json']);
  t.equal(audit.status, 0, audit.stdout);
  t.equal(JSON.parse(audit.stdout).ok, true, 'audit passes');
});
