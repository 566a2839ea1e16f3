import t from 'tap';
import { spawn } from 'node:child_process';
import {
  appendFileSync, chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { SYSTEM_CLOCK } from '../../src/core/time.js';
import { writeThenPublish, writeVerifiedBackup } from '../../src/maintenance/backup-operation.js';
import { MaintenanceTarget, dbIdentity } from '../../src/storage/maintenance-target.js';
import { ADMIN_BIN, candidateRow, deadPid, openEngine, RawDatabase, runBin, storeRow } from '../helpers/storage.js';
import { openWriteBench, store, storeRequest } from '../helpers/writes.js';

const admin = (...args: string[]) => runBin(ADMIN_BIN, args);
const ROOT_ONLY =
  /^factlane-admin: BACKEND_UNAVAILABLE: run as root, backup, restore and migrate up --backup write only where/m;

t.test('backup of a live database verifies; a changed backup fails its manifest; targets are never overwritten',
  async (t) => {
  const dir = t.testdir();
  const dbPath = join(dir, 'live.sqlite3');
  const engine = await openEngine(dbPath);
  await storeRow(engine, candidateRow());
  // The server keeps running: backup takes the shared lease beside it.
  const out = join(dir, 'backup.sqlite3');
  const backup = admin('backup', '--db', dbPath, '--out', out, '--json');
  t.equal(backup.status, 0, backup.stderr);
  const manifest = JSON.parse(backup.stdout).manifest;
  const none = { VALIDATED_CURRENT: 0, SUPERSEDED: 0, STALE: 0, QUARANTINED: 0, HISTORICAL: 0 };
  t.strictSame(manifest.lifecycle_counts, { CANDIDATE: 1, ...none }, 'a count for every lifecycle, 0 where none');
  t.notMatch(backup.stdout, dir, 'no path in the report');

  const verified = admin('verify', '--backup', out, '--json');
  t.equal(verified.status, 0, verified.stdout);
  t.equal(JSON.parse(verified.stdout).ok, true);
  t.equal(JSON.parse(verified.stdout).db_identity, dbIdentity(realpathSync(out)),
    'the report names the backup by its db_identity, as verify --db names a database');
  t.notMatch(verified.stdout, dir, 'and holds no path');

  const nowhere = join(dir, 'no-such-dir', 'backup.sqlite3');
  const missingDir = admin('backup', '--db', dbPath, '--out', nowhere);
  t.equal(missingDir.status, 1, 'a missing directory for --out: refused');
  t.match(missingDir.stderr,
    /^factlane-admin: SOURCE_NOT_FOUND: the directory of the backup file does not exist; a backup creates no /m);
  t.notOk(existsSync(dirname(nowhere)), 'and none created');

  const again = admin('backup', '--db', dbPath, '--out', out);
  t.equal(again.status, 1);
  t.match(again.stderr, /^factlane-admin: TARGET_EXISTS: .*already exists; choose a new path \(a run stopped after /m);
  t.match(again.stderr,
    /left a backup there: factlane-admin verify --backup says whether it is whole and has its manifest\)$/m,
    'says an interrupted run may have left a good backup');

  appendFileSync(out, Buffer.alloc(4096));
  const tampered = admin('verify', '--backup', out, '--json');
  t.equal(tampered.status, 3, 'problems → 3');
  t.equal(JSON.parse(tampered.stdout).checks.find((c: { name: string }) =>
    c.name === 'manifest_matches').status, 'FAIL');

  const live = admin('verify', '--db', dbPath);
  t.equal(live.status, 0, live.stdout);
  t.match(live.stdout, /PASS +sqlite_file/);
  // OPERATIONS.md §4.3: "an SQLite file" is a check like the others, so a file that is none is reported, exit 3.
  const junk = join(dir, 'junk.sqlite3');
  writeFileSync(junk, 'hello, this is no database\n'.repeat(200));
  const notDb = admin('verify', '--db', junk, '--json');
  t.equal(notDb.status, 3, notDb.stderr);
  t.match(JSON.parse(notDb.stdout), { ok: false, checks: [{ name: 'sqlite_file', status: 'FAIL' }] });
  t.equal(readFileSync(junk, 'utf8'), 'hello, this is no database\n'.repeat(200), 'the file is left as it was');
  // An SQLite file whose schema page is garbage is an SQLite file that fails integrity, not 'no SQLite file'.
  const garbled = join(dir, 'garbled.sqlite3');
  writeFileSync(garbled, Buffer.concat([readFileSync(out).subarray(0, 100), Buffer.alloc(3000, 0x55),
    readFileSync(out).subarray(3100)]));
  const damaged = admin('verify', '--db', garbled, '--json');
  t.equal(damaged.status, 3, damaged.stderr);
  t.match(JSON.parse(damaged.stdout).checks,
    [{ name: 'sqlite_file', status: 'PASS' }, { name: 'integrity_check', status: 'FAIL' }]);
  await engine.close();

  t.equal(admin('backup', '--db', dbPath).status, 2, 'usage');
  const noDb = admin('audit');
  t.equal(noDb.status, 2);
  const defaultPath = /\(a server started without --db uses \/\S*\/factlane\/factlane\.sqlite3\)\n/;
  t.match(noDb.stderr, /^factlane-admin: audit needs --db PATH /);
  t.match(noDb.stderr, defaultPath, 'says where the server keeps its database by default');
  t.equal(admin('housekeep', '--db', dbPath).status, 2, 'not in this build');
  const missing = admin('verify', '--db', join(dir, 'nope.sqlite3'));
  t.equal(missing.status, 1);
  t.notOk(existsSync(join(dir, 'nope.sqlite3')));
});

t.test('backup loads the token recounter only once its checks passed', async (t) => {
  const dir = t.testdir();
  const dbPath = join(dir, 'live.sqlite3');
  const engine = await openEngine(dbPath);
  t.teardown(() => engine.close());
  await storeRow(engine, candidateRow());
  const target = MaintenanceTarget.open({ dbPath, lease: 'shared' });
  t.teardown(() => target.close());
  let loads = 0;
  const loadRecounter = async () => {
    loads += 1;
    return () => null;
  };
  const backup = (out: string) => writeVerifiedBackup(target, out, SYSTEM_CLOCK, undefined, loadRecounter);
  writeFileSync(join(dir, 'taken.sqlite3'), 'someone else');
  await t.rejects(backup(join(dir, 'taken.sqlite3')), { code: 'TARGET_EXISTS' });
  for (const suffix of ['', '-wal', '-journal', '.manifest.json']) {
    // A dangling link is a name taken: the backup would be written through it, or SQLite would open a -wal there.
    const out = join(dir, `linked${suffix || '-file'}.sqlite3`);
    symlinkSync(join(dir, `nowhere${suffix}`), `${out}${suffix}`);
    await t.rejects(backup(out), { code: 'TARGET_EXISTS', message: /already exists/ }, `a dangling ${suffix} link`);
    t.notOk(existsSync(join(dir, `nowhere${suffix}`)), 'nothing written through it');
  }
  await t.rejects(backup(join(dir, 'missing', 'b.sqlite3')), { code: 'SOURCE_NOT_FOUND' });
  t.equal(loads, 0, 'a refused backup does not load the encoder (about 250 ms)');
  await backup(join(dir, 'b.sqlite3'));
  t.equal(loads, 1, 'a backup that copies loads it once');
});

t.test('backup reports verified only once the copy is audited: the audit is inside that step (decision 0023)',
  async (t) => {
  const bench = await openWriteBench(t);
  // Stored through the adapter, so each record has the token count the audit recounts (most of a large backup's
  // time, which came as a silence after verified).
  const adapter = bench.adapter('delegated-candidate');
  for (let i = 0; i < 3; i += 1) await store(adapter, storeRequest({ fact: `The build uses Node ${20 + i}` }));
  const target = MaintenanceTarget.open({ dbPath: bench.dbPath, lease: 'shared' });
  t.teardown(() => target.close());
  const events: string[] = [];
  const recounting = async () => () => {
    events.push('recount');
    return null;
  };
  await writeVerifiedBackup(target, join(dirname(bench.dbPath), 'b.sqlite3'), SYSTEM_CLOCK,
    (step) => events.push(step.step), recounting);
  t.ok(events.includes('recount') && events.lastIndexOf('recount') < events.indexOf('verified'),
    `every recount comes before verified: ${events.join(', ')}`);
});

t.test('a damaged database is still saved, its failures recorded; a sidecar name of the database is refused',
  async (t) => {
  const dir = t.testdir();
  const dbPath = join(dir, 'damaged.sqlite3');
  const engine = await openEngine(dbPath);
  await storeRow(engine, candidateRow());
  await engine.close();
  // OPERATIONS.md §4.1 step 3: failures of the copy's checks are recorded, not fatal. The lifecycle counts read
  // adapter_records; without it the backup failed, blaming the output ('cannot be written there (SQLITE_ERROR)').
  const raw = new RawDatabase(dbPath);
  raw.function('factlane_contract_v2_writer', () => 1);
  raw.exec('DROP TABLE adapter_records');
  raw.close();
  const out = join(dir, 'saved.sqlite3');
  const backup = admin('backup', '--db', dbPath, '--out', out, '--json');
  t.equal(backup.status, 0, backup.stderr);
  const manifest = JSON.parse(backup.stdout).manifest;
  t.same(manifest.lifecycle_counts, {}, 'no counts where none can be read');
  t.match(manifest.verification.checks, [{ name: 'versions_contiguous' }], 'the checks are recorded');
  t.ok(manifest.verification.checks.some((check: { status: string }) => check.status === 'FAIL'), 'a failure recorded');
  t.ok(existsSync(out), 'the copy is published');
  // A backup named like the database's -journal would be read by SQLite as that database's hot journal.
  const journal = admin('backup', '--db', out, '--out', `${out}-journal`);
  t.equal(journal.status, 1);
  t.match(journal.stderr, /^factlane-admin: TARGET_EXISTS: the backup path names the -wal, -shm, -journal or -writer/m);
  t.notOk(existsSync(`${out}-journal`), 'nothing written there');
  // The same name through a symbolic link to the directory.
  const link = join(dir, 'link');
  symlinkSync(dir, link);
  const viaLink = admin('backup', '--db', join(link, 'saved.sqlite3'), '--out', join(link, 'saved.sqlite3-journal'));
  t.equal(viaLink.status, 1);
  t.match(viaLink.stderr, /TARGET_EXISTS: the backup path names the -wal, -shm, -journal or -writer/m);
  t.notOk(existsSync(`${out}-journal`), 'nothing written through the link');
  // Nor as the companion of another file: the next open of that file would roll the backup into it.
  const other = join(dir, 'other.sqlite3');
  writeFileSync(other, 'another database');
  const beside = admin('backup', '--db', out, '--out', `${other}-journal`);
  t.equal(beside.status, 1);
  t.match(beside.stderr, /^factlane-admin: TARGET_EXISTS: the backup path names the -wal, -shm, -journal or -writer/m);
  t.notOk(existsSync(`${other}-journal`), 'nothing written beside the other file');
});

t.test('a file that is no FactLane database is not backed up; Ctrl-C during a copy leaves no temporary copy',
  async (t) => {
  const dir = t.testdir();
  const empty = join(dir, 'empty.sqlite3');
  writeFileSync(empty, '');
  const refused = admin('backup', '--db', empty, '--out', join(dir, 'of-empty.sqlite3'));
  t.equal(refused.status, 1);
  t.match(refused.stderr, /^factlane-admin: SCHEMA_MISMATCH: the file is not a FactLane database/m);
  t.notOk(existsSync(join(dir, 'of-empty.sqlite3')), 'no backup of nothing');

  // About 120 MB of free pages, which the online backup copies too: long enough to be stopped midway.
  const dbPath = join(dir, 'large.sqlite3');
  const engine = await openEngine(dbPath);
  await storeRow(engine, candidateRow());
  await engine.close();
  const raw = new RawDatabase(dbPath);
  raw.exec('CREATE TABLE pad (b); INSERT INTO pad SELECT zeroblob(30000000) FROM (VALUES (1), (2), (3), (4));'
    + 'DROP TABLE pad;');
  raw.close();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    const out = join(dir, `stopped-${signal}.sqlite3`);
    const child = spawn(process.execPath, [ADMIN_BIN, 'backup', '--db', dbPath, '--out', out],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    let gone = false;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => {
      gone = true;
      resolve(code);
    }));
    const temporary = () => readdirSync(dir).some((name) => name.startsWith(`.stopped-${signal}.sqlite3.`));
    while (!temporary() && !gone) await new Promise((resolve) => setTimeout(resolve, 2));
    if (gone) t.fail(`${signal}: the backup ended before its copy was seen (${stderr.trim()})`);
    // Inside the copy, which runs without a turn of the event loop: the signal waits for one, and the run must not
    // publish before it has had that turn (it published and exited 0 in 10 of 10 runs of a review helper).
    await new Promise((resolve) => setTimeout(resolve, 100));
    child.kill(signal);
    t.equal(await exited, 1, `${signal}: exit 1`);
    t.match(stderr, new RegExp(`stopped by ${signal}; the temporary copy was removed`));
    t.same(readdirSync(dir).filter((name) => name.includes(`stopped-${signal}`)), [], `${signal}: nothing left behind`);
  }
  // After the copy's checks, while its manifest is made (the whole copy hashed and audited, seconds on a large file,
  // again without a turn): the signal was dropped, and the backup published, exit 0 (a review helper, 2 of 2 runs).
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    const out = join(dir, `manifest-${signal}.sqlite3`);
    const child = spawn(process.execPath, [ADMIN_BIN, 'backup', '--db', dbPath, '--out', out, '--json'],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    const verified = new Promise<void>((resolve) => child.stderr.on('data', (chunk) => {
      stderr += chunk;
      if (stderr.includes('"verified"')) resolve();
    }));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await Promise.race([verified, exited]);
    await new Promise((resolve) => setTimeout(resolve, 30)); // past the turn that follows the copy's checks
    child.kill(signal);
    t.equal(await exited, 1, `${signal} after verified: exit 1`);
    const [stopped, failed, ...before] = stderr.trimEnd().split('\n').reverse();
    t.equal(stopped, `factlane-admin: stopped by ${signal}; the temporary copy was removed, nothing was published`,
      `${signal}: said last`);
    t.match(JSON.parse(failed!), { operation: 'backup', step: 'failed' }, `${signal}: the failed step ends the JSON`);
    t.notOk('error_code' in JSON.parse(failed!), 'an interruption has no error code');
    t.ok(before.some((line) => line.includes('"verified"')), 'after the steps it reached');
    t.same(readdirSync(dir).filter((name) => name.includes(`manifest-${signal}`)), [],
      `${signal} after verified: neither the copy nor a manifest published or left`);
  }
});

