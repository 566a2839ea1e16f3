import t from 'tap';
import { AdapterError } from '../../src/core/adapter-error.js';
import { operationProgress, recoveryStep, reembedBatchStep } from '../../src/cli/operation-progress.js';
import { ProgressReporter, describeStep, type ProgressStream } from '../../src/cli/progress-reporter.js';
import { say } from '../../src/maintenance/operation-signals.js';

// The progress reporter of the operator commands (decision 0023) against fake streams.

/** A stream that keeps what was written; `isTTY` and `columns` as a terminal or a pipe would have them. */
function fakeStream(isTTY: boolean, columns?: number): ProgressStream & { text: () => string } {
  const chunks: string[] = [];
  return { isTTY, columns, write: (chunk: string) => chunks.push(chunk), text: () => chunks.join('') };
}

/** A clock that advances 5 ms a reading. */
function ticking(): () => number {
  let now = 1000;
  return () => (now += 5);
}

t.test('on a terminal one line is rewritten in place and ended with a newline', async (t) => {
  const stream = fakeStream(true);
  const reporter = new ProgressReporter({ operation: 'backup', stream, json: false, now: ticking() });
  t.equal(reporter.mode, 'tty');
  const result = await reporter.run(async (onStep) => {
    onStep({ step: 'lease_taken', fields: { lease: 'shared' } });
    onStep({ step: 'pages_copied', done: 0, total: 40 });
    onStep({ step: 'pages_copied', done: 40, total: 40 });
    return 'report';
  });
  t.equal(result, 'report', 'the operation\'s result comes back');
  t.equal(stream.text(), '\rbackup: lease taken; lease shared [5 ms]\x1b[K'
    + '\rbackup: pages copied 0/40 (0%) [10 ms]\x1b[K\rbackup: pages copied 40/40 (100%) [15 ms]\x1b[K\n');
  reporter.end();
  t.ok(stream.text().endsWith('\x1b[K\n'), 'end is idempotent: one newline');
});

t.test('a failing operation ends its line before the error and rethrows it unchanged', async (t) => {
  const stream = fakeStream(true);
  const reporter = new ProgressReporter({ operation: 'restore', stream, json: false, now: ticking() });
  const error = new AdapterError('TARGET_EXISTS', 'the database already exists');
  await t.rejects(reporter.run(async (onStep) => {
    onStep({ step: 'manifest_checked' });
    throw error;
  }), error);
  t.equal(stream.text(), '\rrestore: manifest checked [5 ms]\x1b[K\n');

  const quiet = fakeStream(true);
  await t.rejects(new ProgressReporter({ operation: 'restore', stream: quiet, json: false }).run(async () => {
    throw error;
  }), error);
  t.equal(quiet.text(), '', 'no step reached: no line to end');
});

t.test('a line longer than the terminal is cut to its width, so \\r returns to its start', async (t) => {
  const stream = fakeStream(true, 20);
  const reporter = new ProgressReporter({ operation: 'housekeep', stream, json: false, now: ticking() });
  reporter.step({ step: 'compacted', done: 3, total: 10, fields: { compacted: 3 } });
  t.equal(stream.text(), '\rhousekeep: compacte\x1b[K');
});

t.test('--json writes one object per step and a failed step when the operation throws', async (t) => {
  const stream = fakeStream(true);
  const reporter = new ProgressReporter({ operation: 'migrate_up', stream, json: true, now: ticking() });
  t.equal(reporter.mode, 'json', '--json wins over a terminal');
  await t.rejects(reporter.run(async (onStep) => {
    onStep({ step: 'lease_taken', fields: { lease: 'exclusive' } });
    onStep({ step: 'migration_applied', done: 1, total: 2, fields: { version: 2, name: 'eligible_vectors' } });
    throw new AdapterError('VERIFY_FAILED', 'verification before commit failed');
  }), { code: 'VERIFY_FAILED' });
  const lines = stream.text().split('\n');
  t.equal(lines.pop(), '', 'every line ends with a newline');
  t.strictSame(lines.map((line) => JSON.parse(line)), [
    { operation: 'migrate_up', step: 'lease_taken', lease: 'exclusive', elapsed_ms: 5 },
    {
      operation: 'migrate_up', step: 'migration_applied', done: 1, total: 2, version: 2, name: 'eligible_vectors',
      elapsed_ms: 10,
    },
    { operation: 'migrate_up', step: 'failed', error_code: 'VERIFY_FAILED', elapsed_ms: 15 },
  ]);
  t.notMatch(stream.text(), /\r|\x1b/, 'no terminal control in JSON lines');

  const other = fakeStream(false);
  await t.rejects(new ProgressReporter(
    { operation: 'backup', stream: other, json: true, now: ticking() },
  ).run(async () => {
    throw new Error('unexpected');
  }), { message: 'unexpected' });
  t.strictSame(JSON.parse(other.text()), { operation: 'backup', step: 'failed', elapsed_ms: 5 },
    'no code for an ungoverned error');
});

