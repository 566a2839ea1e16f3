import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { createServer } from 'node:net';
import { copyFileSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as sqliteVec from 'sqlite-vec';
import { SYSTEM_CLOCK } from '../../src/core/time.js';
import { evaluateCompatibility, runtimeFingerprint } from '../../src/embedding/embedding-binding.js';
import { LocalHashProvider, localHashEmbedding, LOCAL_HASH_DIGEST } from '../../src/embedding/local-hash-provider.js';
import { reembedDatabase, type ReembedProgress } from '../../src/maintenance/reembed-operation.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import { LOCAL_HASH, openLocalHashEngine } from '../helpers/mcp.js';
import { FaultyProvider, fixture, rawWrite, readDb, storedEmbedding } from '../helpers/reembed.js';
import {
  ADMIN_BIN, candidateRow, openEngine, RawDatabase, REPO_ROOT, runBin, storeRow, TEST_BINDING, TS_IMPORT, unitVector,
  writeInterlock,
} from '../helpers/storage.js';

const admin = (...args: string[]) => runBin(ADMIN_BIN, args);

const withoutProvenance = (rows: Record<string, unknown>[]) =>
  rows.map(({ embedding_profile_id: _p, embedding_model_digest: _d, embedding_output_dimension: _o, ...rest }) => rest);

t.test('reembed from the 8-dim test profile to local-hash-384 keeps every record and rebinds', async (t) => {
  const dbPath = join(t.testdir(), 'db.sqlite3');
  await fixture(dbPath);
  const before = readDb(dbPath);
  const progress: ReembedProgress[] = [];
  const report = await reembedDatabase(
    { dbPath, provider: new LocalHashProvider(), batchSize: 3, onProgress: (p) => progress.push(p) });
  t.match(report, { from_profile: 'test-profile', to_profile: 'local-hash-384', dry_run: false, records_to_embed: 4,
    records_embedded: 4, batches: 2, switched: true });
  t.same(progress.map((p) => [p.done, p.total]), [[3, 4], [4, 4]], 'progress per committed batch');

  const after = readDb(dbPath);
  t.same(withoutProvenance(after.records), withoutProvenance(before.records), 'records keep their rows and content');
  t.same(after.vec.map(({ dim: _d, ...v }) => v), before.vec.map(({ dim: _d, ...v }) => v),
    'same rowid, scope_key, is_current');
  t.ok(after.vec.every((v) => v.dim === 384), '384-dimension vectors');
  const first = after.records[0]!;
  t.same([...storedEmbedding(dbPath, first.row_id as number)], [...localHashEmbedding(first.fact as string)],
    'document embedding of the fact');
  const vectored = new Set(after.vec.map((v) => v.rowid));
  for (const record of after.records) {
    const expected = vectored.has(record.row_id as number) ? ['local-hash-384', LOCAL_HASH_DIGEST, 384]
      : ['test-profile', 'digest', 8];
    t.same([record.embedding_profile_id, record.embedding_model_digest, record.embedding_output_dimension], expected,
      `provenance of ${record.lifecycle_state}`);
  }
  const provenance = await new LocalHashProvider().statusCheck();
  t.match(after.binding, { profile_id: 'local-hash-384', vector_dimension: 384,
    compatibility_proof: { basis: 'OPERATOR_REEMBED' }, runtime_fingerprint: runtimeFingerprint(provenance) });
  t.notOk(after.hasNext, 'fact_vec_next dropped');

  const target = MaintenanceTarget.open({ dbPath, lease: 'shared' });
  t.same(target.verify().filter((c) => c.status !== 'PASS'), [], 'verify passes at the new dimension');
  target.close();
  const engine = await openLocalHashEngine(dbPath);
  const state = evaluateCompatibility({ profile: LOCAL_HASH, bindingText: engine.storedBinding,
    tableDimension: engine.findings.vectorDimension, provenance });
  t.equal(state.state, 'COMPATIBLE');
  const hits = await engine.write(async (_trx, raw) =>
    raw.prepare("SELECT rowid FROM fact_vec WHERE embedding MATCH ? AND k = 1 AND scope_key = 'scope-a'")
    .pluck().all(Buffer.from(localHashEmbedding('deploys on friday').buffer)));
  t.same(hits, [before.records[1]!.row_id], 'KNN in the new table finds the matching fact');
  await engine.close();
});

t.test('a running engine or the recovery interlock refuses reembed with MAINTENANCE_IN_PROGRESS', async (t) => {
  const dbPath = join(t.testdir(), 'db.sqlite3');
  await fixture(dbPath);
  const engine = await openEngine(dbPath);
  await t.rejects(reembedDatabase({ dbPath, provider: new LocalHashProvider() }), { code: 'MAINTENANCE_IN_PROGRESS' });
  await engine.close();
  writeInterlock(dbPath);
  const bytes = readFileSync(dbPath);
  await t.rejects(reembedDatabase({ dbPath, provider: new LocalHashProvider() }), { code: 'MAINTENANCE_IN_PROGRESS' });
  t.ok(readFileSync(dbPath).equals(bytes), 'nothing changed');
});

t.test('a vector table that lost a shadow table refuses reembed (BACKEND_CORRUPT), nothing changed', async (t) => {
  const dbPath = join(t.testdir(), 'db.sqlite3');
  await fixture(dbPath);
  const raw = new RawDatabase(dbPath); // as the sqlite3 CLI would: shadow tables carry no fence
  raw.exec('DROP TABLE fact_vec_rowids');
  raw.close();
  const bytes = readFileSync(dbPath);
  // Reading its vectors could end the process: sqlite-vec does not check its shadow tables.
  await t.rejects(reembedDatabase({ dbPath, provider: new LocalHashProvider() }),
    { code: 'BACKEND_CORRUPT', message: /fact_vec \(fact_vec_rowids missing\)/ });
  t.ok(readFileSync(dbPath).equals(bytes), 'nothing changed');
});

t.test('a failing status check stops reembed before anything changes', async (t) => {
  const dbPath = join(t.testdir(), 'db.sqlite3');
  await fixture(dbPath);
  const bytes = readFileSync(dbPath);
  await t.rejects(reembedDatabase({ dbPath, provider: new FaultyProvider({ failStatus: true }) }),
    { code: 'EMBEDDING_UNAVAILABLE' });
  t.ok(readFileSync(dbPath).equals(bytes), 'byte-identical');
});

t.test('an interrupted fill leaves the old binding and table in use; a rerun drops the leftover and succeeds',
  async (t) => {
  const dbPath = join(t.testdir(), 'db.sqlite3');
  await fixture(dbPath);
  const before = readDb(dbPath);
  await t.rejects(reembedDatabase({ dbPath, provider: new FaultyProvider({ failOnCall: 2 }), batchSize: 2 }),
    { code: 'EMBEDDING_UNAVAILABLE' });
  const interrupted = readDb(dbPath);
  t.equal(interrupted.bindingText, before.bindingText, 'old binding');
  t.same(interrupted.vec, before.vec, 'old vectors');
  t.same(interrupted.records, before.records, 'records untouched');
  t.ok(interrupted.hasNext, 'the committed batch stays in fact_vec_next');
  // STORAGE.md §4.6 allows the work table while the reembed is unfinished: verify (and so backup and restore) pass.
  const unfinished = MaintenanceTarget.open({ dbPath, lease: 'shared' });
  t.same(unfinished.verify().filter((c) => c.status !== 'PASS'), [], 'verify accepts the work table');
  unfinished.close();
  const extra = new RawDatabase(dbPath);
  extra.exec('CREATE INDEX idx_extra ON fact_vec_next_rowids (id)');
  extra.close();
  const altered = MaintenanceTarget.open({ dbPath, lease: 'shared' });
  t.match(altered.verify().find((c) => c.name === 'schema_objects'), { status: 'FAIL', detail: /idx_extra/ },
    'but not an object the work table does not have');
  altered.close();
  const dropExtra = new RawDatabase(dbPath);
  dropExtra.exec('DROP INDEX idx_extra');
  dropExtra.close();
  // A table under the work table's name that no reembed writes is an object that differs, never a crash of verify.
  const odds = ['(embedding float[0])', '(embedding float[99999])', '(embedding float[8])'];
  for (const [i, definition] of odds.entries()) {
    const copy = join(dirname(dbPath), `odd-${i}.sqlite3`);
    copyFileSync(dbPath, copy);
    const odd = new RawDatabase(copy);
    sqliteVec.load(odd);
    odd.exec(`DROP TABLE fact_vec_next; CREATE TABLE fact_vec_next ${definition}`);
    odd.close();
    const target = MaintenanceTarget.open({ dbPath: copy, lease: 'shared' });
    t.match(target.verify().find((c) => c.name === 'schema_objects'), { status: 'FAIL', detail: /fact_vec_next/ },
      `a plain table fact_vec_next ${definition}`);
    target.close();
  }

  const engine = await openEngine(dbPath);
  t.equal(engine.storedBinding, TEST_BINDING.bindingJson);
  await storeRow(engine, candidateRow({ fact: 'written after the interruption', scope_key: 'scope-a' }), 5);
  await engine.close();

  const report = await reembedDatabase({ dbPath, provider: new LocalHashProvider(), batchSize: 2 });
  t.match(report, { switched: true, records_embedded: 5, batches: 3 });
  const after = readDb(dbPath);
  t.notOk(after.hasNext);
  t.ok(after.vec.length === 5 && after.vec.every((v) => v.dim === 384));
  const target = MaintenanceTarget.open({ dbPath, lease: 'shared' });
  t.same(target.verify().filter((c) => c.status !== 'PASS'), []);
  target.close();
});

t.test('SIGINT or SIGTERM stops the fill before its next batch, switching nothing; a rerun succeeds', async (t) => {
  for (const signal of ['SIGINT', 'SIGTERM']) {
    const dbPath = join(t.testdir(), `${signal}.sqlite3`);
    await fixture(dbPath);
    const before = readDb(dbPath);
    const signals = new EventEmitter();
    const heard: [string, boolean][] = [];
    const run = reembedDatabase({ dbPath, provider: new LocalHashProvider(), batchSize: 2, signals,
      onSignal: (name, repeated) => heard.push([name, repeated]), onProgress: () => signals.emit(signal, signal) });
    await t.rejects(run, { name: 'Interrupted', message: new RegExp(`^reembed stopped by ${signal} before the switch: `
      + 'the database still serves its old vectors and profile; rerun reembed to switch$') }, signal);
    const stopped = readDb(dbPath);
    t.equal(stopped.bindingText, before.bindingText, `${signal}: old binding`);
    t.same(stopped.vec, before.vec, `${signal}: old vectors`);
    t.equal(signals.listenerCount(signal), 0, `${signal}: no listener left`);
    t.same(heard, [[signal, false]], `${signal}: heard once, as the first`);
    const rerun = await reembedDatabase({ dbPath, provider: new LocalHashProvider(), batchSize: 2 });
    t.match(rerun, { switched: true, records_embedded: before.vec.length }, `${signal}: the lease was given back`);
  }
});

t.test('a signal during the status check before the switch stops the run: nothing is switched, as it said',
  async (t) => {
  // The run said "switching nothing", then switched: the status check (an Ollama call, up to its timeout) came after
  // the last look at the signals.
  const dbPath = join(t.testdir(), 'status.sqlite3');
  await fixture(dbPath);
  const before = readDb(dbPath);
  const signals = new EventEmitter();
  let checks = 0;
  class SignalledDuringStatus extends LocalHashProvider {
    override async statusCheck() {
      checks += 1;
      if (checks === 2) signals.emit('SIGINT', 'SIGINT'); // the first is the run's start, the second before the switch
      return super.statusCheck();
    }
  }
  const run = reembedDatabase({
    dbPath, provider: new SignalledDuringStatus(), batchSize: 2, signals, onSignal: () => {},
  });
  await t.rejects(run, { name: 'Interrupted', message: /^reembed stopped by SIGINT before the switch/ });
  t.equal(checks, 2, 'stopped after the status check before the switch');
  t.equal(readDb(dbPath).bindingText, before.bindingText, 'the old binding');
  t.same(readDb(dbPath).vec, before.vec, 'the old vectors');
});

t.test('a signal during the switch transaction is said after it: the switch completed, exit 0, nothing said as '
  + '"switching nothing"', async (t) => {
  const dbPath = join(t.testdir(), 'switching.sqlite3');
  await fixture(dbPath);
  const signals = new EventEmitter();
  const heard: [string, boolean][] = [];
  const said: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string) => said.push(String(chunk)) > 0) as typeof process.stderr.write;
  t.teardown(() => { process.stderr.write = write; });
  // The binding's timestamp is read inside the switch transaction: the signal comes while it runs.
  const clock = () => {
    signals.emit('SIGINT', 'SIGINT');
    return SYSTEM_CLOCK();
  };
  const report = await reembedDatabase({ dbPath, provider: new LocalHashProvider(), batchSize: 2, signals, clock,
    onSignal: (name, repeated) => heard.push([name, repeated]) });
  process.stderr.write = write;
  t.match(report, { switched: true });
  t.same(heard, [], 'not said as a stop that switches nothing');
  t.equal(said.length, 1);
  t.match(said[0], new RegExp('^[\\w.-]+: SIGINT came during reembed\'s switch, which had begun and completed: the '
    + 'database serves the new vectors and profile\n$'));
  t.ok(readDb(dbPath).vec.every((v) => v.dim === 384), 'the new vectors are served');
  t.equal(signals.listenerCount('SIGINT'), 0, 'no listener left');
});

