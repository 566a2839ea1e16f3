import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MIGRATIONS_DIR } from '../../src/core/package-info.js';
import { auditFile } from '../../src/maintenance/audit-operation.js';
import { loadMigrationFiles } from '../../src/storage/migration-files.js';
import { connectBenchClient, factlaneArgs } from './bench-server.js';
import { percentile, roundTo } from './latency-stats.js';
import { progressLogger } from './bench-environment.js';

// The cross-process writer queue (STORAGE.md §6, docs/decisions/0018): 8 server processes writing to one
// database at once, 1 or 4 calls in flight each, with the queue and with SQLite's busy handling alone.

const PROCESSES = 8;
const WRITES_PER_PROCESS = 50;
const WARM_UP_PER_PROCESS = 10;
const IN_FLIGHT = [1, 4] as const;
/** Runs of each configuration, interleaved queue / no queue so drift of the machine hits both alike. */
const ROUNDS = 3;
const TARGET_P99_MS = 60;
const LAYOUTS: readonly Layout[] = ['queue', 'no_queue', 'separate_databases'];
const SCOPE = { scope: 'PROJECT', project_id: 'writer-queue-bench' } as const;
/** The launcher's bench-only switch (src/cli/factlane-launch.ts); no product flag. */
const QUEUE_ENV = 'FACTLANE_BENCH_WRITER_QUEUE';
const CLIENT_NAME = 'factlane-writer-queue-bench';
const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

type Envelope = { status: string; error_code?: string; results: { memory_id: string }[] };

function storeRequest(label: string, n: number): Record<string, unknown> {
  return {
    ...SCOPE, fact: `${label} write ${n}: shard ${n} of ${label} is drained by worker ${n % 13}`,
    memory_type: 'PROJECT_LEARNED_FACT', idempotency_key: `${label}-${n}`, freshness_policy: { kind: 'never' },
    source_provenance: {
      source_class: 'repo', source_ref: `jobs/${label}/${n}.yaml`, source_hash: 'cd'.repeat(32),
      review_ref: 'bench', extraction_method: 'manual',
    },
  };
}

async function call(client: Client, name: string, request: Record<string, unknown>): Promise<Envelope> {
  const result = (await client.callTool({ name, arguments: { request } })) as CallToolResult;
  if (result.isError) throw new Error(`${name} returned a tool error in the bench: ${JSON.stringify(result.content)}`);
  return result.structuredContent as Envelope;
}

/** `count` stores through `client`, `inFlight` at a time; each sample is one call's round trip. */
async function storeConcurrently(client: Client, label: string, count: number, inFlight: number) {
  const samples: number[] = [];
  const outcomes: Record<string, number> = {};
  const acknowledged: string[] = [];
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const n = next;
      next += 1;
      const started = performance.now();
      const envelope = await call(client, 'memory_store', storeRequest(label, n));
      samples.push(performance.now() - started);
      const outcome = envelope.status === 'BLOCKED' ? envelope.error_code ?? 'BLOCKED' : envelope.status;
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      if (envelope.status === 'OK') acknowledged.push(envelope.results[0]!.memory_id);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return { samples, outcomes, acknowledged };
}

/** How a run's servers share storage: one database with or without the queue, or one database each (the floor). */
type Layout = 'queue' | 'no_queue' | 'separate_databases';

/** One run: fresh database(s), 8 servers, warm-up, then the measured stores at once; read back by fresh processes. */
async function runOnce(dir: string, layout: Layout, inFlight: number, round: number) {
  const label = `r${round}-${layout}-f${inFlight}`;
  const own = layout === 'separate_databases';
  const dbPaths = Array.from({ length: PROCESSES },
    (_, p) => join(dir, own ? `${label}-p${p}.sqlite3` : `${label}.sqlite3`));
  const env: Record<string, string> = layout === 'no_queue' ? { [QUEUE_ENV]: 'off' } : {};
  const clients: Client[] = [];
  for (let p = 0; p < PROCESSES; p += 1) {
    const args = factlaneArgs('--db', dbPaths[p]!, '--host-id', `bench-p${p}`, '--write-profile',
      'delegated-candidate');
    clients.push((await connectBenchClient(CLIENT_NAME, args, env)).client);
  }
  const storeAll = (label: string, count: number) =>
    Promise.all(clients.map((client, p) => storeConcurrently(client, `${label}-p${p}`, count, inFlight)));
  await storeAll(`${label}-warm`, WARM_UP_PER_PROCESS);
  const started = performance.now();
  const runs = await storeAll(label, WRITES_PER_PROCESS);
  const elapsedMs = performance.now() - started;
  await Promise.all(clients.map((client) => client.close()));

  // A fresh process reads every acknowledged memory back: a write it cannot find was lost.
  let found = 0;
  for (const dbPath of new Set(dbPaths)) {
    const reader = (await connectBenchClient(CLIENT_NAME,
      factlaneArgs('--db', dbPath, '--host-id', 'bench-reader'))).client;
    for (const [p, run] of runs.entries()) {
      if (dbPaths[p] !== dbPath) continue;
      for (const memoryId of run.acknowledged) {
        const request = { ...SCOPE, memory_id: memoryId, retrieval_mode: 'REVIEW_HISTORY' };
        const envelope = await call(reader, 'memory_get', request);
        if (envelope.status === 'OK' && envelope.results[0]?.memory_id === memoryId) found += 1;
      }
    }
    await reader.close();
  }
  // `factlane-admin audit` of each database once every server has gone: the lineage invariants L1-L10 and the rest.
  const shipped = loadMigrationFiles(MIGRATIONS_DIR);
  const auditFindings = [...new Set(dbPaths)].flatMap((dbPath) => auditFile(dbPath, shipped).checks)
    .filter((check) => check.status === 'FAIL').map((check) => `${check.name}: ${check.count}`);
  const acknowledged = runs.flatMap((run) => run.acknowledged);
  const outcomes: Record<string, number> = {};
  for (const run of runs) for (const [key, n] of Object.entries(run.outcomes)) outcomes[key] = (outcomes[key] ?? 0) + n;
  return {
    samples: runs.flatMap((run) => run.samples), perProcessP99: runs.map((run) => p(run.samples, 99)),
    outcomes, acknowledged: acknowledged.length, found, elapsedMs, auditFindings,
  };
}

