// Qualification: faults during `factlane-admin recover` (OPERATIONS.md §5.5-§5.8; STORAGE.md §9-§11). A recovery
// process SIGKILLed, or stopped by SIGINT/SIGTERM, before its purge commits leaves the database as it was; after the
// commit, the interlock keeps every runtime out across restarts until a rerun of the same plan completes, and a
// different plan is held. A runtime started while recovery runs meets a locked inode, also across the rename.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { existsSync, mkdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { build } from 'esbuild';
import type { RecoveryOutcome } from '../../src/maintenance/recover-operation.js';
import { auditDatabase } from '../../src/maintenance/audit-operation.js';
import { runPostflight, sanitizedImagePath } from '../../src/maintenance/recovery-sealing.js';
import { verifyDatabase } from '../../src/maintenance/verify-operation.js';
import { DatabaseLease } from '../../src/storage/database-lease.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import { launchSandbox, openLocalHashEngine, startLauncher } from '../helpers/mcp.js';
import { MARKER, digestsByRecord, fileBytes, planFor, recover, secretScenario } from '../helpers/recovery.js';
import { REPO_ROOT, withRaw } from '../helpers/storage.js';

const INTERLOCK_KEY = 'sensitive_recovery_interlock';
const CHILD_TIMEOUT_MS = 60_000;
const VERIFIED = 'LOCAL_FACTLANE_PURGE_VERIFIED';
const SEALING_INCOMPLETE = 'LOGICAL_PURGE_COMMITTED_SEALING_INCOMPLETE';

/** How a recover-child.ts run ended, the phases it printed and its outcome (null when killed first). */
interface Child {
  readonly exit: { code: number | null; signal: NodeJS.Signals | null };
  readonly phases: readonly string[];
  readonly outcome: RecoveryOutcome | null;
}

/**
 * recover-child.ts bundled once for this file (as scripts/bundle.mjs bundles the commands; native packages stay
 * external): through the TypeScript loader each of the two dozen children spent about two seconds compiling the
 * sources before its recovery began, a tenth of that bundled. The bundle is built from the sources as they are now.
 */
const CHILD_BUNDLE = join(t.testdir(), 'recover-child.mjs');
await build({
  entryPoints: [join(REPO_ROOT, 'test/helpers/recover-child.ts')], outfile: CHILD_BUNDLE, bundle: true,
  platform: 'node', format: 'esm', target: 'node20', external: ['better-sqlite3', 'sqlite-vec', 'fs-ext'],
  logLevel: 'warning',
  // Bundled CommonJS dependencies call require(); give the ESM bundle one.
  banner: { js: [
    "import { createRequire as __childRequire } from 'node:module';",
    'const require = __childRequire(import.meta.url);',
  ].join(' ') },
});

/** A recovery scenario in its own folder: the secret database, the plan, a second plan for the same targets. */
async function scenario(dir: string) {
  mkdirSync(dir, { recursive: true });
  const secret = await secretScenario(dir);
  const dbPath = realpathSync(secret.dbPath);
  const { plan, planPath } = planFor(dir, dbPath, [secret.memoryId]);
  // A second plan for the same targets mints its own operation_id: another recovery.
  const other = planFor(dir, dbPath, [secret.memoryId], 'other-plan.json');
  const receiptPath = join(dir, 'receipt.json');
  const statePath = `${receiptPath}.state.json`;
  return { dir, dbPath, plan, planPath, otherPlanPath: other.planPath, receiptPath, statePath, secret };
}
type Scenario = Awaited<ReturnType<typeof scenario>>;

