import t, { type Test } from 'tap';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { MemoryAdapter } from '../../src/adapter/memory-adapter.js';
import { scopeDigest } from '../../src/adapter/request-scope.js';
import { AdapterError } from '../../src/core/adapter-error.js';
import type { RuntimeProvenance } from '../../src/embedding/embedding-provider.js';
import { LocalHashProvider } from '../../src/embedding/local-hash-provider.js';
import { connectClient, openLocalHashEngine, sortedJson } from '../helpers/mcp.js';
import {
  candidateStore, currentStore, factsOf, fixtureRow, hex64, insertFixtures, openReadBench, provenance, queryVector,
  rankedOf, READ_NOW, refusedWith, scopeRequest, scopeTuple, search, vectorAtDistance, type Json, type ReadBench,
} from '../helpers/reads.js';

// memory_search through MemoryAdapter (CONTRACT.md §5.1, §6.1-§6.2, §6.6, §11, §12) on a local-hash-384
// database per test. Data comes from memory_store (owner-current for current facts, delegated-candidate
// for Candidates) or from fixture rows with vectors crafted at known distances from the query embedding.

const SCOPE = scopeTuple('PROJECT', { project_id: 'p1' });
const INTENT = 'CURRENT_PROJECT_STATE';
/** The largest budgets: a public record is ~330 o200k tokens, so more than three results need them. */
const BIG = { max_bytes: 8000, max_tokens: 1600 };
const KINDS = ['EXACT', 'KEYWORD', 'SEMANTIC', 'HYBRID'] as const;

const req = (query: string, extra: Json = {}, scope = SCOPE): Json => ({
  ...scopeRequest(scope), query, intent_class: INTENT, ...extra,
});
const storeCurrent = async (bench: ReadBench, fact: string, extra: Json = {}, scope = SCOPE): Promise<Json> => {
  const envelope = (await bench.owner.execute('memory_store', currentStore(scope, fact, extra))) as Json;
  if (envelope.status !== 'OK') throw new Error(`fixture store ended ${envelope.status}`);
  return envelope.results[0];
};
const storeCandidate = async (bench: ReadBench, fact: string, extra: Json = {}, scope = SCOPE): Promise<Json> => {
  const envelope = (await bench.delegate.execute('memory_store', candidateStore(scope, fact, extra))) as Json;
  if (envelope.status !== 'OK') throw new Error(`fixture store ended ${envelope.status}`);
  return envelope.results[0];
};
const bytes = (value: unknown) => Buffer.byteLength(sortedJson(value), 'utf8');
const tokens = (value: unknown) => encode(sortedJson(value)).length;

/** Every emitted list: ranks 1..n, scores with at most 6 decimals, non-increasing. */
function checkRanking(t: Test, envelope: Json, name: string) {
  const results: Json[] = envelope.results;
  t.strictSame(results.map((r) => r.retrieval_rank), results.map((_, i) => i + 1), `${name}: ranks 1..n`);
  t.ok(results.every((r) => Number(r.relevance_score.toFixed(6)) === r.relevance_score),
    `${name}: scores rounded to 6 decimals`);
}

/** A provider whose status check fails: the database is then not COMPATIBLE for vector kinds. */
class DownProvider extends LocalHashProvider {
  override async statusCheck(): Promise<RuntimeProvenance> {
    throw new AdapterError('EMBEDDING_UNAVAILABLE', 'provider down');
  }
}

/** Counts provider calls. */
class CountingProvider extends LocalHashProvider {
  calls = 0;
  override async statusCheck(): Promise<RuntimeProvenance> {
    this.calls += 1;
    return super.statusCheck();
  }
  override async embedQuery(text: string): Promise<Float32Array> {
    this.calls += 1;
    return super.embedQuery(text);
  }
  override async embedDocuments(texts: readonly string[]): Promise<Float32Array[]> {
    this.calls += 1;
    return super.embedDocuments(texts);
  }
}

// ---- CURRENT eligibility before LIMIT and k ----------------------------------------------------------

t.test('SEMANTIC: eight nearer Candidates never hide a farther validated fact (top_k 1)', async (t) => {
  const bench = await openReadBench(t);
  const query = 'which port does the metrics exporter listen on';
  // Candidates repeat the query almost word for word; the validated fact shares only a few words.
  const candidates: Json[] = [];
  for (let i = 0; i < 8; i += 1)
    candidates.push(await storeCandidate(bench, `which port does the metrics exporter listen on ${i}`));
  const fact = await storeCurrent(bench, 'The exporter serves metrics on port 9464');

  const history = await search(bench.owner,
    req(query, { retrieval_mode: 'REVIEW_HISTORY', top_k: 1, max_memories: 3 }));
  t.equal(history.status, 'OK');
  t.ok(history.results.every((r: Json) => r.lifecycle_state === 'CANDIDATE'),
    'REVIEW_HISTORY: the nearest are all Candidates');
  t.equal(history.results.length, 3);
  t.ok(history.results.every((r: Json) => candidates.some((c) => c.record_id === r.record_id)));

  const current = await search(bench.owner, req(query, { top_k: 1, max_memories: 1 }));
  t.equal(current.status, 'OK');
  t.strictSame(factsOf(current), [fact.fact], 'CURRENT SEMANTIC top_k 1: the validated fact');
  t.equal(current.results[0].record_id, fact.record_id);
  t.ok(current.results[0].relevance_score < history.results[2].relevance_score,
    'and it is farther than the Candidates');
  t.equal(current.audit.local_embedding_calls, 1);
});

t.test('SEMANTIC: eligibility is inside the KNN query, before k (40 nearer non-current rows, largest pool)',
  async (t) => {
  const bench = await openReadBench(t);
  const query = 'cache eviction policy';
  const q = queryVector(query);
  const fixtures = [];
  // 40 nearer rows of every non-current kind, more than the largest pool (top_k 8 → 32).
  const lifecycles = ['CANDIDATE', 'SUPERSEDED', 'HISTORICAL', 'QUARANTINED'] as const;
  for (let i = 0; i < 40; i += 1) {
    fixtures.push({ row: fixtureRow(SCOPE, `near row ${i}`, { lifecycle: lifecycles[i % 4] }),
      vector: vectorAtDistance(q, 0.02 + i * 0.005, i + 1) });
  }
  // 40 nearer current facts in other scope tuples (same project with an agent, another project).
  for (let i = 0; i < 20; i += 1) {
    fixtures.push({ row: fixtureRow(scopeTuple('PROJECT', { project_id: 'p1', agent_id: 'a1' }), `agent row ${i}`),
      vector: vectorAtDistance(q, 0.01, 100 + i) });
    fixtures.push({ row: fixtureRow(scopeTuple('PROJECT', { project_id: 'p2' }), `other project row ${i}`),
      vector: vectorAtDistance(q, 0.01, 200 + i) });
  }
  fixtures.push({ row: fixtureRow(SCOPE, 'the validated fact'), vector: vectorAtDistance(q, 0.6, 999) });
  await insertFixtures(bench.engine, fixtures);

  for (const top_k of [1, 8]) {
    for (const kind of ['SEMANTIC', 'HYBRID']) {
      const envelope = await search(bench.owner, req(query, { top_k, retrieval_mode_kind: kind }));
      t.strictSame(rankedOf(envelope), [['the validated fact', 0.7, 1]], `${kind} top_k ${top_k}`);
      t.equal(envelope.status, 'OK');
    }
  }
  const history = await search(bench.owner,
    req(query, { top_k: 1, retrieval_mode: 'REVIEW_HISTORY', max_memories: 2 }));
  t.strictSame(factsOf(history), ['near row 0', 'near row 1'],
    'REVIEW_HISTORY sees the nearer rows (no lifecycle filter), still in the exact scope only');
});

