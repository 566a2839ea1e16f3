import t from 'tap';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { publicRecord } from '../../src/adapter/public-record.js';
import { scopeDigest } from '../../src/adapter/request-scope.js';
import { memoryRecords } from '../../src/storage/retrieval-repository.js';
import { sortedJson } from '../helpers/mcp.js';
import {
  candidateStore, currentStore, fixtureRow, get, insertFixtures, openReadBench, provenance, READ_NOW, refusedWith,
  scopeRequest, scopeTuple, type Json, type ReadBench,
} from '../helpers/reads.js';

// memory_get through MemoryAdapter (CONTRACT.md §5.2, §6.1, §11, §12.5): CURRENT and REVIEW_HISTORY,
// NOT_FOUND versus CROSS_SCOPE_DENIED, freshness, budget fitting at 6000 bytes / 1200 tokens.

const SCOPE = scopeTuple('PROJECT', { project_id: 'p1' });
const bytes = (value: unknown) => Buffer.byteLength(sortedJson(value), 'utf8');
const tokens = (value: unknown) => encode(sortedJson(value)).length;

async function storeCurrent(bench: ReadBench, fact: string, extra: Json = {}, scope = SCOPE): Promise<Json> {
  const envelope = (await bench.owner.execute('memory_store', currentStore(scope, fact, extra))) as Json;
  if (envelope.status !== 'OK') throw new Error(`fixture store ended ${envelope.status}`);
  return envelope.results[0];
}

async function reverify(bench: ReadBench, record: Json, extra: Json = {}): Promise<Json> {
  const envelope = (await bench.owner.execute('memory_update', {
    ...scopeRequest(SCOPE), memory_id: record.memory_id, expected_revision: record.revision, mode: 'REVERIFY',
    idempotency_key: `rv-${record.record_id}`, ...extra,
  })) as Json;
  if (envelope.status !== 'OK') throw new Error(`fixture update ended ${envelope.status}`);
  return envelope.results[0];
}

const getReq = (memoryId: string, extra: Json = {}, scope = SCOPE): Json => ({
  ...scopeRequest(scope), memory_id: memoryId, ...extra,
});

t.test('CURRENT returns the current record in the full envelope', async (t) => {
  const bench = await openReadBench(t);
  const record = await storeCurrent(bench, 'The API gateway terminates TLS', { tags: ['net'] });
  const envelope = await get(bench.owner, getReq(record.memory_id, { request_id: 'get-1' }));
  t.strictSame(envelope, {
    status: 'OK', memory_needed: true,
    scope: { scope: 'PROJECT', project_id: 'p1', worktree_id: null, workflow_id: null, agent_id: null },
    results: [record], contradictions: [],
    budget: {
      requested_top_k: null, returned: 1, serialized_bytes: bytes([record]), serialized_tokens: tokens([record]),
      truncated: false,
    },
    degradation: null,
    audit: {
      request_id: 'get-1', operation: 'memory_get', public_contract_revision: 2, scope_digest: scopeDigest(SCOPE),
      backend: 'sqlite_vec', external_llm_calls: 0, local_embedding_calls: 0, raw_content_logged: false,
    },
  });
  t.equal(envelope.results[0].relevance_score, null);
  t.equal(envelope.results[0].retrieval_rank, null);
  const upper = await get(bench.owner, getReq(record.memory_id.toUpperCase(), { retrieval_mode: 'CURRENT' }));
  t.strictSame(upper.results, [record], 'an upper-case UUID is normalised');
  const history = await get(bench.owner, getReq(record.memory_id, { retrieval_mode: 'REVIEW_HISTORY' }));
  t.strictSame([history.status, history.results], ['OK', [record]]);
  t.equal(history.budget.requested_top_k, null);
  t.notOk('max_bytes' in history.budget, 'get budgets carry no max_bytes / max_tokens');
});

