import t, { type Test } from 'tap';
import { UNCODED_SCOPE_MAX_RECORDS } from '@factlane/schema';
import { sql, type CompiledQuery, type Kysely } from 'kysely';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { DB } from '../../generated/db.js';
import { MemoryAdapter } from '../../src/adapter/memory-adapter.js';
import { scopeDigest } from '../../src/adapter/request-scope.js';
import { freshBindingJson } from '../../src/embedding/embedding-binding.js';
import { LocalHashProvider } from '../../src/embedding/local-hash-provider.js';
import { MIGRATIONS_DIR } from '../../src/core/package-info.js';
import { SYSTEM_CLOCK, formatTimestamp } from '../../src/core/time.js';
import { auditFile } from '../../src/maintenance/audit-operation.js';
import { migrateUp } from '../../src/maintenance/migrate-operations.js';
import { tombstoneColumns } from '../../src/maintenance/recovery-plan.js';
import { compactRecord } from '../../src/storage/compaction-repository.js';
import { eligibleNeighbours, EXACT_SCOPE_ROWS, FIRST_PASS } from '../../src/storage/eligible-neighbours.js';
import { CODE_CHUNK_ROWS, nextShard, shardCapacity, shardsOfNewScope } from '../../src/storage/eligible-shards.js';
import { codeAheadOfWrite, eligibleCode, rebuildEligibleVectors } from '../../src/storage/eligible-vectors.js';
import { simhashCode } from '../../src/storage/simhash-projection.js';
import { inSnapshot } from '../../src/storage/read-snapshot.js';
import { scopeCodes } from '../../src/storage/scope-codes.js';
import { CODE_BYTES } from '../../src/storage/hamming-scan.js';
import { compiledShapes } from '../../src/storage/statement-shapes.js';
import { reembedDatabase } from '../../src/maintenance/reembed-operation.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import { loadMigrationFiles } from '../../src/storage/migration-files.js';
import { findRecord, insertRecordUnchecked, supersedeRecord } from '../../src/storage/record-repository.js';
import type { NewRecordRow } from '../../src/storage/record-rows.js';
import { purgeRecord } from '../../src/storage/recovery-repository.js';
import { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import { LOCAL_HASH } from '../helpers/mcp.js';
import {
  factsOf, fixtureRow, insertFixtures, movableClock, padScope, queryVector, scopeRequest, scopeTuple, search,
  vectorAtDistance, type Json,
} from '../helpers/reads.js';
import {
  candidateRow, downgradeToSchemaFive, downgradeToSchemaFour, downgradeToSchemaOne, downgradeToSchemaThree,
  downgradeToSchemaTwo,
  inGatedTransaction, openEngine, queryPlan, RawDatabase,
  REPO_ROOT, sqliteVec, storeRow, withRaw,
} from '../helpers/storage.js';
import { fixture as reembedFixture } from '../helpers/reembed.js';
import { assertLifecycleTable, readVectorForms } from '../helpers/vector-forms.js';
import { currentRequest, replaceRequest, reverifyRequest, storeRequest } from '../helpers/writes.js';

// The eligible vector layout (STORAGE.md §4.5, migrations/0002_eligible_vectors.sql and 0003_small_scope_vectors.sql):
// CURRENT semantic search scores only VALIDATED_CURRENT vectors of the exact scope; a scope of more than
// UNCODED_SCOPE_MAX_RECORDS records keeps eligible forms for them, a smaller one none (it is searched exactly on
// fact_vec); every lifecycle move keeps the derived forms as the lifecycle table says, `factlane-migrate up` builds
// them for a schema-1 or schema-2 database, and audit L10 checks them.

const SHIPPED = loadMigrationFiles(MIGRATIONS_DIR);
const SCOPE = scopeTuple('PROJECT', { project_id: 'p1' });
const PROVIDER = new LocalHashProvider();

/** Opens a local-hash-384 engine on `dbPath`, creating it from `migrationsDir` (default: the shipped files). */
async function openLocalHash(dbPath: string, migrationsDir?: string): Promise<SQLiteVecEngine> {
  return SQLiteVecEngine.open({
    dbPath, migrationsDir,
    newDatabaseBinding: async () => ({
      vectorDimension: LOCAL_HASH.outputDimension,
      bindingJson: freshBindingJson(LOCAL_HASH, await PROVIDER.statusCheck(), formatTimestamp(SYSTEM_CLOCK())),
    }),
  });
}

/** A migrations folder holding only the shipped schema-1 file, as an older release shipped it. */
function schemaOneDir(dir: string): string {
  const target = join(dir, 'schema-1');
  mkdirSync(target, { recursive: true });
  copyFileSync(join(MIGRATIONS_DIR, '0001_initial.sql'), join(target, '0001_initial.sql'));
  return target;
}

const adapterOn = (
  engine: SQLiteVecEngine, writeProfile: 'owner-current' | 'delegated-candidate' | 'read-only', clock = movableClock(),
) =>
  new MemoryAdapter({ engine, provider: PROVIDER, writeProfile, hostId: 'h', clock });

async function ok(adapter: MemoryAdapter, tool: 'memory_store' | 'memory_update', request: Json): Promise<Json> {
  const envelope = (await adapter.execute(tool, request)) as Json;
  if (envelope.status !== 'OK') throw new Error(`${tool} ended ${envelope.status} ${envelope.error_code ?? ''}`);
  return envelope.results[0];
}

const auditFailures = (dbPath: string) => auditFile(dbPath, SHIPPED).checks.filter((c) => c.status === 'FAIL')
  .map((c) => `${c.name}: ${c.samples.join(' ')}`);

t.test('the shipped schema has the eligible tables, fenced, and a new database starts with them empty', async (t) => {
  const dbPath = join(t.testdir(), 'new.sqlite3');
  const engine = await openLocalHash(dbPath);
  t.equal(engine.findings.schemaVersion, SHIPPED.at(-1)!.version);
  await engine.close();
  const raw = new RawDatabase(dbPath);
  sqliteVec.load(raw);
  const names = raw.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'eligible_%' "
    + "AND type IN ('table', 'trigger') ORDER BY name").pluck().all();
  t.ok(names.includes('eligible_vectors') && names.includes('eligible_shards') && names.includes('eligible_codes'));
  for (const table of ['eligible_vectors', 'eligible_shards']) {
    t.throws(() => raw.prepare(`DELETE FROM ${table}`).run(), /no such function: factlane_contract_v2_writer/,
      `${table} is fenced against raw writers`);
  }
  raw.close();
  t.strictSame(readVectorForms(dbPath), { records: [], shards: [] });
  t.strictSame(auditFailures(dbPath), [], 'audit passes on the new database');

  const dropped = new RawDatabase(dbPath);
  dropped.exec('DROP TRIGGER factlane_v2_eligible_shards_delete_fence');
  dropped.close();
  t.match(auditFailures(dbPath), [/^fences_present/], 'a dropped fence of a schema-2 table fails fences_present');
});

for (const coded of [false, true]) {
  t.test(`every lifecycle move keeps the vector forms exactly as the lifecycle table says, `
    + `${coded ? 'in a coded scope' : 'in a small scope'}`, async (t) => {
    const dbPath = join(t.testdir(), 'moves.sqlite3');
    const engine = await openLocalHash(dbPath);
    t.teardown(() => engine.close());
    if (coded) await padScope(engine, SCOPE);
    const owner = adapterOn(engine, 'owner-current');
    const delegate = adapterOn(engine, 'delegated-candidate');
    const project = { scope: 'PROJECT', project_id: 'p1' };
    const formsOf = () => readVectorForms(dbPath).records.filter((r) => r.eligible).map((r) => r.recordId).sort();

    const candidate = await ok(delegate, 'memory_store', storeRequest({ ...project,
      fact: 'The ingest job writes to bucket raw-events', memory_type: 'PROJECT_LEARNED_FACT' }));
    assertLifecycleTable(t, dbPath, 'store of a Candidate');
    const current = await ok(owner, 'memory_store', currentRequest({ ...project,
      fact: 'The exporter serves metrics on port 9464', memory_type: 'PROJECT_LEARNED_FACT' }));
    assertLifecycleTable(t, dbPath, 'store of a current fact');
    t.strictSame(formsOf(), coded ? [current.record_id] : [],
      coded ? 'the current fact has eligible forms' : 'no eligible forms in a small scope');

    const promoted = await ok(owner, 'memory_update', reverifyRequest(candidate, {
      expected_record_id: candidate.record_id,
      verification: { source_timestamp: '2026-11-28T00:00:00Z', verified_by: 'OWNER' },
    }));
    assertLifecycleTable(t, dbPath, 'Candidate promotion');
    const reverified = await ok(owner, 'memory_update', reverifyRequest(current));
    assertLifecycleTable(t, dbPath, 'REVERIFY');
    const replaced = await ok(owner, 'memory_update',
      replaceRequest(reverified, { fact: 'The exporter serves metrics on port 9100' }));
    assertLifecycleTable(t, dbPath, 'REPLACE');
    t.strictSame(formsOf(), coded ? [promoted.record_id, replaced.record_id].sort() : [],
      coded ? 'exactly the two current records have eligible forms' : 'still none');

    t.ok(await engine.write((trx) => compactRecord(trx, current.record_id)), 'a SUPERSEDED record compacts');
    assertLifecycleTable(t, dbPath, 'compaction');
    t.strictSame(auditFailures(dbPath), [], 'audit passes after every move');

    // The searches see exactly the current facts.
    const hits = await search(owner, { ...project, query: 'which port do metrics use',
      intent_class: 'CURRENT_PROJECT_STATE', top_k: 8, max_memories: 8, max_bytes: 8000, max_tokens: 1600 });
    t.strictSame(factsOf(hits).sort(),
      ['The exporter serves metrics on port 9100', 'The ingest job writes to bucket raw-events'].sort());
  });
}

t.test('the record that takes a scope past the threshold codes it: forms for every current record, '
  + 'then one by one', async (t) => {
  const dbPath = join(t.testdir(), 'threshold.sqlite3');
  const engine = await openLocalHash(dbPath);
  t.teardown(() => engine.close());
  const q = queryVector('cache eviction policy');
  const below = Array.from({ length: UNCODED_SCOPE_MAX_RECORDS }, (_, i) => ({
    row: fixtureRow(SCOPE, `fact ${i} below the threshold`,
      { lifecycle: i % 3 === 0 ? 'VALIDATED_CURRENT' : 'CANDIDATE' }),
    vector: vectorAtDistance(q, 0.2 + (i % 97) * 0.005, i + 1),
  }));
  await insertFixtures(engine, below);
  t.strictSame(readVectorForms(dbPath).shards, [], `${UNCODED_SCOPE_MAX_RECORDS} records: not coded`);
  const beforeCoding = await engine.read((db) => eligibleNeighbours(db, scopeDigest(SCOPE), q, 20));
  // The next record is a Candidate: it codes the scope without being eligible itself.
  await insertFixtures(engine,
    [{ row: fixtureRow(SCOPE, 'the record past the threshold', { lifecycle: 'CANDIDATE' }) }]);
  const currents = below.filter((f) => f.row.lifecycle_state === 'VALIDATED_CURRENT').map((f) => f.row.record_id);
  t.strictSame(readVectorForms(dbPath).records.filter((r) => r.eligible).map((r) => r.recordId), currents,
    'every current record got its forms, in row id order');
  assertLifecycleTable(t, dbPath, 'coded by a Candidate');
  t.strictSame(await engine.read((db) => eligibleNeighbours(db, scopeDigest(SCOPE), q, 20)), beforeCoding,
    'the coded scope answers exactly as it did on fact_vec');
  await insertFixtures(engine,
    [{ row: fixtureRow(SCOPE, 'a current fact after coding'), vector: vectorAtDistance(q, 0.01, 9999) }]);
  t.equal(readVectorForms(dbPath).records.filter((r) => r.eligible).length, currents.length + 1,
    'a later current record gets its forms');
  t.equal((await engine.read((db) => eligibleNeighbours(db, scopeDigest(SCOPE), q, 1)))[0]!.distance.toFixed(2),
    '0.01');
  t.strictSame(auditFailures(dbPath), []);
});

