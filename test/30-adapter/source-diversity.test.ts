import t, { type Test } from 'tap';
import { selectDiverse } from '../../src/adapter/source-diversity.js';
import {
  hex64, insertFixtures, fixtureRow, openReadBench, queryVector, rankedOf, scopeRequest, scopeTuple, search,
  vectorAtDistance, type Json,
} from '../helpers/reads.js';

// Source diversity (CONTRACT.md §12.4): selectDiverse directly, then end to end through memory_search on
// vectors crafted at known cosine distances from the query's local-hash-384 embedding, so every score is
// max(0, 1 - distance / 2) exactly as the spec's worked example states.

const HASH_A = hex64('source-a');
const HASH_B = hex64('source-b');
const HASH_C = hex64('source-c');
const SRC = {
  A: { source_class: 'repo_file', source_ref: 'docs/a.md', source_hash: HASH_A },
  B: { source_class: 'repo_file', source_ref: 'docs/b.md', source_hash: HASH_B },
  C: { source_class: 'repo_file', source_ref: 'docs/c.md', source_hash: HASH_C },
} as const;

interface Item { id: string; score: number; source: { source_class: string; source_ref: string; source_hash: string } }
const item = (id: string, score: number, source: Item['source']): Item => ({ id, score, source });
const ids = (items: readonly Item[]) => items.map((i) => i.id);

t.test('selectDiverse: the §12.4 examples', async (t) => {
  const a1 = item('a1', 0.95, SRC.A);
  const a2 = item('a2', 0.94, SRC.A);
  const a3 = item('a3', 0.93, SRC.A);
  const b1 = item('b1', 0.8, SRC.B);
  const c1 = item('c1', 0.7, SRC.C);
  const chosen = selectDiverse([a1, a2, a3, b1, c1], 3);
  t.strictSame(ids(chosen), ['a1', 'b1', 'c1'], 'A, A, A, B, C with max 3: one per source');
  t.strictSame(chosen.map((c) => c.score), [0.95, 0.8, 0.7], 'scores untouched');
  t.equal(chosen[0], a1, 'the very objects are returned, unchanged');

  t.strictSame(ids(selectDiverse([a1, a2, a3, b1], 3)), ['a1', 'a2', 'b1'],
    'A×3 + B×1: B takes a slot, the rest filled with the best A repeat');
  t.strictSame(ids(selectDiverse([a1, a2, a3, b1], 2)), ['a1', 'b1'],
    'max 2: an unseen source ahead of a higher-scored repeat');
  t.strictSame(ids(selectDiverse([a1, a2, a3, b1, c1], 4)), ['a1', 'a2', 'b1', 'c1'],
    'max 4: the fill comes back in score order');
  t.strictSame(ids(selectDiverse([a1, a2, a3, b1, c1], 1)), ['a1'], 'the top candidate is always kept');
});

t.test('selectDiverse: a source is the whole (source_class, source_ref, source_hash) triple', async (t) => {
  const x1 = item('x1', 0.9, SRC.A);
  const x2 = item('x2', 0.85, SRC.A);
  const otherHash = item('x-hash', 0.8, { ...SRC.A, source_hash: HASH_B });
  const otherClass = item('x-class', 0.75, { ...SRC.A, source_class: 'web_page' });
  const otherRef = item('x-ref', 0.7, { ...SRC.A, source_ref: 'docs/a2.md' });
  t.strictSame(ids(selectDiverse([x1, x2, otherHash], 2)), ['x1', 'x-hash'],
    'same source_ref, different source_hash: a different source');
  t.strictSame(ids(selectDiverse([x1, x2, otherClass], 2)), ['x1', 'x-class'],
    'different source_class: a different source');
  t.strictSame(ids(selectDiverse([x1, x2, otherRef], 2)), ['x1', 'x-ref'], 'different source_ref: a different source');
  // The key must not be a plain concatenation: ("a:b", "c") and ("a", "b:c") are different sources.
  const glued1 = item('g1', 0.9, { source_class: 'a|b', source_ref: 'c', source_hash: HASH_A });
  const glued2 = item('g2', 0.8, { source_class: 'a', source_ref: 'b|c', source_hash: HASH_A });
  const glued3 = item('g3', 0.7, { source_class: 'a|b', source_ref: 'c', source_hash: HASH_A });
  t.strictSame(ids(selectDiverse([glued1, glued3, glued2], 2)), ['g1', 'g2'], 'field boundaries are part of the key');
});

t.test('selectDiverse: no more candidates than slots leaves the list as it is', async (t) => {
  const list = [item('a1', 0.9, SRC.A), item('a2', 0.8, SRC.A), item('a3', 0.7, SRC.A)];
  t.strictSame(ids(selectDiverse(list, 3)), ['a1', 'a2', 'a3']);
  t.strictSame(ids(selectDiverse(list, 8)), ['a1', 'a2', 'a3']);
  t.strictSame(ids(selectDiverse([], 5)), []);
  const copy = selectDiverse(list, 3);
  t.not(copy, list, 'a new array; the input is not modified');
  t.strictSame(ids(list), ['a1', 'a2', 'a3']);
});

