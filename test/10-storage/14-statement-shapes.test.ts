import t from 'tap';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { CompiledQuery, sql } from 'kysely';
import type { Reader } from '../../src/storage/read-snapshot.js';
import { compiledShapes, runShape } from '../../src/storage/statement-shapes.js';
import {
  contradictionSummary, findByIdempotencyKey, findCurrentWithKey, findDuplicate, findLiveRecord, findRecord, inScope,
  memoryPresence, scopeArgs, scopeSlots, supersedeRecord, type ScopeColumns,
} from '../../src/storage/record-repository.js';
import {
  exactHits, keywordHits, memoryRecords, scopeHasHistorical, semanticHits,
} from '../../src/storage/retrieval-repository.js';
import { candidateRow, openEngine, queryPlan, storeRow, unitVector, withRaw } from '../helpers/storage.js';

// Statements compiled once per shape (docs/decisions/0012): later calls bind new arguments to the SQL of the
// first and must read exactly what the Kysely builder would.

const GLOBAL: ScopeColumns = {
  scope: 'GLOBAL_USER', project_id: null, worktree_id: null, workflow_id: null, agent_id: null,
};

t.test('a shape compiled once answers later calls with their own arguments, as the builder does', async (t) => {
  const engine = await openEngine(join(t.testdir(), 'shapes.sqlite3'));
  t.teardown(() => engine.close());
  const rows = [candidateRow({ fact: 'one' }), candidateRow({ fact: 'two', scope: 'PROJECT', project_id: 'p1' }),
    candidateRow({ fact: 'three', lifecycle_state: 'QUARANTINED' })];
  for (const row of rows) await storeRow(engine, row);
  const byKey = (key: string) => engine.read((db) => runShape(db, 'test:byKey', [key],
    ([k]) => db.selectFrom('adapter_records').select('fact').where('idempotency_key', '=', k).compile()));
  t.strictSame((await byKey(rows[0]!.idempotency_key)).rows, [{ fact: 'one' }]);
  t.strictSame((await byKey(rows[1]!.idempotency_key)).rows, [{ fact: 'two' }],
    'the second call binds its own argument');
  t.strictSame((await byKey('absent')).rows, []);

  // Constants the statement binds itself stay bound; arguments go where their slots went, scope nulls included.
  const scoped = (scope: typeof GLOBAL) => engine.read((db) => runShape(db, 'test:scoped', scopeArgs(scope), (slots) =>
    inScope(db, scopeSlots(slots)).select('fact').where('lifecycle_state', '!=', 'QUARANTINED')
      .orderBy('fact').compile()));
  t.strictSame((await scoped(GLOBAL)).rows.map((r) => r.fact), ['one'], 'the QUARANTINED constant is still bound');
  t.strictSame((await scoped({ ...GLOBAL, scope: 'PROJECT', project_id: 'p1' })).rows.map((r) => r.fact), ['two'],
    'a non-null identity binds to the same IS');

  for (const row of rows.slice(0, 2)) {
    const scope = { ...GLOBAL, scope: row.scope, project_id: row.project_id };
    const built = await engine.read((db) =>
      inScope(db, scope).selectAll().where('native_content_hash', '=', row.native_content_hash).execute());
    t.strictSame(await engine.read((db) => findDuplicate(db, scope, row.native_content_hash)), built[0],
      `findDuplicate equals the built query (${row.fact})`);
  }
});

t.test('what decides a shape goes in its key; a slot used for anything but a bound value is refused', async (t) => {
  const engine = await openEngine(join(t.testdir(), 'keys.sqlite3'));
  t.teardown(() => engine.close());
  const current = candidateRow({ lifecycle_state: 'VALIDATED_CURRENT', authority_role: 'OWNER_CURRENT',
    verified_by: 'OWNER', contradiction_key: 'k1', last_verified_at: '2026-01-01T00:00:00Z',
    source_timestamp: '2026-01-01T00:00:00Z' });
  await storeRow(engine, current);
  const find = (same: boolean, hash: string, exclude: string | null = null) =>
    engine.read((db) => findCurrentWithKey(db, GLOBAL, 'k1', hash, same, exclude));
  t.equal((await find(true, current.native_content_hash))?.record_id, current.record_id, 'same content hash');
  t.equal(await find(false, current.native_content_hash), undefined, 'the other operator is its own shape');
  t.equal((await find(false, 'another hash'))?.record_id, current.record_id);
  t.equal(await find(false, 'another hash', current.memory_id), undefined, 'the optional clause is its own shape');
  t.equal((await find(false, 'another hash', 'another memory'))?.record_id, current.record_id);

  await t.rejects(engine.read((db) => runShape(db, 'test:unbound', ['x'],
    () => sql<{ one: number }>`SELECT 1 AS one`.compile(db))), TypeError, 'an argument that is not bound is refused');
  await t.rejects(engine.read((db) =>
    runShape(db, 'test:inlined', ['x'], ([v]) => sql<{ v: string }>`SELECT ${sql.lit(String(v))} AS v`.compile(db))),
    TypeError, 'so is one inlined into the SQL text');
});

