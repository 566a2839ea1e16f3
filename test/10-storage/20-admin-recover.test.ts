import t from 'tap';
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { searchText } from '../../src/core/text.js';
import { auditFile } from '../../src/maintenance/audit-operation.js';
import { tombstoneColumns, TOMBSTONE_FACT } from '../../src/maintenance/recovery-plan.js';
import { buildRecoveryPlan } from '../../src/maintenance/recovery-plan-builder.js';
import { verifyDatabase } from '../../src/maintenance/verify-operation.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import { FACTLANE_BIN, openLocalHashEngine } from '../helpers/mcp.js';
import { padScope, scopeTuple } from '../helpers/reads.js';
import {
  adapterFor, digestsByRecord, fileBytes, MARKER, planFor, recover, secretScenario,
} from '../helpers/recovery.js';
import {
  ADMIN_BIN, MIGRATE_BIN, RawDatabase, REPO_ROOT, runBin, SHIPPED_MIGRATIONS, sqliteVec, TS_IMPORT, withRaw,
} from '../helpers/storage.js';
import { reverifyRequest, type Json } from '../helpers/writes.js';

// factlane-admin recover (OPERATIONS.md §5): the purge, the sealed image, the receipt, the plan helper, the command.

const admin = (...args: string[]) => runBin(ADMIN_BIN, args);
const migrate = (...args: string[]) => runBin(MIGRATE_BIN, args);

/** The vector bytes (fact_vec and eligible forms) of each record, read raw. */
function vectorBlobs(dbPath: string, recordIds: readonly string[]): Buffer[] {
  const db = new RawDatabase(dbPath, { readonly: true });
  try {
    sqliteVec.load(db);
    const blobs: Buffer[] = [];
    const rowIdOf = db.prepare('SELECT row_id FROM adapter_records WHERE record_id = ?').pluck();
    const vectorQueries = [
      'SELECT embedding FROM fact_vec WHERE rowid = ?',
      'SELECT embedding FROM eligible_vectors WHERE row_id = ?',
    ];
    for (const id of recordIds) {
      const rowId = BigInt(rowIdOf.get(id) as number);
      for (const query of vectorQueries) {
        const blob = db.prepare(query).pluck().get(rowId) as Buffer | undefined;
        if (blob) blobs.push(blob);
      }
    }
    return blobs;
  } finally {
    db.close();
  }
}

/** Where each needle occurs among the files: `file: needle index`. */
function residuals(files: readonly string[], needles: readonly Buffer[]): string[] {
  const found: string[] = [];
  for (const file of files) {
    if (!existsSync(file)) continue;
    const bytes = readFileSync(file);
    needles.forEach((needle, index) => {
      if (bytes.includes(needle)) found.push(`${file}: ${index}`);
    });
  }
  return found;
}