// ---- End to end through memory_search --------------------------------------------------------------

const QUERY = 'retry budget for the payment gateway';
const SCOPE = scopeTuple('PROJECT', { project_id: 'div' });
// A public record is about 330 o200k tokens (UUIDs and hex hashes tokenise poorly), so four results need
// the largest budgets.
const BIG = { max_bytes: 8000, max_tokens: 1600 };
const base = { ...scopeRequest(SCOPE), query: QUERY, intent_class: 'CURRENT_PROJECT_STATE', ...BIG };

/** Facts share no word with the query, so only the crafted vectors decide (KEYWORD finds nothing). */
async function seedExample(t: Test, rows: [string, number, keyof typeof SRC | Item['source']][]) {
  const bench = await openReadBench(t);
  const q = queryVector(QUERY);
  await insertFixtures(bench.engine, rows.map(([fact, distance, source], i) => ({
    row: fixtureRow(SCOPE, fact, {
      source: typeof source === 'string' ? SRC[source] : source, createdAt: `2026-11-2${i}T00:00:00Z`,
    }),
    vector: vectorAtDistance(q, distance, i + 1),
  })));
  return bench;
}

const EXAMPLE: [string, number, keyof typeof SRC][] = [
  ['fact a1', 0.1, 'A'], ['fact a2', 0.12, 'A'], ['fact a3', 0.14, 'A'], ['fact b1', 0.4, 'B'], ['fact c1', 0.6, 'C'],
];

t.test('SEMANTIC CURRENT: the §12.4 example gives a1, b1, c1 with scores 0.95, 0.8, 0.7', async (t) => {
  const bench = await seedExample(t, EXAMPLE);
  const envelope = await search(bench.owner, { ...base, max_memories: 3 });
  t.equal(envelope.status, 'OK');
  t.strictSame(rankedOf(envelope), [['fact a1', 0.95, 1], ['fact b1', 0.8, 2], ['fact c1', 0.7, 3]]);
  t.equal(envelope.budget.returned, 3);
  t.equal(envelope.budget.truncated, false, 'diversity is not a budget truncation');
  t.equal(envelope.degradation, null);

  const four = await search(bench.owner, { ...base, max_memories: 4 });
  t.strictSame(rankedOf(four), [['fact a1', 0.95, 1], ['fact a2', 0.94, 2], ['fact b1', 0.8, 3], ['fact c1', 0.7, 4]],
    'max 4: one per source, then the best repeat, emitted in score order');
  t.equal(four.budget.truncated, false);

  const hybrid = await search(bench.owner, { ...base, retrieval_mode_kind: 'HYBRID', max_memories: 3 });
  t.strictSame(rankedOf(hybrid), [['fact a1', 0.95, 1], ['fact b1', 0.8, 2], ['fact c1', 0.7, 3]],
    'HYBRID CURRENT (vector channel only here) is diversified too');
});

t.test('SEMANTIC CURRENT: A×3 plus B×1 with max_memories 3 gives a1, a2, b1', async (t) => {
  const bench = await seedExample(t, EXAMPLE.slice(0, 4));
  const envelope = await search(bench.owner, { ...base, max_memories: 3 });
  t.strictSame(rankedOf(envelope), [['fact a1', 0.95, 1], ['fact a2', 0.94, 2], ['fact b1', 0.8, 3]]);
  const four = await search(bench.owner, { ...base, max_memories: 4 });
  t.strictSame(rankedOf(four), [['fact a1', 0.95, 1], ['fact a2', 0.94, 2], ['fact a3', 0.93, 3], ['fact b1', 0.8, 4]],
    'no more eligible candidates than slots: pure score order');
  t.equal(four.budget.truncated, false);
  const two = await search(bench.owner, { ...base, max_memories: 2 });
  t.strictSame(rankedOf(two), [['fact a1', 0.95, 1], ['fact b1', 0.8, 2]],
    'an unseen source ahead of a higher-scored repeat; ranks are positions in the emitted list');
});

t.test('SEMANTIC CURRENT: the same source_ref with another source_hash is another source', async (t) => {
  const bench = await seedExample(t, [
    ['fact a1', 0.1, 'A'], ['fact a2', 0.12, 'A'],
    ['fact a-rehashed', 0.3, { ...SRC.A, source_hash: hex64('a, edited') }], ['fact b1', 0.4, 'B'],
  ]);
  const envelope = await search(bench.owner, { ...base, max_memories: 2 });
  t.strictSame(rankedOf(envelope), [['fact a1', 0.95, 1], ['fact a-rehashed', 0.85, 2]]);
});

