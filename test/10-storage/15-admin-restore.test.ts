import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import {
  chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { restoreVerifiedBackup } from '../../src/maintenance/restore-operation.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import {
  ADMIN_BIN, candidateRow, nextMigration, openEngine, RawDatabase, REPO_ROOT, runBin, SHIPPED_VERSION,
  storeRow, tableCounts, withRaw, writeInterlock,
} from '../helpers/storage.js';

// OPERATIONS.md §4.2: factlane-admin restore --from FILE --db PATH.

const admin = (...args: string[]) => runBin(ADMIN_BIN, args);
const modeOf = (path: string) => statSync(path).mode & 0o777;
const records = (path: string) =>
  withRaw(path, (db) => db.prepare('SELECT * FROM adapter_records ORDER BY row_id').all());
const meta = (path: string) =>
  withRaw(path, (db) => db.prepare('SELECT key, value FROM adapter_meta ORDER BY key').all());

/** A live database with three records, and a verified backup of it taken while it stays open. */
async function backedUp(t: Test) {
  const dir = t.testdir();
  const live = join(dir, 'live.sqlite3');
  const engine = await openEngine(live);
  t.teardown(() => engine.close());
  for (let i = 0; i < 3; i += 1) await storeRow(engine, candidateRow({ fact: `fact number ${i}` }), i);
  const backup = join(dir, 'backup.sqlite3');
  const result = admin('backup', '--db', live, '--out', backup);
  t.equal(result.status, 0, result.stderr);
  return { dir, live, backup };
}

/** Rewrites a backup's manifest so it describes the file as it is now (size and SHA-256). */
function refreshManifest(backup: string): void {
  const manifestPath = `${backup}.manifest.json`;
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  const bytes = readFileSync(backup);
  writeFileSync(manifestPath, JSON.stringify(
    { ...manifest, file_bytes: bytes.length, file_sha256: createHash('sha256').update(bytes).digest('hex') }));
}

/** A refused restore: exit 1, the code on stderr, and nothing new in the target directory. */
function refused(t: Test, args: string[], code: string, targetDir: string): void {
  const before = existsSync(targetDir) ? readdirSync(targetDir).sort() : null;
  const result = admin('restore', ...args);
  t.equal(result.status, 1, `${code}: exit 1`);
  t.match(result.stderr, new RegExp(`^factlane-admin: ${code}: `, 'm'), result.stderr);
  t.equal(result.stdout, '', `${code}: no report`);
  t.same(existsSync(targetDir) ? readdirSync(targetDir).sort() : null, before,
    `${code}: nothing written beside the target`);
}

t.test('a backup restores into a new WAL database that FactLane serves, with the same id and records', async (t) => {
  const { dir, live, backup } = await backedUp(t);
  const target = join(dir, 'new', 'nested', 'restored.sqlite3');
  const result = admin('restore', '--from', backup, '--db', target, '--json');
  t.equal(result.status, 0, result.stderr);
  t.notMatch(result.stdout, dir, 'no path in the report');
  const report = JSON.parse(result.stdout);
  const sourceId = (meta(live) as { key: string; value: string }[]).find((row) => row.key === 'database_id')!.value;
  t.match(report, {
    db_identity: /^[0-9a-f]{64}$/, database_id: sourceId, schema_version: SHIPPED_VERSION, needs_migration: false,
    journal_mode: 'wal', file_bytes: statSync(target).size, lifecycle_counts: { CANDIDATE: 3 },
    verification: { integrity_check: 'PASS' }, audit: { ok: true },
  });
  t.ok(report.verification.checks.every((check: { status: string }) => check.status === 'PASS'),
    'every verify check passes on the copy');
  t.same(readdirSync(join(dir, 'new', 'nested')), ['restored.sqlite3'], 'no temporary file, -wal or -shm left');
  t.equal(modeOf(target), 0o600, 'file 0600');
  t.equal(modeOf(join(dir, 'new')), 0o700, 'created parents 0700');
  t.equal(modeOf(join(dir, 'new', 'nested')), 0o700);
  t.equal(readFileSync(target)[18], 2, 'the file header says WAL');
  t.same(tableCounts(target), tableCounts(live), 'records, FTS, vectors, meta and migrations');
  t.same(records(target), records(live), 'every record byte for byte');
  t.same(meta(target), meta(live), 'meta, database_id included');

  const engine = await openEngine(target);
  t.equal(engine.findings.schemaVersion, SHIPPED_VERSION, 'the storage engine opens it');
  await engine.close();
  t.equal(admin('verify', '--db', target).status, 0, 'verify passes');

  const text = admin('restore', '--from', backup, '--db', join(dir, 'second.sqlite3'));
  t.equal(text.status, 0, text.stderr);
  t.match(text.stdout,
    new RegExp(`^restored and verified: \\d+ bytes, database_id [0-9a-f-]+, schema version ${SHIPPED_VERSION}\n$`));
});