t.test('not a terminal and no --json: the plain lines the commands printed before, nothing for the '
  + 'others', async (t) => {
  const reembed = fakeStream(false);
  const reporter = operationProgress('reembed', false, reembed);
  t.equal(reporter.mode, 'plain');
  reporter.step({ step: 'lease_taken', fields: { lease: 'exclusive' } });
  reporter.step(reembedBatchStep({ batch: 2, done: 512, total: 1000, records_per_second: 850, seconds_left: 1 }));
  reporter.step({ step: 'switched', done: 1000, total: 1000 });
  reporter.end();
  t.equal(reembed.text(), 'reembed: batch 2: 512/1000 records (51%), 850/s, about 1 s left\n');

  const recover = fakeStream(false);
  const phases = operationProgress('recover', false, recover);
  phases.step(recoveryStep({ phase: 'preflight', recovery_state: null }));
  const verified = 'LOCAL_FACTLANE_PURGE_VERIFIED';
  phases.step(recoveryStep({ phase: 'outcome', recovery_state: verified, detail: 'LOCAL_FACTLANE_PURGE_PASS' }));
  t.equal(recover.text(), 'recover: preflight; state none\n'
    + 'recover: outcome (LOCAL_FACTLANE_PURGE_PASS); state LOCAL_FACTLANE_PURGE_VERIFIED\n');

  const migrate = fakeStream(false);
  const up = operationProgress('migrate_up', false, migrate);
  up.step({ step: 'lease_taken' });
  up.step({ step: 'applying_migration', fields: { version: 2, name: 'eligible_vectors' } });
  t.equal(migrate.text(), 'factlane-migrate: applying 0002_eligible_vectors\n', 'said as the file begins');
  up.step({ step: 'derived_rows_rebuilt', done: 2, total: 2, fields: { rows: 'eligible_vectors' } });
  up.step({ step: 'migration_applied', done: 1, total: 1, fields: { version: 2, name: 'eligible_vectors' } });
  up.step({ step: 'verifying' });
  up.step({ step: 'verified', fields: { failed_checks: 0 } });
  t.equal(migrate.text(), 'factlane-migrate: applying 0002_eligible_vectors\n', 'once, and nothing after it');

  for (const operation of ['backup', 'restore', 'housekeep'] as const) {
    const stream = fakeStream(false);
    await operationProgress(operation, false, stream).run(async (onStep) => onStep({ step: 'lease_taken' }));
    t.equal(stream.text(), '', `${operation} prints nothing on a pipe`);
  }
});

t.test('a line the run says while a live line shows starts on a line of its own; after the run, nothing is told',
  async (t) => {
    const stream = fakeStream(true);
    const reporter = new ProgressReporter({ operation: 'reembed', stream, json: false, now: ticking() });
    const written: string[] = [];
    const stderrWrite = process.stderr.write;
    process.stderr.write = ((chunk: string) => {
      written.push(`${stream.text().length}:${chunk}`);
      return true;
    }) as typeof process.stderr.write;
    t.teardown(() => { process.stderr.write = stderrWrite; });
    await reporter.run(async (onStep) => {
      onStep({ step: 'lease_taken', fields: { lease: 'exclusive' } });
      say('stops before its next batch');
      onStep({ step: 'planned', total: 3 });
    });
    const afterFirst = '\rreembed: lease taken; lease exclusive [5 ms]\x1b[K\n';
    t.equal(stream.text(), `${afterFirst}\rreembed: planned 3 [10 ms]\x1b[K\n`, 'the live line ended before the line');
    t.match(written[0], new RegExp(`^${afterFirst.length}:[^\n]*: stops before its next batch\n$`),
      'said once the newline was written');
    say('after the run');
    t.equal(stream.text().endsWith('[10 ms]\x1b[K\n'), true, 'a line after the run adds nothing to the stream');
    process.stderr.write = stderrWrite;
  });

t.test('on a terminal reembed and recover read as their plain lines, audit names its checks, the others as '
  + 'describeStep', async (t) => {
  const stream = fakeStream(true);
  const reporter = operationProgress('reembed', false, stream);
  reporter.step(reembedBatchStep({ batch: 1, done: 4, total: 4, records_per_second: 90, seconds_left: 0 }));
  t.match(stream.text(), /^\rreembed: batch 1: 4\/4 records \(100%\), 90\/s, about 0 s left \[\d+ ms\]\x1b\[K$/);
  const recover = recoveryStep({ phase: 'vacuum_into', recovery_state: 'LOGICAL_PURGE_COMMITTED_SEALING_INCOMPLETE' });
  const sealing = 'LOGICAL_PURGE_COMMITTED_SEALING_INCOMPLETE';
  t.strictSame(recover, { step: 'vacuum_into', fields: { phase: 'vacuum_into', recovery_state: sealing } });
  t.equal(describeStep('migrate_up', { step: 'derived_rows_rebuilt', done: 0, total: 0 }),
    'migrate up: derived rows rebuilt 0/0 (100%)');
  t.equal(describeStep('housekeep', { step: 'outcome', fields: { outcome: 'NO_ACTION_REQUIRED', compacted: 0 } }),
    'housekeep: outcome; outcome NO_ACTION_REQUIRED, compacted 0');
  t.equal(describeStep('reembed', { step: 'sampled', done: 32 }), 'reembed: sampled 32');
  t.equal(
    describeStep('housekeep', { step: 'selected', total: 2 }), 'housekeep: selected 2', 'a total alone is a count',
  );
  t.equal(describeStep('recover', { step: 'preflight', fields: { recovery_state: null } }),
    'recover: preflight; recovery state none');
  const audit = fakeStream(true);
  const checks = operationProgress('audit', false, audit);
  checks.step({ step: 'schema_verified' });
  checks.step({ step: 'checking', fields: { check: 'token_counts' } });
  checks.step({ step: 'checked', done: 11, fields: { check: 'token_counts', status: 'PASS' } });
  t.match(audit.text(), new RegExp('^\\raudit: schema verified \\[\\d+ ms\\]\\x1b\\[K\\raudit: checking token_counts '
    + '\\[\\d+ ms\\]\\x1b\\[K\\raudit: checked 11: token_counts PASS \\[\\d+ ms\\]\\x1b\\[K$'),
  'audit names its checks');
});
