import t from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { SYSTEM_CLOCK } from '../../src/core/time.js';
import { migrateUp, migrationStatus } from '../../src/maintenance/migrate-operations.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import type { SqliteConnection } from '../../src/storage/native.js';
import {
  candidateRow, downgradeToSchemaFour, MIGRATE_BIN, migrationsDir, nextMigration, openEngine, RawDatabase, runBin,
  SHIPPED_VERSION, storeRow, tableCounts, tamperAppliedChecksum, writeInterlock,
} from '../helpers/storage.js';

const NEXT = SHIPPED_VERSION + 1;
const NOTE_MIGRATION = {
  [nextMigration('add_note')]: 'CREATE TABLE note (a TEXT);\nCREATE INDEX idx_note ON note (a);\n',
};

async function seeded(dir: string, dbName = 'db.sqlite3', options: { migrationsDir?: string } = {}): Promise<string> {
  const dbPath = join(dir, dbName);
  const engine = await openEngine(dbPath, options);
  await storeRow(engine, candidateRow());
  await engine.close();
  return dbPath;
}

function exclusive(dbPath: string, dir?: string): MaintenanceTarget {
  return MaintenanceTarget.open({ dbPath, lease: 'exclusive', migrationsDir: dir });
}

const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

t.test('a file SQLite refuses (a table it creates is already there) is SCHEMA_MISMATCH, and nothing migrates',
  async (t) => {
    const dir = t.testdir();
    const dbPath = await seeded(dir);
    const raw = new RawDatabase(dbPath);
    raw.exec('CREATE TABLE note (a TEXT)'); // a raw writer's table, under the name the next file creates
    raw.close();
    const before = tableCounts(dbPath);
    const newer = migrationsDir(dir, 'newer', NOTE_MIGRATION);
    const target = exclusive(dbPath, newer);
    t.teardown(() => target.close());
    const refused = await migrateUp(target, { backupFile: null, clock: SYSTEM_CLOCK }).catch((error: unknown) => error);
    t.match(refused, { code: 'SCHEMA_MISMATCH', message: new RegExp(`^${nextMigration('add_note')} cannot be applied `
      + 'to this database \\(SQLite: table note already exists\\); .*nothing was migrated$') });
    t.equal(migrationStatus(target).state, 'PENDING', 'still at the version before');
    t.same(tableCounts(dbPath), before, 'every table as it was');
  });

t.test('a full disk while a file creates a vec0 table keeps its own code (BACKEND_UNAVAILABLE), nothing migrates',
  async (t) => {
    const dir = t.testdir();
    const dbPath = await seeded(dir);
    const before = sha(dbPath);
    const newer = migrationsDir(dir, 'newer', {
      [nextMigration('note_vec')]: ['a', 'b', 'c']
        .map((name) => `CREATE VIRTUAL TABLE note_${name} USING vec0 (embedding float[8], chunk_size=8);\n`).join(''),
    });
    // sqlite-vec says "Could not create '_info' shadow table: database or disk is full", as SQLITE_ERROR. The disk
    // fills as the file runs: no page beyond those the database has (max_page_count, the tests' full disk).
    const apply = await import('../../src/storage/migration-apply.js');
    const full = {
      ...apply,
      applyMigrations: (trx: unknown, raw: SqliteConnection, ...rest: unknown[]) => {
        raw.exec(`PRAGMA max_page_count = ${String(raw.pragma('page_count', { simple: true }))}`);
        return (apply.applyMigrations as (...args: unknown[]) => unknown)(trx, raw, ...rest);
      },
    };
    type Target = typeof import('../../src/storage/maintenance-target.js');
    const targets = await t.mockImport<Target>('../../src/storage/maintenance-target.js',
      { '../../src/storage/migration-apply.js': full });
    type Operations = typeof import('../../src/maintenance/migrate-operations.js');
    const operations = await t.mockImport<Operations>('../../src/maintenance/migrate-operations.js',
      { '../../src/storage/maintenance-target.js': targets });
    const target = targets.MaintenanceTarget.open({ dbPath, lease: 'exclusive', migrationsDir: newer });
    const refused = await operations.migrateUp(target, { backupFile: null, clock: SYSTEM_CLOCK })
      .catch((error: unknown) => error);
    target.close();
    t.match(refused, { code: 'BACKEND_UNAVAILABLE' }, 'as SQLITE_FULL is (STORAGE.md §6)');
    t.equal(sha(dbPath), before, 'the database unchanged');
  });