t.test('KEYWORD: 40 newer Candidates with the term never crowd out one older validated match (top_k 1, pool 16)',
  async (t) => {
  const bench = await openReadBench(t);
  const fact = await storeCurrent(bench,
    'The zephyr feature flag is enabled for the staging cluster since the October release');
  for (let i = 0; i < 40; i += 1) {
    bench.clock.advance(1000);
    await storeCandidate(bench, `zephyr zephyr ${i}`);
  }
  const history = await search(bench.owner,
    req('zephyr', { retrieval_mode_kind: 'KEYWORD', retrieval_mode: 'REVIEW_HISTORY', top_k: 1, max_memories: 3 }));
  t.equal(history.results.length, 3);
  t.ok(history.results.every((r: Json) => r.lifecycle_state === 'CANDIDATE'),
    'the Candidates rank first by bm25 and are newer');

  const current = await search(bench.owner, req('zephyr', { retrieval_mode_kind: 'KEYWORD', top_k: 1 }));
  t.equal(current.status, 'OK');
  t.strictSame(rankedOf(current), [[fact.fact, 1, 1]]);
  t.equal(current.audit.local_embedding_calls, 0, 'KEYWORD makes no embedding call');
  t.equal(current.budget.requested_top_k, 1);

  const hybrid = await search(bench.owner, req('zephyr', { retrieval_mode_kind: 'HYBRID', top_k: 1 }));
  t.strictSame(factsOf(hybrid), [fact.fact], 'HYBRID CURRENT: the same');
});

t.test('EXACT: the normalised fact equals the normalised query; the CURRENT filter precedes the limit '
  + '(pool = top_k × 4)', async (t) => {
  const bench = await openReadBench(t);
  const fact = await storeCurrent(bench, 'The Straße service uses Node 20');
  for (const query of [
    'The Straße service uses Node 20', '  the STRASSE   service uses node 20 ', 'THE STRASSE SERVICE USES ＮＯＤＥ 20',
    'the\tstrasse\nservice uses node 20',
  ]) {
    const envelope = await search(bench.owner, req(query, { retrieval_mode_kind: 'EXACT' }));
    t.strictSame(rankedOf(envelope), [[fact.fact, 1, 1]], `matches ${JSON.stringify(query)}`);
    t.equal(envelope.audit.local_embedding_calls, 0);
  }
  for (const query of [
    'The Straße service uses Node 2', 'Straße service uses Node 20', 'The Straße service uses Node 20.',
  ]) {
    const envelope = await search(bench.owner, req(query, { retrieval_mode_kind: 'EXACT' }));
    t.strictSame(envelope.results, [], `no match for ${JSON.stringify(query)}`);
    t.equal(envelope.status, 'OK');
  }

  // Same content in 10 newer Candidates (fixture rows: the adapter would answer DUPLICATE).
  const scope = scopeTuple('PROJECT', { project_id: 'exact-pool' });
  const fixtures = [{ row: fixtureRow(scope, 'Deploys run at noon', {
    createdAt: '2026-11-01T00:00:00Z', recordId: 'ffffffff-0000-4000-8000-000000000000',
  }) }];
  for (let i = 0; i < 10; i += 1) fixtures.push({ row: fixtureRow(scope, 'Deploys run at noon', {
    lifecycle: 'CANDIDATE', createdAt: `2026-11-1${i}T00:00:00Z`, recordId: `00000000-0000-4000-8000-00000000000${i}`,
  }) });
  await insertFixtures(bench.engine, fixtures);
  const current = await search(bench.owner,
    req('deploys run at noon', { retrieval_mode_kind: 'EXACT', top_k: 1 }, scope));
  t.strictSame(current.results.map((r: Json) => r.record_id), ['ffffffff-0000-4000-8000-000000000000'],
    'the oldest, current one');
  const history = await search(bench.owner, req('deploys run at noon', {
    retrieval_mode_kind: 'EXACT', retrieval_mode: 'REVIEW_HISTORY', top_k: 1, max_memories: 8, ...BIG,
  }, scope));
  // Pool 4: the four newest (created_at desc), then emitted by score (all 1) and record_id asc.
  t.strictSame(history.results.map((r: Json) => r.record_id),
    [6, 7, 8, 9].map((i) => `00000000-0000-4000-8000-00000000000${i}`),
    'REVIEW_HISTORY EXACT: pool top_k × 4 = 4, newest first, emitted by record_id');
  checkRanking(t, history, 'EXACT history');
});

// ---- HYBRID scoring, rounding and ranks --------------------------------------------------------------

t.test('HYBRID: 0.6 × vector + 0.4 / rank when both channels hit, else the one channel score', async (t) => {
  const bench = await openReadBench(t);
  const query = 'kafka';
  const q = queryVector(query);
  await insertFixtures(bench.engine, [
    // keyword rank 1 (shortest), vector 1 - 0.2 / 2 = 0.9 → 0.6 × 0.9 + 0.4 = 0.94
    { row: fixtureRow(SCOPE, 'Kafka', { source: { source_ref: 'a' } }), vector: vectorAtDistance(q, 0.2, 1) },
    // keyword rank 2, vector 1 - 1.0 / 2 = 0.5 → 0.3 + 0.2 = 0.5
    { row: fixtureRow(SCOPE, 'Kafka retention is seven days on the staging cluster of the billing team',
      { source: { source_ref: 'b' } }), vector: vectorAtDistance(q, 1.0, 2) },
    // vector only: 1 - 0.4 / 2 = 0.8
    { row: fixtureRow(SCOPE, 'Consumer lag alerts page the on-call engineer', { source: { source_ref: 'c' } }),
      vector: vectorAtDistance(q, 0.4, 3) },
  ]);
  const hybrid = await search(bench.owner, req(query, { retrieval_mode_kind: 'HYBRID', ...BIG }));
  t.strictSame(rankedOf(hybrid), [
    ['Kafka', 0.94, 1], ['Consumer lag alerts page the on-call engineer', 0.8, 2],
    ['Kafka retention is seven days on the staging cluster of the billing team', 0.5, 3],
  ]);
  t.equal(hybrid.audit.local_embedding_calls, 1);
  const keyword = await search(bench.owner, req(query, { retrieval_mode_kind: 'KEYWORD', ...BIG }));
  t.strictSame(rankedOf(keyword),
    [['Kafka', 1, 1], ['Kafka retention is seven days on the staging cluster of the billing team', 0.5, 2]],
    'KEYWORD alone: 1 / rank');
  const semantic = await search(bench.owner, req(query, { retrieval_mode_kind: 'SEMANTIC', ...BIG }));
  t.strictSame(rankedOf(semantic), [
    ['Kafka', 0.9, 1], ['Consumer lag alerts page the on-call engineer', 0.8, 2],
    ['Kafka retention is seven days on the staging cluster of the billing team', 0.5, 3],
  ], 'SEMANTIC alone: max(0, 1 - distance / 2)');
});

t.test('scores are rounded to 6 decimals, ties broken by record_id, distances past 2 clamp at 0', async (t) => {
  const bench = await openReadBench(t);
  const query = 'shard rebalancing window';
  const q = queryVector(query);
  await insertFixtures(bench.engine, [
    { row: fixtureRow(SCOPE, 'third',
      { recordId: '30000000-0000-4000-8000-000000000000', source: { source_ref: '3' } }),
      vector: vectorAtDistance(q, 1 / 3, 1) },
    { row: fixtureRow(SCOPE, 'tie late id',
      { recordId: 'b0000000-0000-4000-8000-000000000000', source: { source_ref: 'b' } }),
      vector: vectorAtDistance(q, 0.5, 2) },
    { row: fixtureRow(SCOPE, 'tie early id',
      { recordId: 'a0000000-0000-4000-8000-000000000000', source: { source_ref: 'a' } }),
      vector: vectorAtDistance(q, 0.5, 2) },
    { row: fixtureRow(SCOPE, 'opposite', { source: { source_ref: 'o' } }), vector: Float32Array.from(q, (x) => -x) },
  ]);
  const envelope = await search(bench.owner, req(query, { max_memories: 4, ...BIG }));
  t.strictSame(rankedOf(envelope),
    [['third', 0.833333, 1], ['tie early id', 0.75, 2], ['tie late id', 0.75, 3], ['opposite', 0, 4]]);
  checkRanking(t, envelope, 'semantic');

  const kw = scopeTuple('PROJECT', { project_id: 'kw-rank' });
  await insertFixtures(bench.engine, [
    { row: fixtureRow(kw, 'quasar') }, { row: fixtureRow(kw, 'quasar lens') },
    { row: fixtureRow(kw, 'quasar lens in the sky tonight') },
  ]);
  const keyword = await search(bench.owner, req('quasar', { retrieval_mode_kind: 'KEYWORD', ...BIG }, kw));
  t.strictSame(rankedOf(keyword),
    [['quasar', 1, 1], ['quasar lens', 0.5, 2], ['quasar lens in the sky tonight', 0.333333, 3]],
    '1 / 3 emitted as 0.333333');
});

