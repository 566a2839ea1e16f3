import t, { type Test } from 'tap';
import { auditFile } from '../../src/maintenance/audit-operation.js';
import { readHealth } from '../../src/storage/lineage-audit.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import { inspectSchema } from '../../src/storage/schema-inspection.js';
import { verifySchema } from '../../src/storage/schema-verification.js';
import { onOneSnapshot } from '../../src/storage/read-snapshot.js';
import { openReadOnlyConnection, WriteConnection } from '../../src/storage/write-connection.js';
import type { SqliteConnection } from '../../src/storage/native.js';
import { inGatedTransaction, RawDatabase } from '../helpers/storage.js';
import { currentRequest, openWriteBench, store } from '../helpers/writes.js';

// verify, audit and housekeeping's health reading each run several checks on one connection while servers may write
// (shared lease, OPERATIONS.md §3, §4.3, §4.4). SQLite's FTS5 keeps the index structure it read for one check; when
// another process commits to fact_fts before the next check, a check outside a transaction reads that stale structure
// and reports corruption a healthy database does not have. Each set of checks reads one snapshot.

const shipped = () => MaintenanceTarget.shippedMigrations();

/** A FactLane database with a few current facts, written through the product. */
async function database(t: Test): Promise<string> {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  for (const fact of ['The build uses Node 20', 'The shell is zsh', 'Deploys run from ops/deploy.sh'])
    await store(owner, currentRequest({ fact }));
  await bench.engine.close();
  return bench.dbPath;
}

/** Another process's commit to fact_fts, as a server storing a fact makes (a gated connection; FTS rows only). */
function ftsCommit(dbPath: string, rowid: number): void {
  inGatedTransaction(dbPath, (raw) => {
    raw.prepare('INSERT INTO fact_fts (rowid, search_text) VALUES (?, ?)')
      .run(rowid, `a fact written meanwhile ${rowid}`);
  });
}

/** The connection, with another process committing to fact_fts just before each of `before`'s statements runs. */
function interleaved(connection: SqliteConnection, dbPath: string, before: RegExp): SqliteConnection {
  let rowid = 1_000_000;
  return new Proxy(connection, {
    get(target, property) {
      if (property === 'prepare') {
        return (sql: string) => {
          if (before.test(sql)) ftsCommit(dbPath, (rowid += 1));
          return target.prepare(sql);
        };
      }
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

t.test('the interleaving this guards against: two FTS5 checks outside a transaction disagree', async (t) => {
  const dbPath = await database(t);
  const connection = openReadOnlyConnection(dbPath, { loadVec: true });
  t.teardown(() => connection.close());
  connection.prepare("PRAGMA integrity_check('fact_fts')").pluck().all();
  ftsCommit(dbPath, 2_000_000);
  t.not(connection.prepare('PRAGMA quick_check').pluck().all()[0], 'ok',
    'the stale structure reads as corruption (if SQLite stops doing this, this test and its guard can go)');
});

t.test('verify reads one snapshot: a commit between its checks is not corruption', async (t) => {
  const dbPath = await database(t);
  const connection = openReadOnlyConnection(dbPath, { loadVec: true });
  t.teardown(() => connection.close());
  const live = interleaved(connection, dbPath, /^PRAGMA (quick_check|integrity_check)/);
  const failed = verifySchema(live, inspectSchema(live, shipped()), shipped()).filter((c) => c.status === 'FAIL');
  t.same(failed, [], 'every check passes');
  t.equal(connection.inTransaction, false, 'the snapshot is ended');
});

t.test("housekeeping's health reading reads one snapshot", async (t) => {
  const dbPath = await database(t);
  const connection = openReadOnlyConnection(dbPath, { loadVec: true });
  t.teardown(() => connection.close());
  const health = readHealth(interleaved(connection, dbPath, /^PRAGMA quick_check/));
  t.same({ quick: health.quickCheck, integrity: health.integrityCheck }, { quick: 'PASS', integrity: 'PASS' });
  t.equal(connection.inTransaction, false, 'the snapshot is ended');
});

t.test("housekeeping's health reading on its read-write connection reads one snapshot", async (t) => {
  const dbPath = await database(t);
  const connection = WriteConnection.open({ path: dbPath });
  t.teardown(() => connection.close());
  const health = readHealth(interleaved(connection.connection, dbPath, /^PRAGMA quick_check/));
  t.same({ quick: health.quickCheck, integrity: health.integrityCheck }, { quick: 'PASS', integrity: 'PASS' });
  t.equal(connection.connection.inTransaction, false, 'the snapshot is ended');
});

t.test('a snapshot already ended by SQLite inside the work is not committed again; an error rolls back', async (t) => {
  const dbPath = await database(t);
  const connection = openReadOnlyConnection(dbPath);
  t.teardown(() => connection.close());
  t.equal(onOneSnapshot(connection, () => { connection.exec('ROLLBACK'); return 'checked'; }), 'checked');
  t.throws(() => onOneSnapshot(connection, () => {
    connection.exec('ROLLBACK');
    throw new Error('the check failed');
  }), /the check failed/, "the work's error, not the rollback's");
  t.throws(() => onOneSnapshot(connection, () => {
    connection.prepare('SELECT count(*) FROM adapter_records').get();
    throw new Error('midway');
  }), /midway/);
  t.equal(connection.inTransaction, false, 'rolled back');
});

t.test('audit, with a server committing while it reads, passes', async (t) => {
  const dbPath = await database(t);
  // auditFile opens its own connection: the commit lands before its quick_check through better-sqlite3's prepare.
  const prototype = RawDatabase.prototype as { prepare: SqliteConnection['prepare'] };
  const prepare = prototype.prepare;
  let rowid = 3_000_000;
  prototype.prepare = function (this: SqliteConnection, sql: string) {
    if (/^PRAGMA quick_check/.test(sql)) ftsCommit(dbPath, (rowid += 1));
    return prepare.call(this, sql);
  } as SqliteConnection['prepare'];
  t.teardown(() => { prototype.prepare = prepare; });
  const report = auditFile(dbPath, shipped());
  prototype.prepare = prepare;
  t.same(report.checks.filter((c) => c.status === 'FAIL'), [], 'every check passes');
});