t.test('restore never overwrites a database, a WAL or a shared-memory file, nor a name that appears meanwhile',
  async (t) => {
  const { dir, backup } = await backedUp(t);
  // A hot -journal beside the target would be rolled back into the restored file by the next SQLite that opens it.
  for (const suffix of ['', '-wal', '-shm', '-journal']) {
    const targetDir = join(dir, `existing${suffix || '-db'}`);
    mkdirSync(targetDir);
    const target = join(targetDir, 'x.sqlite3');
    writeFileSync(`${target}${suffix}`, `keep me ${suffix}`);
    refused(t, ['--from', backup, '--db', target], 'TARGET_EXISTS', targetDir);
    t.equal(readFileSync(`${target}${suffix}`, 'utf8'), `keep me ${suffix}`,
      `the existing ${suffix || 'database'} file is untouched`);
  }
  // A directory is named as one, not as a database that exists.
  const directory = join(dir, 'a-directory');
  mkdirSync(directory);
  refused(t, ['--from', backup, '--db', directory], 'TARGET_EXISTS', directory);
  t.match(admin('restore', '--from', backup, '--db', directory).stderr,
    /TARGET_EXISTS: the database path is a directory; give the name of a new database file/);
  // A dangling symlink is a name taken too: SQLite would open a -wal through it, and the server then fail on the file.
  for (const suffix of ['', '-wal', '-shm', '-journal']) {
    const linked = join(dir, `linked${suffix || '-db'}`);
    mkdirSync(linked);
    symlinkSync(join(dir, `nowhere${suffix}`), join(linked, `x.sqlite3${suffix}`));
    refused(t, ['--from', backup, '--db', join(linked, 'x.sqlite3')], 'TARGET_EXISTS', linked);
    t.match(admin('restore', '--from', backup, '--db', join(linked, 'x.sqlite3')).stderr, /already exists; restore/,
      `a dangling ${suffix || 'database'} link is named as existing`);
    t.notOk(existsSync(join(dir, `nowhere${suffix}`)), 'nothing written through the link');
  }
});

t.test('restore refuses a name that is the -wal, -shm or -journal of an existing file, which SQLite would take for '
  + 'that file\'s companion', async (t) => {
  const { dir, live, backup } = await backedUp(t);
  const message = /TARGET_EXISTS: the database path names the -wal, -shm, -journal or -writer of an existing file/;
  // The live database (in WAL mode, its -wal and -shm already there) and the backup itself (no companion yet).
  for (const target of [`${live}-journal`, `${backup}-wal`, `${backup}-shm`, `${backup}-journal`]) {
    refused(t, ['--from', backup, '--db', target], 'TARGET_EXISTS', dir);
    t.match(admin('restore', '--from', backup, '--db', target).stderr, message, target);
  }
  t.equal(admin('verify', '--db', live).status, 0, 'the live database still verifies');
  t.equal(admin('verify', '--backup', backup).status, 0, 'the backup still matches its manifest');
  const alone = join(dir, 'alone', 'x.sqlite3-wal');
  const restored = admin('restore', '--from', backup, '--db', alone);
  t.equal(restored.status, 0, `a name ending in -wal with no such file beside it: ${restored.stderr}`);
});