t.test('KEYWORD: every term must match; punctuation-only or FTS-syntax queries are no candidates, not errors',
  async (t) => {
  const bench = await openReadBench(t);
  const fact = await storeCurrent(bench, 'Nightly backups go to the cold-storage bucket "archive-eu"');
  await storeCurrent(bench, 'Backups are encrypted with age');
  const k = (query: string) => search(bench.owner, req(query, { retrieval_mode_kind: 'KEYWORD', ...BIG }));
  t.strictSame(factsOf(await k('nightly backups')), [fact.fact]);
  t.strictSame(factsOf(await k('NIGHTLY   Backups!')), [fact.fact], 'search_text folding and token runs');
  t.strictSame(factsOf(await k('nightly backups encrypted')), [], 'all terms must match');
  t.equal((await k('backups')).results.length, 2);
  for (const query of [
    '!!!', '"', '" OR "', 'NEAR(backups', 'backups*', '-backups', 'backups AND', '^nightly', 'cold-storage "archive',
  ]) {
    const envelope = await k(query);
    t.equal(envelope.status, 'OK', `${JSON.stringify(query)} is not an error`);
  }
  t.strictSame(factsOf(await k('cold-storage "archive')), [fact.fact],
    'quotes and hyphens are separators, terms quoted');
  t.strictSame(factsOf(await k('backups OR nothinglikethis')), [], 'OR is a term, not an operator');
});

// ---- Freshness -------------------------------------------------------------------------------------

t.test('TTL-expired facts give DEGRADED / STALE_ONLY, never a stale result in CURRENT', async (t) => {
  const bench = await openReadBench(t);
  const fact = await storeCurrent(bench, 'The canary pool has 4 nodes',
    { freshness_policy: { kind: 'ttl', ttl_seconds: 3600 }, last_verified_at: READ_NOW });
  const queries: Record<string, string> = {
    EXACT: 'the canary pool has 4 nodes', KEYWORD: 'canary pool', SEMANTIC: 'canary pool nodes',
    HYBRID: 'canary pool nodes',
  };

  bench.clock.set(Date.parse(READ_NOW) + 3600_000);
  for (const kind of KINDS) {
    const envelope = await search(bench.owner, req(queries[kind]!, { retrieval_mode_kind: kind }));
    t.strictSame(factsOf(envelope), [fact.fact], `${kind}: fresh at last_verified_at + ttl exactly`);
    t.equal(envelope.status, 'OK');
  }
  bench.clock.set(Date.parse(READ_NOW) + 3600_001);
  for (const kind of KINDS) {
    const envelope = await search(bench.owner, req(queries[kind]!, { retrieval_mode_kind: kind }));
    t.equal(envelope.status, 'DEGRADED', `${kind}: 1 ms later`);
    t.equal(envelope.degradation, 'STALE_ONLY');
    t.strictSame(envelope.results, []);
    t.strictSame(envelope.budget, {
      requested_top_k: 5, returned: 0, serialized_bytes: 0, serialized_tokens: 0, truncated: false, max_bytes: 6000,
      max_tokens: 1200,
    });
    const history = await search(bench.owner,
      req(queries[kind]!, { retrieval_mode_kind: kind, retrieval_mode: 'REVIEW_HISTORY' }));
    t.strictSame(factsOf(history), [fact.fact], `${kind}: REVIEW_HISTORY applies no freshness`);
    t.equal(history.status, 'OK');
  }

  // A fresh match beside the stale one: only the fresh one, status OK.
  const fresh = await storeCurrent(bench, 'The canary pool runs in eu-west',
    { last_verified_at: '2026-11-30T10:00:00Z' });
  const mixed = await search(bench.owner, req('canary pool', { retrieval_mode_kind: 'KEYWORD' }));
  t.strictSame(factsOf(mixed), [fresh.fact]);
  t.equal(mixed.status, 'OK');
  t.equal(mixed.degradation, null);

  // Candidates alone are not stale current matches.
  const scope = scopeTuple('PROJECT', { project_id: 'cands' });
  await storeCandidate(bench, 'The canary pool has 9 nodes', {}, scope);
  const onlyCandidates = await search(bench.owner, req('canary pool', { retrieval_mode_kind: 'KEYWORD' }, scope));
  t.equal(onlyCandidates.status, 'OK');
  t.equal(onlyCandidates.degradation, null);
  t.strictSame(onlyCandidates.results, []);
});

t.test('freshness: UNVERIFIED, missing last_verified_at (whatever the policy), a changed on_change source and a '
  + 'passed ttl are stale; never, manual, an equal source and a ttl not passed are not', async (t) => {
  const bench = await openReadBench(t);
  const stale = [
    { name: 'unverified', options: { verifiedBy: 'UNVERIFIED' } },
    { name: 'no last_verified_at', options: { lastVerifiedAt: null } },
    { name: 'on_change fingerprint differs',
      options: { freshness: { kind: 'on_change', recheck_ref: 'git:HEAD', source_fingerprint: hex64('old') } } },
    // Every kind is stale unverified: the policy is not read before the verification.
    ...[
      { kind: 'on_change', recheck_ref: 'git:HEAD', source_fingerprint: hex64('readme') },
      { kind: 'ttl', recheck_ref: null, ttl_seconds: 10 ** 9 }, { kind: 'manual', recheck_ref: 'ask the owner' },
    ].flatMap((freshness) => [
      { name: `unverified, ${freshness.kind}`, options: { freshness, verifiedBy: 'UNVERIFIED' } },
      { name: `no last_verified_at, ${freshness.kind}`, options: { freshness, lastVerifiedAt: null } },
    ]),
    { name: 'ttl past', options: { freshness: { kind: 'ttl', recheck_ref: null, ttl_seconds: 60 } } },
  ];
  const fresh = [
    { name: 'never', options: { freshness: { kind: 'never' } } },
    { name: 'manual',
      options: { freshness: { kind: 'manual', recheck_ref: 'ask the owner' },
        lastVerifiedAt: '2000-01-01T00:00:00Z' } },
    { name: 'on_change fingerprint equal',
      options: { freshness: { kind: 'on_change', recheck_ref: 'git:HEAD', source_fingerprint: hex64('readme') } } },
    { name: 'ttl within', options: { freshness: { kind: 'ttl', recheck_ref: null, ttl_seconds: 10 ** 9 } } },
  ];
  for (const [i, { name, options }] of [...stale, ...fresh].entries()) {
    const scope = scopeTuple('PROJECT', { project_id: `fresh-${i}` });
    await insertFixtures(bench.engine, [{ row: fixtureRow(scope, `Fixture fact ${name}`, options) }]);
    const envelope = await search(bench.owner, req('fixture fact', { retrieval_mode_kind: 'KEYWORD' }, scope));
    if (i < stale.length) {
      t.strictSame([envelope.status, envelope.degradation, envelope.results.length], ['DEGRADED', 'STALE_ONLY', 0],
        name);
    } else {
      t.strictSame([envelope.status, envelope.degradation, envelope.results.length], ['OK', null, 1], name);
    }
  }
});

// ---- Budget fitting -------------------------------------------------------------------------------

