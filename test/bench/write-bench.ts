import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { probeRuntime } from '../../src/storage/runtime-probe.js';
import { openBenchEngine, openRawBaselineConnection } from './bench-engine.js';
import { BenchRecordStatements, benchScope, benchTimestamp, makeBenchRecord } from './bench-records.js';
import { FactVocabulary } from './fact-vocabulary.js';
import { SeededRandom } from './seeded-random.js';
import { databaseBytes, describeEnvironment, progressLogger } from './bench-environment.js';
import { connectBenchClient, ECHO_SERVER, factlaneArgs } from './bench-server.js';
import { roundTo, summarizeLatencies } from './latency-stats.js';
import { runWriterQueueBench } from './writer-queue-bench.js';

const CANDIDATE_STORES = 2000;
const CURRENT_STORES = 1000;
const CONCURRENT_PROCESSES = 4;
const CONCURRENT_STORES_EACH = 1000;
const WARM_UP = 100;
const TARGET_PER_S = 1000;
const FLOOR_TRANSACTIONS = 2000;
const FLOOR_ECHOES = 1000;
const SCOPE = { scope: 'PROJECT', project_id: 'write-bench' } as const;

type Envelope = { status: string; error_code?: string; results: { memory_id: string; revision: number }[] };

/** Now as a contract timestamp (whole seconds), so current writes are fresh at admission. */
const nowText = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

async function connect(dbPath: string, hostId: string, writeProfile: string): Promise<Client> {
  return (await connectBenchClient('factlane-write-bench',
    factlaneArgs('--db', dbPath, '--host-id', hostId, '--write-profile', writeProfile))).client;
}

/** A store request with its own fact (so never DUPLICATE or CONTRADICTION) and key. */
function storeRequest(label: string, n: number, current: boolean): Record<string, unknown> {
  const now = nowText();
  return {
    ...SCOPE, fact: `${label} ${n}: the ingest job of shard ${n} writes to bucket ${label}-${n % 97}`,
    memory_type: 'PROJECT_LEARNED_FACT',
    idempotency_key: `${label}-${n}`, freshness_policy: { kind: 'never' },
    source_provenance: { source_class: 'repo', source_ref: `jobs/${label}/${n}.yaml`, source_hash: 'ef'.repeat(32),
      review_ref: 'bench', extraction_method: 'manual' },
    ...(current ? { requested_lifecycle_state: 'VALIDATED_CURRENT', source_timestamp: now,
      last_verified_at: now } : {}),
  };
}

/** Counts envelope statuses (error codes for BLOCKED) while timing each sequential call. */
class Tally {
  readonly samples: number[] = [];
  readonly outcomes: Record<string, number> = {};

  async call(client: Client, name: string, request: Record<string, unknown>): Promise<Envelope> {
    const started = performance.now();
    const result = (await client.callTool({ name, arguments: { request } })) as CallToolResult;
    this.samples.push(performance.now() - started);
    if (result.isError) throw new Error(
      `${name} returned a tool error during the bench: ${JSON.stringify(result.content)}`);
    const envelope = result.structuredContent as Envelope;
    const outcome = envelope.status === 'BLOCKED' ? envelope.error_code ?? 'BLOCKED' : envelope.status;
    this.outcomes[outcome] = (this.outcomes[outcome] ?? 0) + 1;
    return envelope;
  }
}

function rate(count: number, elapsedMs: number): number {
  return roundTo(count / (elapsedMs / 1000), 1);
}

/** `count` sequential stores through `client`; returns the tally, elapsed wall time and the stored records. */
async function sequentialStores(client: Client, label: string, count: number, current: boolean) {
  const tally = new Tally();
  const stored: Envelope['results'] = [];
  const started = performance.now();
  for (let n = 0; n < count; n += 1) {
    const envelope = await tally.call(client, 'memory_store', storeRequest(label, n, current));
    if (envelope.status === 'OK') stored.push(envelope.results[0]!);
  }
  return { tally, elapsedMs: performance.now() - started, stored };
}

/**
 * What a sequential store cannot go below on this machine: the raw better-sqlite3 transaction a store
 * commits (record + FTS5 row + vector, BEGIN IMMEDIATE, synchronous=FULL, no checks, no reads), and a
 * bare SDK echo over stdio carrying a store request and a store envelope. Their sum bounds stores/s
 * from above before any of FactLane's own work (CONTRACT.md §13.1: validation, pre-checks, embedding,
 * the checks repeated under the lock, read-back, the contradiction summary, budgets).
 */