t.test('recover purges all records of the memory, keeps the rest byte for byte, leaves exact tombstones', async (t) => {
  const dir = t.testdir();
  // A coded scope: the secret's promoted revision had eligible forms while it was current.
  const s = await secretScenario(dir, { coded: true });
  t.equal(withRaw(s.dbPath, (db) => db.prepare('SELECT count(*) FROM eligible_vectors').pluck().get()), 4,
    'the scope is coded: its four current records have eligible forms');
  const lifecycles = s.targetIds.map((id) => withRaw(s.dbPath, (db) =>
    db.prepare('SELECT lifecycle_state FROM adapter_records WHERE record_id = ?').pluck().get(id)));
  t.strictSame(lifecycles, ['HISTORICAL', 'SUPERSEDED'],
    'the secret is held by a HISTORICAL and a SUPERSEDED revision');
  const blobs = vectorBlobs(s.dbPath, s.targetIds);
  t.equal(blobs.length, 1, 'the SUPERSEDED revision holds a vector (the HISTORICAL one lost it to compaction)');
  const needles = [Buffer.from(MARKER), Buffer.from(searchText(s.secretFact)), ...blobs];
  t.ok(residuals([s.dbPath, `${s.dbPath}-wal`], needles.slice(0, 1)).length > 0, 'before: the marker is in the file');
  const before = digestsByRecord(s.dbPath);
  const countsOfTargets = () => withRaw(s.dbPath, (db) => db.prepare(`SELECT count(*) FROM record_token_counts
    WHERE row_id IN (SELECT row_id FROM adapter_records WHERE record_id IN (?, ?))`).pluck().get(...s.targetIds));
  t.equal(countsOfTargets(), 2, 'before: both targets have the token count their writer stored');
  const otherCounts = () => withRaw(s.dbPath, (db) => db.prepare(`SELECT row_id, fixed_tokens FROM record_token_counts
    WHERE row_id NOT IN (SELECT row_id FROM adapter_records WHERE record_id IN (?, ?)) ORDER BY row_id`)
    .all(...s.targetIds));
  const othersBefore = otherCounts();
  t.ok(othersBefore.length > 0, 'the other records have counts');
  const plan = planFor(dir, s.dbPath, [s.memoryId]);
  t.strictSame(plan.plan.targets.map((target) => target.expected_materialization),
    ['PM0_HISTORICAL_RECORD_AND_FTS', 'PM1_FULL_MATERIALIZATION']);

  const outcome = await recover(dir, s.dbPath, plan.planPath);
  t.match(outcome, {
    exit: 0, result: 'LOCAL_FACTLANE_PURGE_PASS', recovery_state: 'LOCAL_FACTLANE_PURGE_VERIFIED', mode: 'FRESH',
  });
  t.match(outcome.receipt, {
    residual_byte_scan: 'CLEAN', target_count: 2,
    materialization_classes: { PM0_HISTORICAL_RECORD_AND_FTS: 1, PM1_FULL_MATERIALIZATION: 1 },
  });

  const receiptPath = join(dir, 'receipt.json');
  const statePath = `${receiptPath}.state.json`;
  const files = [s.dbPath, `${s.dbPath}-wal`, `${s.dbPath}-shm`, receiptPath, statePath];
  t.strictSame(residuals(files, needles), [],
    'no marker, search_text form or vector bytes in the db, -wal, -shm, receipt or state');
  t.notOk(existsSync(`${s.dbPath}-wal`) && statSync(`${s.dbPath}-wal`).size > 0, 'no WAL frames left');
  const images = readdirSync(dir).filter((name) => name.includes('.sanitized'));
  t.strictSame(images, [], 'no sanitized image left beside the database');

  const after = digestsByRecord(s.dbPath);
  for (const id of s.targetIds) before.delete(id);
  for (const id of s.targetIds) after.delete(id);
  t.strictSame(after, before, 'every other record and its derived rows are unchanged');
  t.equal(countsOfTargets(), 0, 'the tombstones have no token count: their pieces changed');
  t.strictSame(otherCounts(), othersBefore, 'every other record keeps its count');

  const rows = withRaw(s.dbPath, (db) => s.targetIds.map((id) =>
    db.prepare('SELECT * FROM adapter_records WHERE record_id = ?').get(id) as Json));
  const op = plan.plan.operation_id;
  for (const row of rows) {
    t.match(row, {
      ...tombstoneColumns(op, row.record_id), fact: TOMBSTONE_FACT, lifecycle_state: 'QUARANTINED',
      memory_id: s.memoryId,
    }, 'tombstone as §5.5 says');
    t.match(JSON.parse(row.source_provenance), {
      source_class: 'RECOVERY_TOMBSTONE', source_ref: `recovery:${op}`, review_ref: 'operator-recovery',
      extraction_method: 'SENSITIVE_MEMORY_PURGE',
    });
    t.strictSame(JSON.parse(row.freshness_policy), {
      kind: 'manual', recheck_ref: null, source_fingerprint: null, ttl_seconds: null,
    });
  }
  t.equal(rows[1]!.parent_record_id, s.targetIds[0], 'lineage kept: revision 2 still names revision 1');
  const successorParent = withRaw(s.dbPath, (db) =>
    db.prepare('SELECT parent_record_id FROM adapter_records WHERE record_id = ?').pluck().get(s.replacementId));
  t.equal(successorParent, s.targetIds[1], 'the REPLACE successor still names the tombstone as its parent');

  const audit = auditFile(s.dbPath, SHIPPED_MIGRATIONS);
  t.ok(audit.ok, `audit passes: ${JSON.stringify(audit.checks.filter((c) => c.status === 'FAIL'))}`);
  const target = MaintenanceTarget.open({ dbPath: s.dbPath, lease: 'shared' });
  try {
    const verify = verifyDatabase(target);
    t.ok(verify.ok && !verify.interlock_present, 'verify passes and no interlock remains');
  } finally {
    target.close();
  }

  const mode = (path: string) => statSync(path).mode & 0o777;
  t.equal(mode(s.dbPath), 0o600, 'the sanitized database is 0600');
  t.equal(mode(receiptPath), 0o600, 'the receipt is 0600');
  t.equal(mode(statePath), 0o600, 'the state file is 0600');
  const receiptText = readFileSync(receiptPath, 'utf8');
  t.notOk(receiptText.includes(dir), 'the receipt names no path');
  t.notOk(receiptText.includes(s.targetIds[0]!), 'the receipt names no record id unless the plan allows it');
  const hashes = plan.plan.targets.map((target) => target.expected_content_hash);
  t.notOk(hashes.some((hash) => receiptText.includes(hash)), 'the receipt holds no content hash');
  const state = JSON.parse(readFileSync(statePath, 'utf8'));
  t.match(state, { phase: 'LOCAL_FACTLANE_PURGE_VERIFIED', operation_id: op, last_hold: null });

  const engine = await openLocalHashEngine(s.dbPath);
  try {
    const retry = adapterFor(engine, 'delegated-candidate', 'agent-host').execute('memory_store', s.storeRequest);
    await t.rejects(retry, { code: 'IDEMPOTENCY_CONFLICT' },
      'a retried store of the secret under its old key conflicts instead of re-creating it');
    const search = await adapterFor(engine, 'owner-current').execute('memory_search', {
      scope: 'PROJECT', project_id: 'proj-a', query: 'staging deploy token', retrieval_mode_kind: 'HYBRID',
      retrieval_mode: 'REVIEW_HISTORY', intent_class: 'HISTORICAL_QUESTION',
    }) as Json;
    t.ok(['OK', 'DEGRADED'].includes(search.status), `search answers (${search.status})`);
    t.ok(search.results.length > 0, 'search finds the rest of the lineage');
    t.notOk(JSON.stringify(search).includes(MARKER), 'search does not find the secret');
    const update = adapterFor(engine, 'owner-current').execute('memory_update', reverifyRequest({
      scope: { scope: 'PROJECT', project_id: 'proj-a' }, memory_id: s.memoryId, revision: 2,
    }));
    await t.rejects(update, { code: 'VERSION_CONFLICT', message: /purged by incident recovery/ },
      'an update of the purged memory says so, instead of sending the caller to its history to retry');
  } finally {
    await engine.close();
  }
  t.throws(() => buildRecoveryPlan({ dbPath: s.dbPath, memoryIds: [s.memoryId] }),
    { code: 'VERIFY_FAILED', message: /already purged by incident recovery/ }, 'a new plan for it says it is purged');

  const again = await recover(dir, s.dbPath, plan.planPath);
  t.match(again, { exit: 0, mode: 'ALREADY_VERIFIED' }, 'a rerun of a completed plan exits 0 and changes nothing');
});

