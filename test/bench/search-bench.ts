import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type BetterSqlite3 from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { contradictionKey, nativeContentHash } from '../../src/adapter/derived-identities.js';
import { scopeDigest, type ScopeTuple } from '../../src/adapter/request-scope.js';
import { fixedTokensOfRow } from '../../src/adapter/public-record.js';
import { selectDiverse } from '../../src/adapter/source-diversity.js';
import { canonicalJson } from '../../src/core/canonical-json.js';
import { foldKey, searchText, tokenRuns } from '../../src/core/text.js';
import { localHashEmbedding } from '../../src/embedding/local-hash-provider.js';
import { MMAP_SIZE_BYTES } from '../../src/storage/write-connection.js';
import { eligibleNeighbours, FIRST_PASS, type FirstPass } from '../../src/storage/eligible-neighbours.js';
import { rebuildEligibleVectors } from '../../src/storage/eligible-vectors.js';
import { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import { rebuildTokenCounts } from '../../src/storage/token-count-repository.js';
import { benchTimestamp, INSERT_FTS_SQL, INSERT_RECORD_SQL, INSERT_VEC_SQL } from './bench-records.js';
import { databaseBytes, describeEnvironment, progressLogger } from './bench-environment.js';
import { connectBenchClient, factlaneArgs } from './bench-server.js';
import { roundTo, summarizeLatencies } from './latency-stats.js';
import { SeededRandom } from './seeded-random.js';

// The search suite (issue 5): memory_search CURRENT SEMANTIC and HYBRID over stdio against the built
// launcher, on one database holding a 10k-fact and a 100k-fact PROJECT scope (each with as many
// Candidates) plus other scopes, next to the raw sqlite-vec KNN and FTS5 statements the product issues,
// run on a raw better-sqlite3 connection over the same file in the same run. Then a small labelled
// retrieval-quality set (real technical sentences, English and Arabic) for KEYWORD, SEMANTIC and HYBRID.

const require = createRequire(import.meta.url);
const Database: typeof BetterSqlite3 = require('better-sqlite3');
const sqliteVec: { load(db: unknown): void } = require('sqlite-vec');

const INTENT = 'CURRENT_PROJECT_STATE';
/** memory_search defaults: top_k 5 → pool max(20, 16) = 20 per channel (CONTRACT.md §12.1). */
const POOL = 20;
const POPULATE_BATCH = 5000;
const WARMUP_QUERIES = 20;
const QUERIES: Record<string, number> = { '10k': 300, '100k': 150 };
/** recall@8 of the served CURRENT SEMANTIC channel against exact float KNN (issue 11). */
const RECALL_K = 8;

/** Sizes to build; `SEARCH_BENCH_SIZES=10k` skips the 100k scope when time is short. */
const SIZES = (process.env.SEARCH_BENCH_SIZES ?? '10k,100k').split(',')
  .filter((size) => size === '10k' || size === '100k');

// ---- Generated technical sentences ------------------------------------------------------------------

const COMPONENTS = [
  'api gateway', 'billing service', 'auth service', 'ingest worker', 'search indexer', 'metrics exporter',
  'job scheduler', 'cache layer', 'payment queue', 'build pipeline', 'notification service', 'report generator',
  'upload handler', 'session store', 'feature flag client', 'audit logger', 'image resizer', 'webhook dispatcher',
  'config service', 'rate limiter', 'email sender', 'graphql server', 'cdn edge', 'backup agent', 'migration runner',
  'deploy bot', 'tenant router', 'invoice exporter', 'sync daemon', 'log shipper',
];
const VERBS = [
  'retries', 'caches', 'streams', 'compresses', 'encrypts', 'replicates', 'shards', 'rate limits', 'logs', 'validates',
  'batches', 'deduplicates', 'rotates', 'pins', 'mirrors', 'throttles', 'schedules', 'compacts', 'signs', 'buffers',
  'prefetches', 'expires', 'indexes', 'archives',
];
const OBJECTS = [
  'webhook deliveries', 'session tokens', 'audit events', 'tls certificates', 'database snapshots', 'kafka offsets',
  's3 uploads', 'grpc requests', 'feature flags', 'docker images', 'cron jobs', 'dns lookups', 'redis keys',
  'postgres connections', 'log segments', 'config reloads', 'oauth refresh tokens', 'prometheus scrapes',
  'helm releases', 'terraform plans', 'search queries', 'invoice pdfs', 'email bounces', 'user avatars',
];
const QUALIFIERS = [
  'every {n} minutes', 'on port {n}', 'with exponential backoff', 'for {n} days', 'in the eu-west region',
  'behind the load balancer', 'using zstd level {n}', 'after {n} seconds', 'per tenant', 'during the nightly window',
  'with a {n} mb limit', 'through the sidecar proxy', 'in batches of {n}', 'before the canary deploy',
  'for up to {n} attempts', 'on the staging cluster', 'with a {n} second timeout', 'at most {n} per minute',
];

function pick<T>(rng: SeededRandom, values: readonly T[]): T {
  return values[rng.int(values.length)]!;
}

function techSentence(rng: SeededRandom): string {
  const qualifier = pick(rng, QUALIFIERS).replace('{n}', String(1 + rng.int(900)));
  return `The ${pick(rng, COMPONENTS)} ${pick(rng, VERBS)} ${pick(rng, OBJECTS)} ${qualifier}`;
}

/** A query phrased like an agent's: 2-4 content words of one generated sentence shape. */
function techQuery(rng: SeededRandom): string {
  const shapes = [
    () => `${pick(rng, COMPONENTS)} ${pick(rng, OBJECTS)}`,
    () => `${pick(rng, VERBS)} ${pick(rng, OBJECTS)}`,
    () => `how does the ${pick(rng, COMPONENTS)} handle ${pick(rng, OBJECTS)}`,
    () => `${pick(rng, COMPONENTS)} ${pick(rng, VERBS)}`,
  ];
  return pick(rng, shapes)();
}

// ---- Rows ---------------------------------------------------------------------------------------

interface BenchScopeSpec {
  readonly label: string; readonly tuple: ScopeTuple; readonly current: number; readonly candidates: number;
}

const tuple = (scope: ScopeTuple['scope'], ids: Partial<Omit<ScopeTuple, 'scope'>> = {}): ScopeTuple =>
  ({ scope, project_id: ids.project_id ?? null, worktree_id: ids.worktree_id ?? null,
    workflow_id: ids.workflow_id ?? null, agent_id: ids.agent_id ?? null });

const SCOPE_10K = tuple('PROJECT', { project_id: 'bench-10k' });
const SCOPE_100K = tuple('PROJECT', { project_id: 'bench-100k' });
const QUALITY_SCOPE = tuple('PROJECT', { project_id: 'quality' });
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const ROLE: Record<string, string> = {
  GLOBAL_USER: 'OWNER_CURRENT', PROJECT: 'PROJECT_CURRENT', WORKFLOW: 'WORKFLOW_CURRENT',
  CROSS_PROJECT_WORKFLOW: 'WORKFLOW_CURRENT', TOOL_ENVIRONMENT: 'TOOL_ENV_CURRENT',
};
const FRESHNESS = canonicalJson({ kind: 'never', recheck_ref: null, source_fingerprint: null, ttl_seconds: null });
const ORIGIN = canonicalJson({ contributor_class: 'OWNER', contributor_ref: 'bench' });

/** A record as the adapter would store it, with its FTS text and local-hash-384 embedding. */
function benchRow(rng: SeededRandom, scope: ScopeTuple, fact: string, current: boolean, sequence: number) {
  const sourceRef = `docs/runbook-${rng.int(400)}.md`;
  const row = {
    record_id: rng.uuid(), memory_id: rng.uuid(), revision: 1, parent_record_id: null,
    scope: scope.scope, project_id: scope.project_id, worktree_id: scope.worktree_id, workflow_id: scope.workflow_id,
    agent_id: scope.agent_id,
    scope_key: scopeDigest(scope), memory_type: 'PROJECT_LEARNED_FACT', fact,
    source_provenance: canonicalJson({
      extraction_method: 'manual_read', review_ref: 'review/bench', source_class: 'repo_file', source_fingerprint: null,
      source_hash: sha256(sourceRef), source_ref: sourceRef,
    }),
    source_timestamp: '2026-01-01T00:00:00Z', created_at: benchTimestamp(sequence),
    last_verified_at: current ? '2026-01-02T00:00:00Z' : null,
    verified_by: current ? 'OWNER' : 'UNVERIFIED', authority_role: current ? ROLE[scope.scope]! : 'UNRESOLVED',
    contribution_origin: ORIGIN,
    freshness_policy: FRESHNESS, supersedes: '[]',
    contradiction_key: contradictionKey('PROJECT_LEARNED_FACT', scope, [...foldKey(fact)].slice(0, 96).join('')),
    contradiction_state: 'NONE', confidence: 0.8, tags: '[]',
    lifecycle_state: current ? 'VALIDATED_CURRENT' : 'CANDIDATE',
    native_content_hash: nativeContentHash(scope, fact), payload_fingerprint: sha256(`payload|${sequence}`),
    idempotency_key: `bench-${sequence}`,
    embedding_profile_id: 'local-hash-384', embedding_model_digest: sha256('factlane-local-hash-384-v1'),
    embedding_output_dimension: 384,
  };
  const vector = localHashEmbedding(fact);
  return {
    row, searchText: searchText(fact), current,
    embedding: Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength),
  };
}