/** A running recover-child.ts: its stdout lines so far, a wait for one of them, and how it ended. */
function startChild(s: Scenario, fault: string, options: { linger?: boolean } = {}) {
  const args = [s.dbPath, s.planPath, s.receiptPath, fault, ...(options.linger ? ['linger'] : [])];
  const child = spawn(process.execPath, [CHILD_BUNDLE, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  child.stdout!.on('data', (chunk) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    for (const line of parts) {
      lines.push(line);
      for (const waiter of waiters.filter((w) => w.pattern.test(line))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  child.stderr!.on('data', (chunk) => { stderr += chunk; });
  const ended = new Promise<Child>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`recover-child ${fault} did not end; stderr: ${stderr}`));
    }, CHILD_TIMEOUT_MS);
    // 'close', not 'exit': the last lines a killed child wrote may still be in the pipe when it exits.
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const phases = lines.filter((l) => l.startsWith('phase ')).map((l) => l.split(' ')[1]!);
      const outcomeLine = lines.find((l) => l.startsWith('outcome '));
      const outcome = outcomeLine ? (JSON.parse(outcomeLine.slice('outcome '.length)) as RecoveryOutcome) : null;
      if (code !== 0 && signal === null) reject(new Error(`recover-child ${fault} exited ${code}; stderr: ${stderr}`));
      else resolve({ exit: { code, signal }, phases, outcome });
    });
  });
  /** Resolves with the first line (already printed or still to come) matching `pattern`; rejects if the child ends. */
  const waitFor = (pattern: RegExp): Promise<string> => {
    const seen = lines.find((l) => pattern.test(l));
    if (seen !== undefined) return Promise.resolve(seen);
    return Promise.race([
      new Promise<string>((resolve) => waiters.push({ pattern, resolve })),
      ended.then(() => { throw new Error(`recover-child ${fault} ended before printing ${pattern}`); }),
    ]);
  };
  return { lines, waitFor, ended };
}

/** Runs recover-child.ts to its end (or its kill). */
function runChild(s: Scenario, fault: string): Promise<Child> {
  return startChild(s, fault).ended;
}

/** Runs recover in this process (no fault): its holds and its success release every lease. */
function recoverHere(s: Scenario, planPath = s.planPath, receiptPath = s.receiptPath): Promise<RecoveryOutcome> {
  return recover(s.dir, s.dbPath, planPath, { signals: new EventEmitter(), receiptPath });
}

type MetaRow = { key: string; value: string };

/** The adapter_meta rows, key to value. */
function metaRows(dbPath: string): Record<string, string> {
  return withRaw(dbPath, (db) => {
    const rows = db.prepare('SELECT key, value FROM adapter_meta ORDER BY key').all() as MetaRow[];
    return Object.fromEntries(rows.map((row) => [row.key, row.value]));
  });
}

/** Everything "unchanged" compares: every record's digest (with its derived rows) and the adapter_meta rows. */
function snapshot(dbPath: string) {
  return { digests: Object.fromEntries(digestsByRecord(dbPath)), meta: metaRows(dbPath) };
}

/** True when the secret's bytes are anywhere in the database file or its -wal. */
function holdsMarker(dbPath: string): boolean {
  return ['', '-wal'].some((suffix) => existsSync(dbPath + suffix) && readFileSync(dbPath + suffix).includes(MARKER));
}

const modeOf = (path: string) => statSync(path).mode & 0o777;

/** The phase in the scenario's state file, or null when there is none. */
function stateOf(s: Scenario): string | null {
  return existsSync(s.statePath) ? (JSON.parse(readFileSync(s.statePath, 'utf8')) as { phase: string }).phase : null;
}

/** The built server, started to completion with stdin closed; a refusal prints `factlane: CODE: message`. */
function refusedStart(s: Scenario) {
  const root = join(s.dir, `sandbox-${Math.random().toString(16).slice(2)}`);
  mkdirSync(root);
  const sandbox = launchSandbox(root);
  const run = sandbox.run(['--db', s.dbPath, '--host-id', 'recover-faults']);
  return { status: run.status, code: /^factlane: ([A-Z_]+):/m.exec(run.stderr)?.[1] ?? null, stderr: run.stderr };
}

/** The built server starts on the database and answers memory_status over MCP. */
async function serverWorks(t: Test, s: Scenario, label: string): Promise<void> {
  const server = await startLauncher(t, ['--db', s.dbPath, '--host-id', 'recover-faults'], 'factlane-recover-faults');
  const request = { scope: 'GLOBAL_USER' };
  const result = (await server.client.callTool({ name: 'memory_status', arguments: { request } })) as CallToolResult;
  t.match(result.structuredContent, { status: 'OK' }, `${label}: a server starts and answers memory_status`);
  await server.client.close();
  t.same(await server.exited, { code: 0, signal: null }, `${label}: the server exits 0`);
}

