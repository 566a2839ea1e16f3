import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { copyFileSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { UNCODED_SCOPE_MAX_RECORDS } from '@factlane/schema';
import { REPO_ROOT, downgradeToSchemaOne, withRaw } from '../helpers/storage.js';
import { padScope, scopeTuple } from '../helpers/reads.js';
import { openLocalHashEngine } from '../helpers/mcp.js';
import { planFor, secretScenario } from '../helpers/recovery.js';
import { currentRequest, openWriteBench, reverifyRequest, store, update, type Json } from '../helpers/writes.js';

// Progress of the long operator commands on stderr (issue 14 deliverable 4, decision 0023), through the built
// binaries: --json gives one JSON line per step, in order, ending with the final step; stdout holds the report only;
// a pipe without --json sees only the lines the commands printed before; a terminal sees one line rewritten in place.

const ADMIN_BIN = join(REPO_ROOT, 'dist/bin/factlane-admin.js');
const MIGRATE_BIN = join(REPO_ROOT, 'dist/bin/factlane-migrate.js');
const hasScript = spawnSync('script', ['--version']).status === 0;

const admin = (...args: string[]) => spawnSync(process.execPath, [ADMIN_BIN, ...args], { encoding: 'utf8' });
const migrate = (...args: string[]) => spawnSync(process.execPath, [MIGRATE_BIN, ...args], { encoding: 'utf8' });

/** Every stderr line as JSON (a line that does not parse fails the test); asserts one operation and rising times. */
function steps(t: Test, stderr: string, operation: string): Json[] {
  const lines = stderr.split('\n');
  t.equal(lines.pop(), '', 'stderr ends with a newline');
  const parsed = lines.map((line) => JSON.parse(line) as Json);
  t.strictSame([...new Set(parsed.map((line) => line.operation))], [operation], `every line names ${operation}`);
  const times = parsed.map((line) => line.elapsed_ms as number);
  t.ok(times.every((ms, i) => Number.isInteger(ms) && ms >= (times[i - 1] ?? 0)), 'elapsed_ms rises');
  return parsed;
}

/** Runs `command` under a pseudo-terminal (util-linux script): stdout and stderr both reach the terminal. */
function onTerminal(command: string[]): string {
  const quoted = command.map((arg) => `'${arg}'`).join(' ');
  return spawnSync('script', ['-qec', quoted, '/dev/null'], { encoding: 'utf8' }).stdout;
}

/** A database with records in one project scope and a current fact reverified twice (two SUPERSEDED, ready). */
async function seeded(t: Test): Promise<string> {
  const bench = await openWriteBench(t, 'progress.sqlite3');
  const owner = bench.adapter('owner-current');
  const root = ((await store(owner, currentRequest({ fact: 'The build uses Node 20' }))).results as Json[])[0]!;
  const next = ((await update(owner, reverifyRequest(root))).results as Json[])[0]!;
  await update(owner, reverifyRequest(next));
  await store(owner, currentRequest({ fact: 'Lint runs with eslint 9' }));
  await bench.engine.close();
  return bench.dbPath;
}

t.test('backup and restore: JSON steps in order, the report alone on stdout, silence on a pipe', async (t) => {
  const dbPath = await seeded(t);
  const dir = dirname(dbPath);
  const out = join(dir, 'b.sqlite3');
  const json = admin('backup', '--db', dbPath, '--out', out, '--json');
  t.equal(json.status, 0, json.stderr);
  const backup = steps(t, json.stderr, 'backup');
  t.strictSame(backup.map((line) => line.step),
    ['lease_taken', 'pages_copied', 'pages_copied', 'verifying', 'verified', 'published', 'manifest_written']);
  t.match(backup[0], { lease: 'shared' });
  const pages = backup.at(2)!;
  t.ok(pages.total > 0 && pages.done === pages.total, 'the last pages line has every page copied');
  t.ok(backup[1]!.done < pages.total, 'the first one is the copy\'s first step');
  t.match(backup[4], { failed_checks: 0 });
  const report = JSON.parse(json.stdout) as Json;
  t.equal(backup.at(-1)!.file_bytes, report.manifest.file_bytes, 'the final step and the report agree');

  const plainOut = join(dir, 'plain.sqlite3');
  const plain = admin('backup', '--db', dbPath, '--out', plainOut);
  t.equal(plain.stderr, '', 'no --json, not a terminal: nothing on stderr');
  const manifest = JSON.parse(readFileSync(`${plainOut}.manifest.json`, 'utf8')) as Json;
  t.equal(plain.stdout, `backup written and verified: ${manifest.file_bytes} bytes, sha256 ${manifest.file_sha256}\n`,
    'the report only');

  const refused = admin('backup', '--db', dbPath, '--out', out, '--json');
  t.equal(refused.status, 1);
  const [errorLine, ...rest] = refused.stderr.split('\n').reverse().slice(1);
  t.match(errorLine, /^factlane-admin: TARGET_EXISTS: /, 'the error line comes last');
  t.strictSame(steps(t, `${rest.reverse().join('\n')}\n`, 'backup').map((line) => [line.step, line.error_code]),
    [['lease_taken', undefined], ['failed', 'TARGET_EXISTS']], 'the failed step ends the JSON lines');
  t.match(JSON.parse(refused.stdout), { error_code: 'TARGET_EXISTS' });

  const restoredPath = join(dir, 'restored', 'db.sqlite3');
  const restore = admin('restore', '--from', out, '--db', restoredPath, '--json');
  t.equal(restore.status, 0, restore.stderr);
  const restoreSteps = steps(t, restore.stderr, 'restore');
  t.strictSame(restoreSteps.map((line) => line.step),
    ['checking_backup', 'manifest_checked', 'pages_copied', 'pages_copied', 'hash_rechecked', 'verifying', 'verified',
      'published']);
  t.match(JSON.parse(restore.stdout), { journal_mode: 'wal', file_bytes: restoreSteps.at(-1)!.file_bytes });
  const plainRestore = admin('restore', '--from', out, '--db', join(dir, 'restored', 'again.sqlite3'));
  t.equal(plainRestore.stderr, '');
  t.match(plainRestore.stdout, /^restored and verified: \d+ bytes, database_id [^\n]+, schema version \d+\n$/);
});

t.test('audit: the schema verified, then each lineage check in the report\'s order; silence on a pipe', async (t) => {
  const dbPath = await seeded(t);
  const json = admin('audit', '--db', dbPath, '--json');
  t.equal(json.status, 0, json.stderr);
  const audit = steps(t, json.stderr, 'audit');
  const report = JSON.parse(json.stdout) as Json;
  const lineage = (report.checks as Json[]).slice(0, -4);
  t.strictSame(audit.map((line) => line.step),
    ['lease_taken', 'verifying_schema', 'schema_verified', ...lineage.flatMap(() => ['checking', 'checked'])]);
  t.match(audit[0], { lease: 'shared' });
  t.strictSame(audit.slice(3).map((line) => [line.step, line.done, line.check, line.status]),
    lineage.flatMap((check, i) => [['checking', undefined, check.name, undefined],
      ['checked', i + 1, check.name, check.status]]), 'each check said as it begins and once done, as reported');
  t.ok(lineage.some((check) => check.name === 'token_counts'), 'the recount is among them');
  const plain = admin('audit', '--db', dbPath);
  t.equal(plain.stderr, '', 'no --json, not a terminal: nothing on stderr');
  t.match(plain.stdout, /^audit: all checks passed\n/);
});

t.test('housekeep: selected, each compaction n/N, the outcome last', async (t) => {
  const dbPath = await seeded(t);
  const args = ['housekeep', '--db', dbPath, '--scope', 'GLOBAL_USER', '--max-records', '2',
    '--required-free-bytes', String(Number.MAX_SAFE_INTEGER)];
  const json = admin(...args, '--json');
  t.equal(json.status, 0, json.stderr);
  const lines = steps(t, json.stderr, 'housekeep');
  t.strictSame(lines.map((line) => [line.step, line.done, line.total]), [
    ['lease_taken', undefined, undefined], ['capacity_observed', undefined, undefined],
    ['health_checked', undefined, undefined], ['selected', undefined, 2], ['compacted', 1, 2], ['compacted', 2, 2],
    ['rechecked', undefined, undefined], ['outcome', undefined, undefined],
  ]);
  const report = JSON.parse(json.stdout) as Json;
  t.match(lines.at(-1), { outcome: report.outcome, compacted: report.compacted_records });
  t.equal(report.compacted_records, 2);

  const plain = admin(...args);
  t.equal(plain.stderr, '', 'nothing on a pipe');
  t.match(plain.stdout, /^housekeep: NO_ELIGIBLE_RECORDS_CAPACITY_REQUIREMENT_NOT_MET\n  next: /, 'the report only');
});

t.test('reembed: the batches among the steps, switched last; the batch lines on a pipe as before', async (t) => {
  const dbPath = await seeded(t);
  const dry = admin('reembed', '--db', dbPath, '--profile', 'local-hash-384', '--dry-run', '--json');
  t.equal(dry.status, 0, dry.stderr);
  t.strictSame(steps(t, dry.stderr, 'reembed').map((line) => line.step),
    ['lease_taken', 'provider_checked', 'planned', 'sampled']);
  t.match(JSON.parse(dry.stdout), { dry_run: true });

  const json = admin('reembed', '--db', dbPath, '--profile', 'local-hash-384', '--json');
  t.equal(json.status, 0, json.stderr);
  const lines = steps(t, json.stderr, 'reembed');
  t.strictSame(lines.map((line) => line.step),
    ['lease_taken', 'provider_checked', 'planned', 'batch', 'switching', 'switched']);
  const report = JSON.parse(json.stdout) as Json;
  t.match(lines[3], { batch: 1, done: report.records_embedded, total: report.records_embedded });
  t.match(lines.at(-1), { done: report.records_embedded });

  const plain = admin('reembed', '--db', dbPath, '--profile', 'local-hash-384');
  t.equal(plain.status, 0, plain.stderr);
  t.match(plain.stderr, new RegExp('^reembed: batch 1: (\\d+)/\\1 records \\(100%\\), \\d+/s, about 0 s left\n'
    + 'reembed: switching \\1 records to the new vectors\n$'), 'the batch line, as before, then the switch');
  t.match(
    plain.stdout, /^reembed: \d+ records embedded in 1 batch\(es\), \d+ ms; bound local-hash-384 -> local-hash-384\n$/,
  );
});

t.test('recover: its phases through the same reporter, the outcome last', async (t) => {
  const dir = t.testdir();
  const s = await secretScenario(dir);
  const { plan, planPath } = planFor(dir, s.dbPath, [s.memoryId]);
  const copyPath = join(dir, 'copy.sqlite3');
  copyFileSync(s.dbPath, copyPath);
  const json = admin('recover', '--db', s.dbPath, '--plan', planPath, '--confirm', plan.operation_id,
    '--receipt', join(dir, 'r.json'), '--json');
  t.equal(json.status, 0, json.stderr);
  const lines = steps(t, json.stderr, 'recover');
  t.strictSame(lines.map((line) => line.step), lines.map((line) => line.phase), 'step and phase agree');
  t.equal(lines[0]!.step, 'preflight');
  t.match(lines.at(-1), { step: 'outcome', detail: 'LOCAL_FACTLANE_PURGE_PASS' });
  t.match(JSON.parse(json.stdout), { exit: 0 });

  const { plan: again, planPath: againPath } = planFor(dir, copyPath, [s.memoryId], 'copy-plan.json');
  const plain = admin('recover', '--db', copyPath, '--plan', againPath, '--confirm', again.operation_id,
    '--receipt', join(dir, 'r2.json'));
  t.equal(plain.status, 0, plain.stderr);
  t.match(plain.stderr, /^recover: preflight; state none\n(recover: [a-z_]+( \([A-Z_]+\))?; state ([A-Z_]+|none)\n)+$/,
    'the phase lines, as before');
  t.match(plain.stdout, /^recover: LOCAL_FACTLANE_PURGE_PASS: [^\n]+\n$/);
});

/**
 * A database of this release taken back to schema 1 (downgradeToSchemaOne), its scope filled with Candidates past
 * UNCODED_SCOPE_MAX_RECORDS so that the migration rebuilds the eligible forms of its two current records.
 */
async function schemaOne(t: Test): Promise<string> {
  const fresh = await seeded(t);
  const engine = await openLocalHashEngine(fresh);
  await padScope(engine, scopeTuple('GLOBAL_USER'), UNCODED_SCOPE_MAX_RECORDS);
  await engine.close();
  const dbPath = join(dirname(fresh), 'old.sqlite3');
  copyFileSync(fresh, dbPath);
  downgradeToSchemaOne(dbPath);
  return dbPath;
}

t.test('migrate up: the backup, each migration applied, the derived rows rebuilt, verified last', async (t) => {
  const dbPath = await schemaOne(t);
  const plainPath = join(dirname(dbPath), 'plain.sqlite3');
  copyFileSync(dbPath, plainPath);
  const json = migrate('up', '--db', dbPath, '--backup', join(dirname(dbPath), 'before.sqlite3'), '--json');
  t.equal(json.status, 0, json.stderr);
  const lines = steps(t, json.stderr, 'migrate_up');
  t.strictSame(lines.map((line) => line.step), [
    'lease_taken', 'backup_lease_taken', 'backup_pages_copied', 'backup_pages_copied', 'backup_verifying',
    'backup_verified', 'backup_published', 'backup_manifest_written',
    'applying_migration', 'migration_applied', 'applying_migration', 'migration_applied',
    'applying_migration', 'migration_applied', 'applying_migration', 'migration_applied',
    'applying_migration', 'derived_rows_rebuilt', 'derived_rows_rebuilt', 'migration_applied',
    'committed', 'verifying', 'verified',
  ]);
  t.match(lines[0], { lease: 'exclusive' });
  const files = [[2, 'eligible_vectors'], [3, 'small_scope_vectors'], [4, 'vec0_chunks'], [5, 'record_token_counts'],
    [6, 'shard_generations']];
  for (const [i, [version, name]] of files.entries()) {
    t.match(lines[8 + 2 * i], { step: 'applying_migration', version, name }, `${name}: said as it begins`);
    t.notOk('done' in lines[8 + 2 * i]! || 'total' in lines[8 + 2 * i]!, `${name}: no count while it runs`);
    const applied = i < 4 ? lines[9 + 2 * i] : lines[19];
    t.match(applied, { step: 'migration_applied', done: i + 1, total: 5, version, name }, `${name}: then applied`);
  }
  t.match(lines[17], { done: 2, total: 2, rows: 'eligible_vectors' },
    'the two CURRENT vectors rebuilt once, inside the last file\'s step');
  const records = withRaw(plainPath, (db) => db.prepare('SELECT count(*) FROM adapter_records').pluck().get());
  t.match(lines[18], { done: records, total: records, rows: 'token_counts' },
    'every record\'s token count, in the same step, named apart');
  t.match(lines.at(-1), { failed_checks: 0 });
  t.match(JSON.parse(json.stdout), {
    applied: [{ version: 2 }, { version: 3 }, { version: 4 }, { version: 5 }, { version: 6 }], schema_version: 6,
  });

  const plain = migrate('up', '--db', plainPath, '--no-backup');
  t.equal(plain.status, 0, plain.stderr);
  t.equal(
    plain.stderr, ['0002_eligible_vectors', '0003_small_scope_vectors', '0004_vec0_chunks', '0005_record_token_counts',
      '0006_shard_generations'].map((name) => `factlane-migrate: applying ${name}\n`).join(''),
    'the lines it printed before, only');
  t.match(plain.stdout, /^applied 5 migration\(s\); schema version 6\nverification:\n/);
  const again = migrate('up', '--db', plainPath, '--no-backup', '--json');
  t.strictSame(steps(t, again.stderr, 'migrate_up').map((line) => line.step), ['lease_taken', 'verifying', 'verified'],
    'nothing pending');
});

const terminal = { skip: hasScript ? false : 'util-linux script not installed' };
t.test('on a terminal one line is rewritten in place and ends before the report or the error', terminal, async (t) => {
  const dbPath = await seeded(t);
  const out = join(dirname(dbPath), 'tty.sqlite3');
  const shown = onTerminal([process.execPath, ADMIN_BIN, 'backup', '--db', dbPath, '--out', out]);
  t.match(shown, /^\rbackup: lease taken; lease shared \[\d+ ms\]\x1b\[K\rbackup: pages copied \d+\/\d+ \(\d+%\) \[/);
  t.match(
    shown, /\rbackup: manifest written; file bytes \d+ \[[\d.]+ m?s\]\x1b\[K\r\nbackup written and verified: \d+ bytes/,
    'the last step, a newline, then the report');
  t.equal(shown.split('\n').length, 3, 'one progress line and one report line');

  const failed = onTerminal([process.execPath, ADMIN_BIN, 'backup', '--db', dbPath, '--out', out]);
  t.match(
    failed, /^\rbackup: lease taken; lease shared \[\d+ ms\]\x1b\[K\r\nfactlane-admin: TARGET_EXISTS: [^\n]+\r\n$/,
    'a failure ends the progress line before the error line');
});