t.test('budget fitting drops from the end and reports it; serialized_* measure the canonical JSON of results',
  async (t) => {
  const bench = await openReadBench(t);
  for (const word of ['alpha', 'beta', 'gamma'])
    await storeCurrent(bench, `Budget probe ${word}`, { source_provenance: provenance({ source_ref: word }) });
  const base = req('budget probe', { retrieval_mode_kind: 'KEYWORD', ...BIG });
  const full = await search(bench.owner, base);
  t.equal(full.results.length, 3);
  t.equal(full.status, 'OK');
  t.strictSame(full.budget, {
    requested_top_k: 5, returned: 3, serialized_bytes: bytes(full.results), serialized_tokens: tokens(full.results),
    truncated: false, max_bytes: 8000, max_tokens: 1600,
  });

  const twoBytes = bytes(full.results.slice(0, 2));
  const fitsTwo = await search(bench.owner, { ...base, max_bytes: twoBytes });
  t.strictSame(fitsTwo.results, full.results.slice(0, 2), 'max_bytes = size of the first two: the last one removed');
  t.strictSame([
    fitsTwo.status, fitsTwo.degradation, fitsTwo.budget.truncated, fitsTwo.budget.returned,
    fitsTwo.budget.serialized_bytes,
  ], ['DEGRADED', 'BUDGET_EXCEEDED', true, 2, twoBytes]);
  t.equal(fitsTwo.budget.serialized_tokens, tokens(fitsTwo.results));
  t.equal(fitsTwo.budget.max_bytes, twoBytes);
  const fitsOne = await search(bench.owner, { ...base, max_bytes: twoBytes - 1 });
  t.strictSame(fitsOne.results, full.results.slice(0, 1), 'one byte less: only the first');
  t.equal(fitsOne.budget.serialized_bytes, bytes(full.results.slice(0, 1)));

  const none = await search(bench.owner, { ...base, max_bytes: 1 });
  t.strictSame(none.results, []);
  t.strictSame([none.status, none.degradation], ['DEGRADED', 'BUDGET_EXCEEDED']);
  t.strictSame(none.budget, {
    requested_top_k: 5, returned: 0, serialized_bytes: 0, serialized_tokens: 0, truncated: true, max_bytes: 1,
    max_tokens: 1600,
  });

  const oneTokens = tokens(full.results.slice(0, 1));
  const tokenOne = await search(bench.owner, { ...base, max_tokens: oneTokens });
  t.strictSame(tokenOne.results, full.results.slice(0, 1), 'max_tokens = tokens of the first: one result');
  t.strictSame([tokenOne.status, tokenOne.degradation, tokenOne.budget.truncated, tokenOne.budget.serialized_tokens],
    ['DEGRADED', 'BUDGET_EXCEEDED', true, oneTokens]);
  const tokenNone = await search(bench.owner, { ...base, max_tokens: oneTokens - 1 });
  t.strictSame(tokenNone.results, []);
  t.strictSame([tokenNone.degradation, tokenNone.budget.truncated, tokenNone.budget.serialized_tokens],
    ['BUDGET_EXCEEDED', true, 0]);
  const small = await search(bench.owner, { ...base, max_tokens: 50 });
  t.strictSame([small.results.length, small.degradation], [0, 'BUDGET_EXCEEDED'], 'max_tokens 50');

  const defaults = await search(bench.owner, req('budget probe', { retrieval_mode_kind: 'KEYWORD', top_k: 3 }));
  t.equal(defaults.budget.requested_top_k, 3);
  t.equal(defaults.budget.max_bytes, 6000);
  t.equal(defaults.budget.max_tokens, 1200);
  t.ok(defaults.budget.serialized_tokens <= 1200 && defaults.budget.serialized_bytes <= 6000);
  t.strictSame(defaults.results, full.results.slice(0, defaults.results.length),
    'default budgets: a prefix of the full list');
});

t.test('a large Arabic result is measured in UTF-8 bytes, not UTF-16 code units', async (t) => {
  const bench = await openReadBench(t);
  const fact = await storeCurrent(bench, `سجل التدقيق ${'ميزانية '.repeat(40)}`);
  const envelope = await search(bench.owner, req('سجل التدقيق', { retrieval_mode_kind: 'KEYWORD' }));
  t.strictSame(factsOf(envelope), [fact.fact]);
  t.equal(envelope.budget.serialized_bytes, bytes(envelope.results));
  t.ok(envelope.budget.serialized_bytes > sortedJson(envelope.results).length, 'Arabic letters are 2 bytes each');
});

// ---- Arabic and mixed-language retrieval -----------------------------------------------------------

// Stored with harakat, shadda, hamza-on-alef (أ), alef maqsura (ى) and taa marbuta (ة).
const AR_DB = 'تُشَغَّلُ قاعدةُ البياناتِ الرئيسيّةُ على الخادمِ الأوّلِ في المبنى';
// The same sentence bare: no harakat, أ → ا, ى → ي, ة → ه.
const AR_DB_BARE = 'تشغل قاعده البيانات الرئيسيه علي الخادم الاول في المبني';
// Hamza-below (إ), madda (آ) and taa marbuta.
const AR_RESTART = 'إعادةُ تشغيلِ الخادمِ تتمُّ آليّاً كلَّ ليلة';
const AR_RESTART_BARE = 'اعاده تشغيل الخادم تتم اليا كل ليله';
const AR_DISTRACTOR = 'يتم نسخ قاعدة البيانات احتياطيا إلى خادم آخر كل يوم';
const MIXED = 'خادم PostgreSQL يستمع على المنفذ 5432';
const ENGLISH = 'The PostgreSQL server listens on port 5432';

t.test('Arabic: harakat, tatweel, alef forms, alef maqsura and taa marbuta do not prevent KEYWORD and SEMANTIC matches',
  async (t) => {
  const bench = await openReadBench(t);
  const db = await storeCurrent(bench, AR_DB, { source_provenance: provenance({ source_ref: 'ar/db' }) });
  const restart = await storeCurrent(bench, AR_RESTART,
    { source_provenance: provenance({ source_ref: 'ar/restart' }) });
  await storeCurrent(bench, AR_DISTRACTOR, { source_provenance: provenance({ source_ref: 'ar/backup' }) });
  await storeCurrent(bench, 'The primary database runs on the first server',
    { source_provenance: provenance({ source_ref: 'en/db' }) });

  const keyword = async (query: string) =>
    factsOf(await search(bench.owner, req(query, { retrieval_mode_kind: 'KEYWORD', ...BIG })));
  t.strictSame(await keyword('قاعده الاول'), [db.fact], 'taa marbuta as heh, bare alef');
  t.strictSame(await keyword('الرئيسية الأول المبنى'), [db.fact], 'the stored forms themselves');
  t.strictSame(await keyword('المبني الرئيسيه'), [db.fact], 'alef maqsura as yeh');
  t.strictSame(await keyword('تشـــغل الخـادم الاوّل'), [db.fact], 'tatweel and a stray shadda');
  t.strictSame(new Set(await keyword('قاعِدَةُ البَيانات')), new Set([db.fact, AR_DISTRACTOR]), 'harakat in the query');
  t.strictSame(await keyword('اعاده اليا'), [restart.fact], 'hamza-below and madda alef as bare alef');
  t.strictSame(await keyword('إعادة آليا ليلة'), [restart.fact]);
  t.strictSame(await keyword('ٱلخادم اعاده'), [restart.fact], 'alef wasla (U+0671) as bare alef');
  t.equal((await keyword('قاعده البيانات')).length, 2, 'both facts with قاعدة البيانات');

  for (const [query, expected] of [
    [AR_DB_BARE, db.fact], ['تشـــغل قاعـــده البيانات الرئيسيه علي الخادم الاول في المبني', db.fact],
    [AR_RESTART_BARE, restart.fact],
  ] as const) {
    for (const kind of ['SEMANTIC', 'HYBRID']) {
      const envelope = await search(bench.owner, req(query, { retrieval_mode_kind: kind }));
      t.equal(envelope.results[0]?.fact, expected, `${kind}: top result for ${query}`);
    }
    const semantic = await search(bench.owner, req(query));
    t.equal(semantic.results[0]?.relevance_score, 1,
      'default SEMANTIC: the normalised texts embed identically (score 1)');
  }
});