/** The server refuses to start with MAINTENANCE_IN_PROGRESS, twice in a row (restarts do not clear the interlock). */
function serverBlocked(t: Test, s: Scenario, label: string): void {
  for (const attempt of ['first', 'second']) {
    const start = refusedStart(s);
    t.match(start, { status: 1, code: 'MAINTENANCE_IN_PROGRESS' }, `${label}: the ${attempt} server start is refused`);
    t.match(start.stderr, `the sensitive-memory recovery ${s.plan.operation_id} committed its purge and is not sealed; `
      + 'rerun factlane-admin recover with the plan whose operation_id it is', `${label}: it names the operation`);
  }
}

/** audit and verify pass on the database, under a shared lease. */
function auditAndVerifyPass(t: Test, s: Scenario, label: string): void {
  const target = MaintenanceTarget.open({ dbPath: s.dbPath, lease: 'shared' });
  try {
    const audit = auditDatabase(target);
    t.ok(audit.ok, `${label}: audit passes`, { failed: audit.checks.filter((c) => c.status !== 'PASS') });
    const verify = verifyDatabase(target);
    t.ok(verify.ok, `${label}: verify passes`, { failed: verify.checks.filter((c) => c.status !== 'PASS') });
    t.equal(verify.interlock_present, false, `${label}: verify sees no interlock`);
  } finally {
    target.close();
  }
}

t.test('SIGKILL before the commit: database unchanged, a server starts, a rerun runs fresh', async (t) => {
  const dir = t.testdir();
  // The faults run side by side, each on its own database, to keep the file short.
  await Promise.all(['kill:preflight', 'kill:target_inspection', 'kill:purge_commit'].map(async (fault) => {
    const s = await scenario(join(dir, fault.replace(':', '-')));
    const before = snapshot(s.dbPath);
    const child = await runChild(s, fault);
    t.equal(child.exit.signal, 'SIGKILL', `${fault}: the recovery was killed`);
    if (fault === 'kill:purge_commit') {
      // Killed inside the one purge transaction, with every tombstone and the interlock written but not committed.
      t.equal(child.phases.at(-1), 'target_inspection', `${fault}: killed after the inspection, before the commit`);
      t.equal(stateOf(s), 'LOGICAL_PURGE_IN_PROGRESS', `${fault}: the state says the purge was in progress`);
    } else {
      t.equal(stateOf(s), null, `${fault}: no state file was written yet`);
    }
    t.same(snapshot(s.dbPath), before, `${fault}: every record, derived row and adapter_meta row is unchanged`);
    t.notOk(INTERLOCK_KEY in metaRows(s.dbPath), `${fault}: no interlock`);
    await serverWorks(t, s, fault);
    const rerun = await recoverHere(s);
    t.match(rerun, { exit: 0, mode: 'FRESH', recovery_state: VERIFIED }, `${fault}: a rerun completes`);
    t.notOk(holdsMarker(s.dbPath), `${fault}: the secret is in no byte of the database or its -wal`);
  }));
});

/**
 * Kills after the commit: at each phase event, and inside the postflight as it is about to delete the interlock
 * (the last phase printed is then 'renamed'). Only the 'postflight' event comes after the interlock was deleted.
 */
const AFTER_COMMIT = [
  'logical_purge', 'first_checkpoint', 'vacuum_into', 'image_verified', 'connections_closed', 'renamed',
  'interlock_delete', 'postflight',
];
/** Phases after which the sanitized image exists beside the database, not yet renamed over it. */
const IMAGE_LEFT = new Set(['vacuum_into', 'image_verified', 'connections_closed']);