t.test('a scope coded without a current record keeps an empty shard, '
  + 'and its first current record fills it', async (t) => {
  const dbPath = join(t.testdir(), 'empty-coded.sqlite3');
  const engine = await openLocalHash(dbPath);
  t.teardown(() => engine.close());
  await padScope(engine, SCOPE);
  t.strictSame(readVectorForms(dbPath).shards.map((s) => [s.shard, s.size]), [[0, 0]],
    'one empty shard marks the scope coded');
  t.strictSame(auditFailures(dbPath), []);
  t.strictSame(
    await engine.read((db) => eligibleNeighbours(db, scopeDigest(SCOPE), queryVector('padding candidate'), 8)), [],
    'no Candidate is ever a CURRENT neighbour');
  await insertFixtures(engine, [{ row: fixtureRow(SCOPE, 'the first current fact') }]);
  t.strictSame(readVectorForms(dbPath).shards.map((s) => [s.shard, s.size]), [[0, 1]]);
  assertLifecycleTable(t, dbPath, 'first current record of a coded scope');
});

t.test('eight nearer Candidates never hide a farther validated fact, '
  + 'in a small scope and in coded ones below and above the exact threshold', async (t) => {
  const query = 'which port does the metrics exporter listen on';
  const q = queryVector(query);
  for (const [farCurrent, farCandidates] of
    [[0, 0], [0, UNCODED_SCOPE_MAX_RECORDS], [EXACT_SCOPE_ROWS + 40, 0], [1200, 0]] as const) {
    const dbPath = join(t.testdir(), `threshold-${farCurrent}-${farCandidates}.sqlite3`);
    const engine = await openLocalHash(dbPath);
    const fixtures = [];
    for (let i = 0; i < 8; i += 1) fixtures.push({
      row: fixtureRow(SCOPE, `near candidate ${i}`, { lifecycle: 'CANDIDATE' }),
      vector: vectorAtDistance(q, 0.05 + i * 0.01, i + 1),
    });
    for (let i = 0; i < farCandidates; i += 1) fixtures.push({
      row: fixtureRow(SCOPE, `far candidate ${i}`, { lifecycle: 'CANDIDATE' }),
      vector: vectorAtDistance(q, 0.9, 3000 + i),
    });
    for (let i = 0; i < farCurrent; i += 1) fixtures.push({
      row: fixtureRow(SCOPE, `far current fact ${i}`), vector: vectorAtDistance(q, 0.95 + (i % 50) * 0.002, 1000 + i),
    });
    fixtures.push({ row: fixtureRow(SCOPE, 'the validated fact'), vector: vectorAtDistance(q, 0.6, 999) });
    await insertFixtures(engine, fixtures);
    const reader = adapterOn(engine, 'read-only');
    const label = `${farCurrent + 1} current facts and ${8 + farCandidates} Candidates in the scope`;
    for (const kind of ['SEMANTIC', 'HYBRID']) {
      const envelope = await search(reader, { ...scopeRequest(SCOPE), query, intent_class: 'CURRENT_PROJECT_STATE',
        top_k: 1, max_memories: 1, retrieval_mode_kind: kind });
      t.strictSame(factsOf(envelope), ['the validated fact'], `${label}, ${kind} top_k 1: the validated fact`);
      t.equal(envelope.results[0].relevance_score, 0.7, `${label}: the exact score (cosine distance 0.6)`);
    }
    const shards = readVectorForms(dbPath).shards;
    const coded = fixtures.length > UNCODED_SCOPE_MAX_RECORDS;
    t.strictSame(shards.map((s) => s.size), coded ? expectedShards(farCurrent + 1) : [],
      `${label}: ${shards.length} shard(s)`);
    await engine.close();
    t.strictSame(auditFailures(dbPath), [], `${label}: audit passes`);
  }
});

/** The shard sizes after `count` inserts into an empty scope, by the rule of addEligibleVector written out apart. */
function expectedShards(count: number): number[] {
  const sizes: number[] = [];
  for (let total = 0; total < count; total += 1) {
    const capacity = shardCapacity(total + 1);
    const newest = sizes.findLastIndex((size) => size < capacity);
    if (newest >= 0) sizes[newest]! += 1;
    else sizes.push(1);
  }
  return sizes;
}

t.test('shard capacity grows with the scope in whole chunks, as 8·√total within its bounds', async (t) => {
  t.equal(CODE_CHUNK_ROWS, 512, 'the chunk size of eligible_codes (migration 0004)');
  t.strictSame([0, 1, 1000, 2000, 9215, 9216, 10_000, 100_000, 1_000_000, 100_000_000].map(shardCapacity),
    [512, 512, 512, 512, 512, 1024, 1024, 2560, 8192, 250_368]);
  t.ok([1e5, 1e7, 1e8, 1e9].every((total) => Math.ceil(total / shardCapacity(total)) <= 400),
    'at most 400 shards: one UNION ALL arm each');
  t.strictSame(expectedShards(2053), [512, 512, 512, 512, 5],
    '2,053 vectors: one shard filled at a time, each a whole chunk');
  // Past 9,216 the capacity doubles: the newest shard fills to two chunks first, then the one before it, and so on.
  // (shardsOfNewScope, not expectedShards: below 9,217 vectors newest-first and least-filled-first lay out alike.)
  const sizes = [...shardsOfNewScope(10_000).sizes];
  t.strictSame([sizes.length, sizes.at(-1), sizes.at(-2), sizes.slice(0, -2).every((size) => size === 512)],
    [18, 1024, 784, true], `10,000 vectors: ${sizes.length} shards, every one but the filling one in whole chunks`);
  t.equal(nextShard([]), 0, 'a scope without shards opens shard 0');
  t.equal(nextShard([0]), 0, 'the empty shard of a coded scope is filled');
  t.equal(nextShard([2, 512, 512, 512, 5]), 4, 'a place freed in an older shard waits while a newer shard has room');
  t.equal(nextShard([2, 512, 512, 512, 512]), 0, 'and is taken once every newer shard is full');
  t.equal(nextShard(Array(18).fill(512)), 17, 'at 9,217 the newest shard grows into a second chunk');
  t.equal(nextShard([...Array(17).fill(512), 1024]), 16, 'then the one before it');
});

/** Each code's place in vec0: its partition, the rank of its chunk among the partition's chunks, its offset there. */
function codePlaces(dbPath: string): string[] {
  return withRaw(dbPath, (db) => (db.prepare(`SELECT r.rowid, c.partition00 AS part, r.chunk_offset,
      (SELECT count(*) FROM eligible_codes_chunks o WHERE o.partition00 = c.partition00 `
    + `AND o.chunk_id < c.chunk_id) AS rank
    FROM eligible_codes_rowids r JOIN eligible_codes_chunks c ON c.chunk_id = r.chunk_id ORDER BY r.rowid`).all() as
    { rowid: number; part: string; chunk_offset: number; rank: number }[])
    .map((p) => `${p.rowid} ${p.part} ${p.rank} ${p.chunk_offset}`));
}

t.test('coding a scope in batches puts every vector where adding them one at a time does', async (t) => {
  for (const count of [0, 1, 255, 256, 257, 1000, 2053, 5000, 9216, 9217, 10_000, 25_601, 100_000]) {
    t.strictSame([...shardsOfNewScope(count).sizes], expectedShards(count), `${count} vectors: the sizes of the rule`);
  }
  const shards = shardsOfNewScope(600).shards;
  t.ok(shards.slice(0, CODE_CHUNK_ROWS).every((shard) => shard === 0) && shards[CODE_CHUNK_ROWS] === 1,
    'shard 0 fills to capacity, then shard 1 opens');
  // The record past the threshold codes 257 current records in batches; the next 1,796 are added one at a time. A
  // rebuild then codes all 2,053 in batches: each form, its shard and its place in vec0 come out the same.
  const dbPath = join(t.testdir(), 'batches.sqlite3');
  const engine = await openLocalHash(dbPath);
  t.teardown(() => engine.close());
  const fixtures = Array.from({ length: 2053 }, (_, i) => ({ row: fixtureRow(SCOPE, `fact ${i} of the batch test`) }));
  await insertFixtures(engine, fixtures);
  const incremental = readVectorForms(dbPath);
  const places = codePlaces(dbPath);
  t.equal(await engine.write((trx) => rebuildEligibleVectors(trx)), 2053);
  const rebuilt = readVectorForms(dbPath);
  t.strictSame(rebuilt.shards, incremental.shards, 'the same shard sizes');
  const shardOf = (forms: typeof rebuilt) => forms.records.map((r) => [r.recordId, r.eligible?.shard]);
  t.strictSame(shardOf(rebuilt), shardOf(incremental), 'each vector in the same shard');
  t.strictSame(codePlaces(dbPath), places, 'each code at the same place of its partition');
  assertLifecycleTable(t, dbPath, 'after the batched rebuild');
});

t.test('an insert at a capacity step goes to the newest shard, as the batched coding puts it', async (t) => {
  const dbPath = join(t.testdir(), 'step.sqlite3');
  const engine = await openLocalHash(dbPath);
  t.teardown(() => engine.close());
  await padScope(engine, SCOPE);
  // The shard sizes 9,216 current facts leave (18 of 512), written as counts only: the insert reads nothing else.
  const raw = new RawDatabase(dbPath);
  raw.function('factlane_contract_v2_writer', { deterministic: false }, () => 1);
  raw.prepare('UPDATE eligible_shards SET size = ?').run(CODE_CHUNK_ROWS);
  for (let shard = 1; shard < 18; shard += 1) {
    raw.prepare('INSERT INTO eligible_shards (scope_key, shard, size) VALUES (?, ?, ?)')
      .run(scopeDigest(SCOPE), shard, CODE_CHUNK_ROWS);
  }
  raw.close();
  await insertFixtures(engine, [{ row: fixtureRow(SCOPE, 'the 9,217th current fact') }]);
  const sizes = readVectorForms(dbPath).shards.map((s) => s.size);
  t.strictSame(sizes, [...Array(17).fill(CODE_CHUNK_ROWS), CODE_CHUNK_ROWS + 1], 'shard 17 took it');
  t.strictSame(sizes, [...shardsOfNewScope(9217).sizes], 'where the batched coding of 9,217 vectors puts it');
});