t.test('Arabic EXACT follows fold_key (NFKC, case, whitespace), as native_content_hash does (§12.2, §13.3)',
  async (t) => {
  const bench = await openReadBench(t);
  const db = await storeCurrent(bench, AR_DB);
  const mixed = await storeCurrent(bench, MIXED);
  const exact = async (query: string) =>
    factsOf(await search(bench.owner, req(query, { retrieval_mode_kind: 'EXACT' })));
  t.strictSame(await exact(`  ${AR_DB.replaceAll(' ', '   ')} `), [db.fact], 'whitespace collapsed');
  t.strictSame(await exact('خادم postgresql   يستمع على المنفذ 5432'), [mixed.fact], 'mixed: Latin case folded');
  // Arabic Presentation Forms-B fold to the base letters under NFKC.
  const presentation = new Map<string, string>();
  for (let cp = 0xfe70; cp <= 0xfefc; cp += 1) {
    const base = String.fromCodePoint(cp).normalize('NFKC');
    if ([...base].length === 1 && !presentation.has(base)) presentation.set(base, String.fromCodePoint(cp));
  }
  const presented = [...MIXED].map((c) => presentation.get(c) ?? c).join('');
  t.not(presented, MIXED, 'the query really uses presentation forms');
  t.strictSame(await exact(presented), [mixed.fact], 'presentation forms (NFKC)');
  // fold_key keeps harakat and letter variants, so EXACT does not see the bare sentence as equal; KEYWORD
  // and SEMANTIC do (previous test). Issue 5 asks EXACT to match too; CONTRACT.md §12.2/§13.3 say fold_key.
  t.strictSame(await exact(AR_DB_BARE), [], 'EXACT per contract: the bare variant is another normalised fact');
});

t.test('mixed Arabic/English facts: KEYWORD needs every term, SEMANTIC ranks the mixed fact first', async (t) => {
  const bench = await openReadBench(t);
  const mixed = await storeCurrent(bench, MIXED, { source_provenance: provenance({ source_ref: 'mixed' }) });
  const english = await storeCurrent(bench, ENGLISH, { source_provenance: provenance({ source_ref: 'en' }) });
  await storeCurrent(bench, 'خادم Redis يستمع على المنفذ 6379',
    { source_provenance: provenance({ source_ref: 'redis' }) });
  const keyword = async (query: string) =>
    factsOf(await search(bench.owner, req(query, { retrieval_mode_kind: 'KEYWORD', ...BIG })));
  t.strictSame(await keyword('postgresql المنفذ'), [mixed.fact]);
  t.strictSame(await keyword('POSTGRESQL المَنفذ'), [mixed.fact]);
  t.strictSame(new Set(await keyword('postgresql 5432')), new Set([mixed.fact, english.fact]));
  t.strictSame(await keyword('postgresql port'), [english.fact]);
  const semantic = await search(bench.owner, req('خادم postgresql المنفذ'));
  t.equal(semantic.results[0].fact, mixed.fact);
  const hybrid = await search(bench.owner, req('postgresql المنفذ', { retrieval_mode_kind: 'HYBRID' }));
  t.equal(hybrid.results[0].fact, mixed.fact);
});

// ---- TruthRouter: validation order and codes ---------------------------------------------------------

t.test('TruthRouter: query, integers, kind, mode, intent, in that order, with their codes', async (t) => {
  const bench = await openReadBench(t);
  await storeCurrent(bench, 'Router probe fact');
  const s = (extra: Json) => () => search(bench.owner, { ...req('router probe'), ...extra });
  await refusedWith(t, s({ query: '' }), 'INVALID_ENVELOPE', /query/, 'empty query');
  await refusedWith(t, s({ query: ' \t\n\u001c\u0085 ' }), 'INVALID_ENVELOPE', /query/, 'blank query');
  await refusedWith(t, s({ query: 'a'.repeat(513) }), 'INVALID_ENVELOPE', /query/, '513 bytes');
  await refusedWith(t, s({ query: 'ب'.repeat(257) }), 'INVALID_ENVELOPE', /query/, '257 Arabic letters = 514 bytes');
  await refusedWith(t, s({ query: 42 }), 'INVALID_ENVELOPE', /query/, 'non-string query');
  t.equal((await s({ query: 'ب'.repeat(256), retrieval_mode_kind: 'KEYWORD' })()).status, 'OK', '512 bytes accepted');
  t.equal((await s({ query: `   ${'a'.repeat(512)}   `, retrieval_mode_kind: 'KEYWORD' })()).status, 'OK',
    'limit applies after strip');

  for (const [field, values] of [
    ['top_k', [0, 9, 2.5, '3', -1]], ['max_memories', [0, 9, 1.5]], ['max_bytes', [0, 8001, 100.5]],
    ['max_tokens', [0, 1601]],
  ] as const) {
    for (const value of values) await refusedWith(t, s({ [field]: value }), 'INVALID_ENVELOPE', new RegExp(field),
      `${field} ${JSON.stringify(value)}`);
  }
  for (const [field, value] of [
    ['top_k', 8], ['max_memories', 8], ['max_bytes', 8000], ['max_tokens', 1600], ['top_k', null],
  ] as const) {
    t.equal((await s({ [field]: value })()).status, 'OK', `${field} ${value} accepted`);
  }

  await refusedWith(t, s({ retrieval_mode_kind: 'FUZZY' }), 'INVALID_ENUM',
    /retrieval_mode_kind must be one of: EXACT, HYBRID, KEYWORD, SEMANTIC/);
  await refusedWith(t, s({ retrieval_mode_kind: 'semantic' }), 'INVALID_ENUM', /retrieval_mode_kind/,
    'kind is case-sensitive');
  await refusedWith(t, s({ retrieval_mode: 'LATEST' }), 'INVALID_ENUM',
    /retrieval_mode must be one of: CURRENT, REVIEW_HISTORY/);
  await refusedWith(t, s({ intent_class: 'WHATEVER' }), 'UNKNOWN_INTENT',
    /CURRENT_PROJECT_STATE, GENERAL_TASK_NO_MEMORY_REQUIRED, HISTORICAL_QUESTION, PROJECT_DESIGN_RATIONALE, TOOL_ENVIRONMENT_STATE, USER_PREFERENCE_OR_DURABLE_FACT, WORKFLOW_RULE/);
  await refusedWith(t, s({ intent_class: 7 }), 'UNKNOWN_INTENT');

  // Order: the first failing step decides.
  await refusedWith(t, s({ request_id: 'bad id', query: '' }), 'INVALID_ENVELOPE', /request_id/,
    'request_id before query');
  await refusedWith(t, s({ query: '', top_k: 99, retrieval_mode_kind: 'X', retrieval_mode: 'Y', intent_class: 'Z' }),
    'INVALID_ENVELOPE', /query/, 'query first');
  await refusedWith(t, s({ top_k: 99, retrieval_mode_kind: 'X', retrieval_mode: 'Y', intent_class: 'Z' }),
    'INVALID_ENVELOPE', /top_k/, 'integers before enums');
  await refusedWith(t, s({ retrieval_mode_kind: 'X', retrieval_mode: 'Y', intent_class: 'Z' }), 'INVALID_ENUM',
    /retrieval_mode_kind/, 'kind before mode');
  await refusedWith(t, s({ retrieval_mode: 'Y', intent_class: 'Z' }), 'INVALID_ENUM', /retrieval_mode must/,
    'mode before intent');
  await refusedWith(t, s({ intent_class: 'HISTORICAL_QUESTION' }), 'INVALID_ENVELOPE', /REVIEW_HISTORY/,
    'HISTORICAL_QUESTION needs REVIEW_HISTORY (default CURRENT)');
  await refusedWith(t, s({ intent_class: 'HISTORICAL_QUESTION', retrieval_mode: 'CURRENT' }), 'INVALID_ENVELOPE',
    /REVIEW_HISTORY/, 'HISTORICAL_QUESTION with CURRENT');
  const historical = await s({
    intent_class: 'HISTORICAL_QUESTION', retrieval_mode: 'REVIEW_HISTORY', retrieval_mode_kind: 'KEYWORD',
  })();
  t.strictSame([historical.status, historical.results.length], ['OK', 1], 'HISTORICAL_QUESTION with REVIEW_HISTORY');

  // Compatibility is checked for vector kinds only, after the HISTORICAL_QUESTION rule.
  const down = bench.adapter('read-only', { provider: new DownProvider() });
  await refusedWith(t, () => search(down, req('router probe', { intent_class: 'HISTORICAL_QUESTION' })),
    'INVALID_ENVELOPE', /REVIEW_HISTORY/, 'HISTORICAL rule before compatibility');
  for (const kind of ['SEMANTIC', 'HYBRID']) await refusedWith(t,
    () => search(down, req('router probe', { retrieval_mode_kind: kind })), 'PROFILE_MISMATCH', undefined,
    `${kind} needs a compatible profile`);
  for (const kind of ['EXACT', 'KEYWORD']) t.equal((await search(down,
    req('router probe fact', { retrieval_mode_kind: kind }))).results.length, 1, `${kind} works without the provider`);
});

