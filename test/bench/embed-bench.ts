import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MemoryAdapter } from '../../src/adapter/memory-adapter.js';
import { SYSTEM_CLOCK, formatTimestamp } from '../../src/core/time.js';
import { freshBindingJson } from '../../src/embedding/embedding-binding.js';
import type { EmbeddingProvider, RuntimeProvenance } from '../../src/embedding/embedding-provider.js';
import { LocalHashProvider, localHashEmbedding } from '../../src/embedding/local-hash-provider.js';
import { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import { probeRuntime } from '../../src/storage/runtime-probe.js';
import { describeEnvironment, progressLogger } from './bench-environment.js';
import { connectBenchClient, factlaneArgs } from './bench-server.js';
import { roundTo, summarizeLatencies } from './latency-stats.js';
import { SeededRandom } from './seeded-random.js';

const TEXTS_PER_LANGUAGE = 2000;
const MIN_CHARS = 50;
const MAX_CHARS = 300;
const WARM_UP_PASSES = 2;
const MEASURE_MS = 3000;
const TARGET_PER_S = 20_000;
const IN_PROCESS_STORES = 1000;
const STDIO_STORES = 500;
const WARM_UP_STORES = 100;
const SCOPE = { scope: 'PROJECT', project_id: 'embed-bench' } as const;

const ENGLISH = [
  'the', 'build', 'uses', 'node', 'release', 'pipeline', 'publishes', 'container', 'images', 'to',
  'internal', 'registry',
  'every', 'night', 'staging', 'cluster', 'pulls', 'from', 'mirror', 'in', 'Frankfurt', 'deploy', 'key', 'rotates',
  'monthly', 'database', 'migrations', 'run', 'before', 'service', 'starts', 'cache', 'eviction', 'policy', 'is', 'LRU',
  'with', 'a', 'ceiling', 'of', '512', 'MiB', 'tests', 'require', 'Postgres', '15', 'and', 'Redis', 'feature', 'flag',
  'checkout-v2', 'enabled', 'for', 'beta', 'users', 'only', 'on-call', 'rotation', 'changes', 'Mondays', 'at', '09:00',
  'UTC', 'linting', 'uses', 'eslint', 'strict', 'config', 'API', 'rate', 'limit', '1000', 'requests', 'per', 'minute',
  'owner', 'prefers', 'tabs', 'over', 'spaces', 'TypeScript', 'ESM', 'modules', 'workflow', 'requires', 'review',
];
const ARABIC = [
  'يستخدم', 'البناء', 'نود', 'الإصدار', 'خط', 'النشر', 'ينشر', 'صور', 'الحاويات', 'إلى', 'السجل', 'الداخلي', 'كل',
  'ليلة', 'مجموعة', 'الاختبار', 'تسحب', 'من', 'المرآة', 'في', 'فرانكفورت', 'مفتاح', 'النشر', 'يتغير', 'شهريًا',
  'قاعدة', 'البيانات', 'الترحيلات', 'تعمل', 'قبل', 'بدء', 'الخدمة', 'ذاكرة', 'التخزين', 'المؤقت', 'سياسة', 'الإخلاء',
  'الحد', 'الأقصى', '٥١٢', 'ميغابايت', 'الاختبارات', 'تتطلب', 'بوستغرس', 'ميزة', 'مفعّلة', 'للمستخدمين', 'فقط',
  'المناوبة', 'تتغير', 'يوم', 'الاثنين', 'الساعة', 'التاسعة', 'مدرسة', 'المكتبة', 'أحمد', 'المطوّر', 'يفضّل',
  'المسافات', 'الواجهة', 'البرمجية', 'طلب', 'لكل', 'دقيقة', 'المراجعة', 'مطلوبة', 'لكلّ', 'تغيير', 'الإنتاج',
];

/** Fact-like texts of MIN_CHARS-MAX_CHARS characters (uniform length), words drawn from `words`. */
function factTexts(rng: SeededRandom, words: readonly string[], count: number): string[] {
  const texts: string[] = [];
  for (let n = 0; n < count; n += 1) {
    const target = MIN_CHARS + rng.int(MAX_CHARS - MIN_CHARS + 1);
    let text = '';
    while (text.length < target) text += (text === '' ? '' : ' ') + words[rng.int(words.length)]!;
    texts.push(text.slice(0, target).trimEnd());
  }
  return texts;
}

/**
 * Embeds `texts` in a single-threaded loop, passes over the set until MEASURE_MS has elapsed, after
 * WARM_UP_PASSES unmeasured passes. Reports the rate, and CPU time over wall time (≈ 1 on one core).
 */
function measureEmbeddings(texts: readonly string[]) {
  let checksum = 0;
  for (let pass = 0; pass < WARM_UP_PASSES; pass += 1)
    for (const text of texts) checksum += localHashEmbedding(text)[0]!;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  let count = 0;
  let elapsed = 0;
  do {
    for (const text of texts) checksum += localHashEmbedding(text)[0]!;
    count += texts.length;
    elapsed = performance.now() - started;
  } while (elapsed < MEASURE_MS);
  const cpu = process.cpuUsage(cpuBefore);
  const perSecond = count / (elapsed / 1000);
  return {
    texts: texts.length,
    mean_chars: roundTo(texts.reduce((sum, text) => sum + text.length, 0) / texts.length, 1),
    mean_utf8_bytes: roundTo(texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0) / texts.length, 1),
    embeddings: count,
    elapsed_s: roundTo(elapsed / 1000, 3),
    embeddings_per_s: Math.round(perSecond),
    mean_us: roundTo(1e6 / perSecond, 2),
    cpu_over_wall: roundTo((cpu.user + cpu.system) / 1000 / elapsed, 2),
    checksum: roundTo(checksum, 3), // printed so the loop's results are used
  };
}