t.test('up applies pending migrations in one transaction after a verified backup', async (t) => {
  const dir = t.testdir();
  const dbPath = await seeded(dir);
  const newer = migrationsDir(dir, 'newer', NOTE_MIGRATION);
  const target = exclusive(dbPath, newer);
  t.teardown(() => target.close());
  t.equal(migrationStatus(target).state, 'PENDING');
  t.same(migrationStatus(target).pending, [{ version: NEXT, name: 'add_note' }]);
  const steps: string[] = [];
  const backupFile = join(dir, 'before-up.sqlite3');
  const report = await migrateUp(target, { backupFile, clock: SYSTEM_CLOCK,
    onStep: (s) => steps.push(s.step === 'migration_applied' ? `${s.fields?.version}_${s.fields?.name}` : s.step) });
  t.same(steps, ['lease_taken', 'backup_lease_taken', 'backup_pages_copied', 'backup_pages_copied', 'backup_verifying',
    'backup_verified', 'backup_published', 'backup_manifest_written', 'applying_migration', `${NEXT}_add_note`,
    'committed', 'verifying', 'verified'],
    'the steps in order, one per file applied');
  t.same(report.applied, [{ version: NEXT, name: 'add_note' }]);
  t.equal(report.schema_version, NEXT);
  t.same(report.verification.filter((c) => c.status === 'FAIL'), [], 'verification passes after up');
  t.equal(migrationStatus(target).state, 'UP_TO_DATE');

  t.ok(existsSync(backupFile), 'backup written');
  t.notOk(existsSync(`${backupFile}-wal`), 'backup has no wal');
  const manifest = JSON.parse(readFileSync(`${backupFile}.manifest.json`, 'utf8'));
  t.equal(manifest.file_sha256, sha(backupFile), 'manifest digest matches the file');
  t.equal(manifest.schema_version, SHIPPED_VERSION, 'backup taken before the migration');
  t.match(manifest.lifecycle_counts, { CANDIDATE: 1, VALIDATED_CURRENT: 0 });
  t.equal(manifest.verification.integrity_check, 'PASS');
  const copy = new RawDatabase(backupFile, { readonly: true });
  t.equal(copy.pragma('journal_mode', { simple: true }), 'delete', 'backup in rollback-journal mode');
  copy.close();
  t.equal(tableCounts(dbPath).records, 1, 'records kept');
});

t.test('a migration that fails half-way leaves the file byte-identical', async (t) => {
  const dir = t.testdir();
  const dbPath = await seeded(dir);
  const before = sha(dbPath);
  const broken = migrationsDir(dir, 'broken',
    { [nextMigration('add_note')]: 'CREATE TABLE note (a TEXT);\nINSERT INTO note VALUES (1);\n' +
      'CREATE TABLE broken (;\n' });
  const target = exclusive(dbPath, broken);
  await t.rejects(migrateUp(target, { backupFile: null, clock: SYSTEM_CLOCK }), {
    code: 'SCHEMA_MISMATCH', message: /cannot be applied to this database \(SQLite: near ";": syntax error\)/,
  }, 'its third statement fails, after two ran');
  target.close();
  t.equal(sha(dbPath), before, 'byte-identical');
  t.notOk(existsSync(`${dbPath}-wal`), 'no wal left');
  const engine = await openEngine(dbPath);
  t.equal(engine.findings.schemaVersion, SHIPPED_VERSION, 'still at the shipped version and still opens');
  await engine.close();
});

t.test('a migration that breaks verification is rolled back with VERIFY_FAILED', async (t) => {
  const dir = t.testdir();
  const dbPath = await seeded(dir);
  const before = sha(dbPath);
  // Dropping a fence is valid SQL, so only the verification before commit can catch it.
  const dropsFence = migrationsDir(dir, 'drops-fence',
    { [nextMigration('drop_fence')]: 'DROP TRIGGER factlane_v2_meta_delete_fence;\n' });
  const target = exclusive(dbPath, dropsFence);
  t.teardown(() => target.close());
  await t.rejects(migrateUp(target, { backupFile: null, clock: SYSTEM_CLOCK }), { code: 'VERIFY_FAILED' });
  target.close();
  t.equal(sha(dbPath), before, 'byte-identical');
});