t.test('contradictions is always [] for memory_get, even in a scope with a live contradiction', async (t) => {
  const bench = await openReadBench(t);
  const record = await storeCurrent(bench, 'The worker pool has 8 threads', { subject: 'worker pool size' });
  const conflict = (await bench.owner.execute('memory_store',
    currentStore(SCOPE, 'The worker pool has 16 threads', { subject: 'worker pool size' }))) as Json;
  t.equal(conflict.status, 'CONTRADICTION');
  t.equal(conflict.contradictions.length, 1, 'the scope summary is non-empty');
  for (const memoryId of [record.memory_id, conflict.results[0].memory_id]) {
    const envelope = await get(bench.owner, getReq(memoryId, { retrieval_mode: 'REVIEW_HISTORY' }));
    t.strictSame([envelope.status, envelope.contradictions], ['OK', []]);
  }
});

t.test('REVIEW_HISTORY: every revision, newest first; CURRENT: the newest current one', async (t) => {
  const bench = await openReadBench(t);
  const r1 = await storeCurrent(bench, 'The release train leaves on Tuesdays');
  bench.clock.advance(1000);
  const r2 = await reverify(bench, r1);
  bench.clock.advance(1000);
  const r3 = await reverify(bench, r2);
  const current = await get(bench.owner, getReq(r1.memory_id));
  t.strictSame(current.results, [r3]);
  const history = await get(bench.owner, getReq(r1.memory_id, { retrieval_mode: 'REVIEW_HISTORY' }));
  t.strictSame(history.results.map((r: Json) => [r.revision, r.lifecycle_state]),
    [[3, 'VALIDATED_CURRENT'], [2, 'SUPERSEDED'], [1, 'SUPERSEDED']]);
  t.strictSame(history.results[0], r3);
  t.strictSame(history.results[2], { ...r1, lifecycle_state: 'SUPERSEDED' });
  t.strictSame([history.status, history.budget.truncated, history.budget.returned], ['OK', false, 3]);
  t.equal(history.budget.serialized_bytes, bytes(history.results));
  t.equal(history.budget.serialized_tokens, tokens(history.results));
});

t.test('REVIEW_HISTORY of many revisions: the newest first, budget-fitted from the end (DEGRADED / BUDGET_EXCEEDED)',
  async (t) => {
  const bench = await openReadBench(t);
  let record = await storeCurrent(bench, 'The staging database is refreshed from production every night');
  for (let i = 0; i < 10; i += 1) {
    bench.clock.advance(1000);
    record = await reverify(bench, record);
  }
  t.equal(record.revision, 11);
  const history = await get(bench.owner, getReq(record.memory_id, { retrieval_mode: 'REVIEW_HISTORY' }));
  // The newest 8 revisions, as stored, are the candidates for fitting.
  const newest8 = (await bench.engine.read((db) => memoryRecords(db, SCOPE, record.memory_id, 100))).slice(0, 8)
    .map((row) => publicRecord(row));
  t.strictSame(newest8.map((r) => r.revision), [11, 10, 9, 8, 7, 6, 5, 4]);
  let fits = newest8.length;
  while (fits > 0 && (bytes(newest8.slice(0, fits)) > 6000 || tokens(newest8.slice(0, fits)) > 1200)) fits -= 1;
  t.ok(fits < 8 && fits > 0, `a public record is ~${tokens(newest8.slice(0, 1))} tokens: ${fits} of 8 fit 1200 tokens`);
  t.strictSame(history.results, newest8.slice(0, fits), 'a prefix of the newest 8, revision descending');
  t.strictSame([history.status, history.degradation, history.budget.truncated, history.budget.returned],
    ['DEGRADED', 'BUDGET_EXCEEDED', true, fits]);
  t.equal(history.budget.serialized_bytes, bytes(history.results));
  t.equal(history.budget.serialized_tokens, tokens(history.results));
  const current = await get(bench.owner, getReq(record.memory_id));
  t.strictSame([current.status, current.results.map((r: Json) => r.revision)], ['OK', [11]]);
});

