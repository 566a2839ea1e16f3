import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import type { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import { openBenchEngine, openRawBaselineConnection } from './bench-engine.js';
import {
  BenchRecordStatements, benchScope, benchTimestamp, makeBenchRecord, type BenchRecord,
} from './bench-records.js';
import { FactVocabulary } from './fact-vocabulary.js';
import { mean, roundTo, summarizeLatencies } from './latency-stats.js';
import { SeededRandom } from './seeded-random.js';

/** Unrecorded transactions per variant first: statement caches, page cache and WAL reach steady state. */
export const WRITE_WARMUP_TRANSACTIONS = 200;
/** Recorded transactions per variant are WRITE_ROUNDS × WRITE_TRANSACTIONS_PER_ROUND. */
// Short blocks, many rounds: a burst of machine noise (another process, a checkpoint) lands on every
// variant rather than on one 200-transaction block.
export const WRITE_ROUNDS = 100;
export const WRITE_TRANSACTIONS_PER_ROUND = 20;
/** Issue target: the engine's mean single-row transaction at most 1.5 × the raw one. */
export const WRITE_OVERHEAD_TARGET_RATIO = 1.5;

interface WriteVariant {
  readonly name: string;
  readonly writeOne: (record: BenchRecord) => void | Promise<void>;
  readonly countRows: () => Promise<number>;
  readonly close: () => Promise<void>;
  readonly samplesMs: number[];
}

/** Production shape: adapter_records through the typed builder, FTS5/vec0 through `sql` on the same trx. */
async function engineKyselyVariant(dbPath: string): Promise<WriteVariant> {
  const engine = await openBenchEngine(dbPath);
  const writeOne = (record: BenchRecord) =>
    engine.write(async (trx) => {
      const { insertId } = await trx.insertInto('adapter_records').values(record.row).executeTakeFirstOrThrow();
      if (insertId === undefined) throw new Error('adapter_records insert returned no row id');
      await sql`insert into fact_fts (rowid, search_text) values (${insertId}, ${record.searchText})`.execute(trx);
      // BigInt because vec0 refuses REAL for metadata integers.
      const isCurrent = record.isCurrent ? 1n : 0n;
      await sql`insert into fact_vec (rowid, scope_key, is_current, embedding) values (${insertId}, ${record.row.scope_key}, ${isCurrent}, ${record.embedding})`.execute(trx);
    });
  return { name: 'engine_kysely', writeOne, countRows: () => countEngineRows(engine), close: () => engine.close(),
    samplesMs: [] };
}

/**
 * The engine's transaction (gate, IMMEDIATE, busy retry, Kysely mutex) around the raw baseline's prepared statements.
 */
async function enginePreparedVariant(dbPath: string): Promise<WriteVariant> {
  const engine = await openBenchEngine(dbPath);
  let statements: BenchRecordStatements | undefined;
  const writeOne = (record: BenchRecord) =>
    engine.write(async (_trx, connection) => {
      statements ??= new BenchRecordStatements(connection);
      statements.insert(record);
    });
  return { name: 'engine_prepared_statements', writeOne, countRows: () => countEngineRows(engine),
    close: () => engine.close(), samplesMs: [] };
}

/** better-sqlite3 alone: same schema, pragmas and statements, BEGIN IMMEDIATE/COMMIT by hand, synchronous. */
async function rawVariant(dbPath: string): Promise<WriteVariant> {
  // The engine creates the schema exactly as for the other variants, then lets go of the file and its lease.
  await (await openBenchEngine(dbPath)).close();
  const connection = openRawBaselineConnection(dbPath);
  const statements = new BenchRecordStatements(connection);
  const begin = connection.prepare('begin immediate');
  const commit = connection.prepare('commit');
  const rollback = connection.prepare('rollback');
  const writeOne = (record: BenchRecord) => {
    begin.run();
    try {
      statements.insert(record);
      commit.run();
    } catch (error) {
      if (connection.inTransaction) rollback.run();
      throw error;
    }
  };
  const countRows = async () =>
    (connection.prepare('select count(*) as n from adapter_records').get() as { n: number }).n;
  return { name: 'raw_better_sqlite3', writeOne, countRows, close: async () => void connection.close(), samplesMs: [] };
}

async function countEngineRows(engine: SQLiteVecEngine): Promise<number> {
  const row = await engine.read((db) =>
    db.selectFrom('adapter_records').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow());
  return Number(row.n);
}

/** Runs `count` transactions of one variant; records each latency unless warming up. */
async function runBlock(variant: WriteVariant, count: number, nextRecord: () => BenchRecord,
  record: boolean): Promise<void> {
  for (let i = 0; i < count; i += 1) {
    // The record (vector, hashes) is made outside the timed span: embeddings are computed before the transaction.
    const input = nextRecord();
    const started = performance.now();
    const pending = variant.writeOne(input);
    if (pending) await pending;
    const elapsed = performance.now() - started;
    if (record) variant.samplesMs.push(elapsed);
  }
}

function variantReport(variant: WriteVariant, rowsOnDisk: number): Record<string, number> {
  return { ...summarizeLatencies(variant.samplesMs, 'us'), ops_per_s: roundTo(1000 / mean(variant.samplesMs), 1),
    rows_on_disk: rowsOnDisk };
}

/**
 * Measurement 1: one-row write transactions (adapter_records + fact_fts + fact_vec) through the engine
 * and through raw better-sqlite3 with the same pragmas, on three fresh databases in `dir`. Variants run
 * in blocks whose order rotates every round, so drift (WAL growth, checkpoints, disk cache) hits all alike.
 */
export async function measureWriteTransactions(dir: string,
  log: (message: string) => void): Promise<Record<string, unknown>> {
  const rng = new SeededRandom(0x5eed0001);
  const vocabulary = new FactVocabulary(rng);
  const scope = benchScope(
    { scope: 'PROJECT', project_id: 'bench-writes', worktree_id: null, workflow_id: null, agent_id: null });
  let sequence = 0;
  const nextRecord = () => {
    sequence += 1;
    return makeBenchRecord(rng, scope, vocabulary.factText(rng), rng.next() < 0.5, benchTimestamp(sequence));
  };

  const variants: WriteVariant[] = [];
  try {
    variants.push(await rawVariant(join(dir, 'raw.db')));
    variants.push(await engineKyselyVariant(join(dir, 'engine-kysely.db')));
    variants.push(await enginePreparedVariant(join(dir, 'engine-prepared.db')));
    for (const variant of variants) await runBlock(variant, WRITE_WARMUP_TRANSACTIONS, nextRecord, false);
    for (let round = 0; round < WRITE_ROUNDS; round += 1) {
      for (let i = 0; i < variants.length; i += 1) {
        const variant = variants[(round + i) % variants.length]!;
        await runBlock(variant, WRITE_TRANSACTIONS_PER_ROUND, nextRecord, true);
      }
      if ((round + 1) % 20 === 0) log(`writes: round ${round + 1}/${WRITE_ROUNDS}`);
    }
    const reports: Record<string, Record<string, number>> = {};
    for (const variant of variants) reports[variant.name] = variantReport(variant, await variant.countRows());
    const [raw, kysely, prepared] = variants.map((variant) => mean(variant.samplesMs)) as [number, number, number];
    const overheadRatio = roundTo(kysely / raw, 3);
    // The mean carries the fsync tail; the p50 ratio shows the steady per-transaction cost without it.
    const p50Ratio = roundTo(reports.engine_kysely!.p50_us! / reports.raw_better_sqlite3!.p50_us!, 3);
    return {
      transaction: 'BEGIN IMMEDIATE; insert adapter_records + fact_fts + fact_vec (one row each); COMMIT',
      pragmas: 'journal_mode=WAL synchronous=FULL busy_timeout=5000 foreign_keys=ON',
      warmup_transactions_per_variant: WRITE_WARMUP_TRANSACTIONS,
      recorded_transactions_per_variant: WRITE_ROUNDS * WRITE_TRANSACTIONS_PER_ROUND,
      ...reports,
      overhead_ratio: overheadRatio,
      overhead_ratio_basis: 'engine_kysely mean / raw_better_sqlite3 mean',
      overhead_ratio_p50: p50Ratio,
      // Absolute cost per transaction: the ratio shrinks on slow disks and grows on fast ones, this does not.
      overhead_mean_us: roundTo((kysely - raw) * 1000, 1),
      engine_prepared_statements_overhead_ratio: roundTo(prepared / raw, 3),
      target_ratio: WRITE_OVERHEAD_TARGET_RATIO,
      target_met: overheadRatio <= WRITE_OVERHEAD_TARGET_RATIO,
    };
  } finally {
    for (const variant of variants) await variant.close();
  }
}