t.test('shards fill the newest first and shrink when records stop being current', async (t) => {
  const dbPath = join(t.testdir(), 'shards.sqlite3');
  const engine = await openLocalHash(dbPath);
  t.teardown(() => engine.close());
  const total = 2053;
  const fixtures = Array.from({ length: total },
    (_, i) => ({ row: fixtureRow(SCOPE, `fact number ${i} of the shard test` ) }));
  await insertFixtures(engine, fixtures);
  const before = readVectorForms(dbPath).shards.map((s) => s.size);
  t.strictSame(before, expectedShards(total), 'the sizes the rule gives');
  const chunks = withRaw(dbPath, (db) => db.prepare(`SELECT count(*) AS n FROM eligible_codes_chunks
    WHERE partition00 LIKE ? || '/%'`).get(scopeDigest(SCOPE)) as { n: number }).n;
  t.equal(chunks, before.length, `each of the ${before.length} shards in one chunk of vec0`);
  // Supersede ten records of shard 0 through REVERIFY: each successor goes to the newest shard with room (the one
  // filling), not to the place its parent left in shard 0: vec0 would put it in a new chunk of shard 0 only if shard 0
  // had more than one.
  const owner = adapterOn(engine, 'owner-current');
  const shardZero = readVectorForms(dbPath).records.filter((r) => r.eligible?.shard === 0).slice(0, 10);
  for (const record of shardZero) {
    const row = fixtures.find((f) => f.row.record_id === record.recordId)!.row;
    await ok(owner, 'memory_update',
      reverifyRequest({ scope: { ...SCOPE }, memory_id: row.memory_id, revision: row.revision }));
  }
  t.strictSame(readVectorForms(dbPath).shards.map((s) => s.size),
    [before[0]! - 10, ...before.slice(1, -1), before.at(-1)! + 10], 'shard 0 lost ten, the newest shard took them');
  const successors = readVectorForms(dbPath).records
    .filter((r) => r.eligible && !fixtures.some((f) => f.row.record_id === r.recordId));
  t.equal(successors.length, 10);
  assertLifecycleTable(t, dbPath, 'after REVERIFY across shards');
});

t.test('a coded scope of few current vectors is searched whole '
  + 'even when its shard sizes were read before another commit', async (t) => {
  const dbPath = join(t.testdir(), 'stale-sizes.sqlite3');
  const engine = await openLocalHash(dbPath);
  t.teardown(() => engine.close());
  const q = queryVector('cache eviction policy');
  await padScope(engine, SCOPE);
  await insertFixtures(engine, Array.from({ length: 20 }, (_, i) => ({
    row: fixtureRow(SCOPE, `current ${i}`), vector: vectorAtDistance(q, 0.1 + i * 0.02, i + 1),
  })));
  // The sizes as a search would have read them before 17 of the vectors were committed by another process.
  const raw = new RawDatabase(dbPath);
  raw.function('factlane_contract_v2_writer', { deterministic: false }, () => 1);
  raw.prepare('UPDATE eligible_shards SET size = 3').run();
  raw.close();
  const neighbours = await engine.read((db) => eligibleNeighbours(db, scopeDigest(SCOPE), q, 20));
  t.equal(neighbours.length, 20, 'every vector of the shard is re-scored, not the 3 the sizes said');
  t.strictSame(neighbours.map((n) => Number(n.distance.toFixed(2))),
    Array.from({ length: 20 }, (_, i) => Number((0.1 + i * 0.02).toFixed(2))), 'nearest first, exact distances');
});

/**
 * `db` for one search, which runs `commit` once, right after the statement that reads the scope's shards: the
 * moment another server could commit between that read and the KNN. A search takes its statements from the
 * connection it holds (`connection()`), so that connection's queries are watched too.
 */
function committingAfterShardRead(db: Kysely<DB>, commit: () => Promise<void>): Kysely<DB> {
  let committed = false;
  const watched = (target: Kysely<DB>): Kysely<DB> => new Proxy(target, {
    get(inner, property) {
      const value: unknown = Reflect.get(inner, property, inner);
      if (property === 'connection') {
        return () => ({ execute: <T>(work: (held: Kysely<DB>) => Promise<T>) =>
          inner.connection().execute((held) => work(watched(held))) });
      }
      if (property !== 'executeQuery') return typeof value === 'function' ? value.bind(inner) : value;
      return async (query: CompiledQuery) => {
        const result = await inner.executeQuery(query);
        if (!committed && /FROM eligible_shards/.test(query.sql)) {
          committed = true;
          await commit();
        }
        return result;
      };
    },
  });
  return watched(db);
}

/** A REVERIFY of `record` (its successor at `vector`), committed through `writer`. */
async function reverify(writer: SQLiteVecEngine, record: NewRecordRow, vector: Float32Array): Promise<void> {
  await writer.write(async (trx) => {
    await supersedeRecord(trx, (await findRecord(trx, record.record_id))!);
    const successor = fixtureRow(SCOPE, record.fact,
      { memoryId: record.memory_id, revision: 2, parentRecordId: record.record_id });
    await insertRecordUnchecked(trx, successor, { searchText: successor.fact, embedding: vector });
  });
}

/**
 * The neighbours of `q` in SCOPE, with `commits` made between the search's two statements (the shard read and the
 * KNN) through a second engine on the same file: another server's connection.
 */
async function searchAcross(
  t: Test, engine: SQLiteVecEngine, dbPath: string, q: Float32Array,
  commits: (writer: SQLiteVecEngine) => Promise<void>,
) {
  const writer = await openLocalHash(dbPath);
  t.teardown(() => writer.close());
  let committed = false;
  const found = await engine.read((db) => eligibleNeighbours(committingAfterShardRead(db, async () => {
    await commits(writer);
    committed = true;
  }), scopeDigest(SCOPE), q, 3));
  t.ok(committed, 'the commits ran between the shard read and the KNN');
  return found;
}

t.test('a REVERIFY committed between the shard sizes and the KNN never hides the record it moves', async (t) => {
  const q = queryVector('which port does the metrics exporter listen on');
  const far = (i: number) => ({
    row: fixtureRow(SCOPE, `far fact ${i}`), vector: vectorAtDistance(q, 0.6 + (i % 50) * 0.005, 100 + i),
  });
  await t.test('first pass: the successor goes to a shard read with one vector', async (t) => {
    const dbPath = join(t.testdir(), 'moved.sqlite3');
    const engine = await openLocalHash(dbPath);
    t.teardown(() => engine.close());
    // 513 current records: X and 511 far ones fill shard 0; Y, the query's own vector, opens shard 1.
    const x = { row: fixtureRow(SCOPE, 'X second nearest'), vector: vectorAtDistance(q, 0.05, 1) };
    const fixtures = [x, ...Array.from({ length: CODE_CHUNK_ROWS - 1 }, (_, i) => far(i)),
      { row: fixtureRow(SCOPE, 'Y nearest'), vector: q }];
    await insertFixtures(engine, fixtures);
    t.strictSame(readVectorForms(dbPath).shards.map((s) => s.size), [CODE_CHUNK_ROWS, 1]);
    const found = await searchAcross(t, engine, dbPath, q, (writer) => reverify(writer, x.row, x.vector));
    t.strictSame(readVectorForms(dbPath).shards.map((s) => s.size), [CODE_CHUNK_ROWS - 1, 2],
      'the successor went to shard 1');
    t.strictSame(found.map((n) => n.distance.toFixed(2)), ['0.00', '0.05', '0.60'], 'Y, then X (or its successor)');
  });
  await t.test('exact: the successor goes to a shard read empty', async (t) => {
    const dbPath = join(t.testdir(), 'emptied.sqlite3');
    const engine = await openLocalHash(dbPath);
    t.teardown(() => engine.close());
    const x = { row: fixtureRow(SCOPE, 'X nearest'), vector: vectorAtDistance(q, 0.05, 1) };
    const z = { row: fixtureRow(SCOPE, 'Z in shard 1'), vector: vectorAtDistance(q, 0.7, 5) };
    const fixtures = [x, ...Array.from({ length: CODE_CHUNK_ROWS - 1 }, (_, i) => far(i)), z];
    await insertFixtures(engine, fixtures);
    // Recovery purges Z and 257 far facts (their records stay, as tombstones): 255 current vectors, few enough for the
    // exact path, and shard 1 empty.
    await engine.write(async (trx) => {
      for (const f of [z, ...fixtures.slice(1, 258)]) await purgeRecord(trx,
        (await findRecord(trx, f.row.record_id))!.row_id, tombstoneColumns('op', f.row.record_id));
    });
    t.strictSame(readVectorForms(dbPath).shards.map((s) => s.size), [255, 0]);
    const found = await searchAcross(t, engine, dbPath, q, (writer) => reverify(writer, x.row, x.vector));
    t.strictSame(readVectorForms(dbPath).shards.map((s) => s.size), [254, 1], 'the successor went to shard 1');
    t.equal(found[0]?.distance.toFixed(2), '0.05', 'X (or its successor) first');
  });
  // A shard opens only once every shard holds CODE_CHUNK_ROWS or more: never in a scope of the exact path.
  const farFacts = CODE_CHUNK_ROWS - 1;
  await t.test('first pass: a store opens a shard and the successor goes there', async (t) => {
    const dbPath = join(t.testdir(), `opened-${farFacts}.sqlite3`);
    const engine = await openLocalHash(dbPath);
    t.teardown(() => engine.close());
    // 257 Candidates code the scope; X and the far facts then fill every shard to its capacity.
    await padScope(engine, SCOPE);
    const x = { row: fixtureRow(SCOPE, 'X nearest'), vector: vectorAtDistance(q, 0.05, 1) };
    await insertFixtures(engine, [x, ...Array.from({ length: farFacts }, (_, i) => ({
      row: fixtureRow(SCOPE, `far fact ${i}`), vector: vectorAtDistance(q, 0.6 + (i % 50) * 0.005, 100 + i),
    }))]);
    const before = readVectorForms(dbPath).shards.map((s) => s.size);
    t.ok(before.every((size) => size === shardCapacity(farFacts + 1)), `every shard full: ${before}`);
    const found = await searchAcross(t, engine, dbPath, q, async (writer) => {
      // A current store opens a new shard, then a REVERIFY moves X's successor into it, the newest with room.
      await insertFixtures(writer, [{ row: fixtureRow(SCOPE, 'R far'), vector: vectorAtDistance(q, 0.9, 7) }]);
      await reverify(writer, x.row, x.vector);
    });
    const after = readVectorForms(dbPath).shards.map((s) => s.size);
    t.equal(after.length, before.length + 1, 'the store opened a shard');
    t.equal(after.at(-1), 2, 'the new record and X\'s successor are in it');
    t.equal(found[0]?.distance.toFixed(2), '0.05', 'X (or its successor) first');
  });
});

/**
 * A coded scope of CODE_CHUNK_ROWS + 44 current facts, so the first pass runs over two shards before the re-scoring:
 * `current i` at distance 0.05 + 0.002·i from `q`.
 */
async function twoShardScope(t: Test, name: string) {
  const dbPath = join(t.testdir(), name);
  const engine = await openLocalHash(dbPath);
  t.teardown(() => engine.close());
  const q = queryVector('cache eviction policy');
  const count = CODE_CHUNK_ROWS + 44;
  const rows = await insertFixtures(engine, Array.from({ length: count }, (_, i) => ({
    row: fixtureRow(SCOPE, `current ${i}`), vector: vectorAtDistance(q, 0.05 + i * 0.002, i + 1),
  })));
  return { dbPath, engine, q, count, rows, key: scopeDigest(SCOPE) };
}