t.test('a signal during a slow embedding call is said at once; a second one is heard as a repeat', async (t) => {
  const dbPath = join(t.testdir(), 'slow.sqlite3');
  await fixture(dbPath);
  const signals = new EventEmitter();
  const heard: [string, boolean][] = [];
  let release = () => {};
  const held = new Promise<void>((resolve) => { release = resolve; });
  // The second batch's embedding call hangs (a slow Ollama) until both signals came.
  class Slow extends LocalHashProvider {
    #calls = 0;
    override async embedDocuments(texts: readonly string[]): Promise<Float32Array[]> {
      this.#calls += 1;
      if (this.#calls === 2) {
        signals.emit('SIGINT', 'SIGINT');
        signals.emit('SIGINT', 'SIGINT');
        await held;
      }
      return super.embedDocuments(texts);
    }
  }
  const run = reembedDatabase({ dbPath, provider: new Slow(), batchSize: 2, signals,
    onSignal: (name, repeated) => {
      heard.push([name, repeated]);
      if (repeated) release();
    } });
  await t.rejects(run, { name: 'Interrupted', message: /^reembed stopped by SIGINT before the switch/ });
  t.same(heard, [['SIGINT', false], ['SIGINT', true]], 'the first said, the second a repeat, while the call hung');
});