/** After a commit that did not complete: blocked runtimes (while interlocked), another plan held, a rerun completes. */
async function resumesAfterCommit(t: Test, s: Scenario, label: string, interlocked: boolean): Promise<void> {
  t.equal(stateOf(s), SEALING_INCOMPLETE, `${label}: the state says committed, sealing incomplete`);
  t.equal(modeOf(s.statePath), 0o600, `${label}: the state file is 0600`);
  const interlockText = interlocked ? 'present' : 'deleted';
  t.equal(INTERLOCK_KEY in metaRows(s.dbPath), interlocked, `${label}: the interlock is ${interlockText}`);
  if (interlocked) serverBlocked(t, s, label);

  const bytes = fileBytes(s.dbPath);
  const state = readFileSync(s.statePath, 'utf8');
  const other = await recoverHere(s, s.otherPlanPath);
  t.match(other, { exit: 3, hold: 'HOLD_RECOVERY_STATE_MISMATCH' }, `${label}: another plan is held`);
  t.equal(fileBytes(s.dbPath), bytes, `${label}: the held plan changed no byte of the database`);
  t.equal(readFileSync(s.statePath, 'utf8'), state, `${label}: nor the state file`);
  t.notOk(existsSync(s.receiptPath), `${label}: and wrote no receipt`);
  if (interlocked) {
    // Without the state file of the first plan, the interlock alone names the other operation.
    const alone = await recoverHere(s, s.otherPlanPath, join(s.dir, 'other-receipt.json'));
    const held = { exit: 3, hold: 'HOLD_RECOVERY_STATE_MISMATCH' };
    t.match(alone, held, `${label}: another plan is held by the interlock alone`);
    t.equal(fileBytes(s.dbPath), bytes, `${label}: that held plan changed no byte of the database either`);
    t.notOk(existsSync(join(s.dir, 'other-receipt.json.state.json')), `${label}: and wrote no state file`);
  }
  // With the interlock deleted by the postflight, runtimes may start before the rerun; it still resumes after them.
  if (!interlocked) await serverWorks(t, s, `${label} (before the rerun)`);

  const rerun = await recoverHere(s);
  const mode = interlocked ? 'RESUME_SEALING' : 'RESUME_POSTFLIGHT';
  t.match(rerun, { exit: 0, mode, recovery_state: VERIFIED }, `${label}: a rerun completes (${mode})`);
  t.equal(stateOf(s), VERIFIED, `${label}: the state says verified`);
  t.equal(existsSync(s.receiptPath) && modeOf(s.receiptPath), 0o600, `${label}: the receipt is written, 0600`);
  t.equal(modeOf(s.dbPath), 0o600, `${label}: the database promoted from the image is 0600`);
  const image = sanitizedImagePath(s.dbPath, s.plan.operation_id);
  const left = ['', '-wal', '-shm', '-journal'].filter((suffix) => existsSync(image + suffix));
  t.same(left, [], `${label}: no sanitized image (nor a sidecar of it) is left`);
  t.notOk(INTERLOCK_KEY in metaRows(s.dbPath), `${label}: the interlock is gone`);
  t.notOk(holdsMarker(s.dbPath), `${label}: the secret is in no byte of the database or its -wal`);
  await serverWorks(t, s, label);
  auditAndVerifyPass(t, s, label);
}

t.test('SIGKILL after the commit: runtimes stay out, another plan is held, a rerun completes', async (t) => {
  const dir = t.testdir();
  // The phases run side by side, each on its own database, to keep the file short.
  await Promise.all(AFTER_COMMIT.map(async (phase) => {
    const s = await scenario(join(dir, phase));
    const child = await runChild(s, `kill:${phase}`);
    t.equal(child.exit.signal, 'SIGKILL', `${phase}: the recovery was killed`);
    t.equal(child.phases.at(-1), phase === 'interlock_delete' ? 'renamed' : phase, `${phase}: at that phase`);
    const image = sanitizedImagePath(s.dbPath, s.plan.operation_id);
    const imageText = IMAGE_LEFT.has(phase) ? 'left beside the database' : 'not there';
    t.equal(existsSync(image), IMAGE_LEFT.has(phase), `${phase}: the sanitized image is ${imageText}`);
    if (IMAGE_LEFT.has(phase)) t.equal(modeOf(image), 0o600, `${phase}: the image left is 0600`);
    await resumesAfterCommit(t, s, phase, phase !== 'postflight');
  }));
});

/** Phases at which a runtime start is tried while recovery holds its leases (the child waits there). */
const HELD_PHASES = [
  'preflight', 'target_inspection', 'logical_purge', 'vacuum_into', 'connections_closed', 'renamed', 'postflight',
];