t.test('neighbours come with the columns asked for, in one statement that reads records by row id', async (t) => {
  const { dbPath, engine, q, rows, key } = await twoShardScope(t, 'columns.sqlite3');
  const bare = await engine.read((db) => eligibleNeighbours(db, key, q, 12));
  const columns = ['record_id', 'lifecycle_state'] as const;
  const joined = await engine.read((db) => eligibleNeighbours(db, key, q, 12, columns));
  t.equal(bare.length, 12);
  t.strictSame(joined.map((n) => [n.rowid, n.distance]), bare.map((n) => [n.rowid, n.distance]),
    'the same neighbours, same order');
  const byId = new Map(rows.map((row) => [row.record_id, row]));
  t.strictSame(joined.map((n) => byId.get(n.record_id)?.fact), Array.from({ length: 12 }, (_, i) => `current ${i}`),
    'each neighbour carries its own record');
  t.ok(joined.every((n) => n.lifecycle_state === 'VALIDATED_CURRENT'));
  const shape = [...compiledShapes()]
    .find(([name]) => name.startsWith('eligibleNeighbours:') && name.includes('record_id'));
  t.ok(shape, 'the joined statement is a shape of its own');
  const raw = new RawDatabase(dbPath);
  sqliteVec.load(raw);
  const plan = queryPlan(raw, shape![1]);
  raw.close();
  t.match(plan, /SEARCH r USING INTEGER PRIMARY KEY/, `records by row id: ${plan}`);
  t.notMatch(plan, /SCAN (r|adapter_records)\b/, 'never a scan of adapter_records');
  t.match(plan, /SEARCH eligible_vectors USING INTEGER PRIMARY KEY/, 'float vectors by row id');
  const codes = [...compiledShapes()].find(([name]) => name.startsWith('scopeCodeChunks:'));
  const withVec = new RawDatabase(dbPath);
  sqliteVec.load(withVec);
  const codePlan = queryPlan(withVec, codes![1]);
  withVec.close();
  t.match(codePlan, /SEARCH c USING INDEX idx_eligible_codes_chunks_partition \(partition00=\?\)/,
    `each shard's chunks by one lookup of the partition index: ${codePlan}`);
  t.notMatch(codePlan, /SCAN c\b/, 'never a scan of the chunks');
  t.match(codePlan, /SEARCH v USING INDEX/, 'each chunk\'s codes by its id');
});

/** `db` with every statement it runs pushed to `seen` (a search's own connection included). */
function watchingStatements(db: Kysely<DB>, seen: CompiledQuery[]): Kysely<DB> {
  return new Proxy(db, {
    get(inner, property) {
      const value: unknown = Reflect.get(inner, property, inner);
      if (property === 'connection') {
        return () => ({ execute: <T>(work: (held: Kysely<DB>) => Promise<T>) =>
          inner.connection().execute((held) => work(watchingStatements(held, seen))) });
      }
      if (property !== 'executeQuery') return typeof value === 'function' ? value.bind(inner) : value;
      return (query: CompiledQuery) => {
        seen.push(query);
        return inner.executeQuery(query);
      };
    },
  });
}

t.test('a coded scope\'s codes are read once, and after a commit only those of the shards it changed', async (t) => {
  const { dbPath, engine, q, rows, key } = await twoShardScope(t, 'kept-codes.sqlite3');
  /** The facts found, and the shards whose codes the search read. */
  const searchWatched = async () => {
    const seen: CompiledQuery[] = [];
    const found = await engine.read((db) => eligibleNeighbours(watchingStatements(db, seen), key, q, 3, ['fact']));
    const shardsRead = seen.filter((query) => /eligible_codes_chunks/.test(query.sql))
      .flatMap((query) => JSON.parse(String(query.parameters[0])) as string[])
      .map((partition) => Number(partition.slice(key.length + 1)));
    return { facts: found.map((n) => n.fact), shardsRead };
  };
  t.strictSame(await searchWatched(), { facts: ['current 0', 'current 1', 'current 2'], shardsRead: [0, 1] });
  t.strictSame(await searchWatched(), { facts: ['current 0', 'current 1', 'current 2'], shardsRead: [] },
    'the second search reads its codes from memory');
  // A commit of this connection: the nearest fact now is one the kept codes do not hold, in shard 1 (the newest).
  await insertFixtures(engine, [{ row: fixtureRow(SCOPE, 'own commit'), vector: vectorAtDistance(q, 0.01, 900) }]);
  t.strictSame(await searchWatched(), { facts: ['own commit', 'current 0', 'current 1'], shardsRead: [1] },
    'after a commit of its own connection the search reads the shard it changed');
  // A commit of another connection (another server on the file).
  const other = await openLocalHash(dbPath);
  t.teardown(() => other.close());
  await insertFixtures(other, [{ row: fixtureRow(SCOPE, 'other commit'), vector: vectorAtDistance(q, 0.005, 901) }]);
  t.strictSame(await searchWatched(), { facts: ['other commit', 'own commit', 'current 0'], shardsRead: [1] },
    'after a commit of another connection too');
  // A record of shard 0 superseded by another connection: shard 0's codes are read again, and it is gone.
  await other.write(async (trx) => supersedeRecord(trx, (await findRecord(trx, rows[0]!.record_id))!));
  t.strictSame(await searchWatched(), { facts: ['other commit', 'own commit', 'current 1'], shardsRead: [0] });
  // Commits in other scopes, small and coded, change none of this scope's shards.
  await insertFixtures(other, [{ row: fixtureRow(scopeTuple('PROJECT', { project_id: 'small' }), 'elsewhere'),
    vector: vectorAtDistance(q, 0.001, 902) }]);
  const codedElsewhere = scopeTuple('PROJECT', { project_id: 'coded elsewhere' });
  await insertFixtures(other, Array.from({ length: UNCODED_SCOPE_MAX_RECORDS + 2 }, (_, i) => ({
    row: fixtureRow(codedElsewhere, `elsewhere ${i}`), vector: vectorAtDistance(q, 0.001, 1000 + i) })));
  t.strictSame(await searchWatched(), { facts: ['other commit', 'own commit', 'current 1'], shardsRead: [] },
    'commits in other scopes read nothing again');
});

/** Each shard's generation in `scopeKey`, by shard number, as a raw connection reads it. */
function generationsOf(dbPath: string, scopeKey: string): Map<number, number> {
  const rows = withRaw(dbPath, (db) => db.prepare('SELECT shard, generation FROM eligible_shards WHERE scope_key = ?')
    .all(scopeKey) as { shard: number; generation: number }[]);
  return new Map(rows.map((row) => [row.shard, row.generation]));
}

t.test('every write that changes a shard\'s codes gives that shard a new generation, and no other', async (t) => {
  const { dbPath, engine, q, rows, key } = await twoShardScope(t, 'generations.sqlite3');
  // Coded by its 257th record (codeNewScope), shard 0 then filled one code at a time, shard 1 opened by one.
  const coded = generationsOf(dbPath, key);
  t.strictSame([...coded.keys()], [0, 1]);
  t.ok([...coded.values()].every((generation) => Number.isSafeInteger(generation) && generation > 0),
    `positive, below 2^53: ${[...coded.values()].join(', ')}`);
  t.not(coded.get(0), coded.get(1));
  await insertFixtures(engine, [{ row: fixtureRow(SCOPE, 'added'), vector: vectorAtDistance(q, 0.5, 950) }]);
  const added = generationsOf(dbPath, key);
  t.equal(added.get(0), coded.get(0), 'a code added to shard 1 leaves shard 0');
  t.not(added.get(1), coded.get(1), 'and moves shard 1');
  await engine.write(async (trx) => supersedeRecord(trx, (await findRecord(trx, rows[3]!.record_id))!));
  const removed = generationsOf(dbPath, key);
  t.not(removed.get(0), added.get(0), 'a code removed from shard 0 moves it');
  t.equal(removed.get(1), added.get(1));
  await t.rejects(engine.write(async (trx) => {
    await supersedeRecord(trx, (await findRecord(trx, rows[500]!.record_id))!);
    throw new Error('roll back');
  }), /roll back/);
  t.strictSame(generationsOf(dbPath, key), removed, 'a rolled-back write moves nothing');
  await engine.write(async (trx) => rebuildEligibleVectors(trx));
  const rebuilt = generationsOf(dbPath, key);
  t.ok([0, 1].every((shard) => rebuilt.get(shard)! > 0 && rebuilt.get(shard) !== removed.get(shard)),
    'a rebuild gives every shard a new one');
  // Shard 1 filled to its last place, then one more current record: a store opens shard 2 (openShard).
  const [, last] = readVectorForms(dbPath).shards.map((shard) => shard.size);
  await insertFixtures(engine, Array.from({ length: CODE_CHUNK_ROWS - last! + 1 }, (_, i) => ({
    row: fixtureRow(SCOPE, `filling ${i}`), vector: vectorAtDistance(q, 0.6, 2000 + i) })));
  const opened = generationsOf(dbPath, key);
  t.strictSame([...opened.keys()], [0, 1, 2], 'a third shard');
  t.ok(opened.get(2)! > 0 && opened.get(2) !== opened.get(1) && opened.get(2) !== opened.get(0),
    `the shard a store opens has a generation of its own: ${opened.get(2)}`);
});