t.test('up refuses newer, tampered, interlocked and busy databases and an existing backup target', async (t) => {
  const dir = t.testdir();
  const newerDb = await seeded(dir, 'newer.sqlite3', { migrationsDir: migrationsDir(dir, 'newer', NOTE_MIGRATION) });
  const newerTarget = exclusive(newerDb);
  t.equal(migrationStatus(newerTarget).state, 'NEWER_THAN_RELEASE');
  await t.rejects(migrateUp(newerTarget, { backupFile: null, clock: SYSTEM_CLOCK }), { code: 'SCHEMA_MISMATCH' });
  newerTarget.close();

  const tamperedDb = await seeded(dir, 'tampered.sqlite3');
  tamperAppliedChecksum(tamperedDb, 1);
  const tamperedTarget = exclusive(tamperedDb);
  t.equal(migrationStatus(tamperedTarget).state, 'CHECKSUM_MISMATCH');
  await t.rejects(migrateUp(tamperedTarget, { backupFile: null, clock: SYSTEM_CLOCK }), { code: 'SCHEMA_MISMATCH' });
  tamperedTarget.close();

  const interlocked = await seeded(dir, 'interlocked.sqlite3');
  writeInterlock(interlocked);
  const interlockTarget = exclusive(interlocked, migrationsDir(dir, 'pending', NOTE_MIGRATION));
  await t.rejects(migrateUp(interlockTarget, { backupFile: null, clock: SYSTEM_CLOCK }),
    { code: 'MAINTENANCE_IN_PROGRESS' });
  interlockTarget.close();

  const live = await seeded(dir, 'live.sqlite3');
  const engine = await openEngine(live);
  t.throws(() => exclusive(live), { code: 'MAINTENANCE_IN_PROGRESS' }, 'a running engine blocks up');
  await engine.close();

  const taken = join(dir, 'taken.sqlite3');
  writeFileSync(`${taken}.manifest.json`, '{}');
  const before = sha(live);
  const target = exclusive(live, join(dir, 'pending'));
  await t.rejects(migrateUp(target, { backupFile: taken, clock: SYSTEM_CLOCK }), { code: 'TARGET_EXISTS' });
  target.close();
  t.equal(sha(live), before, 'nothing applied when the backup cannot be written');
});

t.test('status and up refuse what the server refuses: an empty ledger, another storage contract', async (t) => {
  const dir = t.testdir();
  const cases = [
    ['empty-ledger', 'DELETE FROM schema_migrations', 'CHECKSUM_MISMATCH'],
    ['contract-3', "UPDATE adapter_meta SET value = '3' WHERE key = 'contract_version'", 'NEWER_THAN_RELEASE'],
    ['contract-1', "UPDATE adapter_meta SET value = '1' WHERE key = 'contract_version'", 'NOT_FACTLANE'],
    ['no-contract', "DELETE FROM adapter_meta WHERE key = 'contract_version'", 'NOT_FACTLANE'],
  ] as const;
  for (const [name, change, state] of cases) {
    const dbPath = await seeded(dir, `${name}.sqlite3`);
    const raw = new RawDatabase(dbPath);
    raw.function('factlane_contract_v2_writer', { deterministic: false }, () => 1);
    raw.exec(change);
    raw.close();
    await t.rejects(openEngine(dbPath), { code: 'SCHEMA_MISMATCH' }, `${name}: the server refuses it`);
    const before = sha(dbPath);
    // With a migration pending, so that up would otherwise take a backup and run it.
    const target = exclusive(dbPath, migrationsDir(dir, `pending-${name}`, NOTE_MIGRATION));
    t.equal(migrationStatus(target).state, state, `${name}: ${state}`);
    const backupFile = join(dir, `${name}.backup`);
    await t.rejects(migrateUp(target, { backupFile, clock: SYSTEM_CLOCK }), { code: 'SCHEMA_MISMATCH' }, `${name}: up`);
    target.close();
    t.notOk(existsSync(backupFile), `${name}: refused before the backup`);
    t.equal(sha(dbPath), before, `${name}: nothing changed`);
    const status = cli('status', '--db', dbPath, '--json');
    t.equal(status.status, 1, `${name}: status exits 1`);
    t.match(JSON.parse(status.stdout), { state, error_code: 'SCHEMA_MISMATCH' });
  }
});