t.test('a backup that is missing, changed, damaged or interlocked is refused before anything is written', async (t) => {
  const { dir, live, backup } = await backedUp(t);
  const targetDir = join(dir, 'target');
  mkdirSync(targetDir);
  const target = join(targetDir, 'x.sqlite3');
  refused(t, ['--from', join(dir, 'absent.sqlite3'), '--db', target], 'SOURCE_NOT_FOUND', targetDir);
  t.match(admin('restore', '--from', join(dir, 'absent.sqlite3'), '--db', target).stderr,
    /SOURCE_NOT_FOUND: the backup file does not exist\n/);
  // The live database itself, open with its -wal beside it, and a copy of it alone (still in WAL mode): each named as
  // a live database, never told to move its -wal away.
  const liveCopy = join(dir, 'live-copy.sqlite3');
  copyFileSync(live, liveCopy);
  t.equal(readFileSync(liveCopy)[18], 2, 'the copy is in WAL mode');
  for (const from of [live, liveCopy]) {
    refused(t, ['--from', from, '--db', target], 'MANIFEST_MISMATCH', targetDir);
    t.match(admin('restore', '--from', from, '--db', target).stderr,
      /MANIFEST_MISMATCH: --from names a live database, not a backup: .*Take a backup of it/, 'named as live');
  }
  t.ok(existsSync(`${live}-wal`), 'the live database keeps its -wal');
  const bare = join(dir, 'bare.sqlite3');
  copyFileSync(backup, bare);
  refused(t, ['--from', bare, '--db', target], 'MANIFEST_MISMATCH', targetDir);
  const noManifest = /no manifest beside it \(the file named like it plus \.manifest\.json.*copy the two together/;
  t.match(admin('restore', '--from', bare, '--db', target).stderr,
    new RegExp(`MANIFEST_MISMATCH: the backup does not match its manifest: ${noManifest.source}\n`),
    'restore says the manifest is what is missing');
  // OPERATIONS.md §4.3: verify reports, exit 3; the copy's own checks still run (a run killed between publishing
  // the backup and writing its manifest left a complete copy, and verify shows it).
  const bareReport = admin('verify', '--backup', bare, '--json');
  t.equal(bareReport.status, 3, 'verify --backup without a manifest: a report, exit 3');
  const bareChecks = JSON.parse(bareReport.stdout).checks as { name: string; status: string }[];
  t.match(bareChecks[0], { name: 'manifest_matches', status: 'FAIL', detail: noManifest });
  t.same(bareChecks.filter((check) => check.status === 'FAIL').map((check) => check.name), ['manifest_matches'],
    'every other check passes');

  const manifest = JSON.parse(readFileSync(`${backup}.manifest.json`, 'utf8'));
  for (const [name, edit] of [['sha256', { file_sha256: '0'.repeat(64) }],
    ['size', { file_bytes: manifest.file_bytes + 1 }],
    ['database_id', { database_id: '00000000-0000-4000-8000-000000000000' }],
    ['schema_version', { schema_version: SHIPPED_VERSION + 1 }]] as const) {
    const edited = join(dir, `edited-${name}.sqlite3`);
    copyFileSync(backup, edited);
    writeFileSync(`${edited}.manifest.json`, JSON.stringify({ ...manifest, ...edit }));
    refused(t, ['--from', edited, '--db', target], 'MANIFEST_MISMATCH', targetDir);
    const named =
      { sha256: 'SHA-256', size: 'size', database_id: 'database_id', schema_version: 'schema version' }[name];
    const report = JSON.parse(admin('verify', '--backup', edited, '--json').stdout);
    t.same(report.checks[0], { name: 'manifest_matches', status: 'FAIL',
      detail: `its ${named} differs from the manifest's` }, `verify names what differs: ${name}`);
    t.match(admin('restore', '--from', edited, '--db', target).stderr,
      `MANIFEST_MISMATCH: the backup does not match its manifest: its ${named} differs`, 'and restore too');
  }
  // A copy cut short, and bytes that are no database at all, each with the manifest of the real backup.
  const truncated = join(dir, 'truncated.sqlite3');
  writeFileSync(truncated, readFileSync(backup).subarray(0, 8192));
  const noise = join(dir, 'noise.sqlite3');
  writeFileSync(noise, Buffer.alloc(manifest.file_bytes, 7));
  for (const file of [truncated, noise]) {
    copyFileSync(`${backup}.manifest.json`, `${file}.manifest.json`);
    refused(t, ['--from', file, '--db', target], 'MANIFEST_MISMATCH', targetDir);
  }
  // SQLite reads a -wal beside the backup with it, and the manifest's digest covers the file alone: a WAL written there
  // changed what would be restored while the file still matched its manifest.
  const strayWal = join(dir, 'stray-wal.sqlite3');
  copyFileSync(backup, strayWal);
  copyFileSync(`${backup}.manifest.json`, `${strayWal}.manifest.json`);
  writeFileSync(`${strayWal}-wal`, Buffer.alloc(4096));
  refused(t, ['--from', strayWal, '--db', target], 'MANIFEST_MISMATCH', targetDir);
  t.match(admin('restore', '--from', strayWal, '--db', target).stderr,
    /MANIFEST_MISMATCH: a -wal file lies beside the backup: .*move that file away/, 'the message names the -wal');
  t.notOk(existsSync(`${strayWal}-shm`), 'the backup was not opened beside its -wal (no -shm left)');
  const verifyStray = admin('verify', '--backup', strayWal, '--json');
  t.equal(verifyStray.status, 3);
  t.match(JSON.parse(verifyStray.stdout).checks, [{ name: 'manifest_matches', status: 'FAIL' }]);
  t.notOk(existsSync(`${strayWal}-shm`), 'verify --backup left no -shm either');
  // A backup a server was started on (its manifest away then: a server refuses a backup; stdin closed, so it stops at
  // once): the server switched it to WAL mode and its clean exit removed the -wal and -shm. Neither restore nor verify
  // opens it (a read-only open of a file in WAL mode leaves a new -wal and -shm beside it, which a restore then
  // blamed), and restore names the cause.
  const served = join(dir, 'served.sqlite3');
  copyFileSync(backup, served);
  const serve = spawnSync(process.execPath,
    [join(REPO_ROOT, 'dist/bin/factlane.js'), '--db', served, '--host-id', 'me'],
    { input: '', encoding: 'utf8' });
  t.equal(serve.status, 0, serve.stderr);
  copyFileSync(`${backup}.manifest.json`, `${served}.manifest.json`);
  t.equal(readFileSync(served)[18], 2, 'the server left the file in WAL mode');
  t.notOk(existsSync(`${served}-wal`), 'and no -wal beside it');
  refused(t, ['--from', served, '--db', target], 'MANIFEST_MISMATCH', targetDir);
  t.match(admin('restore', '--from', served, '--db', target).stderr,
    /MANIFEST_MISMATCH: the backup was opened as a live database since it was taken \(it is in WAL mode/);
  const verifyServed = admin('verify', '--backup', served, '--json');
  t.equal(verifyServed.status, 3);
  t.match(JSON.parse(verifyServed.stdout).checks, [{ name: 'manifest_matches', status: 'FAIL' }]);
  t.same(readdirSync(dir).filter((name) => /^served\.sqlite3-(wal|shm)$/.test(name)), [],
    'restore and verify left no -wal or -shm beside it');
  // A manifest that is JSON but no object, and a backup path that is a directory: governed, not internal errors.
  const nullManifest = join(dir, 'null-manifest.sqlite3');
  copyFileSync(backup, nullManifest);
  writeFileSync(`${nullManifest}.manifest.json`, 'null');
  refused(t, ['--from', nullManifest, '--db', target], 'MANIFEST_MISMATCH', targetDir);
  const directory = join(dir, 'directory.sqlite3');
  mkdirSync(directory);
  copyFileSync(`${backup}.manifest.json`, `${directory}.manifest.json`);
  refused(t, ['--from', directory, '--db', target], 'SOURCE_NOT_FOUND', targetDir);
  const verifyDirectory = admin('verify', '--backup', directory);
  t.equal(verifyDirectory.status, 1);
  t.match(verifyDirectory.stderr, /^factlane-admin: SOURCE_NOT_FOUND: /m);
  t.notMatch(verifyDirectory.stderr, /\n\s+at /, 'no stack trace');

  const verifyNoise = admin('verify', '--backup', noise, '--json');
  t.equal(verifyNoise.status, 3, 'verify reports a file that is no database instead of stopping');
  t.match(JSON.parse(verifyNoise.stdout).checks,
    [{ name: 'manifest_matches', status: 'FAIL' }, { name: 'sqlite_file', status: 'FAIL' }]);

  const damaged = join(dir, 'damaged.sqlite3');
  copyFileSync(backup, damaged);
  copyFileSync(`${backup}.manifest.json`, `${damaged}.manifest.json`);
  const raw = new RawDatabase(damaged);
  const fence = (raw.prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger' LIMIT 1")
    .get() as { name: string }).name;
  raw.exec(`DROP TRIGGER "${fence}"`);
  raw.close();
  refreshManifest(damaged);
  const result = admin('restore', '--from', damaged, '--db', target);
  t.match(result.stderr, /VERIFY_FAILED: .*fences_present/, 'names the failing check');
  refused(t, ['--from', damaged, '--db', target], 'VERIFY_FAILED', targetDir);

  const interlocked = join(dir, 'interlocked.sqlite3');
  copyFileSync(backup, interlocked);
  copyFileSync(`${backup}.manifest.json`, `${interlocked}.manifest.json`);
  writeInterlock(interlocked);
  refreshManifest(interlocked);
  refused(t, ['--from', interlocked, '--db', target], 'MAINTENANCE_IN_PROGRESS', targetDir);
  t.same(readdirSync(targetDir), [], 'the target directory stayed empty');
});

t.test('a directory that cannot be made, or a temporary name already taken, refuses the restore and leaves ' +
  'things as they were', async (t) => {
  const { dir, backup } = await backedUp(t);
  writeFileSync(join(dir, 'plain.txt'), 'not a directory');
  const underFile = admin('restore', '--from', backup, '--db', join(dir, 'plain.txt', 'sub', 'x.sqlite3'));
  t.equal(underFile.status, 1);
  t.match(underFile.stderr, /^factlane-admin: BACKEND_UNAVAILABLE: [^\n]*\(ENOTDIR\)\n$/,
    'one line, no stack, no path');
  const shipped = MaintenanceTarget.shippedMigrations();
  const targetDir = join(dir, 'taken');
  mkdirSync(targetDir);
  // The temporary name's nonce comes from randomBytes: fixed here, so the squatter can hold the very name.
  const nonce = Buffer.from('0123456789abcdef', 'hex');
  const crypto = await import('node:crypto');
  type Restore = typeof import('../../src/maintenance/restore-operation.js');
  // The temporary names are backup-operation's (writeThenPublish): that module, with the fixed nonce.
  const publishing = await t.mockImport('../../src/maintenance/backup-operation.js',
    { 'node:crypto': { ...crypto, randomBytes: () => nonce } });
  const fixed = await t.mockImport<Restore>('../../src/maintenance/restore-operation.js',
    { '../../src/maintenance/backup-operation.js': publishing });
  const squatter = join(targetDir, `.x.sqlite3.${process.pid}.0123456789abcdef.tmp`);
  writeFileSync(squatter, 'someone else');
  await t.rejects(fixed.restoreVerifiedBackup({ from: backup, dbPath: join(targetDir, 'x.sqlite3'), shipped }),
    { code: 'TARGET_EXISTS' });
  t.equal(readFileSync(squatter, 'utf8'), 'someone else',
    'a file of someone else under the temporary name is left alone');
  t.same(readdirSync(targetDir), [`.x.sqlite3.${process.pid}.0123456789abcdef.tmp`]);
});

t.test('the temporary name holds a random part: names planted beforehand at the pid\'s names are not in the way',
  async (t) => {
    const { dir, backup } = await backedUp(t);
    const shipped = MaintenanceTarget.shippedMigrations();
    const targetDir = join(dir, 'shared');
    mkdirSync(targetDir);
    // What another user of a shared directory could plant when the name was `.x.sqlite3.<pid>.tmp`: a file in the
    // way, and a hot journal SQLite would have rolled back into the copy.
    const planted = ['', '-journal', '-wal'].map((suffix) => `.x.sqlite3.${process.pid}.tmp${suffix}`);
    for (const name of planted) writeFileSync(join(targetDir, name), 'planted');
    const report = await restoreVerifiedBackup({ from: backup, dbPath: join(targetDir, 'x.sqlite3'), shipped });
    t.equal(report.journal_mode, 'wal', 'restored');
    t.same(readdirSync(targetDir).sort(), [...planted, 'x.sqlite3'].sort(), 'the planted files untouched, no other');
    for (const name of planted) t.equal(readFileSync(join(targetDir, name), 'utf8'), 'planted', `${name} as it was`);
  });

t.test('a schema newer than the release is refused; an older one is restored and reported as needing migration',
  async (t) => {
  const { dir, backup } = await backedUp(t);
  const shipped = MaintenanceTarget.shippedMigrations();
  await t.rejects(restoreVerifiedBackup({ from: backup, dbPath: join(dir, 'newer.sqlite3'), shipped: [] }),
    { code: 'SCHEMA_MISMATCH' });
  t.notOk(existsSync(join(dir, 'newer.sqlite3')));
  const next = { version: SHIPPED_VERSION + 1, name: 'next', fileName: nextMigration('next'), sql: 'SELECT 1;',
    checksum: '0'.repeat(64) };
  const report = await restoreVerifiedBackup(
    { from: backup, dbPath: join(dir, 'older.sqlite3'), shipped: [...shipped, next] });
  t.match(report, { schema_version: SHIPPED_VERSION, needs_migration: true });
  t.ok(existsSync(join(dir, 'older.sqlite3')));
});

t.test('an operator\'s ANALYZE is not a schema change: verify passes naming its statistics, and a backup of the file '
  + 'restores (decision 0043)', async (t) => {
  const dir = t.testdir();
  const live = join(dir, 'live.sqlite3');
  const engine = await openEngine(live);
  for (let i = 0; i < 3; i += 1) await storeRow(engine, candidateRow({ fact: `fact number ${i}` }), i);
  await engine.close();
  const raw = new RawDatabase(live);
  raw.exec('ANALYZE');
  raw.close();
  const statistics = withRaw(live, (db) =>
    db.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'sqlite_stat%' ORDER BY name").pluck().all());
  t.same(statistics, ['sqlite_stat1', 'sqlite_stat4'], 'ANALYZE made both tables');

  const verify = admin('verify', '--db', live, '--json');
  t.equal(verify.status, 0, verify.stdout);
  const objects = (JSON.parse(verify.stdout).checks as { name: string; status: string; detail: string }[])
    .find((c) => c.name === 'schema_objects');
  t.match(objects, { status: 'PASS', detail: /statistics from ANALYZE: sqlite_stat1, sqlite_stat4/ });

  const backup = join(dir, 'backup.sqlite3');
  const taken = admin('backup', '--db', live, '--out', backup);
  t.equal(taken.status, 0, taken.stderr);
  t.notMatch(taken.stdout, /FAILED/, 'its checks pass');
  const restored = join(dir, 'restored.sqlite3');
  const result = admin('restore', '--from', backup, '--db', restored);
  t.equal(result.status, 0, result.stderr);
  t.same(records(restored), records(live), 'the records came back');
});

t.test('restore loads the token recounter only once the backup passed its checks', async (t) => {
  const { dir, live, backup } = await backedUp(t);
  const shipped = MaintenanceTarget.shippedMigrations();
  let loads = 0;
  const loadRecounter = async () => {
    loads += 1;
    return () => null;
  };
  const restore = (dbPath: string, migrations = shipped) =>
    restoreVerifiedBackup({ from: backup, dbPath, shipped: migrations, loadRecounter });
  await t.rejects(restore(join(dir, 'newer.sqlite3'), []), { code: 'SCHEMA_MISMATCH' });
  await t.rejects(restore(live), { code: 'TARGET_EXISTS' });
  t.equal(loads, 0, 'a refused restore does not load the encoder (about 250 ms)');
  await restore(join(dir, 'back.sqlite3'));
  t.equal(loads, 1, 'a restore that copies loads it once');
});

const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;

/** factlane-admin as an operator who cannot read a 0600 file of another owner (nobody, when the suite runs as root). */
function adminWithoutAccess(...args: string[]) {
  // Without tap's NODE_OPTIONS, which tap adds to every child's environment: its process-info hook would write, as
  // nobody, into the suite's own directory.
  return spawnSync('env', ['-u', 'NODE_OPTIONS', process.execPath, ADMIN_BIN, ...args],
    { encoding: 'utf8', timeout: 60_000, ...(asRoot ? { uid: NOBODY, gid: NOBODY } : {}) });
}

/** A backup (0600, as backup writes it) in a directory others may enter, and a restore target they may write. */
async function backupOfAnotherOwner(t: Test) {
  const { dir, backup } = await backedUp(t);
  chmodSync(dir, 0o755);
  const out = join(dir, 'out');
  mkdirSync(out, { mode: 0o777 });
  chmodSync(out, 0o777);
  if (asRoot) chownSync(out, NOBODY, NOBODY);
  if (!asRoot) chmodSync(backup, 0o000);
  return { backup, manifest: `${backup}.manifest.json`, target: join(out, 'restored.sqlite3') };
}

t.test('a backup its operator cannot read is refused with a code and the reason, not an internal error', async (t) => {
  const { backup, target } = await backupOfAnotherOwner(t);
  for (const args of [['restore', '--from', backup, '--db', target], ['verify', '--backup', backup]]) {
    const run = adminWithoutAccess(...args);
    t.equal(run.status, 1, `${args[0]}: refused`);
    t.equal(run.stderr, 'factlane-admin: BACKEND_UNAVAILABLE: the backup file cannot be read (EACCES); check its '
      + 'owner and mode\n', `${args[0]}: one line, the code and why`);
    t.notOk(existsSync(target), `${args[0]}: nothing restored`);
  }
});

t.test('a manifest its operator cannot read is named as unreadable, not as malformed', async (t) => {
  const { backup, manifest } = await backupOfAnotherOwner(t);
  chmodSync(backup, 0o644);
  if (!asRoot) chmodSync(manifest, 0o000);
  const run = adminWithoutAccess('verify', '--backup', backup);
  t.equal(run.status, 3, run.stderr);
  t.match(run.stdout, /FAIL +manifest_matches +its manifest cannot be read \(EACCES\); check its owner and mode/);
});

t.test('restore usage errors exit 2', async (t) => {
  const dir = t.testdir();
  for (const args of [['restore', '--db', join(dir, 'x')], ['restore', '--from', join(dir, 'b')],
    ['restore', '--from', 'b', '--db', 'x', '--out', 'y'],
    ['backup', '--db', 'x', '--out', 'y', '--from', 'b'], ['restore', '--from', 'b', '--db', 'x', 'extra'],
    ['backup', '--db', 'x', '--out', join(dir, 'y'), '--out', join(dir, 'z')]]) {
    const result = admin(...args);
    t.equal(result.status, 2, args.join(' '));
  }
  const twice = admin('backup', '--db', 'x', '--out', join(dir, 'y'), '--out', join(dir, 'z'));
  t.match(twice.stderr,
    /^factlane-admin: --out was given more than once; give it once\nusage:\n  factlane-admin backup /);
  t.equal(twice.stdout, '');
  t.same(readdirSync(dir), [], 'nothing created');
});