t.test('by default a repeated signal stops the process at once, exit 1, saying what it left', async (t) => {
  const script = "const m = await import(process.argv[1]); m.SAY_AND_STOP_AT_ONCE_ON_REPEAT('SIGTERM', true);";
  const child = spawnSync(process.execPath, ['--import', TS_IMPORT, '--input-type=module', '-e', script,
    join(REPO_ROOT, 'src/maintenance/reembed-operation.ts')], { encoding: 'utf8' });
  t.equal(child.status, 1, child.stderr);
  t.match(child.stderr, /reembed stopped at once by a second SIGTERM before the switch: the database still serves /);
});

t.test('a runtime fingerprint that changes before the switch fails with PROFILE_MISMATCH and switches nothing',
  async (t) => {
  const dbPath = join(t.testdir(), 'db.sqlite3');
  await fixture(dbPath);
  const before = readDb(dbPath);
  await t.rejects(reembedDatabase({ dbPath, provider: new FaultyProvider({ driftAfterFirstCheck: true }) }),
    { code: 'PROFILE_MISMATCH' });
  const after = readDb(dbPath);
  t.equal(after.bindingText, before.bindingText);
  t.same(after.vec, before.vec);
  t.same(after.records, before.records);
});

t.test('records changed during the fill are re-embedded before the switch', async (t) => {
  const dbPath = join(t.testdir(), 'db.sqlite3');
  await fixture(dbPath);
  const current = readDb(dbPath).vec.find((v) => v.is_current === 1)!;
  let injected = false;
  const report = await reembedDatabase({
    dbPath, provider: new LocalHashProvider(), batchSize: 2,
    onProgress: () => {
      if (injected) return;
      injected = true;
      rawWrite(dbPath, candidateRow({ fact: 'stored during the reembed', scope_key: 'scope-d' }), current.rowid);
    },
  });
  t.match(report, { switched: true, records_to_embed: 4, records_embedded: 5 });
  const after = readDb(dbPath);
  t.equal(after.vec.length, 5);
  t.ok(after.vec.every((v) => v.dim === 384));
  t.equal(after.vec.find((v) => v.rowid === current.rowid)!.is_current, 0, 'the superseded record lost is_current');
  t.equal(after.vec.find((v) => v.scope_key === 'scope-d')?.dim, 384, 'the new record has a new vector');
});