t.test('run as root, recover gives the sealed database back to its owner, whose server still opens it',
  { skip: process.geteuid?.() === 0 ? false : 'needs root, as recover itself does (§5.2)' }, async (t) => {
    const dir = t.testdir();
    const scenario = await secretScenario(dir);
    const nobody = 65534;
    // A host user's database in a directory of theirs; the operator's plan, receipt and state stay root's.
    const home = join(dir, 'home');
    mkdirSync(home, { mode: 0o700 });
    const dbPath = join(home, 'recover.sqlite3');
    renameSync(scenario.dbPath, dbPath);
    for (const path of [home, dbPath]) chownSync(path, nobody, nobody);
    const { planPath } = planFor(dir, dbPath, [scenario.memoryId]);
    t.match(await recover(dir, dbPath, planPath), { exit: 0 });
    const after = statSync(dbPath);
    t.same([after.uid, after.gid, after.mode & 0o777], [nobody, nobody, 0o600], 'owner, group and mode kept');
    // Without tap's NODE_OPTIONS: its coverage hooks would write under .tap as that user.
    const served = spawnSync(process.execPath, [FACTLANE_BIN, '--db', dbPath, '--host-id', 'owner-host'],
      { uid: nobody, gid: nobody, input: '', encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home } });
    t.equal(served.status, 0, `the owner's server starts on it: ${served.stderr}`);
  });