t.test('REVIEW_HISTORY: the byte budget (6000) alone drops the older revisions of a long Arabic fact', async (t) => {
  const bench = await openReadBench(t);
  // Arabic is 2 bytes a letter but few o200k tokens: two revisions exceed 6000 bytes, not 1200 tokens.
  let longFact = '';
  while (Buffer.byteLength(`${longFact}ميزانية البيانات الرئيسية `) <= 2000) longFact += 'ميزانية البيانات الرئيسية ';
  const r1 = await storeCurrent(bench, longFact.trim());
  const r2 = await reverify(bench, r1);
  const r3 = await reverify(bench, r2);
  const pair = [r3, { ...r2, lifecycle_state: 'SUPERSEDED' }];
  t.ok(bytes(pair) > 6000 && tokens(pair) <= 1200, `two revisions: ${bytes(pair)} bytes, ${tokens(pair)} tokens`);
  const history = await get(bench.owner, getReq(r1.memory_id, { retrieval_mode: 'REVIEW_HISTORY' }));
  t.strictSame(history.results, [r3], 'only the newest fits');
  t.strictSame([history.status, history.degradation, history.budget.truncated, history.budget.returned],
    ['DEGRADED', 'BUDGET_EXCEEDED', true, 1]);
  t.equal(history.budget.serialized_bytes, bytes([r3]));
  t.equal(history.budget.serialized_tokens, tokens([r3]));
  t.strictSame((await get(bench.owner, getReq(r1.memory_id))).results, [r3],
    'CURRENT: one record always fits (§13.1 record size)');
});

t.test('a Candidate-only memory: CURRENT NOT_FOUND, REVIEW_HISTORY the Candidate; after promotion both revisions',
  async (t) => {
  const bench = await openReadBench(t);
  const stored = (await bench.delegate.execute('memory_store',
    candidateStore(SCOPE, 'The docs site builds with Astro'))) as Json;
  const candidate = stored.results[0];
  t.equal(candidate.lifecycle_state, 'CANDIDATE');
  await refusedWith(t, () => get(bench.owner, getReq(candidate.memory_id)), 'NOT_FOUND',
    /^this memory has no current record in this scope; retrieval_mode REVIEW_HISTORY reads its records$/,
    'CURRENT on a Candidate says where its records are');
  const history = await get(bench.owner, getReq(candidate.memory_id, { retrieval_mode: 'REVIEW_HISTORY' }));
  t.strictSame(history.results, [candidate]);

  const promoted = await reverify(bench, candidate, {
    expected_record_id: candidate.record_id, verification: { source_timestamp: '2026-11-01T00:00:00Z' },
  });
  t.equal(promoted.lifecycle_state, 'VALIDATED_CURRENT');
  t.strictSame((await get(bench.owner, getReq(candidate.memory_id))).results, [promoted]);
  const after = await get(bench.owner, getReq(candidate.memory_id, { retrieval_mode: 'REVIEW_HISTORY' }));
  t.strictSame(after.results.map((r: Json) => [r.revision, r.lifecycle_state]),
    [[2, 'VALIDATED_CURRENT'], [1, 'SUPERSEDED']]);
});

t.test('a REPLACEd memory: CURRENT NOT_FOUND (no redirect), REVIEW_HISTORY its superseded record', async (t) => {
  const bench = await openReadBench(t);
  const old = await storeCurrent(bench, 'The CI runs on Node 18');
  const replaced = (await bench.owner.execute('memory_update', {
    ...scopeRequest(SCOPE), memory_id: old.memory_id, expected_revision: 1, mode: 'REPLACE',
    idempotency_key: 'replace-1',
    replacement: {
      fact: 'The CI runs on Node 20', source_provenance: provenance({ source_ref: 'ci.yml' }),
      freshness_policy: { kind: 'never' }, source_timestamp: '2026-11-20T00:00:00Z',
    },
  })) as Json;
  t.equal(replaced.status, 'OK');
  const successor = replaced.results[0];
  t.not(successor.memory_id, old.memory_id);
  await refusedWith(t, () => get(bench.owner, getReq(old.memory_id)), 'NOT_FOUND', undefined,
    'CURRENT on the replaced memory');
  const history = await get(bench.owner, getReq(old.memory_id, { retrieval_mode: 'REVIEW_HISTORY' }));
  t.strictSame(history.results, [{ ...old, lifecycle_state: 'SUPERSEDED' }]);
  const current = await get(bench.owner, getReq(successor.memory_id));
  t.strictSame(current.results, [successor]);
  t.strictSame(successor.supersedes, [old.memory_id]);
});