/** Raw writer: the fence function registered (returning 1), synchronous OFF for this connection only. */
function openRawWriter(dbPath: string): BetterSqlite3.Database {
  const db = new Database(dbPath);
  sqliteVec.load(db);
  db.function('factlane_contract_v2_writer', { deterministic: false }, () => 1);
  db.pragma('synchronous = OFF');
  return db;
}

function populate(
  dbPath: string, specs: readonly BenchScopeSpec[], extra: readonly { scope: ScopeTuple; fact: string }[],
  log: (m: string) => void,
): Record<string, unknown> {
  const db = openRawWriter(dbPath);
  const insertRecord = db.prepare(INSERT_RECORD_SQL);
  const insertFts = db.prepare(INSERT_FTS_SQL);
  const insertVec = db.prepare(INSERT_VEC_SQL);
  const rng = new SeededRandom(0x5ea4c4);
  let sequence = 0;
  let generateMs = 0;
  let insertMs = 0;
  const write = db.transaction((rows: ReturnType<typeof benchRow>[]) => {
    for (const r of rows) {
      const rowId = BigInt(insertRecord.run(r.row).lastInsertRowid);
      insertFts.run(rowId, r.searchText);
      insertVec.run(rowId, r.row.scope_key, r.current ? 1n : 0n, r.embedding);
    }
  });
  const flush = (rows: ReturnType<typeof benchRow>[]) => {
    const started = performance.now();
    write(rows);
    insertMs += performance.now() - started;
  };
  const seenFacts = new Set<string>();
  for (const spec of specs) {
    const total = spec.current + spec.candidates;
    for (let done = 0; done < total; done += POPULATE_BATCH) {
      const started = performance.now();
      const rows = [];
      for (let i = done; i < Math.min(total, done + POPULATE_BATCH); i += 1) {
        sequence += 1;
        // Candidates interleave with current facts and are as similar to the queries.
        const current = i % (total / spec.current) < 1;
        let fact = techSentence(rng);
        while (seenFacts.has(`${spec.label}|${fact}`)) fact = techSentence(rng);
        seenFacts.add(`${spec.label}|${fact}`);
        rows.push(benchRow(rng, spec.tuple, fact, current, sequence));
      }
      generateMs += performance.now() - started;
      flush(rows);
      if ((done + POPULATE_BATCH) % 50_000 === 0) log(`populate: ${spec.label} ${done + POPULATE_BATCH}/${total}`);
    }
    log(`populate: ${spec.label} done (${Math.round(generateMs / 1000)} s generating, `
      + `${Math.round(insertMs / 1000)} s inserting so far)`);
  }
  flush(extra.map(({ scope, fact }) => {
    sequence += 1;
    return benchRow(rng, scope, fact, true, sequence);
  }));
  const counts = db.prepare('select lifecycle_state, count(*) as n from adapter_records group by lifecycle_state')
    .all() as { lifecycle_state: string; n: number }[];
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return {
    rows: sequence, by_lifecycle: Object.fromEntries(counts.map((c) => [c.lifecycle_state, c.n])),
    generate_s: roundTo(generateMs / 1000, 1), insert_s: roundTo(insertMs / 1000, 1),
    insert_rows_per_s: Math.round(sequence / (insertMs / 1000)),
  };
}