t.test('a runtime started while recovery holds its leases is refused with MAINTENANCE_IN_PROGRESS', async (t) => {
  const s = await scenario(t.testdir());
  const child = startChild(s, `hold:${HELD_PHASES.join('+')}`);
  for (const phase of HELD_PHASES) {
    await child.waitFor(new RegExp(`^phase ${phase} `));
    t.match(refusedStart(s), { status: 1, code: 'MAINTENANCE_IN_PROGRESS' }, `${phase}: the server is refused`);
    const refused = { code: 'MAINTENANCE_IN_PROGRESS' };
    await t.rejects(openLocalHashEngine(s.dbPath), refused, `${phase}: an engine open is refused`);
    writeFileSync(join(s.dir, `go-${phase}`), '');
  }
  const ended = await child.ended;
  t.match(ended.outcome, { exit: 0, mode: 'FRESH', recovery_state: VERIFIED }, 'the recovery completes');
  await serverWorks(t, s, 'after the recovery');
});

/** Recoveries to race: pauses at every phase widen the windows before and after the rename; none keeps them small. */
const RACE_FAULTS = ['pause:30', 'pause:10', 'pause:3', 'pause:1', 'none'];
const RACE_ATTEMPTS_MAX = 3_000;

t.test('engine opens raced against a recovery: refused while it runs, opened only once it completed', async (t) => {
  const dir = t.testdir();
  let refusedWhileRunning = 0;
  for (const [iteration, fault] of RACE_FAULTS.entries()) {
    const s = await scenario(join(dir, `race-${iteration}`));
    const child = startChild(s, fault);
    let running = true;
    const ended = child.ended.finally(() => { running = false; });
    // Attempts start once the preflight passed: an open before it would (rightly) hold the recovery as nonquiescent.
    await child.waitFor(/^phase preflight /).catch(() => undefined);
    // Outcomes counted by the last phase the child had printed when the attempt began.
    const tally: Record<string, Record<string, number>> = {};
    const problems: string[] = [];
    for (let attempt = 0; running && attempt < RACE_ATTEMPTS_MAX; attempt += 1) {
      const phaseBefore = child.lines.filter((l) => l.startsWith('phase ')).at(-1)?.split(' ')[1] ?? '';
      const count = (result: string) => {
        const byResult = (tally[phaseBefore] ??= {});
        byResult[result] = (byResult[result] ?? 0) + 1;
      };
      try {
        const engine = await openLocalHashEngine(s.dbPath);
        // The recovery writes the verified state before it lets its leases go: an open it did not block sees it.
        const state = stateOf(s);
        const interlock = engine.findings.interlockPresent;
        await engine.close();
        count('opened');
        if (state !== VERIFIED || interlock) {
          problems.push(`opened after "${phaseBefore}" with state ${state}, interlock ${interlock}`);
        }
      } catch (error) {
        const { code, message } = error as { code?: string; message: string };
        const pathChanged = code === 'BACKEND_UNAVAILABLE' && /path changed/.test(message);
        const allowed = code === 'MAINTENANCE_IN_PROGRESS' || pathChanged;
        count(code ?? 'error');
        if (code === 'MAINTENANCE_IN_PROGRESS') refusedWhileRunning += 1;
        if (!allowed) problems.push(`after "${phaseBefore}": ${code} ${message}`);
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    const outcome = (await ended).outcome;
    t.match(outcome, { exit: 0, recovery_state: VERIFIED }, `${fault}: the recovery completes`);
    t.comment(`${fault}: attempts by phase: ${JSON.stringify(tally)}`);
    t.same(problems, [], `${fault}: every attempt was refused or opened the completed database`, { tally });
    const engine = await openLocalHashEngine(s.dbPath);
    t.equal(engine.findings.interlockPresent, false, `${fault}: afterwards an engine opens without an interlock`);
    await engine.close();
  }
  // A recovery that ended before any attempt would pass the checks above without racing anything: the paused ones
  // (30 ms at every phase) leave room for many.
  t.ok(refusedWhileRunning > 0, `opens were refused while a recovery ran (${refusedWhileRunning})`);
});

t.test('SIGINT or SIGTERM before the commit: exit 1, nothing changed', async (t) => {
  const dir = t.testdir();
  for (const [signal, phase] of [['SIGTERM', 'preflight'], ['SIGINT', 'target_inspection']] as const) {
    const s = await scenario(join(dir, `${signal}-${phase}`));
    const before = snapshot(s.dbPath);
    const signals = new EventEmitter();
    const outcome = await recover(s.dir, s.dbPath, s.planPath, {
      signals, onPhase: (event) => { if (event.phase === phase) signals.emit(signal); },
    });
    t.match(outcome, { exit: 1, result: 'FAILED_NO_MUTATION' }, `${signal} at ${phase}: exit 1`);
    t.same(snapshot(s.dbPath), before, `${signal} at ${phase}: nothing changed`);
    t.notOk(INTERLOCK_KEY in metaRows(s.dbPath), `${signal} at ${phase}: no interlock`);
    t.equal(signals.listenerCount(signal), 0, `${signal} at ${phase}: the run stopped watching the signal`);
    await serverWorks(t, s, `${signal} at ${phase}`);
  }
  // Real signals, as Ctrl-C or kill send them: Node dispatches them on a turn of its event loop, which the synchronous
  // SQLite work of a run never gave it, so they used to be seen only once the purge had run to the end.
  for (const [signal, phase] of [['SIGINT', 'target_inspection'], ['SIGTERM', 'preflight']] as const) {
    const real = await scenario(join(dir, `os-${signal}-${phase}`));
    const untouched = snapshot(real.dbPath);
    const child = await runChild(real, `os-signal:${signal}:${phase}`);
    t.match(child.outcome, { exit: 1, result: 'FAILED_NO_MUTATION' }, `a real ${signal} at ${phase}: exit 1`);
    t.match(child.outcome?.message, `interrupted by ${signal}`);
    t.same(snapshot(real.dbPath), untouched, `a real ${signal} at ${phase}: nothing changed`);
  }
  // Inside the purge transaction (as the FTS5 rebuild is prepared): the transaction rolls back.
  const s = await scenario(join(dir, 'SIGTERM-purge'));
  const before = snapshot(s.dbPath);
  const child = await runChild(s, 'signal:SIGTERM:purge');
  const failed = { exit: 1, result: 'FAILED_NO_MUTATION', recovery_state: 'PREPARED_NO_MUTATION' };
  t.match(child.outcome, failed, 'in the purge: exit 1');
  t.same(snapshot(s.dbPath), before, 'in the purge: nothing changed');
  t.equal(stateOf(s), 'PREPARED_NO_MUTATION', 'in the purge: the state is back to prepared');
  await serverWorks(t, s, 'in the purge');
  t.match(await recoverHere(s), { exit: 0, mode: 'FRESH' }, 'in the purge: a rerun completes');
});

t.test('SIGINT or SIGTERM after the commit: exit 4, the interlock holds runtimes out, a rerun completes', async (t) => {
  const dir = t.testdir();
  // In the postflight (as it deletes the interlock) the signal is seen once the postflight returns: the interlock is
  // gone, the state still incomplete, and the rerun resumes at the postflight.
  const cases = [['SIGTERM', 'logical_purge'], ['SIGINT', 'renamed'], ['SIGTERM', 'interlock_delete']];
  await Promise.all(cases.map(async ([signal, phase]) => {
    const label = `${signal} at ${phase}`;
    const s = await scenario(join(dir, `${signal}-${phase}`));
    const child = startChild(s, `signal:${signal}:${phase}`, { linger: true });
    const outcome = JSON.parse((await child.waitFor(/^outcome /)).slice('outcome '.length)) as RecoveryOutcome;
    t.match(outcome, { exit: 4, result: 'SEALING_INCOMPLETE', recovery_state: SEALING_INCOMPLETE }, `${label}: exit 4`);
    // The message says what holds runtimes out only while it does: after the postflight deleted the interlock, nothing.
    const claim = /the interlock blocks every runtime/;
    if (phase === 'interlock_delete') t.notMatch(outcome.message, claim, `${label}: no interlock is claimed`);
    else t.match(outcome.message, claim, `${label}: the message names the interlock`);
    // Fail closed: the ended run keeps its exclusive leases until its process exits, interlock or not.
    const refused = { status: 1, code: 'MAINTENANCE_IN_PROGRESS' };
    t.match(refusedStart(s), refused, `${label}: a server is refused while the process lives`);
    writeFileSync(join(s.dir, 'go-exit'), '');
    t.equal((await child.ended).exit.code, 0, `${label}: the process exited`);
    await resumesAfterCommit(t, s, label, phase !== 'interlock_delete');
  }));
});

t.test('the state file failing right after the commit: exit 4, the interlock kept, not "nothing '
  + 'changed"', async (t) => {
  // The state write after the purge commits is the run's first step past the commit. It failed (a full disk) with exit
  // 1 FAILED_NO_MUTATION and the leases let go, though the records were purged and the interlock was in the database.
  const s = await scenario(t.testdir());
  const clock = () => {
    if (INTERLOCK_KEY in metaRows(s.dbPath)) throw new Error('the state file cannot be written');
    return new Date();
  };
  const outcome = await recover(s.dir, s.dbPath, s.planPath, { signals: new EventEmitter(), clock });
  t.match(outcome, { exit: 4, result: 'SEALING_INCOMPLETE' }, 'exit 4');
  t.match(
    outcome.message,
    /^the purge is committed; a later step failed \(.*\); the interlock blocks every runtime: rerun the same plan$/,
  );
  t.ok(INTERLOCK_KEY in metaRows(s.dbPath), 'the interlock is in the database');
  // The run failed closed: it keeps its exclusive leases while this process lives, so a rerun here is held.
  t.match(await recoverHere(s), { exit: 3, hold: 'HOLD_NONQUIESCENT_NO_MUTATION' }, 'the leases are kept');
});

t.test('a postflight that finds no interlock to delete does not say one blocks runtimes', async (t) => {
  const s = await scenario(t.testdir());
  t.match(await recoverHere(s), { exit: 0, recovery_state: VERIFIED }, 'a recovery completes');
  // Its postflight again, with an interlock the database no longer holds (another hand deleted it meanwhile).
  const lease = DatabaseLease.acquire(s.dbPath, 'exclusive', { create: false });
  t.teardown(() => lease.release());
  const operation = s.plan.operation_id;
  const interlock = { operation_id: operation, plan_sha256: 'a'.repeat(64), committed_at: '2026-12-04T00:00:00Z' };
  const recordIds = s.plan.targets.map((target) => target.record_id);
  await t.rejects(runPostflight({ path: s.dbPath, lease, operationId: operation, recordIds, interlock }),
    { message: 'the interlock was not found to delete', interlockDeleted: true });
});

t.test('a rerun killed again resumes again; a run killed once it completed is already verified', async (t) => {
  const dir = t.testdir();
  const twice = async () => {
    const s = await scenario(join(dir, 'twice'));
    t.equal((await runChild(s, 'kill:connections_closed')).exit.signal, 'SIGKILL', 'twice: the first run was killed');
    const second = startChild(s, 'kill:renamed');
    const inspected = await second.waitFor(/^phase target_inspection /);
    t.match(inspected, / RESUME_SEALING$/, 'twice: the second run resumes at the sealing');
    const ended = await second.ended;
    t.equal(ended.exit.signal, 'SIGKILL', 'twice: the resumed run was killed too');
    t.equal(ended.phases.at(-1), 'renamed', 'twice: after its rename');
    await resumesAfterCommit(t, s, 'twice', true);
  };
  const completed = async () => {
    const s = await scenario(join(dir, 'completed'));
    const child = await runChild(s, 'kill:completed');
    t.equal(child.exit.signal, 'SIGKILL', 'completed: the run was killed after completing');
    t.equal(stateOf(s), VERIFIED, 'completed: the state says verified');
    t.ok(existsSync(s.receiptPath), 'completed: the receipt was written');
    const receipt = readFileSync(s.receiptPath, 'utf8');
    await serverWorks(t, s, 'completed');
    const before = snapshot(s.dbPath);
    const again = await recoverHere(s);
    const verified = { exit: 0, mode: 'ALREADY_VERIFIED', recovery_state: VERIFIED };
    t.match(again, verified, 'completed: a rerun finds the plan already verified');
    t.same(snapshot(s.dbPath), before, 'completed: the rerun changed nothing');
    t.equal(readFileSync(s.receiptPath, 'utf8'), receipt, 'completed: nor the receipt');
  };
  await Promise.all([twice(), completed()]);
});