async function measureFloors(dir: string, request: Record<string, unknown>,
  envelope: Record<string, unknown>): Promise<Record<string, unknown>> {
  const dbPath = join(dir, 'floor.sqlite3');
  await (await openBenchEngine(dbPath)).close();
  const connection = openRawBaselineConnection(dbPath);
  const rng = new SeededRandom(0x5eed0004);
  const vocabulary = new FactVocabulary(rng);
  const scope = benchScope(
    { scope: 'PROJECT', project_id: 'write-bench-floor', worktree_id: null, workflow_id: null, agent_id: null });
  const statements = new BenchRecordStatements(connection);
  const transaction = connection.transaction((record: ReturnType<typeof makeBenchRecord>) => statements.insert(record));
  const transactionSamples: number[] = [];
  for (let n = 0; n < FLOOR_TRANSACTIONS + WARM_UP; n += 1) {
    const record = makeBenchRecord(rng, scope, vocabulary.factText(rng), false, benchTimestamp(n));
    const started = performance.now();
    transaction.immediate(record);
    if (n >= WARM_UP) transactionSamples.push(performance.now() - started);
  }
  connection.close();
  const echo = (await connectBenchClient('factlane-write-bench', [ECHO_SERVER])).client;
  // Both payloads alternate, after a warm-up of both, so neither pays for the echo server's warm-up.
  const samples = { request: [] as number[], envelope: [] as number[] };
  for (let n = 0; n < FLOOR_ECHOES + WARM_UP; n += 1) {
    for (const kind of ['request', 'envelope'] as const) {
      const started = performance.now();
      await echo.callTool({ name: 'echo', arguments: { request: kind === 'request' ? request : envelope } });
      if (n >= WARM_UP) samples[kind].push(performance.now() - started);
    }
  }
  const requestEcho = summarizeLatencies(samples.request, 'ms');
  const envelopeEcho = summarizeLatencies(samples.envelope, 'ms');
  await echo.close();
  const transactionLatency = summarizeLatencies(transactionSamples, 'ms');
  const floorMs = transactionLatency.p50_ms! + envelopeEcho.p50_ms!;
  return {
    raw_store_transaction: transactionLatency,
    sdk_echo_of_store_request: requestEcho,
    sdk_echo_of_store_envelope: { ...envelopeEcho, envelope_bytes: Buffer.byteLength(JSON.stringify(envelope)) },
    floor_p50_ms: roundTo(floorMs, 3),
    floor_stores_per_s: roundTo(1000 / floorMs, 1),
    floor_basis: 'raw transaction p50 + SDK echo of a store envelope p50 (an upper bound on sequential stores/s)',
  };
}

function report(tally: Tally, elapsedMs: number, rateKey: string) {
  const perSecond = rate(tally.samples.length, elapsedMs);
  return { [rateKey]: perSecond, latency: summarizeLatencies(tally.samples, 'ms'), outcomes: tally.outcomes,
    target_per_s: TARGET_PER_S, target_met: perSecond >= TARGET_PER_S };
}

/**
 * The `write` suite, over stdio against the built `factlane` binary (synchronous=FULL, one fresh database
 * per measurement in a temp folder removed at the end):
 * (1) sequential Candidate stores through a `delegated-candidate` launcher, then the floors beside them
 * (the raw store transaction and a bare SDK echo of a store envelope, see measureFloors);
 * (2) sequential current stores, then one sequential REVERIFY of each, through an `owner-current` launcher;
 * (3) four server processes on one database, each with its own client storing Candidates sequentially,
 * all at once: total and per-process throughput and the BACKEND_BUSY count (target: none);
 * (4) eight server processes × 50 stores, 1 and 4 calls in flight each, with and without the cross-process
 * writer queue (writer-queue-bench.ts; also runnable alone as the `write-queue` suite).
 * Each measurement follows 100 warm-up calls that are not counted (measurement 4: 10 per process).
 */