t.test('recover plan refuses a file whose vector table lost a shadow table (BACKEND_CORRUPT), changing nothing',
  async (t) => {
    // Its point lookups on fact_vec would end the process (a segmentation fault) instead of answering.
    const s = await secretScenario(t.testdir());
    const raw = new RawDatabase(s.dbPath); // as the sqlite3 CLI would: shadow tables carry no fence
    raw.exec('DROP TABLE fact_vec_rowids');
    raw.close();
    const before = readFileSync(s.dbPath);
    t.throws(() => buildRecoveryPlan({ dbPath: s.dbPath, memoryIds: [s.memoryId] }),
      { code: 'BACKEND_CORRUPT', message: /fact_vec \(fact_vec_rowids missing\)/ });
    t.ok(readFileSync(s.dbPath).equals(before), 'the file is unchanged');
  });

t.test('a plan may put the target ids in the receipt; a short fact is NOT_APPLICABLE_SHORT_CONTENT', async (t) => {
  const dir = t.testdir();
  const dbPath = join(dir, 'short.sqlite3');
  const engine = await openLocalHashEngine(dbPath);
  let short: Json;
  try {
    // A coded scope (schema 3): the current target has eligible forms for the purge to remove.
    await padScope(engine, scopeTuple('GLOBAL_USER'));
    short = ((await adapterFor(engine, 'owner-current').execute('memory_store', {
      scope: 'GLOBAL_USER', fact: 'pin 4417', memory_type: 'USER_FACT', idempotency_key: 'short-1',
      requested_lifecycle_state: 'VALIDATED_CURRENT',
      source_timestamp: '2026-11-01T00:00:00Z', last_verified_at: '2026-11-29T00:00:00Z',
      freshness_policy: { kind: 'never' },
      source_provenance: {
        source_class: 'repo_file', source_ref: 'a', source_hash: 'a'.repeat(64), review_ref: 'r',
        extraction_method: 'm',
      },
    })) as Json).results[0];
  } finally {
    await engine.close();
  }
  const { planPath } = planFor(dir, dbPath, [short.memory_id], 'plan.json',
    (plan) => ({ ...plan, safe_ids_for_receipt: true }));
  t.equal(withRaw(dbPath, (db) => db.prepare('SELECT count(*) FROM eligible_vectors').pluck().get()), 1,
    'before the purge, the current target has eligible forms');
  const outcome = await recover(dir, dbPath, planPath);
  t.match(outcome, {
    exit: 0, receipt: { residual_byte_scan: 'NOT_APPLICABLE_SHORT_CONTENT', safe_target_ids: [short.record_id] },
  });
  const eligibleRows = withRaw(dbPath, (db) => db.prepare('SELECT count(*) FROM eligible_vectors').pluck().get());
  t.strictSame(eligibleRows, 0, 'the current record lost its eligible forms');
  t.strictSame(withRaw(dbPath, (db) => db.prepare('SELECT count(*) FROM eligible_codes').pluck().get()), 0,
    'and its code');
  const vector = vectorBlobs(dbPath, [short.record_id]);
  t.strictSame(vector, [], 'and its vector');
});