t.test('a memory in another scope tuple: CROSS_SCOPE_DENIED; nowhere: NOT_FOUND', async (t) => {
  const bench = await openReadBench(t);
  const withAgent = scopeTuple('PROJECT', { project_id: 'p1', agent_id: 'codex' });
  const agentRecord = await storeCurrent(bench, 'Agent-scoped fact', {}, withAgent);
  const otherProject = await storeCurrent(bench, 'Other project fact', {}, scopeTuple('PROJECT', { project_id: 'p2' }));
  const global = await storeCurrent(bench, 'Global fact', { memory_type: 'USER_FACT' }, scopeTuple('GLOBAL_USER'));
  for (const mode of ['CURRENT', 'REVIEW_HISTORY']) {
    await refusedWith(t, () => get(bench.owner, getReq(agentRecord.memory_id, { retrieval_mode: mode })),
      'CROSS_SCOPE_DENIED', undefined, `${mode}: stored with agent_id, asked without`);
    await refusedWith(t, () => get(bench.owner, getReq(otherProject.memory_id, { retrieval_mode: mode })),
      'CROSS_SCOPE_DENIED', undefined, `${mode}: another project`);
    await refusedWith(t, () => get(bench.owner, getReq(global.memory_id, { retrieval_mode: mode })),
      'CROSS_SCOPE_DENIED', undefined, `${mode}: GLOBAL_USER memory asked in PROJECT`);
    const unknownId = getReq('0b7c8f7e-3a49-4c1b-9d55-2f8d9a6e1c00', { retrieval_mode: mode });
    await refusedWith(t, () => get(bench.owner, unknownId), 'NOT_FOUND', /^no record of this memory in this scope$/,
      `${mode}: unknown id`);
    const right = await get(bench.owner, getReq(agentRecord.memory_id, { retrieval_mode: mode }, withAgent));
    t.strictSame(right.results, [agentRecord], `${mode}: the exact tuple finds it`);
  }
});

t.test('a memory whose records in the scope are all non-live: CURRENT NOT_FOUND, REVIEW_HISTORY lists them',
  async (t) => {
  const bench = await openReadBench(t);
  const memoryId = '5d1f2b9c-8e34-4a0b-b6a1-0c9d8e7f6a51';
  const [historical, superseded] = await insertFixtures(bench.engine, [
    { row: fixtureRow(SCOPE, 'The scheduler ran cron', {
      memoryId, revision: 1, lifecycle: 'HISTORICAL', createdAt: '2026-01-01T00:00:00Z',
    }), vector: null },
    { row: fixtureRow(SCOPE, 'The scheduler ran cron', {
      memoryId, revision: 2, lifecycle: 'SUPERSEDED', createdAt: '2026-02-01T00:00:00Z',
    }) },
  ]);
  await refusedWith(t, () => get(bench.owner, getReq(memoryId)), 'NOT_FOUND', /REVIEW_HISTORY reads its records$/,
    'CURRENT: nothing current in the scope, so not CROSS_SCOPE_DENIED either');
  // A purged memory (a recovery tombstone only) is the same case: REVIEW_HISTORY shows the tombstone.
  const purgedId = '6e2a3c0d-9f45-4b1c-a7b2-1d0e9f8a7b62';
  await insertFixtures(bench.engine, [{ row: fixtureRow(SCOPE, 'The scheduler ran at', {
    memoryId: purgedId, revision: 1,
    lifecycle: 'QUARANTINED', createdAt: '2026-01-01T00:00:00Z' }), vector: null }]);
  await refusedWith(t, () => get(bench.owner, getReq(purgedId)), 'NOT_FOUND', /REVIEW_HISTORY reads its records$/,
    'CURRENT on a purged memory');
  t.equal((await get(bench.owner, getReq(purgedId, { retrieval_mode: 'REVIEW_HISTORY' }))).results.length, 1,
    'its tombstone');
  const history = await get(bench.owner, getReq(memoryId, { retrieval_mode: 'REVIEW_HISTORY' }));
  t.strictSame(history.results.map((r: Json) => [r.record_id, r.revision, r.lifecycle_state]),
    [[superseded!.record_id, 2, 'SUPERSEDED'], [historical!.record_id, 1, 'HISTORICAL']]);
  t.strictSame([history.status, history.degradation], ['OK', null], 'no HISTORY_SEMANTIC_PARTIAL for memory_get');
});