t.test('--dry-run reports the work and changes nothing', async (t) => {
  const dbPath = join(t.testdir(), 'db.sqlite3');
  await fixture(dbPath);
  const bytes = readFileSync(dbPath);
  const report = await reembedDatabase({ dbPath, provider: new LocalHashProvider(), dryRun: true, batchSize: 3 });
  t.match(report, { dry_run: true, records_to_embed: 4, records_embedded: 0, batches: 2, switched: false });
  t.type(report.estimated_ms, 'number');
  t.ok(readFileSync(dbPath).equals(bytes), 'byte-identical');
  t.notOk(readDb(dbPath).hasNext);
});

t.test('the CLI: usage errors exit 2, refusals exit 1, success prints the report', async (t) => {
  const dir = t.testdir();
  const dbPath = join(dir, 'db.sqlite3');
  await fixture(dbPath);
  for (const args of [['--profile', 'local-hash-384'], ['--db', dbPath], ['--db', dbPath, '--profile', 'nope'],
    ['--db', dbPath, '--profile', 'nomic-768', '--ollama-url', 'http://localhost:11434'],
    ['--db', dbPath, '--profile', 'local-hash-384', '--out', 'x']]) {
    t.equal(admin('reembed', ...args).status, 2, args.join(' '));
  }
  t.equal(admin('verify', '--db', dbPath, '--profile', 'local-hash-384').status, 2, 'reembed flags belong to reembed');

  const engine = await openEngine(dbPath);
  const busy = admin('reembed', '--db', dbPath, '--profile', 'local-hash-384');
  t.equal(busy.status, 1);
  t.match(busy.stderr, /^factlane-admin: MAINTENANCE_IN_PROGRESS: /m);
  await engine.close();

  const port = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = server.address() as { port: number };
      server.close(() => resolve(free));
    });
  });
  const down = admin('reembed', '--db', dbPath, '--profile', 'nomic-768', '--ollama-url', `http://127.0.0.1:${port}`);
  t.equal(down.status, 1, 'Ollama not reachable');
  t.match(down.stderr, /^factlane-admin: EMBEDDING_UNAVAILABLE: /m);

  const dry = admin('reembed', '--db', dbPath, '--profile', 'local-hash-384', '--dry-run', '--json');
  t.equal(dry.status, 0, dry.status === 0 ? 'dry run exits 0' : dry.stderr);
  t.match(JSON.parse(dry.stdout), { dry_run: true, records_to_embed: 4, switched: false });

  const run = admin('reembed', '--db', dbPath, '--profile', 'local-hash-384', '--json');
  t.equal(run.status, 0, run.status === 0 ? 'exit 0' : run.stderr);
  const report = JSON.parse(run.stdout);
  t.match(report, { from_profile: 'test-profile', to_profile: 'local-hash-384', records_embedded: 4, batches: 1,
    switched: true });
  t.type(report.db_identity, 'string');
  t.type(report.elapsed_ms, 'number');
  t.notMatch(run.stdout, dir, 'no path in the report');
  const lines = run.stderr.trim().split('\n').map((line) => JSON.parse(line) as ReembedProgress & { step: string });
  t.same(lines.filter((p) => p.step === 'batch').map((p) => [p.batch, p.done, p.total]), [[1, 4, 4]],
    'one JSON progress line per batch');
  t.same(lines.map((p) => p.step), ['lease_taken', 'provider_checked', 'planned', 'batch', 'switching', 'switched'],
    'the batches among the steps, switched last');
  t.equal(admin('verify', '--db', dbPath).status, 0);
});