// ---- Raw baselines: the product's statements on a raw connection ------------------------------------

interface RawQueries {
  knn(embedding: Float32Array, scope: ScopeTuple): { rowid: number; distance: number }[];
  fts(
    query: string, scope: ScopeTuple,
  ): { row_id: number; record_id: string; fact: string; source_provenance: string }[];
  rowsById(
    ids: readonly number[],
  ): Map<number, { row_id: number; record_id: string; fact: string; source_provenance: string }>;
  close(): void;
  versions: { sqliteVersion: string; sqliteVecVersion: string };
}

function openRawReader(dbPath: string): RawQueries {
  const db = new Database(dbPath, { readonly: true });
  sqliteVec.load(db);
  // The server's read settings, so the raw baseline reads the file the same way (mmap, decision 0008).
  db.pragma(`mmap_size = ${MMAP_SIZE_BYTES}`);
  const knn = db.prepare('select rowid, distance from fact_vec where embedding match ? and k = ? and scope_key = ? '
    + 'and is_current = 1 order by distance');
  // A literal LIMIT: SQLite prepares a statement with a bound one again at every run (decision 0051).
  const fts = db.prepare(`select r.* from fact_fts join adapter_records r on r.row_id = fact_fts.rowid
    where fact_fts match ? and r.scope = ? and r.project_id is ? and r.worktree_id is ? `
    + `and r.workflow_id is ? and r.agent_id is ?
      and r.lifecycle_state = 'VALIDATED_CURRENT' and r.contradiction_state in ('NONE', 'RESOLVED')
    order by bm25(fact_fts) asc, r.created_at desc, r.record_id asc limit ${POOL}`);
  const byId = db.prepare('select row_id, record_id, fact, source_provenance from adapter_records where row_id = ?');
  const versions = db.prepare('select sqlite_version() as s, vec_version() as v').get() as { s: string; v: string };
  return {
    knn: (embedding, scope) => knn.all(Buffer.from(embedding.buffer, embedding.byteOffset, embedding.byteLength),
      BigInt(POOL), scopeDigest(scope)) as { rowid: number; distance: number }[],
    fts: (query, scope) => {
      const terms = tokenRuns(searchText(query));
      if (terms.length === 0) return [];
      const match = terms.map((term) => `"${term.replaceAll('"', '""')}"`).join(' ');
      return fts.all(match, scope.scope, scope.project_id, scope.worktree_id, scope.workflow_id,
        scope.agent_id) as never;
    },
    rowsById: (ids) => new Map(ids
      .map((id) => byId.get(id) as { row_id: number; record_id: string; fact: string; source_provenance: string })
      .map((row) => [row.row_id, row])),
    close: () => db.close(),
    versions: { sqliteVersion: versions.s, sqliteVecVersion: versions.v },
  };
}

// ---- The server --------------------------------------------------------------------------------

function startServer(dbPath: string) {
  return connectBenchClient('factlane-search-bench', factlaneArgs('--db', dbPath, '--host-id', 'bench'));
}

