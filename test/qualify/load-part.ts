import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { roundTo, percentile } from '../bench/latency-stats.js';
import { SeededRandom } from '../bench/seeded-random.js';
import { AckedWrites, integrityOf, lostWrites } from './acked-writes.js';
import type { PartReport, QualifyPart, QualifyProfile } from './qualify-report.js';
import { QualifyRequests, SEARCH_KINDS, type RetrievalMode } from './qualify-requests.js';
import {
  ADMIN_BIN, ChildRegistry, outcomeLabel, runCommand, ServedProcess, type CallOutcome, type PublicRecord,
} from './server-fleet.js';

// Part 1 of `npm run qualify` (issue 13): 8 server processes on one database for a bounded soak, several calls in
// flight each, then a fresh read-only connection checks every acknowledged write, and the audit, integrity_check
// and FTS integrity-check run on the file once every server has exited.

const PROCESSES = 8;
/**
 * Processes 0..OWNERS-1 run owner-current (current stores, REVERIFY, promotions, REPLACE); the rest
 * delegated-candidate.
 */
const OWNERS = 4;
const IN_FLIGHT = 4;
const SOAK_MS: Record<QualifyProfile, number> = { quick: 22_000, full: 290_000 };
/** Stores each process makes before the soak starts, so every pool has something to claim. */
const SEED_STORES = 6;
const PROJECT_ID = 'qualify-load';
const SEED = 0x10ad0001;

type Operation =
  'store_candidate' | 'store_current' | 'reverify' | 'promote' | 'replace' | 'get' | 'search_exact' | 'search_keyword'
  | 'search_semantic' | 'search_hybrid' | 'status';

/** Relative weights of each operation by role; a write with nothing to claim falls back to a store. */
const OWNER_MIX: readonly [Operation, number][] = [
  ['store_current', 14], ['reverify', 12], ['promote', 10], ['replace', 8], ['get', 14],
  ['search_exact', 8], ['search_keyword', 8], ['search_semantic', 8], ['search_hybrid', 8], ['status', 4],
];
const DELEGATED_MIX: readonly [Operation, number][] = [
  ['store_candidate', 34], ['get', 18], ['search_exact', 10], ['search_keyword', 10], ['search_semantic', 10],
  ['search_hybrid', 10], ['status', 8],
];

function choose(rng: SeededRandom, mix: readonly [Operation, number][]): Operation {
  const total = mix.reduce((sum, [, weight]) => sum + weight, 0);
  let draw = rng.next() * total;
  for (const [operation, weight] of mix) {
    draw -= weight;
    if (draw < 0) return operation;
  }
  return mix[mix.length - 1]![0];
}

/** A pool of records a lane can claim for an update: claimed records are out of the pool until the call ends. */
class ClaimPool {
  readonly #records: PublicRecord[] = [];

  put(record: PublicRecord): void {
    this.#records.push(record);
  }

