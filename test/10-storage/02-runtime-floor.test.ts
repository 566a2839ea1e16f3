import t from 'tap';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { probeRuntime, versionAtLeast } from '../../src/storage/runtime-probe.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import { openEngine } from '../helpers/storage.js';

t.test('the linked runtime meets the floor', async (t) => {
  const report = probeRuntime();
  t.ok(versionAtLeast(report.sqliteVersion, '3.42.0'), `sqlite ${report.sqliteVersion}`);
  t.ok(versionAtLeast(report.sqliteVecVersion, '0.1.6'), `sqlite-vec ${report.sqliteVecVersion}`);
  t.equal(report.fts5, true);
});

t.test('version comparison is numeric', async (t) => {
  t.ok(versionAtLeast('3.42.0', '3.42.0'));
  t.ok(versionAtLeast('3.100.0', '3.42.0'));
  t.notOk(versionAtLeast('3.41.2', '3.42.0'));
  t.ok(versionAtLeast('v0.1.9', '0.1.6'));
  t.notOk(versionAtLeast('v0.1.5', '0.1.6'));
});

t.test('an injected SQLite 3.41.2 is refused before any file or directory is created', async (t) => {
  const dir = t.testdir();
  const dbPath = join(dir, 'nested', 'factlane.sqlite3');
  await t.rejects(openEngine(dbPath, { runtime: { sqliteVersion: () => '3.41.2' } }),
    { code: 'BACKEND_COMPATIBILITY_MISMATCH', message: /3\.41\.2.*3\.42\.0/ });
  t.notOk(existsSync(join(dir, 'nested')), 'no parent directory created');
  t.same(readdirSync(dir), [], 'nothing created');
});

t.test('operator commands run the same probe first', async (t) => {
  const dir = t.testdir();
  t.throws(() => MaintenanceTarget.open({ dbPath: join(dir, 'missing.sqlite3'), lease: 'shared',
    runtime: { sqliteVersion: () => '3.40.1' } }), { code: 'BACKEND_COMPATIBILITY_MISMATCH' });
});
