import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openBenchEngine } from './bench-engine.js';
import { databaseBytes, describeEnvironment, progressLogger } from './bench-environment.js';
import { roundTo } from './latency-stats.js';
import { SeededRandom } from './seeded-random.js';
import { buildQueryDataset, measureStorageBreakdown, type QueryDataset } from './storage-dataset.js';
import { measureFts } from './storage-fts-latency.js';
import { measureKnn } from './storage-knn-latency.js';
import { measureWriteTransactions } from './storage-write-latency.js';

function scopeOf(dataset: QueryDataset, label: string) {
  const built = dataset.scopes.get(label);
  if (!built) throw new Error(`dataset has no scope ${label}`);
  return built;
}

/**
 * The `storage` suite: (1) single-row write transactions, engine against raw better-sqlite3;
 * (2) CURRENT-filtered KNN against unfiltered KNN and a full scan over 10k and 100k vectors in one scope;
 * (3) CURRENT keyword queries over a 100k-row scope. Everything runs in a fresh folder under the OS temp
 * directory, removed at the end even on failure. Returns the JSON report; targets carry `target_met`.
 */
export async function runStorageBench(): Promise<Record<string, unknown>> {
  const log = progressLogger('storage');
  const dir = mkdtempSync(join(tmpdir(), 'factlane-bench-storage-'));
  try {
    const writeDir = join(dir, 'writes');
    mkdirSync(writeDir);
    log('measurement 1: single-row write transactions');
    const writes = await measureWriteTransactions(writeDir, log);

    log('measurement 2/3: building the query dataset');
    const dbPath = join(dir, 'query', 'factlane.db');
    let dataset: QueryDataset;
    const builder = await openBenchEngine(dbPath);
    const environment = describeEnvironment(dir, builder.runtime);
    try {
      dataset = await buildQueryDataset(builder, log);
    } finally {
      await builder.close();
    }
    // Measured after close, which checkpoints the WAL: the size a server would reopen.
    const sizes = databaseBytes(dbPath);

    // Queries run on a reopened engine, as a server starting on an existing database would.
    const engine = await openBenchEngine(dbPath);
    try {
      const breakdown = await measureStorageBreakdown(engine);
      const rng = new SeededRandom(0x5eed0003);
      log('measurement 2: KNN over 10k vectors');
      const knn10k = await measureKnn(engine, scopeOf(dataset, 'project_10k'), rng);
      log('measurement 2: KNN over 100k vectors');
      const knn100k = await measureKnn(engine, scopeOf(dataset, 'project_100k'), rng);
      log('measurement 3: keyword queries over 100k rows');
      const fts = await measureFts(engine, scopeOf(dataset, 'project_100k'), dataset.vocabulary, rng);
      return {
        environment,
        write_transactions: writes,
        dataset: { ...dataset.report, ...sizes, db_mib: roundTo(sizes.db_bytes / 2 ** 20, 1),
          size_breakdown: breakdown },
        knn: { scope_10k: knn10k, scope_100k: knn100k,
          target_met: knn10k.target_met === true && knn100k.target_met === true },
        fts_current_keyword: fts,
        targets_met: { write_overhead: writes.target_met,
          knn_filtered_not_slower: knn10k.target_met === true && knn100k.target_met === true },
      };
    } finally {
      await engine.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