t.test('which arguments are null is part of the shape: Kysely writes is null for them', async (t) => {
  const engine = await openEngine(join(t.testdir(), 'nulls.sqlite3'));
  t.teardown(() => engine.close());
  await storeRow(engine, candidateRow({ fact: 'global' }));
  await storeRow(engine, candidateRow({ fact: 'project', scope: 'PROJECT', project_id: 'p1' }));
  const compiledSql: string[] = [];
  const facts = async (scope: typeof GLOBAL) =>
    (await engine.read((db) => runShape(db, 'test:nullShapes', scopeArgs(scope), (slots) => {
    const compiled = inScope(db, scopeSlots(slots)).select('fact').compile();
    compiledSql.push(compiled.sql);
    return compiled;
  }))).rows.map((row) => row.fact);
  t.strictSame(await facts(GLOBAL), ['global']);
  t.strictSame(await facts({ ...GLOBAL, scope: 'PROJECT', project_id: 'p1' }), ['project']);
  t.strictSame(await facts({ ...GLOBAL, scope: 'PROJECT', project_id: 'p2' }), [],
    'same null pattern: compiled before');
  t.strictSame(await facts(GLOBAL), ['global']);
  t.equal(compiledSql.length, 2, 'one compile per null pattern');
  t.match(compiledSql[0], /"project_id" is null/);
  t.match(compiledSql[1], /"project_id" is \+\?/);
  t.match(compiledSql[1], /"agent_id" is null/);
});

t.test('every repository statement finds its rows through an index, never by walking a scope or the table',
  async (t) => {
  const dbPath = join(t.testdir(), 'plans.sqlite3');
  const engine = await openEngine(dbPath);
  t.teardown(() => engine.close());
  const project = { ...GLOBAL, scope: 'PROJECT', project_id: 'p1' };
  const rows = Array.from({ length: 40 }, (_, i) => candidateRow({ scope: 'PROJECT', project_id: 'p1',
    scope_key: 'scope-p1', fact: `fact ${i}`, lifecycle_state: i % 2 ? 'CANDIDATE' : 'VALIDATED_CURRENT',
    authority_role: i % 2 ? 'UNRESOLVED' : 'PROJECT_CURRENT', verified_by: i % 2 ? 'UNVERIFIED' : 'OWNER',
    last_verified_at: i % 2 ? null : '2026-01-01T00:00:00Z',
    source_timestamp: i % 2 ? null : '2026-01-01T00:00:00Z' }));
  for (const [i, row] of rows.entries()) await storeRow(engine, row, i);
  const one = rows[0]!;
  // Run every repository read and write once, so that each shape is compiled.
  await engine.read(async (db) => {
    await findRecord(db, one.record_id);
    await findByIdempotencyKey(db, one.idempotency_key);
    await findDuplicate(db, project, one.native_content_hash);
    await findCurrentWithKey(db, project, one.contradiction_key, one.native_content_hash, true);
    await findCurrentWithKey(db, project, one.contradiction_key, one.native_content_hash, false, one.memory_id);
    await findLiveRecord(db, project, one.memory_id);
    await memoryPresence(db, project, one.memory_id);
    await contradictionSummary(db, 'scope-p1');
    await exactHits(db, project, one.native_content_hash, true, 5);
    await keywordHits(db, project, ['fact'], true, 5);
    await semanticHits(db, 'scope-p1', unitVector(1), true, 5);
    await scopeHasHistorical(db, project);
    await memoryRecords(db, project, one.memory_id, 5);
  });
  const live = (await engine.read((db) => findLiveRecord(db, project, one.memory_id)))!;
  await engine.write((trx) => supersedeRecord(trx, live));

  // Reads only: a raw connection cannot prepare the writes (their fence triggers call the engine's writer function).
  const plans = withRaw(dbPath, (db) => [...compiledShapes()].filter(([, text]) => /^\s*select/i.test(text))
    .map(([key, text]) => ({ key, detail: queryPlan(db, text) })));
  for (const plan of plans) t.comment(`${plan.key}: ${plan.detail}`);
  const planOf = (prefix: string) => plans.find((plan) => plan.key.startsWith(prefix))?.detail ?? 'not compiled';
  t.ok(plans.length >= 12, `${plans.length} read shapes compiled`);
  t.same(plans.filter((plan) => /\bSCAN (adapter_records|r)\b/.test(plan.detail)), [],
    'no full scan of adapter_records');
  t.match(planOf('findLiveRecord:'), /ux_adapter_live_memory/,
    'the live record comes from the partial index on memory_id');
  t.match(planOf('memoryScopes:'), /ux_adapter_memory_revision|ux_adapter_live_memory/,
    "a memory's scopes come from an index on memory_id");
  t.match(planOf('memoryRecords:'), /ux_adapter_memory_revision/,
    "a memory's history comes from (memory_id, revision)");
  t.match(planOf('findRecord:'), /record_id/, 'a record by its id');
  t.match(planOf('findByIdempotencyKey:'), /idempotency_key/, 'a record by its idempotency key');
});