t.test('up stops before migrating when the backup it took fails verify, which restore would refuse', async (t) => {
  const dir = t.testdir();
  const dbPath = await seeded(dir);
  const raw = new RawDatabase(dbPath);
  raw.exec('DROP TRIGGER factlane_v2_adapter_delete_fence');
  raw.close();
  const before = sha(dbPath);
  const target = exclusive(dbPath, migrationsDir(dir, 'pending', NOTE_MIGRATION));
  const backupFile = join(dir, 'before-up.backup');
  await t.rejects(migrateUp(target, { backupFile, clock: SYSTEM_CLOCK }),
    { code: 'VERIFY_FAILED', message: /fails verify \(schema_objects, fences_present\).*nothing was migrated/ });
  t.equal(migrationStatus(target).state, 'PENDING', 'nothing applied');
  target.close();
  t.equal(sha(dbPath), before, 'the database unchanged');
  t.ok(existsSync(backupFile), 'the backup stays, for the record');
});

function cli(...args: string[]) {
  return runBin(MIGRATE_BIN, args);
}

t.test('factlane-migrate command line: reports and exit codes', async (t) => {
  const dir = t.testdir();
  const dbPath = await seeded(dir);
  const status = cli('status', '--db', dbPath, '--json');
  t.equal(status.status, 0, status.stderr);
  const report = JSON.parse(status.stdout);
  t.equal(report.state, 'UP_TO_DATE');
  t.match(report.db_identity, /^[0-9a-f]{64}$/);
  t.notMatch(status.stdout, dir, 'no path in the report');

  const human = cli('status', '--db', dbPath);
  t.match(human.stdout, /state\s+UP_TO_DATE/);

  const verify = cli('verify', '--db', dbPath);
  t.equal(verify.status, 0, verify.stdout);
  t.match(verify.stdout, /all checks passed/);

  const raw = new RawDatabase(dbPath);
  raw.exec('DROP TRIGGER factlane_v2_adapter_delete_fence');
  raw.close();
  const broken = cli('verify', '--db', dbPath, '--json');
  t.equal(broken.status, 3, 'problems found → 3');
  const checks = JSON.parse(broken.stdout).checks as { name: string; status: string }[];
  t.equal(checks.find((c) => c.name === 'fences_present')?.status, 'FAIL');

  // STORAGE.md §12.3: nothing pending → success; the checks' findings are said, not turned into a failed up.
  const upToDate = cli('up', '--db', dbPath, '--no-backup');
  t.match(upToDate.stdout, /nothing to do/);
  t.match(upToDate.stdout, /FAIL\s+fences_present/, 'the checks are printed');
  t.equal(upToDate.status, 0, 'nothing pending: up succeeds (decision 0050)');
  t.match(upToDate.stderr, /^factlane-migrate: nothing was applied, but the database fails checks: schema_objects, /m);
  t.match(upToDate.stderr, /fences_present; run factlane-migrate verify$/m);
  t.notMatch(upToDate.stderr, /VERIFY_FAILED|after up/, 'no up ran, so none failed');
  const upJsonRun = cli('up', '--db', dbPath, '--no-backup', '--json');
  t.equal(upJsonRun.status, 0);
  const upJson = JSON.parse(upJsonRun.stdout);
  t.match(upJson, { skipped_reason: 'nothing pending', backup: null }, 'the report says nothing was applied');
  t.notOk('error_code' in upJson, 'and carries no error_code');
  t.equal(upJson.verification.find((c: { name: string }) => c.name === 'fences_present')?.status, 'FAIL');

  const newer = await seeded(dir, 'newer.sqlite3', { migrationsDir: migrationsDir(dir, 'newer', NOTE_MIGRATION) });
  const newerStatus = cli('status', '--db', newer);
  t.equal(newerStatus.status, 1);
  t.match(newerStatus.stdout, /NEWER_THAN_RELEASE/, 'report printed before refusing');
  const noteName = nextMigration('add_note').replace('.sql', '');
  t.match(newerStatus.stdout, new RegExp(`applied +${noteName}  not in this release\\n`),
    'a newer release\'s migration is unknown here, not a checksum mismatch');
  t.notMatch(newerStatus.stdout, /MISMATCH/);
  const newerVerify = JSON.parse(
    cli('verify', '--db', newer, '--json').stdout).checks as { name: string; status: string }[];
  t.same(newerVerify.filter((c) => c.status === 'FAIL').map((c) => c.name), ['release_knows_version', 'schema_objects'],
    'verify: the release does not know the version (checksums_match passes: nothing shipped differs)');
  t.match(newerStatus.stderr, /^factlane-migrate: SCHEMA_MISMATCH: /m);
  const newerJson = cli('status', '--db', newer, '--json');
  t.equal(newerJson.status, 1);
  t.match(JSON.parse(newerJson.stdout), { state: 'NEWER_THAN_RELEASE', error_code: 'SCHEMA_MISMATCH' },
    'error_code in the JSON report (STORAGE.md §12.3)');
  t.notOk('error_code' in JSON.parse(cli('status', '--db', dbPath, '--json').stdout), 'none when up to date');

  const missing = cli('status', '--db', join(dir, 'missing.sqlite3'));
  t.equal(missing.status, 1);
  t.match(missing.stderr, /SOURCE_NOT_FOUND/);
  t.notOk(existsSync(join(dir, 'missing.sqlite3')), 'no command creates a database');

  // STORAGE.md §10: the read-only commands report a file that is no SQLite database instead of failing on it.
  const text = join(dir, 'notes.txt');
  writeFileSync(text, 'these are notes, not a database\n'.repeat(8));
  const textStatus = cli('status', '--db', text, '--json');
  t.equal(textStatus.status, 1, 'status of a text file: refused');
  // §12.3: status in state NOT_FACTLANE exits 1 with SCHEMA_MISMATCH.
  t.match(JSON.parse(textStatus.stdout), { state: 'NOT_FACTLANE', error_code: 'SCHEMA_MISMATCH', applied: [] });
  t.match(textStatus.stderr,
    /^factlane-migrate: SCHEMA_MISMATCH: the file is not an SQLite database; database state is NOT_FACTLANE$/m);
  t.notMatch(textStatus.stdout, dir, 'no path in the report');
  const textVerify = cli('verify', '--db', text, '--json');
  t.equal(textVerify.status, 3, 'verify of a text file: problems found');
  t.match(JSON.parse(textVerify.stdout), { ok: false, checks: [{ name: 'sqlite_file', status: 'FAIL' }] });
  t.match(cli('verify', '--db', text).stdout, /FAIL\s+sqlite_file/, 'said in the human report too');
  t.equal(cli('up', '--db', text, '--no-backup').status, 1, 'up still refuses it');

  t.equal(cli('up', '--db', dbPath).status, 2, 'up without a backup choice is a usage error');
  t.equal(cli('up', '--db', dbPath, '--backup', 'x', '--no-backup').status, 2);
  const emptyBackup = cli('up', '--db', dbPath, '--backup=');
  t.equal(emptyBackup.status, 2, 'an empty --backup is a usage error, not TARGET_EXISTS');
  t.match(emptyBackup.stderr, /--backup needs a file path/);
  t.equal(cli('frobnicate', '--db', dbPath).status, 2);
  t.equal(cli('status').status, 2);
  t.equal(cli('status', '--db', dbPath, '--bogus').status, 2);
  const twice = cli('up', '--db', dbPath, '--backup', join(dir, 'b1'), '--backup', join(dir, 'b2'));
  t.equal(twice.status, 2, 'a value flag given twice is a usage error (decision 0029)');
  t.match(twice.stderr, /--backup was given more than once; give it once/);
  t.notOk(existsSync(join(dir, 'b1')) || existsSync(join(dir, 'b2')), 'no backup written');
  t.equal(cli('status', '--db', dbPath, '--json', '--json').status, 0, 'a boolean flag may repeat');
  t.equal(cli('--help').status, 0);

  // The backup's missing directory, named as migrate's operator gave it: --backup, not admin's --out.
  const older = await seeded(dir, 'older.sqlite3');
  downgradeToSchemaFour(older);
  const olderBefore = sha(older);
  const nowhere = join(dir, 'no-such-dir', 'before-up.sqlite3');
  const noDir = cli('up', '--db', older, '--backup', nowhere);
  t.equal(noDir.status, 1, 'a missing directory for the backup: refused');
  t.match(noDir.stderr, /^factlane-migrate: SOURCE_NOT_FOUND: the directory of the backup file does not exist; /m);
  t.notMatch(noDir.stderr, /--out/, 'no flag migrate does not have');
  t.notOk(existsSync(join(dir, 'no-such-dir')), 'no directory created');
  t.equal(sha(older), olderBefore, 'nothing migrated');
  t.match(JSON.parse(cli('status', '--db', older, '--json').stdout), { state: 'PENDING' });
});
