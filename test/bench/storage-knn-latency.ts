import { performance } from 'node:perf_hooks';
import { sql, type RawBuilder } from 'kysely';
import type { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import { BENCH_VECTOR_DIMENSION } from './bench-records.js';
import { roundTo, summarizeLatencies } from './latency-stats.js';
import type { BuiltScope } from './storage-dataset.js';
import type { SeededRandom } from './seeded-random.js';

/** Neighbours per query, as memory_search asks. */
export const KNN_K = 10;
/** Recorded queries per KNN variant. */
export const KNN_QUERIES = 100;
/** The full scan is the slow baseline; fewer runs keep the suite short while p50 stays stable. */
export const KNN_FULL_SCAN_QUERIES = 30;
/** Unrecorded queries per variant first. */
export const KNN_WARMUP_QUERIES = 5;

type Neighbour = { rowid: number; distance: number };
type KnnQuery = (vector: Buffer, scopeKey: string) => RawBuilder<Neighbour>;

// vec0 applies scope_key (partition) and is_current (metadata) inside the KNN scan, before k.
// k is bound as BigInt: vec0 refuses REAL integers.
const CURRENT_FILTERED: KnnQuery = (vector, scopeKey) =>
  sql<Neighbour>`select rowid, distance from fact_vec where embedding match ${vector} and k = ${BigInt(KNN_K)} and scope_key = ${scopeKey} and is_current = 1`;
const UNFILTERED: KnnQuery = (vector, scopeKey) =>
  sql<Neighbour>`select rowid, distance from fact_vec where embedding match ${vector} and k = ${BigInt(KNN_K)} and scope_key = ${scopeKey}`;
// Same answer as CURRENT_FILTERED without the KNN machinery: every row's distance, sorted by SQLite.
const FULL_SCAN_CURRENT: KnnQuery = (vector, scopeKey) =>
  sql<Neighbour>`select rowid, vec_distance_cosine(embedding, ${vector}) as distance from fact_vec
    where scope_key = ${scopeKey} and is_current = 1 order by distance limit ${sql.lit(KNN_K)}`;

async function timedQuery(engine: SQLiteVecEngine,
  query: RawBuilder<Neighbour>): Promise<{ rows: Neighbour[]; ms: number }> {
  const started = performance.now();
  const { rows } = await engine.read((db) => query.execute(db));
  return { rows, ms: performance.now() - started };
}

/**
 * Measurement 2 for one scope: CURRENT-filtered KNN against unfiltered KNN (target: filtered p50 <=
 * unfiltered p50) and a full-scan vec_distance_cosine baseline, on random unit query vectors. Filtered and
 * unfiltered alternate order per query so neither always runs on a warmer cache. Also checks that the
 * filtered result equals the full scan's (eligibility applied before k, nothing lost) and counts how many
 * unfiltered neighbours are CURRENT (what post-filtering would keep).
 */
export async function measureKnn(engine: SQLiteVecEngine, built: BuiltScope,
  rng: SeededRandom): Promise<Record<string, unknown>> {
  const scopeKey = built.spec.scope.scope_key;
  const filteredMs: number[] = [];
  const unfilteredMs: number[] = [];
  const fullScanMs: number[] = [];
  let fullScanAgreements = 0;
  let filteredRowsMin = Number.POSITIVE_INFINITY;
  let unfilteredCurrentHits = 0;

  for (let i = 0; i < KNN_WARMUP_QUERIES + KNN_QUERIES; i += 1) {
    const recorded = i >= KNN_WARMUP_QUERIES;
    const f32 = rng.unitVector(BENCH_VECTOR_DIMENSION);
    const vector = Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength);
    const order = i % 2 === 0 ? [CURRENT_FILTERED, UNFILTERED] : [UNFILTERED, CURRENT_FILTERED];
    const results = new Map<KnnQuery, { rows: Neighbour[]; ms: number }>();
    for (const query of order) results.set(query, await timedQuery(engine, query(vector, scopeKey)));
    const filtered = results.get(CURRENT_FILTERED)!;
    const unfiltered = results.get(UNFILTERED)!;
    if (!recorded) continue;
    filteredMs.push(filtered.ms);
    unfilteredMs.push(unfiltered.ms);
    filteredRowsMin = Math.min(filteredRowsMin, filtered.rows.length);
    unfilteredCurrentHits += unfiltered.rows.filter((row) => built.currentRowIds.has(row.rowid)).length;
    if (fullScanMs.length < KNN_FULL_SCAN_QUERIES) {
      const fullScan = await timedQuery(engine, FULL_SCAN_CURRENT(vector, scopeKey));
      fullScanMs.push(fullScan.ms);
      const expected = new Set(fullScan.rows.map((row) => row.rowid));
      if (filtered.rows.length === expected.size &&
        filtered.rows.every((row) => expected.has(row.rowid))) fullScanAgreements += 1;
    }
  }

  const filteredSummary = summarizeLatencies(filteredMs, 'ms');
  const unfilteredSummary = summarizeLatencies(unfilteredMs, 'ms');
  const plan = await engine.read((db) =>
    sql<{ detail: string }>`explain query plan ${CURRENT_FILTERED(Buffer.alloc(0), scopeKey)}`.execute(db));
  return {
    vectors_in_scope: built.spec.rows,
    current_in_scope: built.currentRowIds.size,
    k: KNN_K,
    current_filtered_knn: filteredSummary,
    unfiltered_knn: unfilteredSummary,
    full_scan_current: summarizeLatencies(fullScanMs, 'ms'),
    filtered_over_unfiltered_p50: roundTo(filteredSummary.p50_ms! / unfilteredSummary.p50_ms!, 3),
    filtered_rows_returned_min: filteredRowsMin,
    filtered_equals_full_scan: `${fullScanAgreements}/${fullScanMs.length}`,
    unfiltered_neighbours_current_mean: roundTo(unfilteredCurrentHits / filteredMs.length, 2),
    query_plan: plan.rows.map((row) => row.detail),
    target: 'current_filtered_knn p50_ms <= unfiltered_knn p50_ms',
    target_met: filteredSummary.p50_ms! <= unfilteredSummary.p50_ms!,
  };
}
