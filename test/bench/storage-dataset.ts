import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import type { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import {
  BenchRecordStatements, benchScope, benchTimestamp, makeBenchRecord, type BenchRecord, type BenchScope,
} from './bench-records.js';
import { FactVocabulary } from './fact-vocabulary.js';
import { roundTo } from './latency-stats.js';
import { SeededRandom } from './seeded-random.js';

/** Rows per write transaction while populating: big batches amortise the fsync of each commit. */
export const POPULATE_BATCH_ROWS = 2000;

/** One scope of the query dataset and how much of it is CURRENT. */
export interface DatasetScopeSpec {
  readonly label: string;
  readonly scope: BenchScope;
  readonly rows: number;
  readonly currentFraction: number;
}

/**
 * The query dataset: two big PROJECT scopes that are mostly Candidates (the KNN and FTS targets) and
 * three small scopes of other kinds, so partitions and the scope filter have neighbours to skip.
 */
export const QUERY_DATASET_SPECS: readonly DatasetScopeSpec[] = Object.freeze([
  { label: 'workflow_2k', scope: benchScope({ scope: 'WORKFLOW', project_id: null, worktree_id: null,
    workflow_id: 'wf-bench', agent_id: null }), rows: 2000, currentFraction: 0.5 },
  { label: 'tool_env_2k', scope: benchScope({ scope: 'TOOL_ENVIRONMENT', project_id: null, worktree_id: null,
    workflow_id: null, agent_id: 'agent-bench' }), rows: 2000, currentFraction: 0.5 },
  { label: 'global_user_2k', scope: benchScope({ scope: 'GLOBAL_USER', project_id: null, worktree_id: null,
    workflow_id: null, agent_id: null }), rows: 2000, currentFraction: 0.5 },
  { label: 'project_10k', scope: benchScope({ scope: 'PROJECT', project_id: 'bench-10k', worktree_id: null,
    workflow_id: null, agent_id: null }), rows: 10_000, currentFraction: 0.1 },
  { label: 'project_100k', scope: benchScope({ scope: 'PROJECT', project_id: 'bench-100k', worktree_id: 'wt-main',
    workflow_id: null, agent_id: null }), rows: 100_000, currentFraction: 0.1 },
]);

/** A populated scope: its spec, the row ids that are CURRENT, and what building it cost. */
export interface BuiltScope {
  readonly spec: DatasetScopeSpec;
  readonly currentRowIds: ReadonlySet<number>;
  readonly report: Record<string, number>;
}

/** The populated dataset. */
export interface QueryDataset {
  readonly vocabulary: FactVocabulary;
  readonly scopes: ReadonlyMap<string, BuiltScope>;
  readonly report: Record<string, unknown>;
}

/**
 * Fills an open engine with QUERY_DATASET_SPECS through engine.write, POPULATE_BATCH_ROWS rows per
 * transaction, using prepared statements on the transaction's own connection (the Kysely builder would
 * re-prepare 3 statements per row). Records are generated before each transaction, as embeddings are in
 * production; `insert_s` is the time inside transactions, `build_s` includes generation.
 */
export async function buildQueryDataset(engine: SQLiteVecEngine,
  log: (message: string) => void): Promise<QueryDataset> {
  const rng = new SeededRandom(0x5eed0002);
  const vocabulary = new FactVocabulary(rng);
  const scopes = new Map<string, BuiltScope>();
  let statements: BenchRecordStatements | undefined;
  let sequence = 0;
  const buildStarted = performance.now();

  for (const spec of QUERY_DATASET_SPECS) {
    const currentRowIds = new Set<number>();
    const started = performance.now();
    let insertMs = 0;
    for (let done = 0; done < spec.rows; done += POPULATE_BATCH_ROWS) {
      const batch: BenchRecord[] = [];
      for (let i = done; i < Math.min(spec.rows, done + POPULATE_BATCH_ROWS); i += 1) {
        sequence += 1;
        batch.push(makeBenchRecord(rng, spec.scope, vocabulary.factText(rng), rng.next() < spec.currentFraction,
          benchTimestamp(sequence)));
      }
      const writeStarted = performance.now();
      await engine.write(async (_trx, connection) => {
        statements ??= new BenchRecordStatements(connection);
        for (const record of batch) {
          const rowId = statements.insert(record);
          if (record.isCurrent) currentRowIds.add(Number(rowId));
        }
      });
      insertMs += performance.now() - writeStarted;
      if (spec.rows >= 50_000 && (done + POPULATE_BATCH_ROWS) % 20_000 === 0) log(
        `dataset: ${spec.label} ${done + POPULATE_BATCH_ROWS}/${spec.rows}`);
    }
    const buildMs = performance.now() - started;
    const report = {
      rows: spec.rows,
      current_rows: currentRowIds.size,
      build_s: roundTo(buildMs / 1000, 2),
      insert_s: roundTo(insertMs / 1000, 2),
      insert_rows_per_s: Math.round(spec.rows / (insertMs / 1000)),
    };
    scopes.set(spec.label, { spec, currentRowIds, report });
    log(`dataset: ${spec.label} built in ${report.build_s} s`);
  }

  return {
    vocabulary,
    scopes,
    report: {
      batch_rows: POPULATE_BATCH_ROWS,
      total_rows: sequence,
      vocabulary_words: vocabulary.words.length,
      build_s: roundTo((performance.now() - buildStarted) / 1000, 2),
      scopes: Object.fromEntries([...scopes].map(([label, built]) => [label, built.report])),
    },
  };
}

/**
 * Bytes per storage object group (adapter_records with its indexes, fact_fts and fact_vec with their
 * shadow tables, the rest), read from the dbstat virtual table: says where the file size goes.
 */
export async function measureStorageBreakdown(engine: SQLiteVecEngine): Promise<Record<string, number>> {
  // dbstat names b-trees; sqlite_schema maps each index and shadow table to the table it belongs to.
  const { rows } = await engine.read((db) =>
    sql<{ object: string; bytes: number }>`
      select case
          when s.tbl_name = 'adapter_records' then 'adapter_records_and_indexes'
          when s.tbl_name like 'fact_fts%' then 'fact_fts'
          when s.tbl_name like 'fact_vec%' then 'fact_vec'
          else 'other' end as object,
        sum(d.pgsize) as bytes
      from dbstat d left join sqlite_schema s on s.name = d.name
      group by object order by bytes desc`.execute(db),
  );
  return Object.fromEntries(rows.map((row) => [`${row.object}_mib`, roundTo(row.bytes / 2 ** 20, 1)]));
}
