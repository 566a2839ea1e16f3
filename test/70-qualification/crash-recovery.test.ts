// Qualification: SIGKILL of the built server while memory_store requests are in flight (CONTRACT.md §13.1,
// §13.2; STORAGE.md §6-§7). A restarted server on the same database answers every resent request either
// as a replay (it was committed before the kill, whether or not its answer got out) or as a fresh write
// (it was not): never IDEMPOTENCY_CONFLICT, never a partial record.
import t, { type Test } from 'tap';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startLauncher } from '../helpers/mcp.js';
import { RawDatabase, tableCounts } from '../helpers/storage.js';

const ITERATIONS = 20;
/** Iterations (by number) that kill right after sending a single request: it is not committed yet. */
const SINGLE_REQUEST_ITERATIONS = new Set([3, 8, 13, 18]);
/**
 * Iterations that send a single request with the client not reading the server's stdout, wait until its record
 * is committed, then kill the server and discard whatever answer it wrote: committed, answer lost. Random kill
 * delays alone hit that window only by chance.
 */
const LOST_ANSWER_ITERATIONS = new Set([5, 10, 15, 20]);
const COMMIT_WAIT_MS = 20_000;
const BURST = 12;
const HOST_ID = 'crash-host';
const SCOPE = { scope: 'PROJECT', project_id: 'crash-project' } as const;

type Envelope = {
  status: string; error_code?: string; idempotent_replay?: boolean;
  results: { record_id: string; fact: string; lifecycle_state: string }[];
};
type Sent = { request: Record<string, unknown>; first: Envelope | null };

const nowText = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

/** The built launcher as an owner-current server on `dbPath`, through the SDK stdio client. */
const startServer = (t: Test, dbPath: string) =>
  startLauncher(t, ['--db', dbPath, '--host-id', HOST_ID, '--write-profile', 'owner-current'], 'factlane-crash');
type Server = Awaited<ReturnType<typeof startServer>>;

/** Sends memory_store; resolves with the envelope, or null when the connection died first. Tool errors throw. */
async function store(server: Server, request: Record<string, unknown>): Promise<Envelope> {
  const result = (await server.client.callTool({ name: 'memory_store', arguments: { request } })) as CallToolResult;
  if (result.isError) throw new Error(`memory_store returned isError: ${JSON.stringify(result.content)}`);
  return result.structuredContent as Envelope;
}

/** A store request: even numbers ask for a current fact, odd ones for a Candidate; each fact has its own subject. */
function storeRequest(iteration: number, index: number): Record<string, unknown> {
  const now = nowText();
  const current = index % 2 === 0;
  return {
    ...SCOPE,
    fact: `crash ${iteration}-${index}: the worker pool of service ${iteration * 100 + index} has ${index + 2} threads`,
    memory_type: 'PROJECT_LEARNED_FACT', idempotency_key: `crash-${iteration}-${index}`,
    freshness_policy: { kind: 'never' },
    source_provenance: {
      source_class: 'repo', source_ref: `config/service-${iteration}-${index}.toml`, source_hash: 'cd'.repeat(32),
      review_ref: 'crash-review', extraction_method: 'manual',
    },
    ...(
      current ? { requested_lifecycle_state: 'VALIDATED_CURRENT', source_timestamp: now, last_verified_at: now }
        : { tags: [`batch-${iteration}`] }
    ),
  };
}