t.test('commands: recover plan mutates nothing; recover prints a JSON line per phase, exits 0, 3 or 2', async (t) => {
  const dir = t.testdir();
  const s = await secretScenario(dir);
  const before = fileBytes(s.dbPath);
  const planPath = join(dir, 'plan.json');
  const made = admin('recover', 'plan', '--db', s.dbPath, '--memory-id', s.memoryId, '--out', planPath, '--json');
  t.equal(made.status, 0, made.stderr);
  t.equal(fileBytes(s.dbPath), before, 'the plan helper changed nothing');
  t.equal(statSync(planPath).mode & 0o777, 0o600, 'the plan is written 0600');
  const plan = JSON.parse(readFileSync(planPath, 'utf8')) as Json;
  t.equal(plan.targets.length, 2, 'one target per record of the memory');
  t.equal(JSON.parse(made.stdout).operation_id, plan.operation_id);
  // The scenario REPLACEd the secret: the successor is another memory, named beside the plan, not in it.
  const linked = JSON.parse(made.stdout).linked_memories as string[];
  t.equal(linked.length, 1, 'the REPLACE successor is reported');
  t.notOk(plan.targets.some((target: Json) => target.memory_id === linked[0]), 'and not targeted');
  const human = admin('recover', 'plan', '--db', s.dbPath, '--memory-id', s.memoryId, '--out', join(dir, 'again.json'));
  t.match(human.stdout,
    `not in the plan, joined to it by REPLACE: memory ${linked[0]}; recover finds exact copies only`);
  const both = JSON.parse(admin('recover', 'plan', '--db', s.dbPath, '--memory-id', s.memoryId, '--memory-id',
    linked[0]!, '--out', join(dir, 'both.json'), '--json').stdout);
  t.same(both.linked_memories, [], 'once named, it is in the plan and no longer reported');
  t.equal(both.target_count, 3, 'its record too');
  const fromSuccessor = JSON.parse(admin('recover', 'plan', '--db', s.dbPath, '--memory-id', linked[0]!,
    '--out', join(dir, 'successor.json'), '--json').stdout);
  t.same(fromSuccessor.linked_memories, [s.memoryId], 'the link is followed the other way too');
  t.match(admin('recover', 'plan', '--db', s.dbPath, '--memory-id', s.memoryId, '--out', planPath),
    { status: 1, stderr: /TARGET_EXISTS/ }, 'never overwrites a plan');
  const unknown = '00000000-0000-4000-8000-000000000000';
  t.match(admin('recover', 'plan', '--db', s.dbPath, '--memory-id', unknown, '--out', join(dir, 'none.json')),
    { status: 1, stderr: /NOT_FOUND/ });
  t.match(admin('recover', 'plan', '--db', s.dbPath, '--memory-id', s.memoryId, '--memory-id', unknown,
    '--out', join(dir, 'none.json')), { status: 1, stderr: /NOT_FOUND/ },
    '--memory-id may repeat: both reach the plan');
  t.match(admin('recover', 'plan', '--db', s.dbPath, '--memory-id', s.memoryId, '--memory-id', 'no-such-memory',
    '--out', join(dir, 'none.json')), { status: 2, stderr: /--memory-id must be a UUID, not "no-such-memory"/ },
    'an id that is not a UUID is a usage error, as promote makes it');
  t.notOk(existsSync(join(dir, 'none.json')), 'and writes no plan');
  t.match(admin('recover', '--db', s.dbPath, '--plan', planPath),
    { status: 2, stderr: /recover needs/ }, 'usage: missing flags');
  t.match(admin('backup', '--db', s.dbPath, '--out', join(dir, 'b'), '--confirm', 'x'),
    { status: 2, stderr: /belongs to recover/ });

  const receipt = join(dir, 'receipt.json');
  const held = admin('recover', '--db', s.dbPath, '--plan', planPath, '--confirm', 'not-the-operation',
    '--receipt', receipt, '--json');
  t.equal(held.status, 3, 'a hold exits 3');
  t.match(JSON.parse(held.stdout), { hold: 'HOLD_AUTHORIZATION_MISSING_NO_MUTATION', exit: 3 });
  // OPERATIONS.md §1: a refusal prints `<command>: <CODE>: <message>` on standard error, with --json or without.
  const refusal = /^recover: HOLD_AUTHORIZATION_MISSING_NO_MUTATION: --confirm must repeat the plan's operation_id$/m;
  t.match(held.stderr, refusal, 'the hold is on stderr');
  const heldHuman = admin('recover', '--db', s.dbPath, '--plan', planPath, '--confirm', 'not-the-operation',
    '--receipt', receipt);
  t.match(heldHuman, { status: 3, stdout: '', stderr: refusal }, 'without --json: on stderr only');
  t.equal(fileBytes(s.dbPath), before, 'held: nothing changed');

  const run = admin('recover', '--db', s.dbPath, '--plan', planPath, '--confirm', plan.operation_id,
    '--receipt', receipt, '--json');
  t.equal(run.status, 0, run.stderr);
  const lines = run.stderr.trim().split('\n').map((line) => JSON.parse(line) as Json);
  const phases = [
    'preflight', 'target_inspection', 'logical_purge', 'first_checkpoint', 'vacuum_into', 'image_verified',
    'connections_closed', 'renamed', 'postflight', 'completed', 'outcome',
  ];
  t.strictSame(lines.map((line) => line.phase), phases, 'one JSON line per phase on stderr');
  const leaked = run.stderr.includes(MARKER) || run.stdout.includes(MARKER) || run.stderr.includes(dir);
  t.notOk(leaked, 'no content and no path in the output');
  t.match(JSON.parse(run.stdout), { exit: 0, result: 'LOCAL_FACTLANE_PURGE_PASS' });
  t.ok(existsSync(receipt));
});