t.test('after any mix of writes by two servers, each serves every shard\'s codes as vec0 holds them', async (t) => {
  const dbPath = join(t.testdir(), 'two-servers.sqlite3');
  const [a, b] = [await openLocalHash(dbPath), await openLocalHash(dbPath)];
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  const q = queryVector('cache eviction policy');
  const scopes = [SCOPE, scopeTuple('PROJECT', { project_id: 'p3' })]
    .map((scope) => ({ scope, key: scopeDigest(scope), live: [] as string[] }));
  let made = 0;
  const rowsOf = (scope: typeof SCOPE, count: number) => Array.from({ length: count }, () => {
    made += 1;
    return { row: fixtureRow(scope, `fact ${made}`), vector: vectorAtDistance(q, 0.01 + (made % 97) * 0.004, made) };
  });
  // Two shards in the first scope, one in the second.
  for (const [i, held] of scopes.entries())
    held.live.push(...(await insertFixtures(a, rowsOf(held.scope, i === 0 ? 600 : 300))).map((r) => r.record_id));
  /** The codes `engine` serves for each shard of `key`, against vec0's rows of that shard, on one snapshot. */
  const stale = (engine: SQLiteVecEngine, key: string) => engine.read((db) => inSnapshot(db, async (snap) => {
    const shards = (await sql<{ shard: number; generation: number }>`SELECT shard, generation FROM eligible_shards
      WHERE scope_key = ${key} ORDER BY shard`.execute(snap)).rows;
    const served = await scopeCodes(snap, key, shards);
    const wrong: number[] = [];
    for (const { shard } of shards) {
      const truth = (await sql<{ rowid: number; code: Uint8Array }>`SELECT rowid, simhash_v1 AS code
        FROM eligible_codes WHERE shard_key = ${`${key}/${shard}`}`.execute(snap)).rows
        .map((row: { rowid: number; code: Uint8Array }) => `${row.rowid}:${Buffer.from(row.code).toString('hex')}`)
        .sort();
      const { codes, rowIds } = served.get(shard) ?? { codes: new Uint8Array(0), rowIds: new BigInt64Array(0) };
      const got = Array.from(rowIds, (rowId, i) => `${rowId}:`
        + Buffer.from(codes.subarray(i * CODE_BYTES, (i + 1) * CODE_BYTES)).toString('hex')).sort();
      if (got.join() !== truth.join()) wrong.push(shard);
    }
    return wrong;
  }));
  let seed = 11;
  const draw = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
  };
  const done: string[] = [];
  for (let step = 0; step < 30; step += 1) {
    const engine = draw(2) === 0 ? a : b;
    const held = scopes[draw(2)]!;
    const kind = ['add', 'supersede', 'swap', 'rolled back', 'add', 'supersede', 'swap', 'rebuild'][draw(8)]!;
    const take = () => held.live.splice(draw(held.live.length), 1)[0]!;
    if (kind === 'add') {
      held.live.push(...(await insertFixtures(engine, rowsOf(held.scope, 1 + draw(3)))).map((r) => r.record_id));
    } else if (kind === 'supersede') {
      const id = take();
      await engine.write(async (trx) => supersedeRecord(trx, (await findRecord(trx, id))!));
    } else if (kind === 'swap') {
      // One record leaves a shard and another comes in, in one transaction: shard sizes may stay as they were.
      const id = take();
      const { row, vector } = rowsOf(held.scope, 1)[0]!;
      await engine.write(async (trx) => {
        await supersedeRecord(trx, (await findRecord(trx, id))!);
        await insertRecordUnchecked(trx, row, { searchText: row.fact, embedding: vector });
      });
      held.live.push(row.record_id);
    } else if (kind === 'rolled back') {
      await t.rejects(engine.write(async (trx) => {
        await supersedeRecord(trx, (await findRecord(trx, held.live[0]!))!);
        await insertRecordUnchecked(trx, rowsOf(held.scope, 1)[0]!.row, { searchText: 'x', embedding: q });
        await eligibleNeighbours(trx, held.key, q, 3);
        throw new Error('roll back');
      }), /roll back/);
    } else {
      await engine.write(async (trx) => rebuildEligibleVectors(trx));
    }
    done.push(kind);
    for (const [name, server] of [['a', a], ['b', b]] as const) {
      for (const { key } of scopes) {
        const wrong = await stale(server, key);
        if (wrong.length > 0) t.fail(`after ${done.join(', ')}: server ${name} serves old codes of shards ${wrong}`);
        // A search on the kept codes (the first pass's memory laid out by the search before) against one inside a
        // write transaction, which reads every code afresh.
        const kept = await server.read((db) => eligibleNeighbours(db, key, q, 8));
        const fresh = await server.write((trx) => eligibleNeighbours(trx, key, q, 8));
        if (JSON.stringify(kept) !== JSON.stringify(fresh))
          t.fail(`after ${done.join(', ')}: server ${name}'s search differs from a fresh read`);
      }
    }
  }
  t.ok(['add', 'supersede', 'swap', 'rolled back', 'rebuild'].every((kind) => done.includes(kind)),
    `every kind of write: ${done.join(', ')}`);
  t.strictSame(await a.read((db) => eligibleNeighbours(db, scopes[0]!.key, q, 8)),
    await b.read((db) => eligibleNeighbours(db, scopes[0]!.key, q, 8)), 'both serve the same neighbours');
});

t.test('codes read inside a write transaction are never kept: a rollback takes them back', async (t) => {
  const { engine, q, rows, key } = await twoShardScope(t, 'rolled-back.sqlite3');
  const nearest = async () => (await engine.read((db) => eligibleNeighbours(db, key, q, 1, ['fact'])))[0]?.fact;
  t.equal(await nearest(), 'current 0');
  const live = (await engine.read((db) => findRecord(db, rows[0]!.record_id)))!;
  await t.rejects(engine.write(async (trx) => {
    await supersedeRecord(trx, live);
    t.equal((await eligibleNeighbours(trx, key, q, 1, ['fact']))[0]?.fact, 'current 1',
      'inside the transaction the superseded fact is gone');
    throw new Error('roll back');
  }), /roll back/);
  t.equal(await nearest(), 'current 0', 'after the rollback it is current again, and found');
});

t.test('a chunk of codes laid out otherwise than sqlite-vec 0.1.9 lays it out is refused, not misread',
  async (t) => {
  const { dbPath, engine, q, key } = await twoShardScope(t, 'layout.sqlite3');
  // A raw connection without sqlite-vec: vec0's own tables are plain tables to it.
  const raw = new RawDatabase(dbPath);
  raw.prepare('UPDATE eligible_codes_chunks SET validity = zeroblob(32)').run();
  raw.close();
  await t.rejects(engine.read((db) => eligibleNeighbours(db, key, q, 3)),
    /eligible_codes: a chunk of 256 slots holds 4096 bytes of row ids and 49152 of codes/);
});

t.test('a chunk whose codes are missing is refused, not skipped', async (t) => {
  const { dbPath, engine, q, key } = await twoShardScope(t, 'no-codes.sqlite3');
  const raw = new RawDatabase(dbPath);
  raw.prepare('DELETE FROM eligible_codes_vector_chunks00 WHERE rowid = (SELECT min(rowid) FROM '
    + 'eligible_codes_vector_chunks00)').run();
  raw.close();
  await t.rejects(engine.read((db) => eligibleNeighbours(db, key, q, 3)),
    new RegExp(`eligible_codes: a chunk of ${key}/\\d+ has no codes`));
});

/**
 * Checks that the neighbours served for `query` are those of vec0's KNN over the same codes, each shard asked for its
 * share of FIRST_PASS rows, re-scored the same way: the same rows, distances and order.
 */
async function servedAsVec0(
  t: Test, dbPath: string, engine: SQLiteVecEngine, key: string, query: string, label: string,
): Promise<void> {
  const q = queryVector(query);
  const served = await engine.read((db) => eligibleNeighbours(db, key, q, 12));
  const shards = readVectorForms(dbPath).shards.filter((shard) => shard.scope_key === key && shard.size > 0);
  const total = shards.reduce((sum, shard) => sum + shard.size, 0);
  const raw = new RawDatabase(dbPath);
  sqliteVec.load(raw);
  const arms = shards.map(() => 'SELECT rowid FROM eligible_codes WHERE simhash_v1 MATCH vec_bit(?) AND k = ? '
    + 'AND shard_key = ?').join(' UNION ALL ');
  const args = shards.flatMap((shard) => [simhashCode(q),
    BigInt(Math.max(FIRST_PASS.minShardK, Math.ceil((FIRST_PASS.rows * shard.size) / total))),
    `${key}/${shard.shard}`]);
  const byVec0 = raw.prepare(`SELECT row_id AS rowid, vec_distance_cosine(embedding, ?) AS distance
    FROM eligible_vectors WHERE row_id IN (${arms}) ORDER BY distance, row_id LIMIT 12`)
    .all(new Uint8Array(q.buffer), ...args);
  raw.close();
  t.strictSame(served, byVec0, `"${query}", ${label}: the same rows, distances and order`);
}

t.test('the first pass gives the neighbours vec0\'s KNN over the same codes gives, '
  + 'in full chunks and in chunks with holes', async (t) => {
  const { dbPath, engine, key, rows } = await twoShardScope(t, 'as-vec0.sqlite3');
  const queries = ['cache eviction policy', 'current 7', 'which port does the exporter use'];
  for (const query of queries) await servedAsVec0(t, dbPath, engine, key, query, 'full chunks');
  // Every third of the first 60 records superseded: their codes leave holes in the first chunk.
  await engine.write(async (trx) => {
    for (const row of rows.filter((_, i) => i < 60 && i % 3 === 1))
      await supersedeRecord(trx, (await findRecord(trx, row.record_id))!);
  });
  for (const query of queries) await servedAsVec0(t, dbPath, engine, key, query, 'holes');
  const q = queryVector('cache eviction policy');
  const nearest = await engine.read((db) => eligibleNeighbours(db, key, q, 3, ['fact']));
  t.strictSame(nearest.map((n) => n.fact), ['current 0', 'current 2', 'current 3'], 'the superseded are not served');
});

t.test('a scope of more than nine shards is served as vec0 serves it (shard 10 sorts before shard 2 as text)',
  async (t) => {
  const dbPath = join(t.testdir(), 'eleven-shards.sqlite3');
  const engine = await openLocalHash(dbPath);
  t.teardown(() => engine.close());
  const q = queryVector('cache eviction policy');
  // Record i goes to shard floor(i / 512), and its distance does not follow i. The twelve nearest are one in shard 10,
  // one in shard 2, then ten in shard 9: more than the k of the 80 codes of shard 10 (8), fewer than shard 9's (13).
  const count = 10 * CODE_CHUNK_ROWS + 80;
  const nearest = [5150, 1100, ...Array.from({ length: 10 }, (_, j) => 4700 + j)];
  const distance = (i: number) => nearest.includes(i) ? 0.01 + nearest.indexOf(i) * 0.002
    : 0.05 + ((i * 7919) % count) * 0.0001;
  const records = await insertFixtures(engine, Array.from({ length: count }, (_, i) => ({
    row: fixtureRow(SCOPE, `current ${i}`), vector: vectorAtDistance(q, distance(i), i + 1),
  })));
  const key = scopeDigest(SCOPE);
  t.strictSame(readVectorForms(dbPath).shards.map((shard) => shard.size),
    [...Array.from({ length: 10 }, () => CODE_CHUNK_ROWS), 80], 'eleven shards');
  for (const query of ['cache eviction policy', 'current 5123', 'which port does the exporter use'])
    await servedAsVec0(t, dbPath, engine, key, query, 'eleven shards');
  const served = await engine.read((db) => eligibleNeighbours(db, key, q, 12, ['fact']));
  t.strictSame(served.map((n) => n.fact), nearest.map((i) => `current ${i}`), 'the twelve nearest, in order');
  const generations = generationsOf(dbPath, key);
  const numeric = Array.from({ length: 11 }, (_, shard) => shard);
  const shards = numeric.map((shard) => ({ shard, generation: generations.get(shard)! }));
  t.strictSame([...(await engine.write((trx) => scopeCodes(trx, key, shards))).keys()], numeric,
    'codes read inside a write transaction come in shard order, not in the text order of their partitions');
  t.strictSame([...(await engine.read((db) => inSnapshot(db, (snap) => scopeCodes(snap, key, shards)))).keys()],
    numeric, 'and so do kept codes');
  // Shard 2 emptied in one transaction: its run in the first pass's memory shrinks to nothing, the eight after it
  // move down.
  await engine.write(async (trx) => {
    for (const row of records.slice(2 * CODE_CHUNK_ROWS, 3 * CODE_CHUNK_ROWS))
      await supersedeRecord(trx, (await findRecord(trx, row.record_id))!);
  });
  t.equal(readVectorForms(dbPath).shards[2]?.size, 0, 'shard 2 is empty');
  const after = await engine.read((db) => eligibleNeighbours(db, key, q, 12, ['fact']));
  t.strictSame(after, await engine.write((trx) => eligibleNeighbours(trx, key, q, 12, ['fact'])),
    'the search on kept codes is the search on codes read afresh');
  t.strictSame(after.map((n) => n.fact).slice(0, 11), nearest.filter((i) => i !== 1100).map((i) => `current ${i}`),
    'the nearest of shard 2 is gone, the others are found in the shards after it');
});