t.test('diversity applies to eligible candidates only: a Candidate of an unseen source takes no slot', async (t) => {
  const bench = await openReadBench(t);
  const q = queryVector(QUERY);
  await insertFixtures(bench.engine, [
    { row: fixtureRow(SCOPE, 'fact a1', { source: SRC.A }), vector: vectorAtDistance(q, 0.1, 1) },
    { row: fixtureRow(SCOPE, 'fact a2', { source: SRC.A }), vector: vectorAtDistance(q, 0.12, 2) },
    { row: fixtureRow(SCOPE, 'candidate b', { source: SRC.B, lifecycle: 'CANDIDATE' }),
      vector: vectorAtDistance(q, 0.11, 3) },
    { row: fixtureRow(SCOPE, 'stale c', {
      source: SRC.C, freshness: { kind: 'ttl', ttl_seconds: 60 }, lastVerifiedAt: '2026-01-01T00:00:00Z',
    }), vector: vectorAtDistance(q, 0.13, 4) },
    { row: fixtureRow(SCOPE, 'fact a3', { source: SRC.A }), vector: vectorAtDistance(q, 0.2, 5) },
  ]);
  const envelope = await search(bench.owner, { ...base, max_memories: 2 });
  t.strictSame(rankedOf(envelope), [['fact a1', 0.95, 1], ['fact a2', 0.94, 2]]);
});

t.test('EXACT, KEYWORD and REVIEW_HISTORY are not diversified: cut to max_memories in score order', async (t) => {
  const bench = await seedExample(t, EXAMPLE);
  const history = await search(bench.owner, { ...base, retrieval_mode: 'REVIEW_HISTORY', max_memories: 3 });
  t.strictSame(rankedOf(history), [['fact a1', 0.95, 1], ['fact a2', 0.94, 2], ['fact a3', 0.93, 3]],
    'REVIEW_HISTORY SEMANTIC');
  const historyHybrid = await search(bench.owner, {
    ...base, retrieval_mode: 'REVIEW_HISTORY', retrieval_mode_kind: 'HYBRID', max_memories: 3,
  });
  t.strictSame(rankedOf(historyHybrid), [['fact a1', 0.95, 1], ['fact a2', 0.94, 2], ['fact a3', 0.93, 3]],
    'REVIEW_HISTORY HYBRID');

  // KEYWORD: three matches from source A ranked above one from B.
  const kwScope = scopeTuple('PROJECT', { project_id: 'div-kw' });
  await insertFixtures(bench.engine, [
    { row: fixtureRow(kwScope, 'zircon', { source: SRC.A }) },
    { row: fixtureRow(kwScope, 'zircon zircon cache', { source: SRC.A }) },
    { row: fixtureRow(kwScope, 'the zircon cache lives under var lib', { source: SRC.A }) },
    { row: fixtureRow(kwScope, 'the zircon cache directory is rebuilt on every boot of the worker host',
      { source: SRC.B }) },
  ]);
  const kw = {
    ...scopeRequest(kwScope), query: 'zircon', intent_class: 'CURRENT_PROJECT_STATE', retrieval_mode_kind: 'KEYWORD',
    ...BIG,
  };
  const full = await search(bench.owner, { ...kw, max_memories: 8 });
  t.equal(full.results.length, 4);
  t.equal(full.budget.truncated, false);
  t.equal(full.results[3].source_provenance.source_hash, HASH_B, 'the B match ranks last');
  const cut = await search(bench.owner, { ...kw, max_memories: 3 });
  t.strictSame(rankedOf(cut), rankedOf(full).slice(0, 3), 'KEYWORD: the first three, all from A');
  t.strictSame(cut.results.map((r: Json) => r.source_provenance.source_hash), [HASH_A, HASH_A, HASH_A]);
  t.strictSame(cut.results.map((r: Json) => r.relevance_score), [1, 0.5, 0.333333],
    'KEYWORD scores 1 / rank, rounded to 6 decimals');

  // EXACT: the same fact in three records. Every EXACT score is 1, so the emitted order is record_id asc
  // (§12.2); in that order the sources are A, A, B, and diversity would pick A, B.
  const exScope = scopeTuple('PROJECT', { project_id: 'div-exact' });
  const rid = (n: number) => `00000000-0000-4000-8000-00000000000${n}`;
  await insertFixtures(bench.engine, [
    { row: fixtureRow(exScope, 'The queue is FIFO', {
      recordId: rid(3), source: SRC.B, createdAt: '2026-11-20T00:00:00Z', lifecycle: 'CANDIDATE',
    }) },
    { row: fixtureRow(exScope, 'The queue is FIFO', {
      recordId: rid(2), source: SRC.A, createdAt: '2026-11-21T00:00:00Z', lifecycle: 'CANDIDATE',
    }) },
    { row: fixtureRow(exScope, 'The queue is FIFO', {
      recordId: rid(1), source: SRC.A, createdAt: '2026-11-22T00:00:00Z',
    }) },
  ]);
  const exact = await search(bench.owner, {
    ...scopeRequest(exScope), query: 'the queue is fifo', intent_class: 'CURRENT_PROJECT_STATE',
    retrieval_mode_kind: 'EXACT', retrieval_mode: 'REVIEW_HISTORY', max_memories: 2, ...BIG,
  });
  t.strictSame(exact.results.map((r: Json) =>
    [r.record_id, r.source_provenance.source_hash, r.relevance_score, r.retrieval_rank]), [
    [rid(1), HASH_A, 1, 1], [rid(2), HASH_A, 1, 2],
  ], 'EXACT REVIEW_HISTORY: cut to 2, the B record not pulled in');
});