async function searchCall(
  client: Client, request: Record<string, unknown>,
): Promise<{ ms: number; envelope: Record<string, any> }> {
  const started = performance.now();
  const result = await client.callTool({ name: 'memory_search', arguments: { request } });
  const ms = performance.now() - started;
  if (result.isError) throw new Error(`memory_search failed: ${JSON.stringify(result.content)}`);
  return { ms, envelope: result.structuredContent as Record<string, any> };
}

function memoryOf(pid: number): Record<string, number> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string) =>
    Number(/\d+/.exec(status.split('\n').find((line) => line.startsWith(`${key}:`)) ?? '')?.[0] ?? Number.NaN);
  // RssFile is mostly the memory-mapped database (decision 0008): file pages the kernel can drop; RssAnon is the heap.
  return {
    peak_rss_mib: roundTo(kib('VmHWM') / 1024, 1), rss_mib: roundTo(kib('VmRSS') / 1024, 1),
    rss_anon_mib: roundTo(kib('RssAnon') / 1024, 1), rss_file_mib: roundTo(kib('RssFile') / 1024, 1),
  };
}

/** The first-pass sizes the frontier tries at every scale; FIRST_PASS is the one searches use. */
const FRONTIER: readonly FirstPass[] = [
  { rows: 32, minShardK: 8 }, { rows: 64, minShardK: 8 }, { rows: 128, minShardK: 8 }, { rows: 256, minShardK: 8 },
  { rows: 512, minShardK: 8 }, { rows: 128, minShardK: 2 }, { rows: 128, minShardK: 4 }, { rows: 128, minShardK: 16 },
];

type Outcomes = { returned: number; statuses: Record<string, number> };

/** One server search, counted into `outcomes`; anything but OK or BUDGET_EXCEEDED ends the suite. */
async function countedSearch(client: Client, request: Record<string, unknown>, outcomes: Outcomes): Promise<number> {
  const { ms, envelope } = await searchCall(client, request);
  // With the default budget (1200 tokens) five results of ~330 tokens never fit: BUDGET_EXCEEDED is expected.
  if (envelope.status !== 'OK' && envelope.degradation !== 'BUDGET_EXCEEDED') {
    throw new Error(`search ended ${envelope.status} ${envelope.degradation ?? envelope.error_code ?? ''}`);
  }
  const key = envelope.degradation ?? envelope.status;
  outcomes.statuses[key] = (outcomes.statuses[key] ?? 0) + 1;
  outcomes.returned += envelope.results.length;
  return ms;
}

/**
 * recall@8 and p50 of the served CURRENT SEMANTIC channel in process with each first-pass size of FRONTIER, over
 * `queries`; `exactTop` holds the exact top 8 of each counted query (the first WARMUP_QUERIES are not counted).
 */
async function measureFrontier(
  engine: SQLiteVecEngine, scope: ScopeTuple, queries: readonly string[], exactTop: Map<number, Set<number>>,
): Promise<Record<string, unknown>[]> {
  const embeddings = queries.map((query) => localHashEmbedding(query));
  const key = scopeDigest(scope);
  const frontier = [];
  for (const firstPass of FRONTIER) {
    const latencies: number[] = [];
    let recall = 0;
    for (const [i, embedding] of embeddings.entries()) {
      const started = performance.now();
      const served = await engine.read((db) => eligibleNeighbours(db, key, embedding, RECALL_K, [], firstPass));
      const ms = performance.now() - started;
      const exact = exactTop.get(i);
      if (exact === undefined) continue;
      latencies.push(ms);
      recall += served.filter((n) => exact.has(n.rowid)).length / RECALL_K;
    }
    const served = firstPass.rows === FIRST_PASS.rows && firstPass.minShardK === FIRST_PASS.minShardK;
    const { p50_ms } = summarizeLatencies(latencies, 'ms');
    const recall_at_8 = roundTo(recall / latencies.length, 4);
    frontier.push({ first_pass_rows: firstPass.rows, min_shard_k: firstPass.minShardK, served, p50_ms, recall_at_8 });
  }
  return frontier;
}

/**
 * Latency of SEMANTIC and HYBRID through the server beside the raw KNN and FTS5 statements, interleaved per query;
 * then the frontier: the served channel in process with each first-pass size of FRONTIER, recall@8 and p50 over the
 * same queries (the first WARMUP_QUERIES of each pass are not counted).
 */