t.test('a commit that leaves every shard its size still makes the next search read the codes again', async (t) => {
  const { dbPath, engine, q, rows, key } = await twoShardScope(t, 'same-sizes.sqlite3');
  const nearest = async () =>
    (await engine.read((db) => eligibleNeighbours(db, key, q, 2, ['fact']))).map((n) => n.fact);
  t.strictSame(await nearest(), ['current 0', 'current 1'], 'the codes are now kept');
  const sizes = () => readVectorForms(dbPath).shards.map((shard) => shard.size);
  const before = sizes();
  // In one transaction: a record of the newest shard leaves it and a nearer one takes its place there.
  await engine.write(async (trx) => {
    await supersedeRecord(trx, (await findRecord(trx, rows.at(-1)!.record_id))!);
    const row = fixtureRow(SCOPE, 'in the same shard');
    await insertRecordUnchecked(trx, row, { searchText: row.fact, embedding: vectorAtDistance(q, 0.001, 999) });
  });
  t.strictSame(sizes(), before, 'every shard has the size it had');
  t.strictSame(await nearest(), ['in the same shard', 'current 0']);
});

t.test('the first pass asks each shard for its share of FIRST_PASS rows; the bench frontier varies it', async (t) => {
  const { dbPath, engine, q, count, rows, key } = await twoShardScope(t, 'first-pass.sqlite3');
  const shards = readVectorForms(dbPath).shards.filter((shard) => shard.size > 0).length;
  t.ok(shards >= 2, `${count} vectors fill ${shards} shards`);
  const served = await engine.read((db) => eligibleNeighbours(db, key, q, 12));
  const explicit = await engine.read((db) => eligibleNeighbours(db, key, q, 12, [], FIRST_PASS));
  t.strictSame(explicit, served, 'FIRST_PASS is the default');
  t.equal(served.length, 12);
  const one = await engine.read((db) => eligibleNeighbours(db, key, q, 12, [], { rows: 1, minShardK: 1 }));
  t.equal(one.length, shards, 'one code from each shard reaches the re-scoring');
  const every = { rows: count, minShardK: count };
  const whole = await engine.read((db) => eligibleNeighbours(db, key, q, 12, ['record_id'], every));
  const factOf = new Map(rows.map((row) => [row.record_id, row.fact]));
  t.strictSame(whole.map((n) => factOf.get(n.record_id)), Array.from({ length: 12 }, (_, i) => `current ${i}`),
    'a first pass of every vector re-scores them all: exact');
});

t.test('a small scope is searched exactly on fact_vec, with the columns, '
  + 'in one statement that reads records by row id', async (t) => {
  const dbPath = join(t.testdir(), 'uncoded.sqlite3');
  const engine = await openLocalHash(dbPath);
  t.teardown(() => engine.close());
  const q = queryVector('cache eviction policy');
  const rows = await insertFixtures(engine, [
    ...Array.from({ length: 30 }, (_, i) => ({
      row: fixtureRow(SCOPE, `current ${i}`), vector: vectorAtDistance(q, 0.3 + i * 0.01, i + 1),
    })),
    ...Array.from({ length: 30 }, (_, i) => ({
      row: fixtureRow(SCOPE, `candidate ${i}`, { lifecycle: 'CANDIDATE' }),
      vector: vectorAtDistance(q, 0.01 + i * 0.001, 100 + i),
    })),
  ]);
  t.strictSame(readVectorForms(dbPath).shards, [], 'the scope is not coded');
  const columns = ['record_id', 'lifecycle_state'] as const;
  const joined = await engine.read((db) => eligibleNeighbours(db, scopeDigest(SCOPE), q, 12, columns));
  const byId = new Map(rows.map((row) => [row.record_id, row]));
  t.strictSame(joined.map((n) => byId.get(n.record_id)?.fact), Array.from({ length: 12 }, (_, i) => `current ${i}`),
    'the twelve nearest current facts, nearest first: thirty nearer Candidates are never returned');
  t.strictSame(joined.map((n) => Number(n.distance.toFixed(2))),
    Array.from({ length: 12 }, (_, i) => Number((0.3 + i * 0.01).toFixed(2))));
  const shape = [...compiledShapes()]
    .find(([name]) => name.startsWith('uncodedNeighbours:') && name.includes('record_id'));
  t.ok(shape, 'the exact statement is a shape of its own');
  const raw = new RawDatabase(dbPath);
  sqliteVec.load(raw);
  const plan = queryPlan(raw, shape![1]);
  raw.close();
  t.match(plan, /SCAN fact_vec VIRTUAL TABLE/, `a KNN of fact_vec: ${plan}`);
  t.match(plan, /SEARCH r USING INTEGER PRIMARY KEY/, 'records by row id');
  t.notMatch(plan, /SCAN (r|adapter_records)\b/, 'never a scan of adapter_records');
  t.notMatch(plan, /eligible_/, 'no eligible table is read');
});

t.test('vec0 applies the is_current filter before k: '
  + 'the small-scope path relies on it (STORAGE.md §4.5 rule 1)', async (t) => {
  const dbPath = join(t.testdir(), 'filter-before-k.sqlite3');
  const engine = await openLocalHash(dbPath);
  const q = queryVector('cache eviction policy');
  await insertFixtures(engine, [
    ...Array.from({ length: 30 }, (_, i) => ({
      row: fixtureRow(SCOPE, `candidate ${i}`, { lifecycle: 'CANDIDATE' }),
      vector: vectorAtDistance(q, 0.01 + i * 0.001, 100 + i),
    })),
    { row: fixtureRow(SCOPE, 'the one current fact'), vector: vectorAtDistance(q, 0.7, 1) },
  ]);
  await engine.close();
  const raw = new RawDatabase(dbPath, { readonly: true });
  sqliteVec.load(raw);
  const rows = raw.prepare(`SELECT rowid, distance FROM fact_vec WHERE embedding MATCH ? AND k = 1 AND scope_key = ?
    AND is_current = 1`).all(Buffer.from(q.buffer), scopeDigest(SCOPE)) as { rowid: number; distance: number }[];
  raw.close();
  t.equal(rows.length, 1, 'k = 1 with thirty nearer Candidates still returns a row');
  t.equal(rows[0]!.distance.toFixed(2), '0.70', 'the current fact: the Candidates were never counted against k');
});

t.test('audit L10 names eligible forms that are missing, extra, wrong or miscounted', async (t) => {
  const dir = t.testdir();
  const dbPath = join(dir, 'audit.sqlite3');
  const engine = await openLocalHash(dbPath);
  const rows = await insertFixtures(engine, [
    { row: fixtureRow(SCOPE, 'current one') }, { row: fixtureRow(SCOPE, 'current two') },
    { row: fixtureRow(SCOPE, 'current three') },
    { row: fixtureRow(SCOPE, 'a candidate', { lifecycle: 'CANDIDATE' }) },
  ]);
  await padScope(engine, SCOPE);
  const small = scopeTuple('PROJECT', { project_id: 'small' });
  const [smallCurrent] = await insertFixtures(engine, [{ row: fixtureRow(small, 'a current fact of a small scope') }]);
  await engine.close();
  t.strictSame(auditFailures(dbPath), []);
  const tamper = (label: string, sqlText: string, expected: RegExp) => {
    const copy = join(dir, `${label}.sqlite3`);
    copyFileSync(dbPath, copy);
    const raw = new RawDatabase(copy);
    sqliteVec.load(raw);
    raw.function('factlane_contract_v2_writer', { deterministic: false }, () => 1);
    raw.exec(sqlText);
    raw.close();
    const failures = auditFailures(copy);
    t.equal(failures.length, 1, `${label}: one failing check`);
    t.match(failures[0], expected, `${label}: eligible_forms names it`);
  };
  const rowIdOf = (recordId: string) => {
    const raw = new RawDatabase(dbPath, { readonly: true });
    try {
      return (raw.prepare('SELECT row_id FROM adapter_records WHERE record_id = ?')
        .get(recordId) as { row_id: number }).row_id;
    } finally {
      raw.close();
    }
  };
  const one = rowIdOf(rows[0]!.record_id);
  const candidate = rowIdOf(rows[3]!.record_id);
  tamper('missing-code', `DELETE FROM eligible_codes WHERE rowid = ${one}`,
    new RegExp(`eligible_forms: .*${rows[0]!.record_id}`));
  // sqlite-vec 0.1.9 refuses an UPDATE of a bit column, so the wrong code is written as delete + insert.
  tamper('wrong-code', `DELETE FROM eligible_codes WHERE rowid = ${one};
    INSERT INTO eligible_codes (rowid, shard_key, simhash_v1) SELECT ${one}, `
    + `scope_key || '/' || shard, vec_bit(randomblob(96))
    FROM eligible_vectors WHERE row_id = ${one}`, new RegExp(`eligible_forms: eligible_codes:${one}`));
  tamper('candidate-eligible', `INSERT INTO eligible_vectors (row_id, scope_key, shard, embedding) `
    + `SELECT ${candidate}, scope_key, 0, embedding FROM fact_vec WHERE rowid = ${candidate};
    UPDATE eligible_shards SET size = size + 1 WHERE shard = 0`, new RegExp(`eligible_forms: .*${rows[3]!.record_id}`));
  tamper('miscounted', 'UPDATE eligible_shards SET size = size + 1', /eligible_forms: eligible_shards:/);
  tamper('other-bytes', `UPDATE eligible_vectors SET embedding = (SELECT embedding FROM eligible_vectors `
    + `WHERE row_id <> ${one} LIMIT 1) WHERE row_id = ${one}`,
    new RegExp(`eligible_forms: .*${rows[0]!.record_id}`));
  // The coded-scope rule of schema 3: a small scope has no eligible row of any kind, a coded one keeps its shards.
  const smallRow = rowIdOf(smallCurrent!.record_id);
  const smallKey = scopeDigest(small);
  tamper('small-scope-forms', `INSERT INTO eligible_vectors (row_id, scope_key, shard, embedding) `
    + `SELECT ${smallRow}, scope_key, 0, embedding FROM fact_vec WHERE rowid = ${smallRow};
    INSERT INTO eligible_shards (scope_key, shard, size) VALUES ('${smallKey}', 0, 1);
    INSERT INTO eligible_codes (rowid, shard_key, simhash_v1) SELECT ${smallRow}, '${smallKey}/0', `
    + `vec_bit(randomblob(96))`,
  new RegExp(`^eligible_forms: (?=.*${smallCurrent!.record_id})(?=.*eligible_shards:${smallKey}/0)`));
  tamper('coded-scope-without-forms',
    'DELETE FROM eligible_codes; DELETE FROM eligible_vectors; DELETE FROM eligible_shards',
    new RegExp(`^eligible_forms: (?=.*${rows[0]!.record_id})(?=.*eligible_shards:${scopeDigest(SCOPE)}( |$))`));
});

