import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { fixedTokensOfRow } from '../../src/adapter/public-record.js';
import { insertRecordUnchecked, type NewRecordRow, type RecordRow } from '../../src/storage/record-repository.js';
import { openBenchEngine } from './bench-engine.js';
import { databaseBytes, progressLogger } from './bench-environment.js';
import { benchScope, benchTimestamp, makeBenchRecord, type BenchRecord } from './bench-records.js';
import { FactVocabulary } from './fact-vocabulary.js';
import { roundTo } from './latency-stats.js';
import { SeededRandom } from './seeded-random.js';

// Many small scopes (STORAGE.md §4.5 rule 4, issue 11): 1,000 scopes x 20 facts written through the product's
// insert, once all VALIDATED_CURRENT (every record with its eligible forms: the largest file) and once all Candidates,
// then checkpointed; the file must stay under 80 MB. dbstat says which tables the bytes go to.

const SCOPES = 1000;
const FACTS_PER_SCOPE = 20;
const TARGET_MB = 80;

async function build(dir: string, current: boolean, log: (m: string) => void): Promise<Record<string, unknown>> {
  const dbPath = join(dir, `${current ? 'current' : 'candidates'}.sqlite3`);
  const engine = await openBenchEngine(dbPath);
  const rng = new SeededRandom(current ? 0x5c0e1 : 0x5c0e2);
  const vocabulary = new FactVocabulary(rng);
  const started = performance.now();
  let sequence = 0;
  for (let s = 0; s < SCOPES; s += 50) {
    const batch: BenchRecord[] = [];
    for (let scope = s; scope < s + 50; scope += 1) {
      const tuple = benchScope(
        { scope: 'PROJECT', project_id: `project-${scope}`, worktree_id: null, workflow_id: null, agent_id: null });
      for (let i = 0; i < FACTS_PER_SCOPE; i += 1) batch.push(
        makeBenchRecord(rng, tuple, vocabulary.factText(rng), current, benchTimestamp((sequence += 1))));
    }
    // Each record's token count, as a writer stores it beside the record (decision 0036).
    const fixedTokens = await Promise.all(
      batch.map((record) => fixedTokensOfRow({ ...record.row, row_id: 0 } as RecordRow)));
    await engine.write(async (trx) => {
      for (const [i, record] of batch.entries()) {
        const embedding = new Float32Array(record.embedding.buffer.slice(record.embedding.byteOffset,
          record.embedding.byteOffset + record.embedding.byteLength));
        await insertRecordUnchecked(trx, record.row as NewRecordRow,
          { searchText: record.searchText, embedding, fixedTokens: fixedTokens[i] });
      }
    });
  }
  const buildS = roundTo((performance.now() - started) / 1000, 1);
  // dbstat names b-trees; sqlite_schema maps each index and shadow table to the table it belongs to.
  const { rows } = await engine.read((db) => sql<{ object: string; bytes: number }>`
    SELECT CASE WHEN s.tbl_name LIKE 'fact_vec%' THEN 'fact_vec' WHEN s.tbl_name LIKE 'eligible_codes%' THEN 'eligible_codes'
      WHEN s.tbl_name LIKE 'fact_fts%' THEN 'fact_fts' ELSE coalesce(s.tbl_name, d.name) END AS object, sum(d.pgsize) AS bytes
    FROM dbstat d LEFT JOIN sqlite_schema s ON s.name = d.name GROUP BY object ORDER BY bytes DESC`.execute(db));
  await engine.close();
  const { db_bytes: bytes } = databaseBytes(dbPath);
  const report = {
    records: sequence, build_s: buildS, file_mb: roundTo(bytes / 1e6, 1), under_80_mb: bytes < TARGET_MB * 1e6,
    mib_by_table: Object.fromEntries(rows.map((row) => [row.object, roundTo(row.bytes / 2 ** 20, 1)])),
  };
  log(`${current ? 'current' : 'candidates'}: ${report.file_mb} MB`);
  return report;
}

/** The many-scopes file size suite: JSON with the file size of each variant and where its bytes go. */
export async function runScopesBench(): Promise<Record<string, unknown>> {
  const log = progressLogger('scopes');
  const dir = mkdtempSync(join(tmpdir(), 'factlane-scopes-bench-'));
  try {
    return { scopes: SCOPES, facts_per_scope: FACTS_PER_SCOPE, all_current: await build(dir, true, log),
      all_candidates: await build(dir, false, log) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