t.test('temporaries a killed run left under the same target are removed; a running one and others stay', async (t) => {
  const dir = t.testdir();
  const dbPath = join(dir, 'db.sqlite3');
  const engine = await openEngine(dbPath);
  await storeRow(engine, candidateRow());
  await engine.close();
  // What kill -9 during a copy leaves: the hidden copy (and its journal), or the manifest's temporary.
  const dead = deadPid();
  const nonce = '0123456789abcdef';
  const stale = [`.out.sqlite3.${dead}.tmp`, `.out.sqlite3.${dead}.tmp-journal`,
    `.out.sqlite3.manifest.json.${dead}.tmp`, `.out.sqlite3.${dead}.${nonce}.tmp`,
    `.out.sqlite3.${dead}.${nonce}.tmp-wal`, `.out.sqlite3.manifest.json.${dead}.${nonce}.tmp`];
  const kept = [`.out.sqlite3.${process.pid}.tmp`, `.other.sqlite3.${dead}.tmp`, `.out.sqlite3.${dead}.tmpx`,
    `.out.sqlite3.${process.pid}.${nonce}.tmp`, `.out.sqlite3.${dead}.0123.tmp`, `.other.sqlite3.${dead}.${nonce}.tmp`];
  for (const name of [...stale, ...kept]) writeFileSync(join(dir, name), 'a full copy, say');
  const backup = admin('backup', '--db', dbPath, '--out', join(dir, 'out.sqlite3'));
  t.equal(backup.status, 0, backup.stderr);
  for (const name of stale) t.notOk(existsSync(join(dir, name)), `removed: ${name}`);
  for (const name of kept) t.ok(existsSync(join(dir, name)), `kept: ${name}`);
});