/** Per-call latencies of one pass (performance.now around each call), for the tail. */
function embeddingLatencies(texts: readonly string[]) {
  const samples: number[] = [];
  for (const text of texts) {
    const started = performance.now();
    localHashEmbedding(text);
    samples.push(performance.now() - started);
  }
  return summarizeLatencies(samples, 'us');
}

/** LocalHashProvider that adds the wall time of each call to its counters. */
class TimedProvider implements EmbeddingProvider {
  readonly #inner = new LocalHashProvider();
  readonly profile = this.#inner.profile;
  readonly lastObservedDigest = this.#inner.lastObservedDigest;
  embedMs = 0;
  statusMs = 0;

  async statusCheck(): Promise<RuntimeProvenance> {
    const started = performance.now();
    try {
      return await this.#inner.statusCheck();
    } finally {
      this.statusMs += performance.now() - started;
    }
  }

  async embedDocuments(texts: readonly string[]): Promise<Float32Array[]> {
    const started = performance.now();
    try {
      return await this.#inner.embedDocuments(texts);
    } finally {
      this.embedMs += performance.now() - started;
    }
  }

  embedQuery(text: string): Promise<Float32Array> {
    return this.#inner.embedQuery(text);
  }
}

/** A delegated-candidate store request with its own fact (never DUPLICATE) and key. */
function storeRequest(fact: string, n: number, label: string): Record<string, unknown> {
  return {
    ...SCOPE, fact: `${fact} #${label}${n}`, memory_type: 'PROJECT_LEARNED_FACT', idempotency_key: `${label}-${n}`,
    freshness_policy: { kind: 'never' },
    source_provenance: { source_class: 'repo', source_ref: `notes/${label}/${n}.md`, source_hash: 'ab'.repeat(32),
      review_ref: 'bench', extraction_method: 'manual' },
  };
}

/**
 * memory_store through an in-process MemoryAdapter (local-hash-384, synchronous=FULL): the embedding's
 * wall time (TimedProvider.embedDocuments) against the whole store call, per store.
 */
async function inProcessStoreShare(dir: string, facts: readonly string[]) {
  const provider = new TimedProvider();
  const engine = await SQLiteVecEngine.open({
    dbPath: join(dir, 'in-process.sqlite3'),
    newDatabaseBinding: async () => ({ vectorDimension: provider.profile.outputDimension,
      bindingJson: freshBindingJson(provider.profile, await provider.statusCheck(), formatTimestamp(SYSTEM_CLOCK())) }),
  });
  try {
    const adapter = new MemoryAdapter({ engine, provider, writeProfile: 'delegated-candidate', hostId: 'bench' });
    const run = async (count: number, label: string) => {
      const storeSamples: number[] = [];
      const embedSamples: number[] = [];
      const statusSamples: number[] = [];
      const outcomes: Record<string, number> = {};
      for (let n = 0; n < count; n += 1) {
        const embedBefore = provider.embedMs;
        const statusBefore = provider.statusMs;
        const started = performance.now();
        const envelope = (await adapter.execute('memory_store',
          storeRequest(facts[n % facts.length]!, n, label))) as { status: string };
        storeSamples.push(performance.now() - started);
        embedSamples.push(provider.embedMs - embedBefore);
        statusSamples.push(provider.statusMs - statusBefore);
        outcomes[envelope.status] = (outcomes[envelope.status] ?? 0) + 1;
      }
      return { storeSamples, embedSamples, statusSamples, outcomes };
    };
    await run(WARM_UP_STORES, 'warm');
    const { storeSamples, embedSamples, statusSamples, outcomes } = await run(IN_PROCESS_STORES, 'store');
    const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
    return {
      stores: IN_PROCESS_STORES,
      outcomes,
      store_latency: summarizeLatencies(storeSamples, 'ms'),
      embedding_latency: summarizeLatencies(embedSamples, 'us'),
      status_checks_latency: summarizeLatencies(statusSamples, 'us'),
      embedding_share_of_store_pct: roundTo((100 * sum(embedSamples)) / sum(storeSamples), 2),
    };
  } finally {
    await engine.close();
  }
}

