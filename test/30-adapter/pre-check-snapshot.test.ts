import t, { type Test } from 'tap';
import type { ToolName } from '@factlane/schema';
import type { CompiledQuery, Kysely } from 'kysely';
import { join } from 'node:path';
import type { DB } from '../../generated/db.js';
import { MemoryAdapter } from '../../src/adapter/memory-adapter.js';
import { LocalHashProvider } from '../../src/embedding/local-hash-provider.js';
import type { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import { openLocalHashEngine } from '../helpers/mcp.js';
import {
  currentRequest, fixedClock, replaceRequest, reverifyRequest, storeRequest, type Json,
} from '../helpers/writes.js';

// The pre-check of a write (CONTRACT.md §13.1 step 2) reads one snapshot. Another server's commit that lands between
// two of its reads must not give an answer the database was never in: a retry of that very write is its replay, and a
// lost race is VERSION_CONFLICT (§13.4), never DUPLICATE, CONTRADICTION or ALREADY_CURRENT made of two states.

const SCOPE = { scope: 'PROJECT', project_id: 'p1' } as const;

/** A statement watcher over `db`: runs `commit` once, right after the first statement whose SQL matches `after`. */
function watched(db: Kysely<DB>, hook: { after: RegExp; commit: () => Promise<unknown>; done: boolean }): Kysely<DB> {
  return new Proxy(db, {
    get(inner, property) {
      const value: unknown = Reflect.get(inner, property, inner);
      if (property !== 'executeQuery') return typeof value === 'function' ? value.bind(inner) : value;
      return async (query: CompiledQuery) => {
        const result = await inner.executeQuery(query);
        if (!hook.done && hook.after.test(query.sql)) {
          hook.done = true;
          await hook.commit();
        }
        return result;
      };
    },
  });
}

/** `engine`, whose reads (outside write transactions) run `commit` once, after the first statement matching `after`. */
function committingDuringReads(engine: SQLiteVecEngine, after: RegExp, commit: () => Promise<unknown>) {
  const hook = { after, commit, done: false };
  const proxy = new Proxy(engine, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property === 'read' || property === 'readSnapshot') {
        return <T>(work: (db: Kysely<DB>) => Promise<T>) =>
          target[property]((db) => work(watched(db as Kysely<DB>, hook)));
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { engine: proxy, committed: () => hook.done };
}

/** One database and two servers on it: `first` (whose reads are watched) and `other`, with its own connection. */
async function twoServers(t: Test) {
  const dbPath = join(t.testdir(), 'db.sqlite3');
  const engine = await openLocalHashEngine(dbPath);
  const otherEngine = await openLocalHashEngine(dbPath);
  t.teardown(async () => {
    await engine.close();
    await otherEngine.close();
  });
  const adapter = (e: SQLiteVecEngine) => new MemoryAdapter({
    engine: e, provider: new LocalHashProvider(), writeProfile: 'owner-current', hostId: 'h', clock: fixedClock(),
  });
  const other = adapter(otherEngine);
  /**
   * `first` runs `request` while `other` commits `concurrent` right after its first read statement matching `after`.
   */
  const race = async (tool: ToolName, request: Json, after: RegExp, concurrent: () => Promise<unknown>) => {
    const hooked = committingDuringReads(engine, after, concurrent);
    const outcome = await adapter(hooked.engine).execute(tool, request)
      .then((envelope) => envelope as Json, (error): Json => ({ refused: (error as { code?: string }).code }));
    t.ok(hooked.committed(), 'the other server committed during the pre-check');
    return outcome;
  };
  return { other, race };
}

const IDEMPOTENCY_READ = /"idempotency_key" = \+\?/;
const TARGET_READ = /"memory_id" = \+\?/;

t.test('a store retried while the first attempt commits is its replay, not DUPLICATE', async (t) => {
  const { other, race } = await twoServers(t);
  const request = currentRequest({ ...SCOPE, fact: 'The release branch is cut from main' });
  let first: Json = {};
  const second = await race('memory_store', request, IDEMPOTENCY_READ, async () => {
    first = await other.execute('memory_store', request) as Json;
  });
  t.equal(first.status, 'OK');
  t.equal(second.status, 'OK');
  t.equal(second.idempotent_replay, true, 'the replay of the committed store');
  t.equal((second.results as Json[])[0]!.record_id, (first.results as Json[])[0]!.record_id);
});

t.test('an update retried while the first attempt commits is its replay, not VERSION_CONFLICT', async (t) => {
  const { other, race } = await twoServers(t);
  const stored = ((await other.execute('memory_store',
    currentRequest({ ...SCOPE, fact: 'CI runs on every push' }))) as Json).results as Json[];
  const request = reverifyRequest(stored[0]!);
  let first: Json = {};
  const second = await race('memory_update', request, IDEMPOTENCY_READ, async () => {
    first = await other.execute('memory_update', request) as Json;
  });
  t.equal(first.status, 'OK');
  t.equal(second.status, 'OK');
  t.equal(second.idempotent_replay, true, 'the replay of the committed update');
});

t.test('a REVERIFY that loses to a REPLACE of the same memory gets VERSION_CONFLICT, not CONTRADICTION', async (t) => {
  const { other, race } = await twoServers(t);
  const stored = ((await other.execute('memory_store',
    currentRequest({ ...SCOPE, fact: 'CI runs on every push', tags: ['subject:ci'] }))) as Json).results as Json[];
  const outcome = await race('memory_update', reverifyRequest(stored[0]!), TARGET_READ,
    () => other.execute('memory_update', replaceRequest(stored[0]!, { fact: 'CI runs nightly' })));
  t.same(outcome, { refused: 'VERSION_CONFLICT' });
});

t.test('the second of two promotions of one Candidate gets VERSION_CONFLICT, not ALREADY_CURRENT', async (t) => {
  const { other, race } = await twoServers(t);
  const stored = ((await other.execute('memory_store', storeRequest({
    ...SCOPE, fact: 'CI runs on every push', source_timestamp: '2026-11-01T00:00:00Z',
  }))) as Json).results as Json[];
  const promote = () => reverifyRequest(stored[0]!, { expected_record_id: stored[0]!.record_id });
  const outcome = await race('memory_update', promote(), TARGET_READ, () => other.execute('memory_update', promote()));
  t.same(outcome, { refused: 'VERSION_CONFLICT' });
});