t.test('an output place that cannot be written is BACKEND_UNAVAILABLE by its code, naming no path', async (t) => {
  const dir = t.testdir({ 'not-a-dir': 'a file' });
  const dbPath = join(dir, 'live.sqlite3');
  const engine = await openEngine(dbPath);
  await storeRow(engine, candidateRow());
  await engine.close();
  // A file where the output's directory should be: opening the temporary file fails with ENOTDIR (root ignores
  // permission bits, so a read-only directory is not a test that can fail here; the qualification mounts one).
  const backup = admin('backup', '--db', dbPath, '--out', join(dir, 'not-a-dir', 'backup.sqlite3'));
  t.equal(backup.status, 1);
  t.match(backup.stderr, /^factlane-admin: BACKEND_UNAVAILABLE: the output cannot be written there \(ENOTDIR\)/m);
  t.notMatch(backup.stderr, dir, 'no path, no stack');
});

/** A database of one record at `dir`/live.sqlite3, closed. */
async function liveDatabase(dir: string): Promise<string> {
  const dbPath = join(dir, 'live.sqlite3');
  const engine = await openEngine(dbPath);
  await storeRow(engine, candidateRow());
  await engine.close();
  return dbPath;
}

t.test('run as root, backup and restore write only where no other user can change the path (decision 0044)',
  { skip: process.geteuid?.() === 0 ? false : 'needs root' }, async (t) => {
  const dir = t.testdir();
  const dbPath = await liveDatabase(dir);
  // A user's directory (that user could swap a name in it for a link to root's file between its creation and
  // SQLite's open), a directory anyone may write, and a sticky one like /tmp, where only a name's owner may swap it.
  const users = join(dir, 'users');
  mkdirSync(users);
  chownSync(users, 65534, 65534);
  const open = join(dir, 'open');
  mkdirSync(open);
  chmodSync(open, 0o777);
  const sticky = join(dir, 'sticky');
  mkdirSync(sticky);
  chmodSync(sticky, 0o1777);
  for (const out of [join(users, 'b.sqlite3'), join(open, 'b.sqlite3')]) {
    const refused = admin('backup', '--db', dbPath, '--out', out);
    t.equal(refused.status, 1, out);
    t.match(refused.stderr, ROOT_ONLY);
  }
  t.same([readdirSync(users), readdirSync(open)], [[], []], 'nothing written');
  const taken = admin('backup', '--db', dbPath, '--out', join(sticky, 'b.sqlite3'));
  t.equal(taken.status, 0, taken.stderr);
  const restored = admin('restore', '--from', join(sticky, 'b.sqlite3'), '--db', join(users, 'new', 'r.sqlite3'));
  t.equal(restored.status, 1);
  t.match(restored.stderr, ROOT_ONLY);
  t.same(readdirSync(users), [], 'no directory made');
  const ok = admin('restore', '--from', join(sticky, 'b.sqlite3'), '--db', join(sticky, 'r.sqlite3'));
  t.equal(ok.status, 0, ok.stderr);
});

