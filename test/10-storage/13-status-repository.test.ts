import t from 'tap';
import { join } from 'node:path';
import type {
  KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow,
} from 'kysely';
import type { ScopeColumns } from '../../src/storage/record-repository.js';
import { countScope, readCapacity, ScopeCounter } from '../../src/storage/status-repository.js';
import { capacityBlock } from '../../src/adapter/memory-status.js';
import { candidateRow, openEngine, storeRow, withRaw } from '../helpers/storage.js';

// The status readings (OPERATIONS.md §2): counts, retention and page pragmas come from one statement;
// a failed page reading leaves capacity UNKNOWN without losing the counts. ScopeCounter serves a reading
// again only while neither this connection nor another one has committed since it was counted.

const SCOPE: ScopeColumns = {
  scope: 'GLOBAL_USER', project_id: null, worktree_id: null, workflow_id: null, agent_id: null,
};

/** Makes every statement that reads the page pragmas fail with `code`, as a broken build of SQLite would. */
function failingPragmas(code: string): KyselyPlugin {
  return {
    transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
      if (JSON.stringify(args.node).includes('pragma_page_count'))
        throw Object.assign(new Error('pragma unavailable'), { code });
      return args.node;
    },
    async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
      return args.result;
    },
  };
}

t.test('the page pragmas come with the counts and equal what SQLite reports', async (t) => {
  const dbPath = join(t.testdir(), 'pages.sqlite3');
  const engine = await openEngine(dbPath);
  t.teardown(() => engine.close());
  const reading = await engine.read((db) => countScope(db, SCOPE));
  const raw = withRaw(dbPath, (db) => ({
    page_size: db.pragma('page_size', { simple: true }), page_count: db.pragma('page_count', { simple: true }),
    freelist_count: db.pragma('freelist_count', { simple: true }),
  }));
  t.strictSame(reading.pages, raw);
  t.strictSame(reading.counts, { CANDIDATE: 0, VALIDATED_CURRENT: 0, SUPERSEDED: 0, QUARANTINED: 0, HISTORICAL: 0 });
  const capacity = readCapacity(reading.pages, dbPath);
  t.equal(capacity.pageSizeBytes, raw.page_size);
  t.ok(capacity.databaseFileBytes! > 0 && capacity.filesystemFreeBytes! > 0);
  t.equal(capacityBlock(capacity).observation, 'KNOWN');
});

t.test('failed page pragmas leave the counts and make capacity UNKNOWN; busy is still retried by the caller',
  async (t) => {
  const dbPath = join(t.testdir(), 'no-pages.sqlite3');
  const engine = await openEngine(dbPath);
  t.teardown(() => engine.close());
  const reading = await engine.read((db) => countScope(db.withPlugin(failingPragmas('SQLITE_ERROR')), SCOPE));
  t.equal(reading.pages, null);
  t.strictSame(reading.counts, { CANDIDATE: 0, VALIDATED_CURRENT: 0, SUPERSEDED: 0, QUARANTINED: 0, HISTORICAL: 0 });
  const block = capacityBlock(readCapacity(reading.pages, dbPath));
  t.match(block, { observation: 'UNKNOWN', page_size_bytes: null, database_allocated_bytes: null,
    mutation_preflight: 'BLOCKED_UNKNOWN_CAPACITY',
    next_action: 'RESTORE_CAPACITY_OBSERVABILITY_BEFORE_MEMORY_MUTATION' });
  t.ok(Number(block.database_file_bytes) > 0, 'the file size is still observed');
  await t.rejects(engine.db.connection()
    .execute((db) => countScope(db.withPlugin(failingPragmas('SQLITE_BUSY')), SCOPE)), { code: 'SQLITE_BUSY' });
});

t.test('file readings: a missing file is 0 bytes, a missing directory leaves free space unknown', async (t) => {
  const capacity = readCapacity({ page_size: 4096, page_count: 10, freelist_count: 1 },
    join(t.testdir(), 'absent', 'factlane.sqlite3'));
  t.strictSame(capacity, {
    pageSizeBytes: 4096, pageCount: 10, freelistCount: 1, databaseFileBytes: 0, walFileBytes: 0, shmFileBytes: 0,
    filesystemFreeBytes: null,
  });
  t.equal(capacityBlock(capacity).observation, 'UNKNOWN', 'free space unknown is enough to make it UNKNOWN');
});

t.test('ScopeCounter serves a reading again only while the database is unchanged', async (t) => {
  const dbPath = join(t.testdir(), 'remembered.sqlite3');
  const engine = await openEngine(dbPath);
  t.teardown(() => engine.close());
  const counter = new ScopeCounter();
  const count = (scope = SCOPE) => engine.read((db) => counter.count(db, scope));
  const first = await count();
  t.equal(await count(), first, 'unchanged: the same reading');
  t.ok(Object.isFrozen(first) && Object.isFrozen(first.counts) && Object.isFrozen(first.pages),
    'a remembered reading is frozen');

  await storeRow(engine, candidateRow());
  const afterOwn = await count();
  t.equal(afterOwn.counts.CANDIDATE, 1, 'a commit on this connection is counted');
  t.ok(afterOwn.pages!.page_count >= first.pages!.page_count);

  const other = await openEngine(dbPath);
  await storeRow(other, candidateRow({ lifecycle_state: 'VALIDATED_CURRENT' }));
  const afterOther = await count();
  t.strictSame(afterOther.counts, { ...afterOwn.counts, VALIDATED_CURRENT: 1 },
    'a commit by another connection is counted');
  await other.close();
  t.equal(await count(), afterOther, 'unchanged again');

  const project = { ...SCOPE, scope: 'PROJECT', project_id: 'p1' };
  await storeRow(engine, candidateRow({ scope: 'PROJECT', project_id: 'p1' }));
  t.equal((await count(project)).counts.CANDIDATE, 1, 'each scope has its own reading');
  t.equal((await count()).counts.CANDIDATE, 1);
  t.strictSame((await count()).counts, (await engine.read((db) => countScope(db, SCOPE))).counts,
    'equal to a fresh count');
});

t.test('ScopeCounter never remembers a reading without pages, and stays right past its bound', async (t) => {
  const dbPath = join(t.testdir(), 'bound.sqlite3');
  const engine = await openEngine(dbPath);
  t.teardown(() => engine.close());
  const counter = new ScopeCounter();
  const failing = await engine.read((db) => counter.count(db.withPlugin(failingPragmas('SQLITE_ERROR')), SCOPE));
  t.equal(failing.pages, null);
  t.not((await engine.read((db) => counter.count(db, SCOPE))).pages, null, 'the next call reads the pages again');

  for (let i = 0; i < 70; i += 1) await storeRow(engine, candidateRow({ scope: 'PROJECT', project_id: `p${i}` }));
  const wrong: string[] = [];
  for (let round = 0; round < 2; round += 1) {
    for (let i = 0; i < 70; i += 1) {
      const reading = await engine.read((db) => counter.count(db, { ...SCOPE, scope: 'PROJECT', project_id: `p${i}` }));
      if (reading.counts.CANDIDATE !== 1) wrong.push(`p${i}`);
    }
  }
  t.same(wrong, [], '70 scopes, each asked twice');
});