async function measureScope(
  client: Client, raw: RawQueries, engine: SQLiteVecEngine, scope: ScopeTuple, count: number, rng: SeededRandom,
): Promise<Record<string, unknown>> {
  const base = { scope: scope.scope, project_id: scope.project_id, intent_class: INTENT };
  const queries = Array.from({ length: WARMUP_QUERIES + count }, () => techQuery(rng));
  const measured = (i: number) => i >= WARMUP_QUERIES;
  const samples = {
    semantic: [] as number[], hybrid: [] as number[], knn: [] as number[], fts: [] as number[],
    knnPlusFts: [] as number[], embed: [] as number[], channel: [] as number[],
  };
  const exactTop = new Map<number, Set<number>>();
  let recallSum = 0;
  let sameTop1 = 0;
  const outcomes = { semantic: { returned: 0, statuses: {} }, hybrid: { returned: 0, statuses: {} } };
  for (const [i, query] of queries.entries()) {
    const semanticMs = await countedSearch(client, { ...base, query }, outcomes.semantic);
    const hybridMs = await countedSearch(client, { ...base, query, retrieval_mode_kind: 'HYBRID' }, outcomes.hybrid);
    let started = performance.now();
    const embedding = localHashEmbedding(query);
    const embedMs = performance.now() - started;
    started = performance.now();
    const neighbours = raw.knn(embedding, scope);
    const knnMs = performance.now() - started;
    started = performance.now();
    raw.fts(query, scope);
    const ftsMs = performance.now() - started;
    if (neighbours.length !== POOL) throw new Error(`raw KNN returned ${neighbours.length} rows`);
    // The CURRENT SEMANTIC channel the server serves (eligible forms, first pass + exact re-scoring), top 8, against
    // exact float KNN over the same VALIDATED_CURRENT vectors (the raw schema-1 statement, ordered by distance).
    started = performance.now();
    const served = await engine.read((db) => eligibleNeighbours(db, scopeDigest(scope), embedding, RECALL_K));
    const channelMs = performance.now() - started;
    if (!measured(i)) continue;
    const exact = new Set(neighbours.slice(0, RECALL_K).map((n) => n.rowid));
    exactTop.set(i, exact);
    recallSum += served.filter((n) => exact.has(n.rowid)).length / RECALL_K;
    if (served[0]?.rowid === neighbours[0]!.rowid) sameTop1 += 1;
    samples.channel.push(channelMs);
    samples.semantic.push(semanticMs);
    samples.hybrid.push(hybridMs);
    samples.embed.push(embedMs);
    samples.knn.push(knnMs);
    samples.fts.push(ftsMs);
    samples.knnPlusFts.push(knnMs + ftsMs);
  }

  const frontier = await measureFrontier(engine, scope, queries, exactTop);
  const semantic = summarizeLatencies(samples.semantic, 'ms');
  const hybrid = summarizeLatencies(samples.hybrid, 'ms');
  const knn = summarizeLatencies(samples.knn, 'ms');
  const knnPlusFts = summarizeLatencies(samples.knnPlusFts, 'ms');
  const ratio = (a: Record<string, number>, b: Record<string, number>) => roundTo(a.p50_ms! / b.p50_ms!, 2);
  const mean = (outcome: Outcomes) => roundTo(outcome.returned / (WARMUP_QUERIES + count), 2);
  return {
    server_semantic_current: {
      ...semantic, mean_results: mean(outcomes.semantic), outcomes: outcomes.semantic.statuses,
    },
    server_hybrid_current: { ...hybrid, mean_results: mean(outcomes.hybrid), outcomes: outcomes.hybrid.statuses },
    current_semantic_recall_at_8: roundTo(recallSum / count, 4),
    current_semantic_same_top1: roundTo(sameTop1 / count, 4),
    in_process_current_semantic_channel_k8: summarizeLatencies(samples.channel, 'ms'),
    current_semantic_frontier: frontier,
    raw_knn_current_k20: knn,
    raw_fts5_current_limit20: summarizeLatencies(samples.fts, 'ms'),
    raw_knn_plus_fts5: knnPlusFts,
    in_process_query_embedding: summarizeLatencies(samples.embed, 'ms'),
    semantic_p50_ratio_to_raw_knn: ratio(semantic, knn),
    semantic_p50_ratio_to_raw_knn_plus_fts5: ratio(semantic, knnPlusFts),
    hybrid_p50_ratio_to_raw_knn_plus_fts5: ratio(hybrid, knnPlusFts),
  };
}

// ---- Retrieval quality --------------------------------------------------------------------------