t.test('the interlock of a committed, unsealed purge holds every command but verify, audit and status across restarts',
  async (t) => {
    const dir = t.testdir();
    const s = await secretScenario(dir);
    const { plan, planPath } = planFor(dir, s.dbPath, [s.memoryId]);
    const receipt = join(dir, 'receipt.json');
    const child = spawnSync(process.execPath, [
      '--import', TS_IMPORT, join(REPO_ROOT, 'test/helpers/recover-child.ts'),
      s.dbPath, planPath, receipt, 'kill:logical_purge',
    ], { encoding: 'utf8' });
    t.equal(child.signal, 'SIGKILL', 'the recovery was killed right after its commit');
    const interlocked = () => withRaw(s.dbPath, (db) =>
      db.prepare("SELECT count(*) FROM adapter_meta WHERE key = 'sensitive_recovery_interlock'").pluck().get());
    t.equal(interlocked(), 1, 'the interlock row is committed');

    const refusals: [string, string[]][] = [
      ['migrate up', ['migrate', 'up', '--db', s.dbPath, '--no-backup']],
      ['backup', ['admin', 'backup', '--db', s.dbPath, '--out', join(dir, 'backup.sqlite3')]],
      ['housekeep', ['admin', 'housekeep', '--db', s.dbPath, '--scope', 'PROJECT', '--project-id', 'proj-a',
        '--max-records', '1', '--required-free-bytes', '1']],
      ['reembed', ['admin', 'reembed', '--db', s.dbPath, '--profile', 'local-hash-384']],
      ['recover plan', ['admin', 'recover', 'plan', '--db', s.dbPath, '--memory-id', s.memoryId,
        '--out', join(dir, 'plan-again.json')]],
    ];
    const run = ([cli, ...args]: string[]) => (cli === 'migrate' ? migrate(...args) : admin(...args));
    for (const [name, args] of refusals) {
      t.match(run(args), { status: 1, stderr: /MAINTENANCE_IN_PROGRESS/ }, `${name} refuses the interlocked database`);
    }
    t.notOk(existsSync(join(dir, 'backup.sqlite3')), 'no backup of the unsealed file was written');
    const verify = admin('verify', '--db', s.dbPath, '--json');
    t.match(JSON.parse(verify.stdout), { interlock_present: true }, 'verify reports the interlock');
    const audit = admin('audit', '--db', s.dbPath, '--json');
    t.equal(audit.status, 3, 'audit finds the interlock a problem');
    t.ok((JSON.parse(audit.stdout).checks as Json[]).some((c) => c.name === 'interlock_absent' && c.status === 'FAIL'),
      'audit names the interlock');
    t.match(JSON.parse(migrate('status', '--db', s.dbPath, '--json').stdout), { interlock_present: true },
      'migrate status reports it');
    t.equal(interlocked(), 1, 'and still holds it after every one of those processes');

    const outcome = await recover(dir, s.dbPath, planPath);
    const resumed = { exit: 0, mode: 'RESUME_SEALING', receipt: { residual_byte_scan: 'NOT_REPEATABLE_AFTER_RESUME' } };
    t.match(outcome, resumed,
      `a rerun of ${plan.operation_id} completes`);
    t.equal(interlocked(), 0, 'the interlock is gone');
    t.match(migrate('status', '--db', s.dbPath, '--json'), { status: 0 });
    const backup = admin('backup', '--db', s.dbPath, '--out', join(dir, 'backup.sqlite3'));
    t.match(backup, { status: 0 }, 'backup works again');
  });

t.test('target bytes found in the image fail the run; a resumed run, which cannot scan, refuses to pass', async (t) => {
  const dir = t.testdir();
  const s = await secretScenario(dir);
  // A copy no row check sees: a shadow table of vec0 holds the secret fact.
  const db = new RawDatabase(s.dbPath);
  try {
    db.prepare('INSERT INTO fact_vec_info (key, value) VALUES (?, ?)').run('planted', s.secretFact);
  } finally {
    db.close();
  }
  const { planPath } = planFor(dir, s.dbPath, [s.memoryId]);
  // In a child: a run that ends in exit 4 keeps its leases until its process ends.
  const child = spawnSync(process.execPath, [
    '--import', TS_IMPORT, join(REPO_ROOT, 'test/helpers/recover-child.ts'),
    s.dbPath, planPath, join(dir, 'receipt.json'), 'none',
  ], { encoding: 'utf8' });
  const outcomeLine = child.stdout.split('\n').find((line) => line.startsWith('outcome '));
  const first = JSON.parse(outcomeLine?.slice('outcome '.length) ?? 'null') as Json;
  t.match(first, { exit: 4, result: 'SEALING_INCOMPLETE', message: /target bytes remain/ });
  const statePath = join(dir, 'receipt.json.state.json');
  t.match(JSON.parse(readFileSync(statePath, 'utf8')),
    { phase: 'LOGICAL_PURGE_COMMITTED_SEALING_INCOMPLETE', last_hold: 'SEALING_RESIDUAL_BYTES_FOUND' });
  const second = await recover(dir, s.dbPath, planPath);
  t.match(second, { exit: 4, mode: 'RESUME_SEALING', message: /an earlier run found target bytes/ },
    'the rerun does not turn the finding into a pass');
  t.notOk(existsSync(join(dir, 'receipt.json')), 'no receipt');
});