t.test('a killed CLI run leaves the old binding usable and a rerun succeeds; Ctrl-C says what it left', async (t) => {
  const dbPath = join(t.testdir(), 'db.sqlite3');
  const engine = await openEngine(dbPath);
  await engine.write(async (trx) => {
    const { insertRecordUnchecked } = await import('../../src/storage/record-repository.js');
    for (let i = 0; i < 5000; i += 1) await insertRecordUnchecked(trx, candidateRow({ fact: `fact ${i} about the build`,
      scope_key: `scope-${i % 7}` }), { searchText: `fact ${i}`, embedding: unitVector(i) });
  });
  await engine.close();
  const before = readDb(dbPath);
  const args = [ADMIN_BIN, 'reembed', '--db', dbPath, '--profile', 'local-hash-384', '--json'];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  // Killed right after its first committed batch: the fill is under way, the switch far off.
  await new Promise<void>((resolve) =>
    child.stderr.on('data', (chunk: Buffer) => { if (chunk.includes('"batch"')) resolve(); }));
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  const killed = readDb(dbPath);
  t.equal(killed.bindingText, before.bindingText, 'old binding');
  t.same(killed.vec, before.vec, 'old vectors');
  t.ok(killed.hasNext, 'killed during the fill');
  const reopened = await openEngine(dbPath);
  await storeRow(reopened, candidateRow({ scope_key: 'scope-1' }));
  await reopened.close();
  // Ctrl-C (SIGINT) after a committed batch: one line on what was left, exit 1, not the signal's death.
  const interrupted = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  interrupted.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
  let stderr = '';
  await new Promise<void>((resolve) => interrupted.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (chunk.includes('"batch"')) resolve();
  }));
  interrupted.kill('SIGINT');
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
    interrupted.once('exit', (c, s) => resolve([c, s])));
  t.same([code, signal], [1, null], 'exit 1');
  t.match(stderr, /\nfactlane-admin: SIGINT: reembed stops before its next batch, switching nothing; send it again/);
  t.match(stderr, /\nfactlane-admin: reembed stopped by SIGINT before the switch: the database still serves its old /);
  // --json prints one report on stdout (OPERATIONS.md §1), a stopped run too; it printed nothing.
  t.match(JSON.parse(stdout), { interrupted_by: 'SIGINT', message: /^reembed stopped by SIGINT before the switch/ });
  t.equal(readDb(dbPath).bindingText, before.bindingText, 'old binding after Ctrl-C');
  const rerun = admin('reembed', '--db', dbPath, '--profile', 'local-hash-384', '--json');
  t.equal(rerun.status, 0, rerun.status === 0 ? 'rerun exits 0' : rerun.stderr);
  t.match(JSON.parse(rerun.stdout), { records_embedded: 5001, switched: true });
});
