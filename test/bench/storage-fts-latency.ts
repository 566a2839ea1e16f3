import { performance } from 'node:perf_hooks';
import { sql, type RawBuilder } from 'kysely';
import type { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import type { BenchScope } from './bench-records.js';
import type { FactVocabulary } from './fact-vocabulary.js';
import { percentile, roundTo, summarizeLatencies } from './latency-stats.js';
import type { BuiltScope } from './storage-dataset.js';
import type { SeededRandom } from './seeded-random.js';

/** Recorded keyword queries; half one-term, half two-term. */
export const FTS_QUERIES = 100;
/** Unrecorded queries first. */
export const FTS_WARMUP_QUERIES = 5;
/** Results per keyword query. */
export const FTS_LIMIT = 10;

type RowIdRow = { row_id: number };

// STORAGE.md §4.4: the exact scope tuple (IS, so nulls match nulls) and the lifecycle filter sit in the
// same statement as MATCH, before LIMIT. MATCH and bm25 name FTS5's hidden column, which carries the table's
// name even when the table is aliased (`f MATCH` is "no such column: f").
const CURRENT_KEYWORD_QUERY = (match: string, scope: BenchScope) => sql<RowIdRow>`
  select r.row_id from fact_fts f join adapter_records r on r.row_id = f.rowid
  where fact_fts match ${match}
    and r.scope = ${scope.scope} and r.project_id is ${scope.project_id} and r.worktree_id is ${scope.worktree_id}
    and r.workflow_id is ${scope.workflow_id} and r.agent_id is ${scope.agent_id}
    and r.lifecycle_state = 'VALIDATED_CURRENT'
  order by bm25(fact_fts) limit ${sql.lit(FTS_LIMIT)}`;

const MATCHED_COUNT = (match: string) =>
  sql<{ n: number }>`select count(*) as n from fact_fts where fact_fts match ${match}`;

const ELIGIBLE_COUNT = (match: string, scope: BenchScope) => sql<{ n: number }>`
  select count(*) as n from fact_fts f join adapter_records r on r.row_id = f.rowid
  where fact_fts match ${match}
    and r.scope = ${scope.scope} and r.project_id is ${scope.project_id} and r.worktree_id is ${scope.worktree_id}
    and r.workflow_id is ${scope.workflow_id} and r.agent_id is ${scope.agent_id}
    and r.lifecycle_state = 'VALIDATED_CURRENT'`;

async function count(engine: SQLiteVecEngine, query: RawBuilder<{ n: number }>): Promise<number> {
  const { rows } = await engine.read((db) => query.execute(db));
  return rows[0]?.n ?? 0;
}

function distribution(values: readonly number[]): Record<string, number> {
  const sorted = [...values].sort((a, b) => a - b);
  return { min: sorted[0] ?? 0, p50: percentile(sorted, 50), max: sorted[sorted.length - 1] ?? 0 };
}

/**
 * Measurement 3: CURRENT keyword queries (scope tuple + lifecycle filter before LIMIT, bm25 order) in
 * one scope of the dataset. Terms are drawn with the vocabulary's Zipf weights, so some queries hit tens
 * of thousands of rows, as popular words do. Match counts (whole index, and eligible after the filters)
 * are taken outside the timed query so the report says how much work each query had.
 */
export async function measureFts(engine: SQLiteVecEngine, built: BuiltScope, vocabulary: FactVocabulary,
  rng: SeededRandom): Promise<Record<string, unknown>> {
  const scope = built.spec.scope;
  const oneTermMs: number[] = [];
  const twoTermMs: number[] = [];
  const matched: number[] = [];
  const eligible: number[] = [];
  let returnedMin = Number.POSITIVE_INFINITY;

  for (let i = 0; i < FTS_WARMUP_QUERIES + FTS_QUERIES; i += 1) {
    const terms = i % 2 === 0 ? 1 : 2;
    const words = Array.from({ length: terms }, () => vocabulary.words[vocabulary.sampleRank(rng)]!);
    // Quoted terms: an FTS5 string, never operators or column filters; adjacent strings mean AND.
    const match = words.map((word) => `"${word}"`).join(' ');
    const started = performance.now();
    const { rows } = await engine.read((db) => CURRENT_KEYWORD_QUERY(match, scope).execute(db));
    const elapsed = performance.now() - started;
    if (i < FTS_WARMUP_QUERIES) continue;
    (terms === 1 ? oneTermMs : twoTermMs).push(elapsed);
    const eligibleRows = await count(engine, ELIGIBLE_COUNT(match, scope));
    matched.push(await count(engine, MATCHED_COUNT(match)));
    eligible.push(eligibleRows);
    // Fewer than FTS_LIMIT rows is only right when fewer are eligible; anything else is a bench bug.
    if (rows.length !== Math.min(FTS_LIMIT, eligibleRows)) throw new Error(
      `keyword query returned ${rows.length} rows, expected ${Math.min(FTS_LIMIT, eligibleRows)}`);
    returnedMin = Math.min(returnedMin, rows.length);
  }

  const plan = await engine.read((db) =>
    sql<{ detail: string }>`explain query plan ${CURRENT_KEYWORD_QUERY('"x"', scope)}`.execute(db));
  return {
    rows_in_scope: built.spec.rows,
    current_in_scope: built.currentRowIds.size,
    limit: FTS_LIMIT,
    all_queries: summarizeLatencies([...oneTermMs, ...twoTermMs], 'ms'),
    one_term: summarizeLatencies(oneTermMs, 'ms'),
    two_terms: summarizeLatencies(twoTermMs, 'ms'),
    matched_rows_whole_index: distribution(matched),
    eligible_rows_after_filter: distribution(eligible),
    eligible_share_of_matched: roundTo(
      eligible.reduce((a, b) => a + b, 0) / Math.max(1, matched.reduce((a, b) => a + b, 0)), 3),
    returned_rows_min: returnedMin,
    query_plan: plan.rows.map((row) => row.detail),
  };
}