t.test('every bound value is written +? and bound per run; a bare parameter is refused before it is prepared',
  async (t) => {
  const engine = await openEngine(join(t.testdir(), 'parameters.sqlite3'));
  t.teardown(() => engine.close());
  for (const fact of ['a', 'b', 'c', 'what?']) await storeRow(engine, candidateRow({ fact }));
  const facts = (rows: { fact: string }[]) => rows.map((row) => row.fact);
  const ordered = (db: Reader) => db.selectFrom('adapter_records').select('fact').orderBy('fact');
  // One statement, bound anew at each run: each run takes its own values.
  const page = (after: string, limit: number, offset: number) => engine.read((db) => runShape(db, 'test:page',
    [after, limit, offset], ([a, l, o]) => ordered(db).where('fact', '>', a).limit(l).offset(o).compile()));
  t.strictSame(facts((await page('', 2, 0)).rows), ['a', 'b']);
  t.strictSame(facts((await page('a', 1, 1)).rows), ['c'], 'the second run binds its own values');
  t.strictSame(facts((await page('', 9, 0)).rows), ['a', 'b', 'c', 'what?']);
  t.match(compiledShapes().get('test:page:111'), /"fact" > \+\? order by "fact" limit \+\? offset \+\?$/,
    'the compiler writes every value +?');
  const inList = await engine.read(async (db) => db.selectFrom('adapter_records').select('fact')
    .where('fact', 'in', ['b', 'c']).orderBy('fact').compile());
  t.match(inList.sql, /in \(\+\?, \+\?\)/);
  t.strictSame(inList.parameters, ['b', 'c']);
  // SQLite plans some bare parameters on their bound value (a LIMIT, an indexed equality once ANALYZE has run), and
  // then prepares the statement again at every run.
  const refused = { name: 'TypeError', message: /a value bound as a bare parameter/ };
  await t.rejects(engine.read((db) => sql`SELECT fact FROM adapter_records LIMIT ${sql.raw('?')}`.execute(db)),
    refused, 'a LIMIT written ? in raw SQL');
  await t.rejects(engine.read((db) => db.executeQuery(CompiledQuery.raw(
    'SELECT fact FROM adapter_records WHERE record_id = ?', ['x']))), refused, 'an equality');
  await t.rejects(engine.read((db) => db.executeQuery(CompiledQuery.raw(
    'SELECT fact FROM adapter_records WHERE fact IN (+?, ?)', ['a', 'b']))), refused, 'one bare parameter of two');
  // A ? inside a string literal or a quoted name is not a parameter.
  t.strictSame(facts((await engine.read((db) => db.executeQuery<{ fact: string }>(CompiledQuery.raw(
    `SELECT fact AS "fact?", fact FROM adapter_records WHERE fact = 'what?' AND fact <> +?`, ['a'])))).rows),
    ['what?'], 'a literal with a question mark');
  t.strictSame(facts(await engine.read((db) => ordered(db).limit(sql.lit(2)).execute())), ['a', 'b'], 'a literal');
});

const hasSqlite3 = spawnSync('sqlite3', ['-version'], { encoding: 'utf8' }).status === 0;

t.test('KEYWORD: an expression FTS5 rejects finds nothing; a damaged fact_fts is a fault, not an empty result',
  { skip: hasSqlite3 ? false : 'the sqlite3 CLI is not installed' }, async (t) => {
  const dbPath = join(t.testdir(), 'keyword.sqlite3');
  const engine = await openEngine(dbPath);
  await storeRow(engine, candidateRow({ fact: 'the build uses node 20' }));
  // A NUL ends FTS5's string: "unterminated string". Query terms are token runs, so only a caller of its
  // own can pass one.
  t.same(await engine.read((db) => keywordHits(db, GLOBAL, ['build\u0000'], false, 5)), [], 'rejected: no hits');
  t.equal((await engine.read((db) => keywordHits(db, GLOBAL, ['build'], false, 5))).length, 1);
  await engine.close();
  // better-sqlite3 runs in defensive mode, which protects FTS5 shadow tables; the sqlite3 CLI does not.
  const dropped = spawnSync('sqlite3', [dbPath, 'DROP TABLE fact_fts_config;'], { encoding: 'utf8' });
  t.equal(dropped.status, 0, dropped.stderr);
  const damaged = await openEngine(dbPath);
  t.teardown(() => damaged.close());
  await t.rejects(damaged.read((db) => keywordHits(db, GLOBAL, ['build'], false, 5)), { code: 'BACKEND_CORRUPT' },
    'the fault passes through, governed');
});