/** Resolves once a record with `idempotencyKey` is committed in `dbPath`, read on a raw read-only connection. */
async function committed(dbPath: string, idempotencyKey: string): Promise<void> {
  const deadline = performance.now() + COMMIT_WAIT_MS;
  const db = new RawDatabase(dbPath, { readonly: true });
  try {
    const find = db.prepare('SELECT 1 FROM adapter_records WHERE idempotency_key = ?');
    while (find.get(idempotencyKey) === undefined) {
      if (performance.now() > deadline)
        throw new Error(`${idempotencyKey} was not committed within ${COMMIT_WAIT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  } finally {
    db.close();
  }
}

/** Record, FTS and vector counts of the crashed database, read before any server reopens it. */
function crashedCounts(dbPath: string) {
  const counts = tableCounts(dbPath);
  return { records: counts.records, fts: counts.fts, vec: counts.vec };
}

t.test('SIGKILL during memory_store bursts: every resent request replays or writes fresh, nothing ' +
  'partial', async (t) => {
  const dbPath = join(t.testdir(), 'crash.sqlite3');
  const sentKeys = new Set<string>();
  const tally = {
    sent: 0, answered_before_kill: 0, replay_after_answer: 0, replay_after_lost_answer: 0, fresh_after_kill: 0,
  };
  const problems: string[] = [];

  let server = await startServer(t, dbPath);

  // Calibration: one burst answered in full, to size the kill delays to this machine.
  const calibrationStart = performance.now();
  const calibration: Sent[] = [];
  for (let index = 0; index < BURST; index += 1) calibration.push({ request: storeRequest(0, index), first: null });
  await Promise.all(calibration.map(async (sent) => { sent.first = await store(server, sent.request); }));
  const burstMs = performance.now() - calibrationStart;
  t.ok(
    calibration.every((sent) => sent.first?.status === 'OK' && sent.first.idempotent_replay === undefined),
    'the calibration burst is stored',
  );
  for (const sent of calibration) sentKeys.add(sent.request.idempotency_key as string);
  tally.sent += calibration.length;

  for (let iteration = 1; iteration <= ITERATIONS; iteration += 1) {
    const lostAnswer = LOST_ANSWER_ITERATIONS.has(iteration);
    const single = SINGLE_REQUEST_ITERATIONS.has(iteration) || lostAnswer;
    const batch: Sent[] = [];
    for (let index = 0; index < (single ? 1 : BURST); index += 1)
      batch.push({ request: storeRequest(iteration, index), first: null });
    for (const sent of batch) sentKeys.add(sent.request.idempotency_key as string);
    tally.sent += batch.length;

    const victim = server;
    if (lostAnswer) victim.child.stdout!.pause(); // the answer stays unread in the pipe
    const pending = batch.map(async (sent) => {
      try {
        sent.first = await store(victim, sent.request);
      } catch (error) {
        if (!/closed/i.test((error as Error).message)) throw error; // only a dead connection may lose the answer
      }
    });
    if (lostAnswer) {
      await committed(dbPath, batch[0]!.request.idempotency_key as string);
      victim.child.kill('SIGKILL');
      victim.child.stdout!.destroy(); // the answer, if the server wrote it before the kill, never reaches the client
    } else if (single) {
      victim.child.kill('SIGKILL');
    } else {
      await new Promise((resolve) => setTimeout(resolve, Math.random() * burstMs));
      victim.child.kill('SIGKILL');
    }
    await Promise.all(pending);
    const exit = await victim.exited;
    if (exit.signal !== 'SIGKILL')
      problems.push(`iteration ${iteration}: the server ended with ${JSON.stringify(exit)} before the kill`);
    await victim.client.close();

    const counts = crashedCounts(dbPath);
    if (counts.fts !== counts.records || counts.vec !== counts.records)
      problems.push(`iteration ${iteration}: after SIGKILL ${JSON.stringify(counts)}`);

    for (const sent of batch) {
      if (sent.first === null) continue;
      tally.answered_before_kill += 1;
      if (sent.first.status !== 'OK' || sent.first.idempotent_replay)
        problems.push(`iteration ${iteration}: first answer ${sent.first.status} ${sent.first.error_code ?? ''}`);
    }

    server = await startServer(t, dbPath);
    for (const sent of batch) {
      const again = await store(server, sent.request);
      const key = sent.request.idempotency_key as string;
      if (again.status !== 'OK' || again.results[0]?.fact !== sent.request.fact) {
        problems.push(`${key}: resend gave ${again.status} ${again.error_code ?? ''}`);
      } else if (sent.first !== null) {
        if (again.idempotent_replay !== true || again.results[0]!.record_id !== sent.first.results[0]!.record_id)
          problems.push(`${key}: answered before the kill but not replayed as the same record`);
        else tally.replay_after_answer += 1;
      } else if (again.idempotent_replay === true) {
        tally.replay_after_lost_answer += 1;
      } else {
        tally.fresh_after_kill += 1;
      }
    }
  }
  // The calibration burst replays too, from the last restarted process.
  for (const sent of calibration) {
    const again = await store(server, sent.request);
    if (again.idempotent_replay !== true || again.results[0]?.record_id !== sent.first!.results[0]!.record_id)
      problems.push(`${sent.request.idempotency_key}: calibration request not replayed`);
  }

  t.comment(`burst of ${BURST} took ${Math.round(burstMs)} ms; ${JSON.stringify(tally)}`);
  t.same(problems, [], 'no IDEMPOTENCY_CONFLICT, no other outcome, no partial record at any crash point, answered ' +
    'requests replay as the same record');
  t.ok(tally.replay_after_lost_answer >= LOST_ANSWER_ITERATIONS.size, 'requests committed but with their answer lost ' +
    '(kill between commit and response) replay');
  t.ok(tally.fresh_after_kill > 0, 'some requests were not committed before the kill: the resend writes them fresh');
  t.equal(tally.replay_after_answer, tally.answered_before_kill, 'every request answered before the kill replays');

  await server.client.close();
  t.same(await server.exited, { code: 0, signal: null }, 'the last server exits 0');

  const db = new RawDatabase(dbPath, { readonly: true });
  try {
    t.same(
      (db.prepare('PRAGMA quick_check').all() as { quick_check: string }[]).map((r) => r.quick_check), ['ok'],
      'PRAGMA quick_check is ok',
    );
    const keys =
      (db.prepare('SELECT idempotency_key FROM adapter_records').all() as { idempotency_key: string }[]).map(
        (r) => r.idempotency_key,
      );
    t.equal(keys.length, tally.sent, 'one record per request sent: each committed exactly once');
    t.same(keys.filter((key) => !sentKeys.has(key)), [], 'every record carries an idempotency key this test sent');
    const lifecycles = db.prepare('SELECT lifecycle_state, count(*) AS n FROM adapter_records GROUP BY ' +
      'lifecycle_state ORDER BY lifecycle_state').all();
    const currentRequested = [...sentKeys].filter((key) => Number(key.split('-')[2]) % 2 === 0).length;
    t.same(
      lifecycles,
      [{ lifecycle_state: 'CANDIDATE', n: tally.sent - currentRequested }, {
        lifecycle_state: 'VALIDATED_CURRENT', n: currentRequested,
      }],
      'each record has the lifecycle its request asked for',
    );
  } finally {
    db.close();
  }
  const counts = tableCounts(dbPath);
  t.equal(counts.fts, counts.records, 'one fact_fts row per record');
  t.equal(counts.vec, counts.records, 'one fact_vec row per record');
});