/** Records in every lifecycle, written through the adapters (and one compaction), in the given engine. */
async function everyLifecycle(engine: SQLiteVecEngine): Promise<void> {
  const owner = adapterOn(engine, 'owner-current');
  const delegate = adapterOn(engine, 'delegated-candidate');
  const project = { scope: 'PROJECT', project_id: 'p1', memory_type: 'PROJECT_LEARNED_FACT' };
  const facts = ['The build uses Node 20', 'Deploys run at noon', 'The cache evicts least recently used keys',
    'Metrics are on port 9464', 'The ingest job writes to bucket raw-events', 'Releases are tagged vX.Y.Z'];
  const stored: Json[] = [];
  for (const [i, fact] of facts.entries()) {
    stored.push(await ok(i % 2 === 0 ? owner : delegate, 'memory_store',
      (i % 2 === 0 ? currentRequest : storeRequest)({ ...project, fact, idempotency_key: `k-${i}` })));
  }
  const reverified = await ok(owner, 'memory_update', reverifyRequest(stored[0]!, { idempotency_key: 'u-0' }));
  await ok(owner, 'memory_update', reverifyRequest(reverified, { idempotency_key: 'u-1' }));
  await ok(owner, 'memory_update', reverifyRequest(stored[1]!, { expected_record_id: stored[1]!.record_id,
    idempotency_key: 'u-2', verification: { source_timestamp: '2026-11-28T00:00:00Z', verified_by: 'OWNER' } }));
  await ok(owner, 'memory_update',
    replaceRequest(stored[2]!, { fact: 'The cache evicts the oldest keys first' }, { idempotency_key: 'u-3' }));
  await engine.write((trx) => compactRecord(trx, stored[0]!.record_id));
  // A second scope large enough to be coded, with current facts among its Candidates.
  await padScope(engine, CODED_SCOPE);
  await insertFixtures(engine, ['The coded scope builds with Node 22', 'Its cache keeps keys for an hour',
    'Its metrics are on port 9100'].map((fact) => ({ row: fixtureRow(CODED_SCOPE, fact) })));
}

const CODED_SCOPE = scopeTuple('PROJECT', { project_id: 'p2' });

/** Every search kind and mode over the fixed queries, as envelopes without their audit (request ids differ). */
async function answers(engine: SQLiteVecEngine): Promise<Json[]> {
  const reader = adapterOn(engine, 'read-only');
  const out: Json[] = [];
  for (const project_id of ['p1', 'p2']) {
    for (const query of
      ['which node version does the build use', 'cache eviction', 'metrics port', 'bucket for ingest']) {
      for (const kind of ['SEMANTIC', 'HYBRID', 'KEYWORD']) {
        for (const mode of ['CURRENT', 'REVIEW_HISTORY']) {
          const { audit: _audit, ...envelope } = await search(reader, { scope: 'PROJECT', project_id, query,
            intent_class: 'CURRENT_PROJECT_STATE', top_k: 8, max_memories: 8, max_bytes: 8000, max_tokens: 1600,
            retrieval_mode_kind: kind, retrieval_mode: mode });
          out.push(envelope);
        }
      }
    }
  }
  return out;
}

/**
 * The same records (same ids, timestamps and vectors) twice in `dir`: stored fresh by this release, and a copy of them
 * taken back to an older schema by `downgrade`.
 */
async function freshAndOlder(
  dir: string, downgrade: (dbPath: string) => void,
): Promise<{ freshPath: string; oldPath: string }> {
  const freshPath = join(dir, 'fresh.sqlite3');
  const fresh = await openLocalHash(freshPath);
  await everyLifecycle(fresh);
  await fresh.close();
  const oldPath = join(dir, 'old.sqlite3');
  copyFileSync(freshPath, oldPath);
  downgrade(oldPath);
  return { freshPath, oldPath };
}

/** `factlane-migrate up` of `dbPath` with a backup into `dir`, under the exclusive lease. */
async function migrateWithBackup(dir: string, dbPath: string) {
  const target = MaintenanceTarget.open({ dbPath, lease: 'exclusive' });
  try {
    return await migrateUp(target, { backupFile: join(dir, 'before.sqlite3'), clock: SYSTEM_CLOCK });
  } finally {
    target.close();
  }
}

/** Every search kind and mode over the migrated database answers exactly as over the one stored fresh. */
async function assertAnswersAlike(t: Test, oldPath: string, freshPath: string): Promise<void> {
  const migrated = await openLocalHash(oldPath);
  const again = await openLocalHash(freshPath);
  t.equal(migrated.findings.schemaVersion, SHIPPED.at(-1)!.version);
  t.strictSame(await answers(migrated), await answers(again), 'every search kind and mode answers exactly alike');
  await migrated.close();
  await again.close();
}

t.test('a schema-1 database with records in every lifecycle migrates '
  + 'and answers searches as the same records stored fresh', async (t) => {
  const dir = t.testdir();
  const { freshPath, oldPath } = await freshAndOlder(dir, downgradeToSchemaOne);
  const reopened = await openLocalHash(oldPath, schemaOneDir(dir));
  t.equal(reopened.findings.schemaVersion, 1, 'a schema-1 database, as an older release opens it');
  await reopened.close();
  await t.rejects(openLocalHash(oldPath), { code: 'SCHEMA_MISMATCH', message: /factlane-migrate up/ },
    'this release asks for the migration');

  const report = await migrateWithBackup(dir, oldPath);
  t.same(report.applied.map((step) => step.version), SHIPPED.filter((f) => f.version > 1).map((f) => f.version));
  t.strictSame(report.verification.filter((c) => c.status === 'FAIL'), [], 'verify passes');
  t.ok(existsSync(join(dir, 'before.sqlite3')), 'a backup was taken first');
  assertLifecycleTable(t, oldPath, 'migrated');
  t.strictSame(auditFailures(oldPath), [], 'audit passes after the migration');
  const lifecycles = readVectorForms(oldPath).records.map((r) => r.lifecycle);
  t.strictSame([...new Set(lifecycles)].sort(), ['CANDIDATE', 'HISTORICAL', 'SUPERSEDED', 'VALIDATED_CURRENT'],
    'records in every stored lifecycle');
  t.strictSame(readVectorForms(oldPath), readVectorForms(freshPath),
    'the rebuilt forms equal those written fresh, shard for shard');
  await assertAnswersAlike(t, oldPath, freshPath);
});

/** How SQLite runs vec0's chunk lookup of one partition (its KNN and its insert) on each vec0 table of the file. */
const chunkLookups = (dbPath: string) => withRaw(dbPath, (db) => ['fact_vec', 'eligible_codes'].map((table) =>
  (db.prepare(`EXPLAIN QUERY PLAN SELECT chunk_id, validity, rowids FROM ${table}_chunks WHERE partition00 = ?`)
    .all('x') as { detail: string }[]).map((row) => row.detail).join(' ')));

/** The chunk size of the vec0 table `table` as the file defines it. */
const chunkOf = (dbPath: string, table = 'fact_vec') => withRaw(dbPath, (db) => db
  .prepare('SELECT sql FROM sqlite_master WHERE name = ?').pluck().get(table) as string).match(/chunk_size=(\d+)/)![1];

t.test('a schema-2 database migrates: fact_vec re-chunked, only coded scopes keep their forms', async (t) => {
  const dir = t.testdir();
  const { freshPath, oldPath } = await freshAndOlder(dir, downgradeToSchemaTwo);
  t.equal(chunkOf(oldPath), '16', 'schema 2 kept fact_vec at chunk size 16');
  const oldForms = readVectorForms(oldPath).records.filter((r) => r.eligible);
  t.ok(oldForms.some((r) => !r.scopeCoded) && oldForms.some((r) => r.scopeCoded),
    'schema 2 gave forms to small and coded scopes alike');
  t.match(auditFile(oldPath, SHIPPED).checks.find((c) => c.name === 'eligible_forms'), { status: 'PASS' },
    'audit reads a schema-2 database by the schema-2 rule');

  const report = await migrateWithBackup(dir, oldPath);
  t.strictSame(report.applied.map((step) => step.version), [3, 4, 5, 6]);
  t.strictSame(report.verification.filter((c) => c.status === 'FAIL'), [], 'verify passes');
  t.equal(chunkOf(oldPath), '8', 'fact_vec is re-chunked');
  t.equal(chunkOf(oldPath, 'eligible_codes'), '512', 'and so are the codes');
  assertLifecycleTable(t, oldPath, 'migrated from schema 2');
  t.strictSame(auditFailures(oldPath), [], 'audit passes after the migration');
  t.strictSame(readVectorForms(oldPath), readVectorForms(freshPath),
    'the forms equal those written fresh, shard for shard');
  await assertAnswersAlike(t, oldPath, freshPath);
});

t.test('a schema-3 database migrates to schema 4: codes in chunks of 512, every form as fresh', async (t) => {
  const dir = t.testdir();
  const { freshPath, oldPath } = await freshAndOlder(dir, downgradeToSchemaThree);
  t.equal(chunkOf(oldPath, 'eligible_codes'), '128', 'schema 3 kept the codes in chunks of 128');
  t.strictSame(chunkLookups(oldPath), ['SCAN fact_vec_chunks', 'SCAN eligible_codes_chunks'],
    'schema 3: vec0 scanned every chunk of the file to find a partition\'s');
  t.equal(chunkOf(freshPath, 'eligible_codes'), '512', 'this release writes them in chunks of 512');
  t.ok(readVectorForms(oldPath).records.some((r) => r.code), 'a coded scope to move');
  const report = await migrateWithBackup(dir, oldPath);
  t.strictSame(report.applied.map((step) => step.version), [4, 5, 6]);
  t.strictSame(report.verification.filter((c) => c.status === 'FAIL'), [], 'verify passes');
  t.equal(chunkOf(oldPath, 'eligible_codes'), '512');
  t.strictSame(chunkLookups(oldPath), [
    'SEARCH fact_vec_chunks USING INDEX idx_fact_vec_chunks_partition (partition00=?)',
    'SEARCH eligible_codes_chunks USING INDEX idx_eligible_codes_chunks_partition (partition00=?)',
  ], 'now by index');
  assertLifecycleTable(t, oldPath, 'migrated from schema 3');
  t.strictSame(auditFailures(oldPath), [], 'audit passes after the migration');
  t.strictSame(readVectorForms(oldPath), readVectorForms(freshPath), 'the forms as written fresh, shard for shard');
  t.strictSame(codePlaces(oldPath), codePlaces(freshPath), 'each code at the same place of its partition');
  await assertAnswersAlike(t, oldPath, freshPath);
});