/** memory_store over stdio against the built launcher (delegated-candidate): the MCP round trip a host sees. */
async function stdioStoreLatency(dir: string, facts: readonly string[]) {
  const { client } = await connectBenchClient('factlane-embed-bench',
    factlaneArgs('--db', join(dir, 'stdio.sqlite3'), '--host-id', 'bench', '--write-profile', 'delegated-candidate'));
  try {
    const outcomes: Record<string, number> = {};
    const samples: number[] = [];
    for (let n = 0; n < WARM_UP_STORES + STDIO_STORES; n += 1) {
      const started = performance.now();
      const result = (await client.callTool({ name: 'memory_store',
        arguments: { request: storeRequest(facts[n % facts.length]!, n, 'stdio') } })) as CallToolResult;
      if (n < WARM_UP_STORES) continue;
      samples.push(performance.now() - started);
      const status = result.isError ? 'isError' : (result.structuredContent as { status: string }).status;
      outcomes[status] = (outcomes[status] ?? 0) + 1;
    }
    return { stores: STDIO_STORES, outcomes, latency: summarizeLatencies(samples, 'ms'),
      mean_ms: samples.reduce((a, b) => a + b, 0) / samples.length };
  } finally {
    await client.close();
  }
}

/**
 * The `embed` suite: (1) local-hash-384 embeddings per second on one core, a single-threaded loop over
 * 2000 English and 2000 Arabic fact-like texts of 50-300 characters (target ≥ 20,000/s), with per-call
 * latencies; (2) the embedding's share of a memory_store: timed inside an in-process MemoryAdapter store
 * loop, and against the stdio round trip of the built launcher measured in the same run.
 */
export async function runEmbedBench(): Promise<Record<string, unknown>> {
  const log = progressLogger('embed');
  const dir = mkdtempSync(join(tmpdir(), 'factlane-embed-bench-'));
  try {
    const environment = describeEnvironment(dir, probeRuntime());
    const rng = new SeededRandom(20261130);
    const english = factTexts(rng, ENGLISH, TEXTS_PER_LANGUAGE);
    const arabic = factTexts(rng, ARABIC, TEXTS_PER_LANGUAGE);
    const mixed: string[] = [];
    for (let i = 0; i < TEXTS_PER_LANGUAGE; i += 1) mixed.push(english[i]!, arabic[i]!);

    log(`measurement 1: local-hash-384 over ${mixed.length} texts, ${MEASURE_MS} ms per set`);
    const all = measureEmbeddings(mixed);
    const englishOnly = measureEmbeddings(english);
    const arabicOnly = measureEmbeddings(arabic);
    const latency = embeddingLatencies(mixed);

    log(`measurement 2: ${IN_PROCESS_STORES} in-process memory_store calls`);
    const inProcess = await inProcessStoreShare(dir, mixed);
    log(`measurement 3: ${STDIO_STORES} memory_store calls over stdio`);
    const stdio = await stdioStoreLatency(dir, mixed);
    const { mean_ms: stdioMeanMs, ...stdioReport } = stdio;

    return {
      environment,
      local_hash_384: {
        single_thread: true,
        text_chars: [MIN_CHARS, MAX_CHARS],
        mixed_english_arabic: all,
        english: englishOnly,
        arabic: arabicOnly,
        per_call_latency: latency,
        target_per_s: TARGET_PER_S,
        target_met: all.embeddings_per_s >= TARGET_PER_S,
      },
      store_round_trip: {
        synchronous: 'FULL',
        in_process: inProcess,
        stdio: {
          ...stdioReport,
          embedding_share_of_round_trip_pct: roundTo((100 * (all.mean_us / 1000)) / stdioMeanMs, 2),
        },
      },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