function p(samples: readonly number[], rank: number): number {
  return roundTo(percentile([...samples].sort((a, b) => a - b), rank), 1);
}

type Run = Awaited<ReturnType<typeof runOnce>>;

function summarise(runs: readonly Run[]) {
  const samples = runs.flatMap((run) => run.samples);
  const busy = sum(runs.map((run) => run.outcomes.BACKEND_BUSY ?? 0));
  const lost = sum(runs.map((run) => run.acknowledged - run.found));
  return {
    writes: samples.length,
    p50_ms: p(samples, 50),
    p95_ms: p(samples, 95),
    p99_ms: p(samples, 99),
    max_ms: p(samples, 100),
    p99_ms_by_round: runs.map((run) => p(run.samples, 99)),
    worst_process_p99_ms_by_round: runs.map((run) => Math.max(...run.perProcessP99)),
    writes_per_s_by_round: runs.map((run) => roundTo(run.samples.length / (run.elapsedMs / 1000), 1)),
    backend_busy: busy,
    lost_writes: lost,
    audit_findings: runs.flatMap((run) => run.auditFindings),
    fresh_process_read_back: `${sum(runs.map((run) => run.found))} of ` +
      `${sum(runs.map((run) => run.acknowledged))} acknowledged`,
    outcomes: runs.reduce<Record<string, number>>((all, run) => {
      for (const [key, n] of Object.entries(run.outcomes)) all[key] = (all[key] ?? 0) + n;
      return all;
    }, {}),
  };
}

/**
 * 8 server processes × 50 Candidate stores each on one database, with 1 and with 4 calls in flight per
 * process, with the writer queue and without it (the launcher's bench-only FACTLANE_BENCH_WRITER_QUEUE=off),
 * and beside them the floor: the same 8 processes each on a database of its own, so no write ever waits for
 * another process and what is left is the machine (CPU, stdio, fsync). ROUNDS runs of each, interleaved.
 * Per configuration: p50/p95/p99/max of all calls, p99 per round and of the worst process, writes/s per
 * round, the BACKEND_BUSY count, lost writes as fresh server processes read every acknowledged one back, and the
 * checks `factlane-admin audit` fails on each database afterwards.
 */
export async function runWriterQueueBench(): Promise<Record<string, unknown>> {
  const log = progressLogger('write-queue');
  const dir = mkdtempSync(join(tmpdir(), 'factlane-writer-queue-bench-'));
  try {
    const results: Record<string, Run[]> = {};
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const inFlight of IN_FLIGHT) {
        for (const layout of LAYOUTS) {
          log(`round ${round + 1}/${ROUNDS}: ${PROCESSES} processes × ${WRITES_PER_PROCESS} stores, `
            + `${inFlight} in flight, `
            + layout);
          (results[`in_flight_${inFlight}_${layout}`] ??= []).push(await runOnce(dir, layout, inFlight, round));
        }
      }
    }
    const report = Object.fromEntries(Object.entries(results).map(([key, runs]) => [key, summarise(runs)]));
    const target = report.in_flight_4_queue!;
    return {
      processes: PROCESSES,
      writes_per_process: WRITES_PER_PROCESS,
      warm_up_per_process: WARM_UP_PER_PROCESS,
      rounds: ROUNDS,
      ...report,
      target: `in flight 4 with the queue: p99 <= ${TARGET_P99_MS} ms, 0 BACKEND_BUSY, 0 lost, 0 audit findings`,
      target_met: target.p99_ms <= TARGET_P99_MS && target.backend_busy === 0 && target.lost_writes === 0
        && target.audit_findings.length === 0,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