t.test('a schema-4 database migrates to schema 5: '
  + 'its eligible forms laid out again in the shards of 0035', async (t) => {
  const dir = t.testdir();
  const { freshPath, oldPath } = await freshAndOlder(dir, downgradeToSchemaFour);
  // A layout the rule of schema 4's release could leave (decision 0035: shards filled least first): the coded scope's
  // last current vector in a shard of its own.
  const scopeKey = scopeDigest(CODED_SCOPE);
  inGatedTransaction(oldPath, (raw) => {
    const moved = raw.prepare('SELECT max(row_id) FROM eligible_vectors WHERE scope_key = ?')
      .pluck().get(scopeKey) as number;
    const code = raw.prepare('SELECT simhash_v1 FROM eligible_codes WHERE rowid = ?')
      .pluck().get(BigInt(moved)) as Buffer;
    raw.prepare('UPDATE eligible_vectors SET shard = 1 WHERE row_id = ?').run(moved);
    raw.prepare('UPDATE eligible_shards SET size = size - 1 WHERE scope_key = ? AND shard = 0').run(scopeKey);
    raw.prepare('INSERT INTO eligible_shards (scope_key, shard, size) VALUES (?, 1, 1)').run(scopeKey);
    raw.prepare('DELETE FROM eligible_codes WHERE rowid = ?').run(BigInt(moved));
    raw.prepare('INSERT INTO eligible_codes (rowid, shard_key, simhash_v1) VALUES (?, ?, vec_bit(?))')
      .run(BigInt(moved), `${scopeKey}/1`, code);
  });
  t.strictSame(auditFailures(oldPath), [], 'a sound schema-4 layout');
  t.notSame(readVectorForms(oldPath).shards, readVectorForms(freshPath).shards, 'not the one written fresh');

  const report = await migrateWithBackup(dir, oldPath);
  t.strictSame(report.applied.map((step) => step.version), [5, 6]);
  t.strictSame(report.verification.filter((c) => c.status === 'FAIL'), [], 'verify passes');
  t.strictSame(auditFailures(oldPath), [], 'audit passes after the migration');
  t.strictSame(readVectorForms(oldPath), readVectorForms(freshPath), 'the forms as written fresh, shard for shard');
  t.strictSame(codePlaces(oldPath), codePlaces(freshPath), 'each code at the same place of its partition');
  await assertAnswersAlike(t, oldPath, freshPath);
});

t.test('a schema-5 database migrates to schema 6: its shards at generation 0 until their codes change, '
  + 'searched as before', async (t) => {
  const dir = t.testdir();
  const { freshPath, oldPath } = await freshAndOlder(dir, downgradeToSchemaFive);
  const scopeKey = scopeDigest(CODED_SCOPE);
  const report = await migrateWithBackup(dir, oldPath);
  t.strictSame(report.applied.map((step) => step.version), [6]);
  t.strictSame(report.verification.filter((c) => c.status === 'FAIL'), [], 'verify passes');
  t.strictSame(auditFailures(oldPath), [], 'audit passes after the migration');
  t.strictSame(readVectorForms(oldPath), readVectorForms(freshPath), 'the forms as they were, shard for shard');
  t.strictSame(codePlaces(oldPath), codePlaces(freshPath), 'each code at the same place of its partition');
  t.strictSame([...generationsOf(oldPath, scopeKey).values()], [0], 'no rebuild: generation 0');
  await assertAnswersAlike(t, oldPath, freshPath);
  const migrated = await openLocalHash(oldPath);
  t.teardown(() => migrated.close());
  await insertFixtures(migrated, [{ row: fixtureRow(CODED_SCOPE, 'after the migration') }]);
  t.ok(generationsOf(oldPath, scopeKey).get(0)! > 0, 'the next code moves its shard off 0');
});

t.test('migrate up drops the work table of a reembed that did not finish, which would otherwise stop it', async (t) => {
  const dir = t.testdir();
  const { oldPath } = await freshAndOlder(dir, downgradeToSchemaThree);
  // What a reembed of the schema-3 release leaves when it is killed: fact_vec_next, partly filled.
  const raw = new RawDatabase(oldPath);
  sqliteVec.load(raw);
  const definition = raw.prepare("SELECT sql FROM sqlite_master WHERE name = 'fact_vec'").pluck().get() as string;
  raw.exec(definition.replace(/^CREATE VIRTUAL TABLE fact_vec\b/, 'CREATE VIRTUAL TABLE fact_vec_next'));
  raw.exec('INSERT INTO fact_vec_next (rowid, scope_key, is_current, embedding) '
    + 'SELECT rowid, scope_key, is_current, embedding FROM fact_vec LIMIT 5');
  raw.close();
  const report = await migrateWithBackup(dir, oldPath);
  t.strictSame(report.applied.map((step) => step.version), [4, 5, 6]);
  t.equal(report.reembed_work_discarded, true, 'the report says so');
  t.strictSame(report.verification.filter((c) => c.status === 'FAIL'), [], 'verify passes');
  t.strictSame(withRaw(oldPath, (db) => db.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'fact_vec_next%'")
    .pluck().all()), [], 'no table or index of it is left');
  t.strictSame(auditFailures(oldPath), [], 'audit passes');
  const cli = spawnSync(process.execPath,
    [join(REPO_ROOT, 'dist/bin/factlane-migrate.js'), 'up', '--db', oldPath, '--no-backup'], { encoding: 'utf8' });
  t.equal(cli.status, 0, cli.stderr);
  t.notMatch(cli.stdout, /fact_vec_next/, 'nothing left to drop on a second run');
});

t.test('a migration killed midway leaves the schema-1 database usable, and a rerun completes', async (t) => {
  const dir = t.testdir();
  const dbPath = join(dir, 'kill.sqlite3');
  const old = await openLocalHash(dbPath);
  // Enough current vectors that the rebuild outlasts the first WAL write.
  await insertFixtures(old, Array.from({ length: 3000 }, (_, i) => ({
    row: fixtureRow(SCOPE, `a current fact about service ${i} and its port ${i + 1000}`),
  })));
  await old.close();
  downgradeToSchemaOne(dbPath);
  const versionOf = () => {
    const raw = new RawDatabase(dbPath, { readonly: true });
    try {
      return raw.prepare('SELECT max(version) FROM schema_migrations').pluck().get() as number;
    } finally {
      raw.close();
    }
  };
  // An attempt whose kill came after the commit left the file migrated: the next one starts from schema 1 again.
  const schemaOne = `${dbPath}.schema-one`;
  t.notOk(existsSync(`${dbPath}-wal`), 'schema 1 is whole in the file, which is copied');
  copyFileSync(dbPath, schemaOne);
  let killedMidway = 0;
  for (let attempt = 0; attempt < 4 && killedMidway === 0; attempt += 1) {
    if (attempt > 0) {
      for (const suffix of ['-wal', '-shm']) rmSync(`${dbPath}${suffix}`, { force: true });
      copyFileSync(schemaOne, dbPath);
    }
    const child = spawn(process.execPath,
      [join(REPO_ROOT, 'dist/bin/factlane-migrate.js'), 'up', '--db', dbPath, '--no-backup'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // Kill as soon as the transaction has begun writing (the WAL grows), well before the rebuild ends.
    const started = Date.now();
    while (Date.now() - started < 20_000) {
      if (existsSync(`${dbPath}-wal`) && statSync(`${dbPath}-wal`).size > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    child.kill('SIGKILL');
    await exited;
    const version = versionOf();
    t.ok(version === 1 || version === SHIPPED.at(-1)!.version,
      `attempt ${attempt}: the schema is whole (version ${version})`);
    if (version === 1) killedMidway += 1;
  }
  t.ok(killedMidway > 0, 'at least one kill landed before the commit');
  const stillOld = await openLocalHash(dbPath, schemaOneDir(dir)).catch((error: unknown) => error as Error);
  t.notOk(stillOld instanceof Error, 'the old release still opens it');
  if (!(stillOld instanceof Error)) {
    // Read through storage with a statement the schema-1 release had: this release's memory_get and search also read
    // schema 5's token counts, which an older file lacks.
    const recordId = withRaw(dbPath, (db) => db.prepare('SELECT record_id FROM adapter_records LIMIT 1').pluck().get());
    const row = await stillOld.read((db) => findRecord(db, recordId as string));
    t.equal(row?.record_id, recordId, 'and reads it');
    await stillOld.close();
  }
  const target = MaintenanceTarget.open({ dbPath, lease: 'exclusive' });
  await migrateUp(target, { backupFile: null, clock: SYSTEM_CLOCK });
  target.close();
  t.equal(versionOf(), SHIPPED.at(-1)!.version, 'the rerun completes');
  assertLifecycleTable(t, dbPath, 'after the rerun');
  t.strictSame(auditFailures(dbPath), []);
});

t.test('reembed rebuilds the eligible forms from the new float vectors in its switch', async (t) => {
  const dbPath = join(t.testdir(), 'reembed.sqlite3');
  await reembedFixture(dbPath);
  // scope-a of the fixture, past the threshold with Candidates: its one current record has eligible forms.
  const engine = await openEngine(dbPath);
  for (let i = 0; i < UNCODED_SCOPE_MAX_RECORDS; i += 1) {
    await storeRow(engine, candidateRow({ fact: `padding candidate ${i}`, scope_key: 'scope-a' }), i + 5);
  }
  await engine.close();
  const before = readVectorForms(dbPath).records.filter((r) => r.eligible);
  t.equal(before.length, 1, 'the current record of the coded scope has eligible forms at the 8-dimension test profile');
  t.ok(before.every((r) => r.eligible!.bytes.length === 8 * 4));
  const report = await reembedDatabase({ dbPath, provider: new LocalHashProvider(), batchSize: 2 });
  t.equal(report.switched, true);
  t.match(chunkLookups(dbPath)[0], /USING INDEX idx_fact_vec_chunks_partition/,
    'the new fact_vec keeps its chunk index');
  const after = readVectorForms(dbPath).records.filter((r) => r.eligible);
  t.strictSame(after.map((r) => r.recordId), before.map((r) => r.recordId), 'the same records keep eligible forms');
  t.ok(after.every((r) => r.eligible!.bytes.length === 384 * 4), 'now of the new dimension, equal to fact_vec');
  t.ok(after.every((r) => r.eligible!.bytes.equals(r.vector!.bytes) && r.code !== null),
    'each holds its new float vector and a code');
  // The reembed fixture is not a lineage (rows written directly in every state), so only the vector checks apply.
  const eligibleForms = auditFile(dbPath, SHIPPED).checks.find((check) => check.name === 'eligible_forms');
  t.match(eligibleForms, { status: 'PASS', count: 0 },
    'audit eligible_forms passes after reembed (codes recomputed from the new floats)');
});

t.test('a code is computed ahead of a write only in a scope this process has seen coded', async (t) => {
  const dbPath = join(t.testdir(), 'code-ahead.sqlite3');
  const engine = await openLocalHash(dbPath);
  t.teardown(() => engine.close());
  const scope = scopeTuple('PROJECT', { project_id: 'code-ahead' });
  const key = scopeDigest(scope);
  const vector = queryVector('code ahead of the write');
  await insertFixtures(engine, [{ row: fixtureRow(scope, 'one current fact'), vector }]);
  t.equal(codeAheadOfWrite(key, vector), false, 'a small scope is not coded: its writes compute no code');
  await padScope(engine, scope);
  const coded = fixtureRow(scope, 'a current fact of a coded scope');
  await insertFixtures(engine, [{ row: coded, vector: queryVector('coded') }]);
  t.equal(codeAheadOfWrite(key, vector), true, 'once a write here added eligible forms, writes compute it ahead');
});

t.test('a code computed before a write transaction is the one the transaction uses, not computed again', async (t) => {
  const vector = queryVector('code computed ahead');
  const ahead = eligibleCode(vector);
  t.equal(eligibleCode(vector), ahead, 'the same code object: looked up, not computed again');
  t.same(ahead, simhashCode(vector), 'and it is the SimHash code of the vector');
  t.not(eligibleCode(new Float32Array(vector)), ahead, 'another vector object gets its own computation');
});
