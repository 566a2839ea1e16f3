import { performance } from 'node:perf_hooks';
import { publicRecord } from '../../src/adapter/public-record.js';
import { fixedRecordTokens, warmUpTokenizer } from '../../src/adapter/token-measure.js';
import { canonicalJson } from '../../src/core/canonical-json.js';
import type { RecordRow } from '../../src/storage/record-repository.js';
import { progressLogger } from './bench-environment.js';
import { benchScope, benchTimestamp, makeBenchRecord } from './bench-records.js';
import { FactVocabulary } from './fact-vocabulary.js';
import { percentile, roundTo, summarizeLatencies } from './latency-stats.js';
import { SeededRandom } from './seeded-random.js';

// The token count a store makes of its record (fixedRecordTokens, decision 0036), in one process over a long life:
// fresh records one after another, each with its own ids, hashes and timestamps, as a server that stores for a day
// counts them. The remembered segment and chunk counts fill after some 10,000 records; from then on each new one
// evicts an old one, and the count must cost what it cost in a fresh process (src/core/bounded-map.ts). With an
// eviction that walked V8's holes, the cost rose and fell with V8's rebuilds of the table: every window is printed.

const RECORDS = 30_000;
const WINDOW = 1000;
/** A fresh process's second thousand (the peer bench's 2k) against every thousand once the maps are full. */
const EARLY = [1000, 2000] as const;
const FULL_FROM = 12_000;
const TARGET_WINDOW_TO_EARLY = 1.2;

export async function runTokenBench(): Promise<Record<string, unknown>> {
  const log = progressLogger('tokens');
  await warmUpTokenizer();
  const rng = new SeededRandom(0x70c3);
  const vocabulary = new FactVocabulary(rng);
  const scope = benchScope({
    scope: 'PROJECT', project_id: 'token-bench', worktree_id: null, workflow_id: null, agent_id: null,
  });
  const samplesMs: number[] = [];
  let tokens = 0;
  for (let n = 0; n < RECORDS; n += 1) {
    const { row } = makeBenchRecord(rng, scope, vocabulary.factText(rng), n % 2 === 0, benchTimestamp(n));
    const record = publicRecord({ ...row, row_id: n + 1 } as RecordRow);
    const text = canonicalJson(record);
    const started = performance.now();
    tokens += (await fixedRecordTokens(record, text)) ?? 0;
    samplesMs.push(performance.now() - started);
    if ((n + 1) % 10_000 === 0) log(`${n + 1} of ${RECORDS} records counted`);
  }
  const early = summarizeLatencies(samplesMs.slice(...EARLY), 'us');
  const p50s: number[] = [];
  for (let from = FULL_FROM; from < RECORDS; from += WINDOW)
    p50s.push(summarizeLatencies(samplesMs.slice(from, from + WINDOW), 'us').p50_us!);
  // The median window: one window slowed by the machine does not decide, a cost that stays up does.
  const median = percentile([...p50s].sort((a, b) => a - b), 50);
  const ratio = roundTo(median / early.p50_us!, 2);
  return {
    records: RECORDS, mean_tokens_per_record: roundTo(tokens / RECORDS, 1),
    [`records_${EARLY[0] + 1}_to_${EARLY[1]}`]: early,
    [`p50_us_by_${WINDOW}_from_${FULL_FROM + 1}`]: p50s,
    median_window_p50_us: median, worst_window_p50_us: Math.max(...p50s),
    median_window_to_early_p50: ratio,
    target_median_window_to_early_p50_at_most: TARGET_WINDOW_TO_EARLY,
    target_met: ratio <= TARGET_WINDOW_TO_EARLY,
  };
}