t.test('GENERAL_TASK_NO_MEMORY_REQUIRED: the §6.2 envelope after full validation, with no storage read and no '
  + 'provider call', async (t) => {
  const bench = await openReadBench(t);
  await storeCurrent(bench, 'No memory probe');
  const provider = new CountingProvider();
  const adapter = bench.adapter('read-only', { provider });
  const engine = bench.engine as unknown as
    { read: (...args: unknown[]) => unknown; write: (...args: unknown[]) => unknown };
  const counts = { read: 0, write: 0 };
  const [read, write] = [engine.read.bind(engine), engine.write.bind(engine)];
  engine.read = (...args) => { counts.read += 1; return read(...args); };
  engine.write = (...args) => { counts.write += 1; return write(...args); };
  t.teardown(() => { engine.read = read; engine.write = write; });

  const nmn = { intent_class: 'GENERAL_TASK_NO_MEMORY_REQUIRED' };
  const envelope = await search(adapter, { ...req('no memory probe', {
    ...nmn, request_id: 'req-nmn', top_k: 2, retrieval_mode: 'REVIEW_HISTORY', retrieval_mode_kind: 'HYBRID',
  }) });
  t.strictSame(envelope, {
    status: 'NO_MEMORY_NEEDED', memory_needed: false,
    scope: { scope: 'PROJECT', project_id: 'p1', worktree_id: null, workflow_id: null, agent_id: null },
    results: [], contradictions: [],
    budget: { requested_top_k: 2, returned: 0, serialized_bytes: 0, serialized_tokens: 0, truncated: false },
    degradation: null,
    audit: {
      request_id: 'req-nmn', operation: 'memory_search', scope_digest: scopeDigest(SCOPE), public_contract_revision: 2,
      raw_content_logged: false,
    },
  });
  const defaults = await search(adapter, req('anything', nmn));
  t.equal(defaults.budget.requested_top_k, 5, 'requested_top_k is the effective top_k');
  t.match(defaults.audit.request_id, /^[0-9a-f-]{36}$/, 'a minted request_id');
  t.strictSame(counts, { read: 0, write: 0 }, 'no storage read or write');
  t.equal(provider.calls, 0, 'no provider call');
  const downEnvelope = await search(bench.adapter('read-only', { provider: new DownProvider() }),
    req('anything', { ...nmn, retrieval_mode_kind: 'SEMANTIC' }));
  t.equal(downEnvelope.status, 'NO_MEMORY_NEEDED', 'no compatibility check');

  // Full validation first.
  const s = (extra: Json) => () => search(adapter, { ...req('no memory probe', nmn), ...extra });
  await refusedWith(t, s({ max_bytes: 0 }), 'INVALID_ENVELOPE', /max_bytes/, 'a bad max_bytes fails first');
  await refusedWith(t, s({ max_tokens: 1601 }), 'INVALID_ENVELOPE', /max_tokens/);
  await refusedWith(t, s({ top_k: 9 }), 'INVALID_ENVELOPE', /top_k/);
  await refusedWith(t, s({ max_memories: 0 }), 'INVALID_ENVELOPE', /max_memories/);
  await refusedWith(t, s({ query: ' ' }), 'INVALID_ENVELOPE', /query/);
  await refusedWith(t, s({ query: 'x'.repeat(513) }), 'INVALID_ENVELOPE', /query/);
  await refusedWith(t, s({ retrieval_mode_kind: 'FUZZY' }), 'INVALID_ENUM');
  await refusedWith(t, s({ retrieval_mode: 'LATEST' }), 'INVALID_ENUM');
  await refusedWith(t, s({ project_id: undefined }), 'UNKNOWN_PROJECT_ID', undefined, 'scope rules');
  await refusedWith(t, s({ request_id: 'bad id' }), 'INVALID_ENVELOPE', /request_id/);
  t.equal(provider.calls, 0);
  t.strictSame(counts, { read: 0, write: 0 });
});

t.test('NO_MEMORY_NEEDED on the wire: exactly the §6.2 keys, audit with host_binding', async (t) => {
  const { client } = await connectClient(t, `${t.testdir()}/wire.sqlite3`);
  const result = await client.callTool({ name: 'memory_search', arguments: { request: {
    scope: 'GLOBAL_USER', query: 'hello', intent_class: 'GENERAL_TASK_NO_MEMORY_REQUIRED', request_id: 'wire-1',
  } } });
  const envelope = result.structuredContent as Json;
  t.strictSame(Object.keys(envelope).sort(),
    ['audit', 'budget', 'contradictions', 'degradation', 'memory_needed', 'results', 'scope', 'status']);
  t.strictSame(Object.keys(envelope.audit).sort(),
    ['host_binding', 'operation', 'public_contract_revision', 'raw_content_logged', 'request_id', 'scope_digest']);
  t.strictSame(Object.keys(envelope.budget).sort(),
    ['requested_top_k', 'returned', 'serialized_bytes', 'serialized_tokens', 'truncated']);
  t.equal(envelope.status, 'NO_MEMORY_NEEDED');
  t.equal(envelope.audit.request_id, 'wire-1');
  t.equal((result.content as { text: string }[])[0]!.text, sortedJson(envelope),
    'text is the canonical JSON of the envelope');
});

t.test('CROSS_PROJECT_WORKFLOW: only the §4.4 intent/mode pairs search', async (t) => {
  const bench = await openReadBench(t);
  const cpw = scopeTuple('CROSS_PROJECT_WORKFLOW');
  await storeCurrent(bench, 'Always squash merge release branches', { memory_type: 'WORKFLOW_RULE' }, cpw);
  const s = (intent: string, mode?: string) => search(bench.owner, {
    scope: 'CROSS_PROJECT_WORKFLOW', query: 'squash merge', intent_class: intent, retrieval_mode_kind: 'KEYWORD',
    ...(mode ? { retrieval_mode: mode } : {}),
  });
  t.equal((await s('WORKFLOW_RULE')).results.length, 1);
  t.equal((await s('WORKFLOW_RULE', 'REVIEW_HISTORY')).results.length, 1);
  t.equal((await s('HISTORICAL_QUESTION', 'REVIEW_HISTORY')).results.length, 1);
  t.equal((await s('GENERAL_TASK_NO_MEMORY_REQUIRED')).status, 'NO_MEMORY_NEEDED');
  await refusedWith(t, () => s('CURRENT_PROJECT_STATE'), 'SCOPE_INTENT_MISMATCH');
  await refusedWith(t, () => s('HISTORICAL_QUESTION'), 'SCOPE_INTENT_MISMATCH', undefined,
    'HISTORICAL_QUESTION CURRENT');
  await refusedWith(t, () => s('NOT_AN_INTENT'), 'SCOPE_INTENT_MISMATCH', undefined,
    'unknown intent in CROSS_PROJECT_WORKFLOW');
});

// ---- Status and degradation precedence ---------------------------------------------------------------

/** A scope with a current TTL fact and a Candidate contradicting it (same subject, another fact). */
async function contradictedScope(bench: ReadBench) {
  const fact = await storeCurrent(bench, 'The ingest queue holds at most 500 jobs',
    { subject: 'ingest queue size', freshness_policy: { kind: 'ttl', ttl_seconds: 60 }, last_verified_at: READ_NOW });
  const conflict = (await bench.owner.execute('memory_store',
    currentStore(SCOPE, 'The ingest queue is unbounded lemonade', { subject: 'ingest queue size' }))) as Json;
  if (conflict.status !== 'CONTRADICTION') throw new Error(`expected CONTRADICTION, got ${conflict.status}`);
  return { fact, conflict: conflict.results[0] as Json };
}