t.test('run as root, restore through a link of root\'s into a user\'s directory is refused as the directory itself is',
  { skip: process.geteuid?.() === 0 ? false : 'needs root' }, async (t) => {
  const dir = t.testdir();
  const dbPath = await liveDatabase(dir);
  const backup = join(dir, 'b.sqlite3');
  t.equal(admin('backup', '--db', dbPath, '--out', backup).status, 0);
  // A directory of root's inside a user's: the user can rename it away and put their own (or a link) in its place.
  const users = join(dir, 'users');
  mkdirSync(users);
  chownSync(users, 65534, 65534);
  mkdirSync(join(users, 'roots'));
  const link = join(dir, 'link');
  symlinkSync(join(users, 'roots'), link);
  const direct = admin('restore', '--from', backup, '--db', join(users, 'roots', 'r.sqlite3'));
  t.match(direct.stderr, ROOT_ONLY, 'by its name');
  const linked = admin('restore', '--from', backup, '--db', join(link, 'r.sqlite3'));
  t.equal(linked.status, 1, 'through the link: the same directories are on the way');
  t.match(linked.stderr, ROOT_ONLY);
  t.same(readdirSync(join(users, 'roots')), [], 'nothing written');
});

t.test('the manifest is written before anything is published, so a failed run never leaves the file alone',
  async (t) => {
  const dir = t.testdir({ 'taken.manifest.json': 'someone else' });
  const names = () => readdirSync(dir).sort();
  const fill = async (temp: string) => {
    writeFileSync(temp, 'database bytes');
    return 'filled';
  };
  const manifestOf = (path: string) => (temp: string) => ({ path, text: `manifest of ${readFileSync(temp, 'utf8')}` });

  const file = join(dir, 'ok.sqlite3');
  t.equal(await writeThenPublish(file, fill, manifestOf(`${file}.manifest.json`)), 'filled');
  t.equal(readFileSync(`${file}.manifest.json`, 'utf8'), 'manifest of database bytes', 'derived from the filled file');
  t.same(names(), ['ok.sqlite3', 'ok.sqlite3.manifest.json', 'taken.manifest.json'], 'no temporary file left');

  // The manifest's name is taken when the two links run: the file linked a moment before is taken back.
  const taken = join(dir, 'taken');
  await t.rejects(writeThenPublish(taken, fill, manifestOf(`${taken}.manifest.json`)), { code: 'TARGET_EXISTS' });
  t.same(names(), ['ok.sqlite3', 'ok.sqlite3.manifest.json', 'taken.manifest.json'], 'neither file published');
  t.equal(readFileSync(`${taken}.manifest.json`, 'utf8'), 'someone else', 'the other file untouched');

  // A companion that cannot be derived fails the run before anything is published.
  const broken = join(dir, 'broken.sqlite3');
  await t.rejects(writeThenPublish(broken, fill, () => { throw new Error('cannot hash'); }), /cannot hash/);
  t.notOk(existsSync(broken));
  t.same(names(), ['ok.sqlite3', 'ok.sqlite3.manifest.json', 'taken.manifest.json']);
});