  claim(rng: SeededRandom): PublicRecord | undefined {
    if (this.#records.length === 0) return undefined;
    const index = rng.int(this.#records.length);
    const record = this.#records[index]!;
    this.#records[index] = this.#records[this.#records.length - 1]!;
    this.#records.pop();
    return record;
  }
}

/** What the soak shares across processes and lanes. */
class Soak {
  readonly acked = new AckedWrites();
  readonly candidates = new ClaimPool();
  readonly currents = new ClaimPool();
  readonly samples = new Map<Operation, number[]>();
  readonly outcomes = new Map<Operation, Record<string, number>>();
  /** Calls that ended without an envelope (tool error, lost connection, timeout). */
  callFailures = 0;
  backendBusy = 0;

  record(operation: Operation, outcome: CallOutcome): void {
    const samples = this.samples.get(operation) ?? [];
    samples.push(outcome.ms);
    this.samples.set(operation, samples);
    const counts = this.outcomes.get(operation) ?? {};
    const label = outcomeLabel(outcome);
    counts[label] = (counts[label] ?? 0) + 1;
    this.outcomes.set(operation, counts);
    if (outcome.envelope === null) this.callFailures += 1;
    else if (outcome.envelope.error_code === 'BACKEND_BUSY') this.backendBusy += 1;
  }

  /** The written record of an OK write, recorded as acknowledged; undefined otherwise. */
  written(outcome: CallOutcome): PublicRecord | undefined {
    const record = outcome.envelope?.status === 'OK' ? outcome.envelope.results[0] : undefined;
    if (record !== undefined) this.acked.add(record);
    return record;
  }

  /** A random acknowledged write (for gets and EXACT searches). */
  known(rng: SeededRandom): { memory_id: string; fact: string } | undefined {
    const all = this.acked.all();
    return all.length === 0 ? undefined : all[rng.int(all.length)];
  }
}

/** One lane of one process: calls one at a time until the deadline; IN_FLIGHT lanes run per process. */
async function lane(
  server: ServedProcess, owner: boolean, requests: QualifyRequests, rng: SeededRandom, soak: Soak, deadline: number,
): Promise<number> {
  let calls = 0;
  while (performance.now() < deadline) {
    let operation = choose(rng, owner ? OWNER_MIX : DELEGATED_MIX);
    const claimed = operation === 'promote' ? soak.candidates.claim(rng)
      : operation === 'reverify' || operation === 'replace' ? soak.currents.claim(rng) : undefined;
    if ((operation === 'promote' || operation === 'reverify' || operation === 'replace') && claimed === undefined)
      operation = 'store_current';
    const mode: RetrievalMode = rng.next() < 0.5 ? 'CURRENT' : 'REVIEW_HISTORY';
    const known = soak.known(rng);
    let outcome: CallOutcome;
    switch (operation) {
      case 'store_candidate': outcome = await server.call('memory_store', requests.storeCandidate()); break;
      case 'store_current': outcome = await server.call('memory_store', requests.storeCurrent()); break;
      case 'reverify': outcome = await server.call('memory_update', requests.reverify(claimed!)); break;
      case 'promote': outcome = await server.call('memory_update', requests.promote(claimed!)); break;
      case 'replace': outcome = await server.call('memory_update', requests.replace(claimed!)); break;
      case 'get': outcome = known ? await server.call('memory_get', requests.get(known.memory_id, mode))
        : await server.call('memory_status', requests.status()); break;
      case 'status': outcome = await server.call('memory_status', requests.status()); break;
      default: {
        const kind =
          SEARCH_KINDS[['search_exact', 'search_keyword', 'search_semantic', 'search_hybrid'].indexOf(operation)]!;
        outcome = await server.call('memory_search', requests.search(kind, mode, known?.fact));
      }
    }
    calls += 1;
    soak.record(operation, outcome);
    const written = ['store_candidate', 'store_current', 'reverify', 'promote', 'replace'].includes(operation)
      ? soak.written(outcome) : undefined;
    if (written !== undefined) (written.lifecycle_state === 'CANDIDATE' ? soak.candidates : soak.currents).put(written);
    else if (claimed !== undefined && outcome.envelope !== null)
      (operation === 'promote' ? soak.candidates : soak.currents).put(claimed);
  }
  return calls;
}

function latencyOf(samples: readonly number[]): { count: number; p50_ms: number; p99_ms: number; max_ms: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    count: sorted.length, p50_ms: roundTo(percentile(sorted, 50), 1), p99_ms: roundTo(percentile(sorted, 99), 1),
    max_ms: roundTo(sorted.at(-1) ?? Number.NaN, 1),
  };
}

/**
 * The load part: PROCESSES servers (OWNERS owner-current, the rest delegated-candidate) on one database, each with
 * IN_FLIGHT calls in flight for SOAK_MS; stores of both kinds, REVERIFY, promotions, REPLACE, gets, searches of
 * every kind in CURRENT and REVIEW_HISTORY, status. Then every server is closed (each must exit 0), a fresh
 * read-only connection looks up every acknowledged write at its revision, and `factlane-admin audit`,
 * integrity_check and the FTS integrity-check run on the file.
 */
export const runLoadPart: QualifyPart = async (profile, workDir): Promise<PartReport> => {
  const registry = new ChildRegistry();
  const dbPath = join(workDir, 'load.sqlite3');
  const soak = new Soak();
  try {
    // The first server creates the database alone; the others then open it at once.
    const servers: ServedProcess[] =
      [await ServedProcess.start(registry, { dbPath, hostId: 'load-p0', writeProfile: 'owner-current' })];
    servers.push(...await Promise.all(Array.from({ length: PROCESSES - 1 }, (
      _, index
    ) => ServedProcess.start(registry, {
      dbPath, hostId: `load-p${index + 1}`, writeProfile: index + 1 < OWNERS ? 'owner-current' : 'delegated-candidate',
    }))));
    const factories = servers.map((_, p) => new QualifyRequests(PROJECT_ID, `load-p${p}`, SEED + p));
    // Seed (not measured): each process stores a few facts, so the pools and the gets have something from the start.
    await Promise.all(servers.map(async (server, p) => {
      for (let n = 0; n < SEED_STORES; n += 1) {
        const outcome =
          await server.call('memory_store', p < OWNERS ? factories[p]!.storeCurrent() : factories[p]!.storeCandidate());
        const written = soak.written(outcome);
        if (written !== undefined)
          (written.lifecycle_state === 'CANDIDATE' ? soak.candidates : soak.currents).put(written);
      }
    }));
    const seeded = soak.acked.size;

    const started = performance.now();
    const deadline = started + SOAK_MS[profile];
    const calls = await Promise.all(servers.flatMap((server, p) => Array.from({ length: IN_FLIGHT }, (_, l) =>
      lane(server, p < OWNERS, factories[p]!, new SeededRandom(SEED * 31 + p * IN_FLIGHT + l), soak, deadline))));
    const elapsedMs = performance.now() - started;
    const exits = await Promise.all(servers.map((server) => server.close()));
    const uncleanExits = exits.filter((exit) => exit.code !== 0).length;

    const lost = lostWrites(dbPath, soak.acked.all());
    const audit = await runCommand(registry, ADMIN_BIN, ['audit', '--db', dbPath, '--json']);
    let auditFindings = 0;
    let auditFailed: string[] = [];
    try {
      const report = JSON.parse(audit.stdout) as { checks: { name: string; status: string; count: number }[] };
      const failing = report.checks.filter((check) => check.status === 'FAIL');
      auditFindings = failing.reduce((sum, check) => sum + Math.max(1, check.count), 0);
      auditFailed = failing.map((check) => check.name);
    } catch {
      auditFailed = ['unreadable_report'];
    }
    if (audit.exit.code !== 0) auditFindings = Math.max(auditFindings, 1);
    const integrity = integrityOf(dbPath);

    const operations = calls.reduce((sum, n) => sum + n, 0);
    const all = [...soak.samples.values()].flat().sort((a, b) => a - b);
    const perOperation = Object.fromEntries([...soak.samples].sort(([a], [b]) => a.localeCompare(b)).map(
      ([operation, samples]) => [operation, latencyOf(samples)],
    ));
    const outcomes = Object.fromEntries([...soak.outcomes].sort(([a], [b]) => a.localeCompare(b)));
    return {
      figures: {
        processes: PROCESSES, owner_current_processes: OWNERS, delegated_candidate_processes: PROCESSES - OWNERS,
        in_flight_per_process: IN_FLIGHT,
        soak_s: roundTo(elapsedMs / 1000, 1), operations, ops_per_s: roundTo(operations / (elapsedMs / 1000), 1),
        p50_ms: roundTo(percentile(all, 50), 1), p99_ms: roundTo(percentile(all, 99), 1),
        per_operation: perOperation, outcomes_by_operation: outcomes,
        acked_writes: soak.acked.size, seed_writes: seeded, lost_writes: lost, backend_busy: soak.backendBusy,
        call_failures: soak.callFailures, unclean_exits: uncleanExits,
        audit_exit_code: audit.exit.code, audit_findings: auditFindings, audit_failed_checks: auditFailed,
        integrity_failures: integrity.failures, integrity_failed_checks: integrity.failed,
      },
      mustBeZero: ['lost_writes', 'audit_findings', 'integrity_failures', 'call_failures', 'unclean_exits'],
      notes: [
        `${PROCESSES} built servers (${OWNERS} owner-current, ${PROCESSES - OWNERS} delegated-candidate) shared one `
          + `database for ${roundTo(elapsedMs / 1000, 1)} s with `
          + `${IN_FLIGHT} calls in flight each: both kinds of store, REVERIFY, Candidate promotion, REPLACE, get, `
          + `status and every search kind in CURRENT and REVIEW_HISTORY `
          + '(`per_operation`: count, p50, p99, max in ms; `outcomes_by_operation`: the answers).',
        'After every server exited, a fresh read-only connection looked up each acknowledged write (`acked_writes`) '
          + 'at its record_id, revision and fact; '
          + '`lost_writes` counts misses, and `audit_findings` / `integrity_failures` count failures of '
          + '`factlane-admin audit`, `PRAGMA integrity_check` and the FTS5 integrity-check.',
        '`backend_busy` (BLOCKED BACKEND_BUSY answers) is reported, not required zero; `call_failures` (calls '
          + 'without an envelope) and `unclean_exits` '
          + '(servers not exiting 0 on stdin EOF) must be zero.',
      ],
    };
  } finally {
    registry.dispose();
  }
};