t.test('a fact the tombstone itself spells is purged and scanned around', async (t) => {
  const dir = t.testdir();
  const dbPath = join(dir, 'spelled.sqlite3');
  const engine = await openLocalHashEngine(dbPath);
  let stored: Json;
  try {
    stored = ((await adapterFor(engine, 'delegated-candidate', 'agent-host').execute('memory_store', {
      scope: 'GLOBAL_USER', fact: 'SENSITIVE_MEMORY_PURGE', memory_type: 'USER_FACT', idempotency_key: 'spelled-1',
      freshness_policy: { kind: 'never' },
      source_provenance: { source_class: 'repo_file', source_ref: 'a', source_hash: 'b'.repeat(64), review_ref: 'r',
        extraction_method: 'm' },
    })) as Json).results[0];
  } finally {
    await engine.close();
  }
  const { planPath } = planFor(dir, dbPath, [stored.memory_id]);
  t.match(await recover(dir, dbPath, planPath), { exit: 0, receipt: { residual_byte_scan: 'CLEAN' } },
    'the tombstone provenance (extraction_method) is not taken for a copy of the fact');
});

t.test('after an operator\'s ANALYZE, the purge runs and drops the statistics, whose samples hold the targets\' '
  + 'content hashes (decision 0043)', async (t) => {
  const dir = t.testdir();
  const s = await secretScenario(dir);
  const raw = new RawDatabase(s.dbPath);
  raw.exec('ANALYZE');
  raw.close();
  const hashes = s.targetIds.map((id) => withRaw(s.dbPath, (db) =>
    db.prepare('SELECT native_content_hash FROM adapter_records WHERE record_id = ?').pluck().get(id) as string));
  const sampled = () => withRaw(s.dbPath, (db) => (db.prepare('SELECT sample FROM sqlite_stat4').pluck().all() as
    Buffer[]).filter((sample) => hashes.some((hash) => sample.includes(hash))).length);
  t.ok(sampled() > 0, 'before: sqlite_stat4 samples a target\'s content hash');
  const verified = admin('verify', '--db', s.dbPath);
  t.equal(verified.status, 0, `verify passes beside the statistics: ${verified.stdout}`);

  const { planPath } = planFor(dir, s.dbPath, [s.memoryId]);
  t.match(await recover(dir, s.dbPath, planPath), { exit: 0, receipt: { residual_byte_scan: 'CLEAN' } });
  t.same(withRaw(s.dbPath, (db) => db.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'sqlite_stat%'")
    .pluck().all()), [], 'the statistics are gone');
  t.same(residuals([s.dbPath, `${s.dbPath}-wal`], hashes.map((hash) => Buffer.from(hash))), [],
    'and no target\'s content hash is left in the file');
});

t.test('a state file that cannot be written stops the run before any change, naming no path', async (t) => {
  const dir = t.testdir();
  const s = await secretScenario(dir);
  const { planPath } = planFor(dir, s.dbPath, [s.memoryId]);
  const before = digestsByRecord(s.dbPath);
  const outcome = await recover(dir, s.dbPath, planPath, { statePath: join(dir, 'no-such-dir', 'state.json') });
  t.match(outcome, { exit: 1, result: 'FAILED_NO_MUTATION', message: /ENOENT/ });
  t.notOk(outcome.message.includes(dir), 'the message names no path');
  t.strictSame(digestsByRecord(s.dbPath), before, 'nothing changed');
  const interlocks = "SELECT count(*) FROM adapter_meta WHERE key = 'sensitive_recovery_interlock'";
  t.equal(withRaw(s.dbPath, (db) => db.prepare(interlocks).pluck().get()), 0, 'no interlock');
});