t.test('status precedence: STALE_ONLY before CONTRADICTION_UNRESOLVED; CONTRADICTION when nothing is found',
  async (t) => {
  const bench = await openReadBench(t);
  const { fact, conflict } = await contradictedScope(bench);
  const summary = [{
    record_id: conflict.record_id, memory_id: conflict.memory_id, contradiction_state: 'UNRESOLVED',
    lifecycle_state: 'CANDIDATE', authority_role: 'UNRESOLVED', source_class: 'repo_file',
  }];

  const found = await search(bench.owner, req('ingest queue 500', { retrieval_mode_kind: 'KEYWORD' }));
  t.strictSame([found.status, found.degradation, factsOf(found)], ['OK', null, [fact.fact]],
    'results exist: OK, even with a live contradiction');
  t.equal(found.contradictions.length, 1, 'contradictions is the scope summary');
  t.match(found.contradictions[0], summary[0]);
  t.strictSame(Object.keys(found.contradictions[0]).sort(), [
    'authority_role', 'contradiction_key', 'contradiction_state', 'lifecycle_state', 'memory_id', 'record_id',
    'source_class',
  ]);
  t.match(found.contradictions[0].contradiction_key, /^[0-9a-f]{64}$/);

  const nothing = await search(bench.owner, req('lemonade', { retrieval_mode_kind: 'KEYWORD' }));
  t.strictSame([nothing.status, nothing.degradation, nothing.results],
    ['CONTRADICTION', 'CONTRADICTION_UNRESOLVED', []], 'only the Candidate matches: no results, live contradiction');
  const unrelated = await search(bench.owner, req('zebra crossing', { retrieval_mode_kind: 'EXACT' }));
  t.strictSame([unrelated.status, unrelated.degradation], ['CONTRADICTION', 'CONTRADICTION_UNRESOLVED']);
  t.equal(unrelated.contradictions.length, 1);

  bench.clock.advance(61_000);
  const stale = await search(bench.owner, req('ingest queue 500', { retrieval_mode_kind: 'KEYWORD' }));
  t.strictSame([stale.status, stale.degradation, stale.results], ['DEGRADED', 'STALE_ONLY', []],
    'a stale match: STALE_ONLY wins');
  t.equal(stale.contradictions.length, 1, 'the summary is still reported');
  const staleSemantic = await search(bench.owner, req('ingest queue'));
  t.strictSame([staleSemantic.status, staleSemantic.degradation], ['DEGRADED', 'STALE_ONLY'],
    'SEMANTIC: the current fact is stale');

  const otherScope = await search(bench.owner,
    req('lemonade', { retrieval_mode_kind: 'KEYWORD' }, scopeTuple('PROJECT', { project_id: 'p2' })));
  t.strictSame([otherScope.status, otherScope.contradictions], ['OK', []], 'another scope has its own (empty) summary');
});

t.test('status precedence: HISTORY_SEMANTIC_PARTIAL for REVIEW_HISTORY vector search in a scope holding a HISTORICAL '
  + 'record', async (t) => {
  const bench = await openReadBench(t);
  const fact = await storeCurrent(bench, 'The audit log rotates weekly');
  await insertFixtures(bench.engine, [{ row: fixtureRow(SCOPE, 'The audit log rotated daily', {
    lifecycle: 'HISTORICAL', createdAt: '2026-01-01T00:00:00Z',
  }), vector: null }]);
  for (const kind of ['SEMANTIC', 'HYBRID']) {
    const envelope = await search(bench.owner,
      req('audit log rotated daily', { retrieval_mode: 'REVIEW_HISTORY', retrieval_mode_kind: kind }));
    t.strictSame([envelope.status, envelope.degradation], ['DEGRADED', 'HISTORY_SEMANTIC_PARTIAL'],
      `${kind}: even with results`);
    t.ok(envelope.results.length >= 1);
    if (kind === 'SEMANTIC') t.strictSame(factsOf(envelope), [fact.fact], 'the HISTORICAL record has no vector');
    if (kind === 'HYBRID') t.ok(factsOf(envelope).includes('The audit log rotated daily'),
      'HYBRID finds it through KEYWORD');
  }
  for (const [kind, query] of [['KEYWORD', 'rotated daily'], ['EXACT', 'the audit log rotated daily']]) {
    const envelope = await search(bench.owner,
      req(query!, { retrieval_mode: 'REVIEW_HISTORY', retrieval_mode_kind: kind }));
    t.strictSame([envelope.status, envelope.degradation, factsOf(envelope)],
      ['OK', null, ['The audit log rotated daily']], `${kind} REVIEW_HISTORY finds the HISTORICAL record, not partial`);
    t.equal(envelope.results[0].lifecycle_state, 'HISTORICAL');
  }
  const current = await search(bench.owner, req('audit log rotated daily'));
  t.strictSame([current.status, current.degradation, factsOf(current)], ['OK', null, [fact.fact]],
    'CURRENT SEMANTIC is not partial');

  // Budget truncation keeps the earlier degradation and sets truncated.
  const truncated = await search(bench.owner, req('audit log', { retrieval_mode: 'REVIEW_HISTORY', max_bytes: 1 }));
  t.strictSame([truncated.status, truncated.degradation, truncated.budget.truncated, truncated.results],
    ['DEGRADED', 'HISTORY_SEMANTIC_PARTIAL', true, []]);
  const historyKeyword = await search(bench.owner,
    req('audit log', { retrieval_mode: 'REVIEW_HISTORY', retrieval_mode_kind: 'KEYWORD', max_bytes: 1 }));
  t.strictSame([historyKeyword.degradation, historyKeyword.budget.truncated], ['BUDGET_EXCEEDED', true],
    'KEYWORD history: plain BUDGET_EXCEEDED');

  const clean = scopeTuple('PROJECT', { project_id: 'no-historical' });
  await storeCurrent(bench, 'The audit log rotates weekly', {}, clean);
  const plain = await search(bench.owner, req('audit log', { retrieval_mode: 'REVIEW_HISTORY' }, clean));
  t.strictSame([plain.status, plain.degradation], ['OK', null], 'no HISTORICAL record in the scope: OK');
});

t.test('budget truncation after a contradiction with results: BUDGET_EXCEEDED (no results only after fitting)',
  async (t) => {
  const bench = await openReadBench(t);
  await contradictedScope(bench);
  const envelope = await search(bench.owner, req('ingest queue 500', { retrieval_mode_kind: 'KEYWORD', max_bytes: 1 }));
  t.strictSame([envelope.status, envelope.degradation, envelope.budget.truncated, envelope.results],
    ['DEGRADED', 'BUDGET_EXCEEDED', true, []]);
  t.equal(envelope.contradictions.length, 1);
});

// ---- Scope, history and the envelope ---------------------------------------------------------------

t.test('exact scope only: a record stored with agent_id or worktree_id is invisible without it', async (t) => {
  const bench = await openReadBench(t);
  const withAgent = scopeTuple('PROJECT', { project_id: 'p1', agent_id: 'codex' });
  const withWorktree = scopeTuple('PROJECT', { project_id: 'p1', worktree_id: 'wt-1' });
  const agentFact = await storeCurrent(bench, 'Scoped fact for the agent', {}, withAgent);
  const worktreeFact = await storeCurrent(bench, 'Scoped fact for the worktree', {}, withWorktree);
  const queries: Record<string, string> = {
    EXACT: 'scoped fact for the agent', KEYWORD: 'scoped fact', SEMANTIC: 'scoped fact', HYBRID: 'scoped fact',
  };
  for (const kind of KINDS) {
    for (const mode of ['CURRENT', 'REVIEW_HISTORY']) {
      const bare = await search(bench.owner, req(queries[kind]!, { retrieval_mode_kind: kind, retrieval_mode: mode }));
      t.strictSame(bare.results, [], `${kind} ${mode}: PROJECT p1 without agent_id or worktree_id sees nothing`);
      const agent = await search(bench.owner,
        req(queries[kind]!, { retrieval_mode_kind: kind, retrieval_mode: mode }, withAgent));
      t.strictSame(factsOf(agent), [agentFact.fact], `${kind} ${mode}: with agent_id`);
      t.strictSame(agent.scope,
        { scope: 'PROJECT', project_id: 'p1', worktree_id: null, workflow_id: null, agent_id: 'codex' });
      t.equal(agent.audit.scope_digest, scopeDigest(withAgent));
    }
  }
  const worktree = await search(bench.owner, req('scoped fact', { retrieval_mode_kind: 'KEYWORD' }, withWorktree));
  t.strictSame(factsOf(worktree), [worktreeFact.fact]);
  const global = await search(bench.owner, {
    scope: 'GLOBAL_USER', query: 'scoped fact', intent_class: 'USER_PREFERENCE_OR_DURABLE_FACT',
    retrieval_mode_kind: 'KEYWORD',
  });
  t.strictSame(global.results, []);
  const emptyAgent = await search(bench.owner,
    { ...req('scoped fact', { retrieval_mode_kind: 'KEYWORD' }), agent_id: '', worktree_id: null });
  t.strictSame([emptyAgent.results, emptyAgent.scope.agent_id], [[], null], '"" is absent');
});

