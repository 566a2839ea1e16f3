import t from 'tap';
import { join } from 'node:path';
import { sql } from 'kysely';
import { runShape } from '../../src/storage/statement-shapes.js';
import { findCurrentWithKey, findDuplicate, inScope, scopeArgs, scopeSlots } from '../../src/storage/record-repository.js';
import { candidateRow, openEngine, storeRow } from '../helpers/storage.js';

// Statements compiled once per shape (docs/decisions/0012): later calls bind new arguments to the SQL of the
// first and must read exactly what the Kysely builder would.

const GLOBAL = { scope: 'GLOBAL_USER', project_id: null, worktree_id: null, workflow_id: null, agent_id: null };

t.test('a shape compiled once answers later calls with their own arguments, as the builder does', async (t) => {
  const engine = await openEngine(join(t.testdir(), 'shapes.sqlite3'));
  t.teardown(() => engine.close());
  const rows = [candidateRow({ fact: 'one' }), candidateRow({ fact: 'two', scope: 'PROJECT', project_id: 'p1' }), candidateRow({ fact: 'three', lifecycle_state: 'QUARANTINED' })];
  for (const row of rows) await storeRow(engine, row);
  const byKey = (key: string) => engine.read((db) => runShape(db, 'test:byKey', [key], ([k]) => db.selectFrom('adapter_records').select('fact').where('idempotency_key', '=', k).compile()));
  t.strictSame((await byKey(rows[0]!.idempotency_key)).rows, [{ fact: 'one' }]);
  t.strictSame((await byKey(rows[1]!.idempotency_key)).rows, [{ fact: 'two' }], 'the second call binds its own argument');
  t.strictSame((await byKey('absent')).rows, []);

  // Constants the statement binds itself stay bound; arguments go where their slots went, scope nulls included.
  const scoped = (scope: typeof GLOBAL) => engine.read((db) => runShape(db, 'test:scoped', scopeArgs(scope), (slots) =>
    inScope(db, scopeSlots(slots)).select('fact').where('lifecycle_state', '!=', 'QUARANTINED').orderBy('fact').compile()));
  t.strictSame((await scoped(GLOBAL)).rows.map((r) => r.fact), ['one'], 'the QUARANTINED constant is still bound');
  t.strictSame((await scoped({ ...GLOBAL, scope: 'PROJECT', project_id: 'p1' })).rows.map((r) => r.fact), ['two'], 'a non-null identity binds to the same IS');

  for (const row of rows.slice(0, 2)) {
    const scope = { ...GLOBAL, scope: row.scope, project_id: row.project_id };
    const built = await engine.read((db) => inScope(db, scope).selectAll().where('native_content_hash', '=', row.native_content_hash).execute());
    t.strictSame(await engine.read((db) => findDuplicate(db, scope, row.native_content_hash)), built[0], `findDuplicate equals the built query (${row.fact})`);
  }
});

t.test('what decides a shape goes in its key; a slot used for anything but a bound value is refused', async (t) => {
  const engine = await openEngine(join(t.testdir(), 'keys.sqlite3'));
  t.teardown(() => engine.close());
  const current = candidateRow({ lifecycle_state: 'VALIDATED_CURRENT', authority_role: 'OWNER_CURRENT', verified_by: 'OWNER', contradiction_key: 'k1', last_verified_at: '2026-01-01T00:00:00Z', source_timestamp: '2026-01-01T00:00:00Z' });
  await storeRow(engine, current);
  const find = (same: boolean, hash: string, exclude: string | null = null) => engine.read((db) => findCurrentWithKey(db, GLOBAL, 'k1', hash, same, exclude));
  t.equal((await find(true, current.native_content_hash))?.record_id, current.record_id, 'same content hash');
  t.equal(await find(false, current.native_content_hash), undefined, 'the other operator is its own shape');
  t.equal((await find(false, 'another hash'))?.record_id, current.record_id);
  t.equal(await find(false, 'another hash', current.memory_id), undefined, 'the optional clause is its own shape');
  t.equal((await find(false, 'another hash', 'another memory'))?.record_id, current.record_id);

  await t.rejects(engine.read((db) => runShape(db, 'test:unbound', ['x'], () => sql<{ one: number }>`SELECT 1 AS one`.compile(db))), TypeError, 'an argument that is not bound is refused');
  await t.rejects(engine.read((db) => runShape(db, 'test:inlined', ['x'], ([v]) => sql<{ v: string }>`SELECT ${sql.lit(String(v))} AS v`.compile(db))), TypeError, 'so is one inlined into the SQL text');
});

t.test('which arguments are null is part of the shape: Kysely writes is null for them', async (t) => {
  const engine = await openEngine(join(t.testdir(), 'nulls.sqlite3'));
  t.teardown(() => engine.close());
  await storeRow(engine, candidateRow({ fact: 'global' }));
  await storeRow(engine, candidateRow({ fact: 'project', scope: 'PROJECT', project_id: 'p1' }));
  const compiledSql: string[] = [];
  const facts = async (scope: typeof GLOBAL) => (await engine.read((db) => runShape(db, 'test:nullShapes', scopeArgs(scope), (slots) => {
    const compiled = inScope(db, scopeSlots(slots)).select('fact').compile();
    compiledSql.push(compiled.sql);
    return compiled;
  }))).rows.map((row) => row.fact);
  t.strictSame(await facts(GLOBAL), ['global']);
  t.strictSame(await facts({ ...GLOBAL, scope: 'PROJECT', project_id: 'p1' }), ['project']);
  t.strictSame(await facts({ ...GLOBAL, scope: 'PROJECT', project_id: 'p2' }), [], 'same null pattern: compiled before');
  t.strictSame(await facts(GLOBAL), ['global']);
  t.equal(compiledSql.length, 2, 'one compile per null pattern');
  t.match(compiledSql[0], /"project_id" is null/);
  t.match(compiledSql[1], /"project_id" is \?/);
  t.match(compiledSql[1], /"agent_id" is null/);
});