/** Real technical sentences, each with paraphrased queries (not copied word for word). */
const LABELLED: readonly { fact: string; queries: readonly string[] }[] = [
  { fact: 'The CI pipeline caches node_modules keyed on the hash of package-lock.json',
    queries: ['how is node_modules cached in CI', 'CI dependency cache key'] },
  { fact: 'Postgres connections go through PgBouncer in transaction pooling mode with a pool size of 40',
    queries: ['pgbouncer pool mode', 'database connection pool size'] },
  { fact: "TLS certificates are issued by Let's Encrypt and renewed by cert-manager 30 days before expiry",
    queries: ['when are certificates renewed', 'cert-manager renewal window'] },
  { fact: 'The staging cluster scales down to zero nodes every night at 22:00 UTC',
    queries: ['staging cluster nightly scale down', 'when does staging shut down'] },
  { fact: 'Feature flags are served by Unleash and cached in the client for 15 seconds',
    queries: ['feature flag cache duration', 'which service serves feature flags'] },
  { fact: 'Production logs are shipped with Vector to Loki and kept for 14 days',
    queries: ['log retention period', 'how are logs shipped to loki'] },
  { fact: 'The payment webhook retries failed deliveries with exponential backoff up to 8 attempts',
    queries: ['webhook retry policy', 'how many times are payment webhooks retried'] },
  { fact: 'Docker images are built with BuildKit and pushed to the GitHub container registry',
    queries: ['where are container images pushed', 'image build tool'] },
  { fact: 'The search index is rebuilt from Postgres by a nightly Elasticsearch reindex job',
    queries: ['elasticsearch reindex schedule', 'how is the search index rebuilt'] },
  { fact: 'Database migrations run with Flyway before the new pods receive traffic',
    queries: ['when do flyway migrations run', 'schema migration tool'] },
  { fact: 'Redis is used only as a cache; user sessions are stored in Postgres',
    queries: ['where are sessions stored', 'is redis only a cache'] },
  { fact: 'The frontend is built with Vite and deployed to Cloudflare Pages on every merge to main',
    queries: ['frontend deployment target', 'vite build and deploy'] },
  { fact: 'API rate limits are 100 requests per minute per token, enforced at the Envoy gateway',
    queries: ['api rate limit per token', 'where is rate limiting enforced'] },
  { fact: 'Secrets live in HashiCorp Vault and are injected into pods by the Vault agent sidecar',
    queries: ['how are secrets injected into pods', 'vault secret storage'] },
  { fact: 'Backups of the primary database are taken every 6 hours with pgBackRest and copied to S3',
    queries: ['database backup frequency', 'pgbackrest backups to s3'] },
  { fact: 'The monorepo uses pnpm workspaces and Turborepo for task caching',
    queries: ['package manager for the monorepo', 'turborepo task cache'] },
  { fact: 'Integration tests run against Testcontainers instead of a shared database',
    queries: ['integration test database', 'do we use testcontainers'] },
  { fact: 'Kafka topics keep messages for 7 days and have 12 partitions each',
    queries: ['kafka retention', 'number of partitions per kafka topic'] },
  { fact: 'Python services are formatted with Ruff and type-checked with mypy in strict mode',
    queries: ['python formatter and linter', 'mypy strict mode'] },
  { fact: 'The on-call rotation changes every Monday at 09:00 Berlin time',
    queries: ['when does the on-call rotation change', 'on-call handover time'] },
  { fact: 'تُحفظ النسخ الاحتياطية لقاعدة البيانات كل ست ساعات في حاوية S3',
    queries: ['متى تؤخذ النسخ الاحتياطية لقاعدة البيانات', 'نسخ احتياطي في S3'] },
  { fact: 'يعمل خادم الواجهة البرمجية على المنفذ 8080 خلف موازن الأحمال',
    queries: ['ما هو منفذ خادم الواجهة البرمجية', 'موازن الاحمال'] },
  { fact: 'تُجدَّد شهادات TLS تلقائياً قبل انتهاء صلاحيتها بثلاثين يوماً',
    queries: ['متى تجدد شهادات TLS', 'تجديد الشهادات تلقائيا'] },
  { fact: 'يُنشر التطبيق على بيئة الإنتاج بعد موافقة مراجعَين اثنين على طلب الدمج',
    queries: ['شروط النشر على بيئة الانتاج', 'موافقة المراجعين على طلب الدمج'] },
  { fact: 'تُحذف السجلات القديمة من الخادم بعد أربعة عشر يوماً',
    queries: ['مدة الاحتفاظ بالسجلات', 'متى تحذف السجلات القديمة'] },
  { fact: 'تستخدم خدمة الدفع قائمة انتظار RabbitMQ لمعالجة الطلبات',
    queries: ['ما قائمة الانتظار في خدمة الدفع', 'معالجة طلبات الدفع'] },
  { fact: 'يجب تشغيل الاختبارات كاملة قبل دمج أي فرع في الفرع الرئيسي',
    queries: ['متى نشغل الاختبارات', 'دمج فرع في الفرع الرئيسي'] },
  { fact: 'تُخزَّن كلمات المرور مُجزَّأة باستخدام خوارزمية Argon2',
    queries: ['كيف تخزن كلمات المرور', 'خوارزمية تجزئة كلمات المرور'] },
  { fact: 'يُعاد تشغيل العاملين في الخلفية تلقائياً عند تجاوز الذاكرة حد 512 ميغابايت',
    queries: ['حد الذاكرة للعاملين في الخلفية', 'اعادة تشغيل العاملين تلقائيا'] },
  { fact: 'تُرسل تنبيهات المراقبة إلى قناة المناوبة في Slack',
    queries: ['اين ترسل تنبيهات المراقبة', 'قناة المناوبة في سلاك'] },
];

const ARABIC_DISTRACTOR_TEMPLATES = [
  'تعمل خدمة {c} على المنفذ {n}', 'تُحفظ سجلات خدمة {c} لمدة {n} يوماً', 'يُعاد تشغيل خدمة {c} كل {n} دقيقة',
  'تستخدم خدمة {c} قاعدة بيانات منفصلة', 'تُرسل خدمة {c} الإشعارات بالبريد الإلكتروني',
  'يُراجع فريق المنصة إعدادات خدمة {c} كل أسبوع',
];
const ARABIC_COMPONENTS = [
  'الفوترة', 'المصادقة', 'البحث', 'الرفع', 'التقارير', 'الجدولة', 'التخزين المؤقت', 'الإشعارات',
];

function qualityDistractors(rng: SeededRandom): string[] {
  const facts = new Set<string>();
  while (facts.size < 400) facts.add(techSentence(rng));
  while (facts.size < 460) facts.add(pick(rng, ARABIC_DISTRACTOR_TEMPLATES).replace('{c}', pick(rng, ARABIC_COMPONENTS))
    .replace('{n}', String(1 + rng.int(90))));
  return [...facts];
}