t.test('REVIEW_HISTORY returns superseded revisions and Candidates; CURRENT only the current record', async (t) => {
  const bench = await openReadBench(t);
  const first = await storeCurrent(bench, 'The lint step runs eslint 9');
  const reverified = (await bench.owner.execute('memory_update', {
    ...scopeRequest(SCOPE), memory_id: first.memory_id, expected_revision: 1, mode: 'REVERIFY',
    idempotency_key: 'reverify-1',
    verification: { last_verified_at: '2026-11-30T09:30:00Z', source_timestamp: '2026-11-30T00:00:00Z' },
  })) as Json;
  t.equal(reverified.status, 'OK');
  const candidate = await storeCandidate(bench, 'The lint step runs eslint 8');
  const current = await search(bench.owner, req('lint step eslint', { retrieval_mode_kind: 'KEYWORD', ...BIG }));
  t.strictSame(current.results.map((r: Json) => [r.revision, r.lifecycle_state]), [[2, 'VALIDATED_CURRENT']]);
  const history = await search(bench.owner,
    req('lint step eslint', { retrieval_mode_kind: 'KEYWORD', retrieval_mode: 'REVIEW_HISTORY', ...BIG }));
  t.strictSame(new Set(history.results.map((r: Json) => `${r.record_id}:${r.lifecycle_state}`)), new Set([
    `${first.record_id}:SUPERSEDED`, `${reverified.results[0].record_id}:VALIDATED_CURRENT`,
    `${candidate.record_id}:CANDIDATE`,
  ]));
  checkRanking(t, history, 'history');
});

t.test('the success envelope: keys, public records, audit', async (t) => {
  const bench = await openReadBench(t);
  const fact = await storeCurrent(bench, 'Envelope probe fact', { tags: ['infra'], confidence: 0.8 });
  for (const kind of KINDS) {
    const envelope = await search(bench.owner, req(kind === 'EXACT' ? 'envelope probe fact' : 'envelope probe',
      { retrieval_mode_kind: kind, request_id: `req-${kind}` }));
    t.strictSame(Object.keys(envelope).sort(),
      ['audit', 'budget', 'contradictions', 'degradation', 'memory_needed', 'results', 'scope', 'status']);
    t.equal(envelope.memory_needed, true);
    t.strictSame(envelope.audit, {
      request_id: `req-${kind}`, operation: 'memory_search', public_contract_revision: 2,
      scope_digest: scopeDigest(SCOPE), backend: 'sqlite_vec', external_llm_calls: 0,
      local_embedding_calls: kind === 'SEMANTIC' || kind === 'HYBRID' ? 1 : 0, raw_content_logged: false,
    }, kind);
    const [record] = envelope.results;
    t.strictSame(Object.keys(record).sort(), Object.keys({ ...fact }).sort(), `${kind}: the §6.4 keys`);
    t.strictSame({ ...record, relevance_score: null, retrieval_rank: null }, fact,
      `${kind}: the stored record, plus score and rank`);
    t.equal(record.retrieval_rank, 1);
    t.ok(record.relevance_score > 0 && record.relevance_score <= 1);
  }
});

t.test('a search reads one snapshot: a REPLACE another server commits meanwhile gives the answer of one state',
  async (t) => {
  const forward = <T extends object>(target: T, key: string | symbol) => {
    const value = Reflect.get(target, key, target) as unknown;
    return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
  };
  for (const kind of ['SEMANTIC', 'KEYWORD', 'HYBRID', 'EXACT'] as const) {
    for (const moment of ['after the channels', 'before the full records'] as const) {
      const bench = await openReadBench(t, `race-${kind}-${moment.replaceAll(' ', '-')}.sqlite3`);
      const old = await storeCurrent(bench, 'The CI runs on Node 18');
      // A contradiction elsewhere in the scope: an empty answer would come back as CONTRADICTION.
      await storeCurrent(bench, 'The deploy target is eu-west-1', { subject: 'deploy' });
      await bench.delegate.execute('memory_store', {
        ...scopeRequest(SCOPE), fact: 'The deploy target is us-east-1', memory_type: 'PROJECT_LEARNED_FACT',
        subject: 'deploy', source_provenance: provenance({ source_ref: 'deploy.md' }),
        freshness_policy: { kind: 'never' }, source_timestamp: '2026-11-20T00:00:00Z',
        idempotency_key: `contradiction-${kind}-${moment.replaceAll(' ', '-')}`,
      });
      // Another server on the same file, with its own connection.
      const otherEngine = await openLocalHashEngine(bench.dbPath);
      t.teardown(() => otherEngine.close());
      const other = new MemoryAdapter({
        engine: otherEngine, provider: new LocalHashProvider(), writeProfile: 'owner-current', hostId: 'h2',
        clock: bench.clock,
      });
      const replace = () => other.execute('memory_update', {
        ...scopeRequest(SCOPE), memory_id: old.memory_id, expected_revision: 1, mode: 'REPLACE',
        idempotency_key: `race-${kind}-${moment.replaceAll(' ', '-')}`,
        replacement: {
          fact: 'The build image pins Python 3.12', source_provenance: provenance({ source_ref: 'ci.yml' }),
          freshness_policy: { kind: 'never' }, source_timestamp: '2026-11-20T00:00:00Z',
        },
      });
      // The REPLACE commits right after the first channel statement, or just before the results' full records.
      const trigger = moment === 'after the channels' ? /fact_fts|eligible_shards|fact_vec|native_content_hash/
        : /^select "r"\.\*, "t"\."fixed_tokens" from "adapter_records" as "r"/;
      let raced = false;
      const watch = (db: object): object => new Proxy(db, {
        get: (real, name) => name !== 'executeQuery' ? forward(real, name) : async (compiled: { sql: string }) => {
          const result = await (real as { executeQuery: (q: unknown) => Promise<unknown> }).executeQuery(compiled);
          if (!raced && trigger.test(compiled.sql)) {
            raced = true;
            t.equal(((await replace()) as Json).status, 'OK',
              `${kind}, ${moment}: the replacement is written in between`);
          }
          return result;
        },
      });
      const racing = new Proxy(bench.engine, {
        get: (engine, key) => key !== 'read' && key !== 'readSnapshot' ? forward(engine, key)
          : (work: (db: unknown) => Promise<unknown>) =>
            (engine[key] as (w: (db: unknown) => Promise<unknown>) => Promise<unknown>)(
              (db) => work(watch(db as object))),
      });
      const adapter = new MemoryAdapter({
        engine: racing, provider: new LocalHashProvider(), writeProfile: 'owner-current', hostId: 'h',
        clock: bench.clock,
      });
      const envelope = await search(adapter,
        req(kind === 'EXACT' ? 'The CI runs on Node 18' : 'CI Node', { retrieval_mode_kind: kind }));
      t.ok(raced, `${kind}, ${moment}: the race ran`);
      t.equal(envelope.status, 'OK', `${kind}, ${moment}: not CONTRADICTION`);
      const facts = (envelope.results as Json[]).map((r) => r.fact);
      t.equal(facts[0], 'The CI runs on Node 18', `${kind}, ${moment}: the record as it was before the REPLACE`);
      t.notOk(facts.includes('The build image pins Python 3.12'), `${kind}, ${moment}: not its successor`);
    }
  }
});