export async function runWriteBench(): Promise<Record<string, unknown>> {
  const log = progressLogger('write');
  const dir = mkdtempSync(join(tmpdir(), 'factlane-write-bench-'));
  try {
    const environment = describeEnvironment(dir, probeRuntime());

    log(`measurement 1: ${CANDIDATE_STORES} sequential Candidate stores`);
    const candidateDb = join(dir, 'candidates.sqlite3');
    const delegated = await connect(candidateDb, 'bench-delegated', 'delegated-candidate');
    await sequentialStores(delegated, 'warm', WARM_UP, false);
    const candidates = await sequentialStores(delegated, 'candidate', CANDIDATE_STORES, false);
    const sampleEnvelope = (await delegated.callTool({ name: 'memory_store',
      arguments: { request: storeRequest('sample', 0, false) } })).structuredContent as Record<string, unknown>;
    await delegated.close();

    log('floors: raw store transaction, SDK echo of a store request and envelope');
    const floors = await measureFloors(dir, storeRequest('floor', 0, false), sampleEnvelope);

    log(`measurement 2: ${CURRENT_STORES} sequential current stores, then a REVERIFY of each`);
    const currentDb = join(dir, 'current.sqlite3');
    const owner = await connect(currentDb, 'bench-owner', 'owner-current');
    const warmCurrent = await sequentialStores(owner, 'warm', WARM_UP, true);
    const reverify = (tally: Tally, record: Envelope['results'][number], n: number,
      label: string) => tally.call(owner, 'memory_update', {
      ...SCOPE, memory_id: record.memory_id, expected_revision: record.revision, mode: 'REVERIFY',
      idempotency_key: `${label}-reverify-${n}`,
      verification: { source_timestamp: nowText() },
    });
    const warmTally = new Tally();
    for (const [n, record] of warmCurrent.stored.entries()) await reverify(warmTally, record, n, 'warm');
    const currents = await sequentialStores(owner, 'current', CURRENT_STORES, true);
    const reverifyTally = new Tally();
    const reverifyStarted = performance.now();
    for (const [n, record] of currents.stored.entries()) await reverify(reverifyTally, record, n, 'current');
    const reverifyMs = performance.now() - reverifyStarted;
    await owner.close();

    log(`measurement 3: ${CONCURRENT_PROCESSES} server processes × ${CONCURRENT_STORES_EACH} Candidate stores at once`);
    const sharedDb = join(dir, 'shared.sqlite3');
    const clients: Client[] = [];
    for (let p = 0; p < CONCURRENT_PROCESSES; p += 1) clients.push(
      await connect(sharedDb, `bench-p${p}`, 'delegated-candidate'));
    await Promise.all(clients.map((client, p) => sequentialStores(client, `warm-p${p}`, WARM_UP / 4, false)));
    const concurrentStarted = performance.now();
    const perProcess = await Promise.all(
      clients.map((client, p) => sequentialStores(client, `shared-p${p}`, CONCURRENT_STORES_EACH, false)));
    const concurrentMs = performance.now() - concurrentStarted;
    await Promise.all(clients.map((client) => client.close()));
    const allSamples = perProcess.flatMap((run) => run.tally.samples);
    const outcomes: Record<string, number> = {};
    for (const run of perProcess) for (const [key, n] of Object.entries(
      run.tally.outcomes)) outcomes[key] = (outcomes[key] ?? 0) + n;
    const busy = outcomes.BACKEND_BUSY ?? 0;
    const totalRate = rate(allSamples.length, concurrentMs);

    log('measurement 4: the cross-process writer queue, 8 server processes');
    const writerQueue = await runWriterQueueBench();

    return {
      environment,
      synchronous: 'FULL',
      floors,
      candidate_store_sequential: { count: CANDIDATE_STORES,
        ...report(candidates.tally, candidates.elapsedMs, 'stores_per_s'), ...databaseBytes(candidateDb) },
      current_store_sequential: { count: CURRENT_STORES,
        ...report(currents.tally, currents.elapsedMs, 'stores_per_s') },
      reverify_sequential: { count: reverifyTally.samples.length,
        ...report(reverifyTally, reverifyMs, 'reverify_per_s') },
      concurrent_processes: {
        processes: CONCURRENT_PROCESSES,
        stores_per_process: CONCURRENT_STORES_EACH,
        total_stores_per_s: totalRate,
        per_process_stores_per_s: perProcess.map((run) => rate(run.tally.samples.length, run.elapsedMs)),
        latency: summarizeLatencies(allSamples, 'ms'),
        outcomes,
        backend_busy: busy,
        backend_busy_target: 0,
        target_met: busy === 0,
      },
      cross_process_writer_queue: writerQueue,
      targets_met: {
        candidate_stores_per_s: candidates.tally.samples.length / (candidates.elapsedMs / 1000) >= TARGET_PER_S,
        reverify_per_s: reverifyTally.samples.length / (reverifyMs / 1000) >= TARGET_PER_S,
        no_backend_busy_with_4_processes: busy === 0,
        writer_queue_8_processes_4_in_flight: writerQueue.target_met,
      },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