/** The unbudgeted CURRENT ranking of §12.2 from the raw statements (no freshness loss here: all facts are `never`). */
function rawRanking(raw: RawQueries, query: string, kind: 'KEYWORD' | 'SEMANTIC' | 'HYBRID', max: number): string[] {
  const scores = new Map<number, { vector?: number; keyword?: number }>();
  if (kind !== 'KEYWORD') for (const n of raw.knn(localHashEmbedding(query), QUALITY_SCOPE)) scores.set(n.rowid,
    { vector: Math.max(0, 1 - n.distance / 2) });
  if (kind !== 'SEMANTIC') raw.fts(query, QUALITY_SCOPE).forEach((row, index) =>
    scores.set(row.row_id, { ...scores.get(row.row_id), keyword: 1 / (index + 1) }));
  const rows = raw.rowsById([...scores.keys()]);
  const ranked = [...scores].map(([rowId, { vector, keyword }]) => {
    const row = rows.get(rowId)!;
    const provenance = JSON.parse(row.source_provenance) as
      { source_class: string; source_ref: string; source_hash: string };
    return {
      row,
      score: vector !== undefined && keyword !== undefined ? 0.6 * vector + 0.4 * keyword : (vector ?? keyword ?? 0),
      source: provenance,
    };
  }).sort((a, b) => b.score - a.score || (a.row.record_id < b.row.record_id ? -1 : 1));
  const selected = kind === 'KEYWORD' ? ranked.slice(0, max) : selectDiverse(ranked, max);
  return selected.map((candidate) => candidate.row.fact);
}

async function measureQuality(client: Client, raw: RawQueries): Promise<Record<string, unknown>> {
  const kinds = ['KEYWORD', 'SEMANTIC', 'HYBRID'] as const;
  const report: Record<string, unknown> = {};
  for (const language of ['en', 'ar', 'all'] as const) {
    const items = LABELLED
      .filter((item) => language === 'all' || (language === 'ar') === /[\u0600-\u06ff]/u.test(item.fact));
    const perKind: Record<string, unknown> = {};
    for (const kind of kinds) {
      let queries = 0;
      let hit1 = 0;
      let hitReturned = 0;
      let returned = 0;
      let rawHit1 = 0;
      let rawHit5 = 0;
      for (const item of items) {
        for (const query of item.queries) {
          queries += 1;
          const { envelope } = await searchCall(client, {
            scope: 'PROJECT', project_id: 'quality', query, intent_class: INTENT, retrieval_mode_kind: kind,
            max_memories: 5, max_bytes: 8000, max_tokens: 1600,
          });
          const facts = (envelope.results as { fact: string }[]).map((r) => r.fact);
          returned += facts.length;
          if (facts[0] === item.fact) hit1 += 1;
          if (facts.includes(item.fact)) hitReturned += 1;
          const ranking = rawRanking(raw, query, kind, 5);
          if (ranking[0] === item.fact) rawHit1 += 1;
          if (ranking.includes(item.fact)) rawHit5 += 1;
        }
      }
      perKind[kind] = {
        queries, hit_at_1: roundTo(hit1 / queries, 3), hit_at_5: roundTo(rawHit5 / queries, 3),
        hit_in_returned: roundTo(hitReturned / queries, 3), mean_returned: roundTo(returned / queries, 2),
        unbudgeted_hit_at_1: roundTo(rawHit1 / queries, 3),
      };
    }
    report[language] = perKind;
  }
  return {
    facts: LABELLED.length, distractors_in_scope: 460,
    queries: LABELLED.reduce((n, item) => n + item.queries.length, 0), by_language: report,
    note: 'hit_at_1 is measured over stdio; hit_at_5 over the unbudgeted ranking of §12.2 (raw statements, same scores '
      + 'and diversity), because max_tokens 1600 returns at most ~4 records of ~330 tokens; hit_in_returned counts '
      + 'what the server returned with max_memories 5 and the largest budgets',
  };
}

// ---- The suite --------------------------------------------------------------------------------------