t.test('CURRENT of a stale fact: DEGRADED / STALE_ONLY with no results; REVIEW_HISTORY still returns it', async (t) => {
  const bench = await openReadBench(t);
  const record = await storeCurrent(bench, 'The feature freeze starts Friday', {
    freshness_policy: { kind: 'ttl', ttl_seconds: 600 }, last_verified_at: READ_NOW,
  });
  bench.clock.advance(600_000);
  t.strictSame((await get(bench.owner, getReq(record.memory_id))).results, [record], 'fresh at last_verified_at + ttl');
  bench.clock.advance(1);
  const stale = await get(bench.owner, getReq(record.memory_id));
  t.strictSame([stale.status, stale.degradation, stale.results, stale.contradictions],
    ['DEGRADED', 'STALE_ONLY', [], []]);
  t.strictSame(stale.budget,
    { requested_top_k: null, returned: 0, serialized_bytes: 0, serialized_tokens: 0, truncated: false });
  const history = await get(bench.owner, getReq(record.memory_id, { retrieval_mode: 'REVIEW_HISTORY' }));
  t.strictSame([history.status, history.results], ['OK', [record]]);

  // Re-verified: fresh again.
  const reverified = await reverify(bench, record);
  t.strictSame((await get(bench.owner, getReq(record.memory_id))).results, [reverified]);
});

t.test('validation order: request_id, memory_id, retrieval_mode', async (t) => {
  const bench = await openReadBench(t);
  const record = await storeCurrent(bench, 'Validation probe');
  for (const bad of ['not-a-uuid', record.memory_id.replaceAll('-', ''), `${record.memory_id}0`, '', 42, null]) {
    await refusedWith(t, () => get(bench.owner, getReq(bad as string)), 'INVALID_ENVELOPE', /memory_id/,
      `memory_id ${JSON.stringify(bad)}`);
  }
  await refusedWith(t, () => get(bench.owner, getReq(record.memory_id, { retrieval_mode: 'LATEST' })), 'INVALID_ENUM',
    /retrieval_mode must be one of: CURRENT, REVIEW_HISTORY/);
  await refusedWith(t, () => get(bench.owner, getReq('nope', { retrieval_mode: 'LATEST' })), 'INVALID_ENVELOPE',
    /memory_id/, 'memory_id before retrieval_mode');
  await refusedWith(t, () => get(bench.owner, getReq('nope', { request_id: 'bad id' })), 'INVALID_ENVELOPE',
    /request_id/, 'request_id first');
  await refusedWith(t, () => get(bench.owner, getReq('0b7c8f7e-3a49-4c1b-9d55-2f8d9a6e1c00',
    { retrieval_mode: 'LATEST' })), 'INVALID_ENUM', undefined, 'retrieval_mode before lookup');
  t.equal((await get(bench.owner, getReq(record.memory_id, { retrieval_mode: null }))).status, 'OK',
    'null mode means CURRENT');
});