export async function runSearchBench(): Promise<Record<string, unknown>> {
  const log = progressLogger('search');
  // SEARCH_BENCH_KEEP_DIR names an empty directory that keeps the database afterwards (for profiling).
  const keptDir = process.env.SEARCH_BENCH_KEEP_DIR;
  const dir = keptDir ?? mkdtempSync(join(tmpdir(), 'factlane-search-bench-'));
  try {
    const dbPath = join(dir, 'search.sqlite3');
    // The first start creates the database with the launcher's own local-hash-384 binding.
    const first = await startServer(dbPath);
    await first.client.close();

    const specs: BenchScopeSpec[] = [];
    if (SIZES.includes('10k')) specs.push({ label: '10k', tuple: SCOPE_10K, current: 10_000, candidates: 10_000 });
    if (SIZES.includes('100k')) specs.push({ label: '100k', tuple: SCOPE_100K, current: 100_000, candidates: 100_000 });
    specs.push(
      { label: 'global_user', tuple: tuple('GLOBAL_USER'), current: 5000, candidates: 5000 },
      { label: 'workflow', tuple: tuple('WORKFLOW', { project_id: 'bench-10k', workflow_id: 'release' }),
        current: 5000, candidates: 5000 },
      { label: 'project_agent', tuple: tuple('PROJECT', { project_id: 'bench-10k', agent_id: 'codex' }),
        current: 5000, candidates: 5000 },
      { label: 'tool_env', tuple: tuple('TOOL_ENVIRONMENT', { agent_id: 'codex' }), current: 2000, candidates: 2000 },
    );
    const qualityRng = new SeededRandom(0x9a11);
    const qualityFacts = [...LABELLED.map((item) => item.fact), ...qualityDistractors(qualityRng)]
      .map((fact) => ({ scope: QUALITY_SCOPE, fact }));
    log(`populate: ${specs.map((s) => `${s.label} ${s.current}+${s.candidates}`).join(', ')}`);
    const population = populate(dbPath, specs, qualityFacts, log);

    // The raw writer filled fact_vec only; the eligible forms are derived from it exactly as `factlane-migrate up`
    // derives them (rebuildEligibleVectors), by the product's own code.
    const openEngine = () => SQLiteVecEngine.open({
      dbPath, newDatabaseBinding: async () => { throw new Error('the bench database exists'); },
    });
    const rebuilder = await openEngine();
    const rebuildStarted = performance.now();
    const rebuilt = await rebuilder.write((trx) => rebuildEligibleVectors(trx));
    // The token counts a writer stores beside each record (decision 0036), as `factlane-migrate up` stores them.
    const counted = await rebuilder.write((trx) => rebuildTokenCounts(trx, fixedTokensOfRow));
    // Closing the last connection checkpoints the rebuild's WAL into the file, as SQLite's automatic checkpoints keep
    // it in use: otherwise every read of the eligible tables would go through a WAL of tens of MB.
    await rebuilder.close();
    const engine = await openEngine();
    const rebuild = {
      vectors: rebuilt, token_counts: counted, seconds: roundTo((performance.now() - rebuildStarted) / 1000, 1),
    };
    population.eligible_rebuild = rebuild;
    log(`populate: eligible forms of ${rebuilt} current vectors and ${counted} token counts in ${rebuild.seconds} s`);
    const raw = openRawReader(dbPath);
    const server = await startServer(dbPath);
    const pid = server.transport.pid;
    if (pid === null) throw new Error('no server pid');
    try {
      const rng = new SeededRandom(0x0e77);
      const latency: Record<string, unknown> = {};
      for (const spec of specs.filter((s) => s.label === '10k' || s.label === '100k')) {
        log(`measure: ${spec.label} current facts, ${QUERIES[spec.label]} queries per kind`);
        latency[`project_${spec.label}_current`] = {
          current_in_scope: spec.current, candidates_in_scope: spec.candidates,
          ...(await measureScope(server.client, raw, engine, spec.tuple, QUERIES[spec.label]!, rng)),
        };
      }
      const memory = memoryOf(pid);
      log('measure: retrieval quality');
      const quality = await measureQuality(server.client, raw);
      const largest = specs.some((s) => s.label === '100k') ? '100k' : '10k';
      const at10k = latency.project_10k_current as Record<string, any> | undefined;
      const atLargest = latency[`project_${largest}_current`] as Record<string, any>;
      return {
        environment: describeEnvironment(dir, raw.versions),
        database: { ...population, ...databaseBytes(dbPath), server_restart_ms: roundTo(server.startupMs, 1) },
        latency,
        server_memory_after_largest: { size: largest, ...memory },
        targets: {
          p50_within_1_5x_of_raw_knn_plus_fts5: Object.fromEntries(Object.entries(latency).map(([label, value]) => {
            const v = value as Record<string, any>;
            return [label, { semantic: v.semantic_p50_ratio_to_raw_knn_plus_fts5 <= 1.5,
              hybrid: v.hybrid_p50_ratio_to_raw_knn_plus_fts5 <= 1.5 }];
          })),
          p50_under_10ms_at_10k: at10k
            ? { semantic: at10k.server_semantic_current.p50_ms < 10, hybrid: at10k.server_hybrid_current.p50_ms < 10 }
            : 'not measured',
          largest_hybrid_p50_ms: atLargest.server_hybrid_current.p50_ms,
          issue_11_at_10k: at10k ? {
            semantic_p50_at_most_2_5ms: at10k.server_semantic_current.p50_ms <= 2.5,
            hybrid_p50_at_most_3ms: at10k.server_hybrid_current.p50_ms <= 3,
            recall_at_8_at_least_0_97: at10k.current_semantic_recall_at_8 >= 0.97,
          } : 'not measured',
          issue_11_at_100k: latency.project_100k_current ? {
            semantic_p50_at_most_20ms:
              (latency.project_100k_current as Record<string, any>).server_semantic_current.p50_ms <= 20,
            recall_at_8_at_least_0_95:
              (latency.project_100k_current as Record<string, any>).current_semantic_recall_at_8 >= 0.95,
          } : 'not measured',
        },
        retrieval_quality: quality,
      };
    } finally {
      await server.client.close();
      raw.close();
      await engine.close();
    }
  } finally {
    if (keptDir === undefined) rmSync(dir, { recursive: true, force: true });
  }
}
