import t, { type Test } from 'tap';
import { join } from 'node:path';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { sql } from 'kysely';
import { AdapterError } from '../../src/core/adapter-error.js';
import { MemoryAdapter } from '../../src/adapter/memory-adapter.js';
import { withRaw } from '../helpers/storage.js';
import { call, connectClient, sortedJson, textOf, UUID_V4 } from '../helpers/mcp.js';
import {
  CONTRADICTION_ITEM_KEYS, HASH_A, HASH_B, HIDDEN_KEYS, NOW, PUBLIC_RECORD_KEYS, currentRequest, derivedRows, diskState,
  fixedClock, hex64, openWriteBench, provenance, RacingProvider, rawRecord, refused, replaceRequest, store,
  storeRequest, update, type Json,
} from '../helpers/writes.js';

// memory_store through MemoryAdapter (CONTRACT.md §5.3, §8, §13.1-§13.3, §6.1/§6.4/§6.5), a fresh
// local-hash-384 database per test; a few cases through a real MCP client to show the wire outcome.

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');
const tokens = (text: string) => encode(text).length;
const PROJECT = { scope: 'PROJECT', project_id: 'p1' };

/** The envelope keys of a store answer (without idempotent_replay). */
const ENVELOPE_KEYS = [
  'audit', 'budget', 'contradictions', 'degradation', 'memory_needed', 'results', 'scope', 'status',
];

/** The §6.4 shape of a public record and the absence of every internal column, by key and by value. */
function assertPublicRecord(t: Test, record: Json, dbPath: string, envelope: Json): void {
  t.strictSame(Object.keys(record).sort(), PUBLIC_RECORD_KEYS, 'exactly the §6.4 keys');
  t.match(record.memory_id, UUID_V4);
  t.match(record.record_id, UUID_V4);
  t.strictSame(Object.keys(record.scope).sort(), ['agent_id', 'project_id', 'scope', 'workflow_id', 'worktree_id']);
  t.strictSame(Object.keys(record.contribution_origin).sort(), ['contributor_class', 'contributor_ref']);
  t.strictSame(Object.keys(record.freshness_policy).sort(),
    ['kind', 'recheck_ref', 'source_fingerprint', 'ttl_seconds']);
  t.strictSame(Object.keys(record.source_provenance).sort(),
    ['extraction_method', 'review_ref', 'source_class', 'source_fingerprint', 'source_hash', 'source_ref']);
  t.equal(record.relevance_score, null);
  t.equal(record.retrieval_rank, null);
  const row = rawRecord(dbPath, record.record_id)!;
  // The contradiction summary carries contradiction_key by design (§6.5); everything else must not.
  const text = JSON.stringify({ ...envelope, contradictions: undefined });
  for (const key of HIDDEN_KEYS) t.notOk(text.includes(`"${key}"`), `no ${key} key`);
  for (const key of ['contradiction_key', 'native_content_hash', 'payload_fingerprint', 'idempotency_key']) {
    t.notOk(text.includes(String(row[key])), `the stored ${key} value appears nowhere`);
  }
}

/** serialized_bytes / serialized_tokens measure the canonical JSON of results, never trimmed (§6.1). */
function assertMeasuredBudget(t: Test, envelope: Json): void {
  const text = sortedJson(envelope.results);
  t.strictSame(envelope.budget, {
    requested_top_k: null, returned: envelope.results.length, serialized_bytes: bytes(text),
    serialized_tokens: tokens(text), truncated: false,
  });
  t.ok(envelope.budget.serialized_tokens > 0, 'tokens measured');
}

t.test('delegated-candidate stores a Candidate: the full envelope, the record, its FTS row and vector', async (t) => {
  const bench = await openWriteBench(t);
  const adapter = bench.adapter('delegated-candidate', { hostId: 'agent-host' });
  const before = bench.state();
  const request = storeRequest({
    fact: '  The build uses   Node 20 ', tags: ['runtime'], confidence: 0.75, request_id: 'req-1',
    source_timestamp: '2026-11-01T00:00:00+01:00', last_verified_at: '2026-11-02 00:00Z',
  });
  const envelope = await store(adapter, request);

  t.strictSame(Object.keys(envelope).sort(), ENVELOPE_KEYS, 'no idempotent_replay on a first write');
  t.equal(envelope.status, 'OK');
  t.equal(envelope.memory_needed, true);
  t.strictSame(envelope.scope,
    { scope: 'GLOBAL_USER', project_id: null, worktree_id: null, workflow_id: null, agent_id: null });
  t.strictSame(envelope.contradictions, []);
  t.equal(envelope.degradation, null);
  t.match(envelope.audit, {
    request_id: 'req-1', operation: 'memory_store', public_contract_revision: 2, backend: 'sqlite_vec',
    external_llm_calls: 0, local_embedding_calls: 1, raw_content_logged: false,
  });
  t.equal(envelope.results.length, 1);
  const record = envelope.results[0];
  t.match(record, {
    revision: 1, parent_record_id: null, scope: envelope.scope, memory_type: 'USER_FACT',
    fact: 'The build uses Node 20', source_provenance: { ...provenance(), source_fingerprint: null },
    source_timestamp: '2026-10-31T23:00:00Z', created_at: NOW, last_verified_at: '2026-11-02T00:00:00Z',
    verified_by: 'UNVERIFIED', authority_role: 'UNRESOLVED',
    contribution_origin: { contributor_class: 'DELEGATED_AGENT', contributor_ref: 'agent-host' },
    freshness_policy: { kind: 'never', recheck_ref: null, source_fingerprint: null, ttl_seconds: null }, supersedes: [],
    contradiction_state: 'NONE',
    confidence: 0.75, tags: ['runtime'], lifecycle_state: 'CANDIDATE',
  });
  t.not(record.memory_id, record.record_id, 'distinct memory and record ids');
  assertPublicRecord(t, record, bench.dbPath, envelope);
  assertMeasuredBudget(t, envelope);

  const after = bench.state();
  t.strictSame([after.records, after.fts, after.vec], [before.records + 1, before.fts + 1, before.vec + 1],
    'record, FTS row and vector written together');
  const derived = derivedRows(bench.dbPath, record.record_id);
  t.equal(derived.searchText, 'the build uses node 20', 'FTS holds search_text(fact) under the same row_id');
  t.equal(derived.isCurrent, 0, 'a Candidate vector is not current');
  t.equal(derived.vectorBytes, 384 * 4, 'a 384-dimension float32 vector');
  const row = rawRecord(bench.dbPath, record.record_id)!;
  t.equal(row.idempotency_key, request.idempotency_key, 'the key is stored');
  t.match(row.native_content_hash, /^[0-9a-f]{64}$/);
  t.match(row.contradiction_key, /^[0-9a-f]{64}$/);
  t.equal(row.embedding_profile_id, 'local-hash-384');

  t.equal((await store(adapter, storeRequest({ fact: 'explicit unverified', verified_by: 'UNVERIFIED' })))
    .results[0].verified_by, 'UNVERIFIED', 'an explicit UNVERIFIED is allowed');
  await refused(t, bench, () => store(adapter, storeRequest({ verified_by: 'OWNER' })), 'WRITE_AUTHORIZATION_DENIED',
    /Candidates as UNVERIFIED; remove verified_by$/, 'a Candidate cannot claim a verifier');
  await refused(t, bench, () => store(adapter, currentRequest({ fact: 'delegated current' })),
    'WRITE_AUTHORIZATION_DENIED', undefined, 'delegated asking for VALIDATED_CURRENT');
  await refused(t, bench, () => store(adapter, currentRequest({ fact: 'delegated current', verified_by: 'OWNER' })),
    'WRITE_AUTHORIZATION_DENIED', undefined, 'even claiming a verifier');
});

t.test('owner-current stores VALIDATED_CURRENT with the role of each scope; the vector is current', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current', { hostId: 'owner-host' });
  const cases: [Json, string, Json][] = [
    [{ scope: 'GLOBAL_USER', agent_id: '' }, 'OWNER_CURRENT',
      { scope: 'GLOBAL_USER', project_id: null, worktree_id: null, workflow_id: null, agent_id: null }],
    [{ scope: 'PROJECT', project_id: 'p1', worktree_id: 'wt-1' }, 'PROJECT_CURRENT',
      { scope: 'PROJECT', project_id: 'p1', worktree_id: 'wt-1', workflow_id: null, agent_id: null }],
    [{ scope: 'WORKFLOW', project_id: 'p1', workflow_id: 'wf-1', agent_id: 'codex' }, 'WORKFLOW_CURRENT',
      { scope: 'WORKFLOW', project_id: 'p1', worktree_id: null, workflow_id: 'wf-1', agent_id: 'codex' }],
    [{ scope: 'CROSS_PROJECT_WORKFLOW', memory_type: 'WORKFLOW_RULE' }, 'WORKFLOW_CURRENT',
      { scope: 'CROSS_PROJECT_WORKFLOW', project_id: null, worktree_id: null, workflow_id: null, agent_id: null }],
    [{ scope: 'TOOL_ENVIRONMENT', agent_id: 'codex', memory_type: 'TOOL_ENVIRONMENT_FACT' }, 'TOOL_ENV_CURRENT',
      { scope: 'TOOL_ENVIRONMENT', project_id: null, worktree_id: null, workflow_id: null, agent_id: 'codex' }],
  ];
  for (const [fields, role, scope] of cases) {
    const before = bench.state();
    const envelope = await store(owner, currentRequest(fields));
    const record = envelope.results[0];
    t.equal(envelope.status, 'OK', `${fields.scope}: OK`);
    t.strictSame(envelope.scope, scope, `${fields.scope}: envelope scope normalised`);
    t.strictSame(record.scope, scope, `${fields.scope}: record scope`);
    t.match(record, {
      lifecycle_state: 'VALIDATED_CURRENT', authority_role: role, verified_by: 'OWNER', contradiction_state: 'NONE',
      revision: 1, supersedes: [], source_timestamp: '2026-11-01T00:00:00Z', last_verified_at: '2026-11-29T00:00:00Z',
      created_at: NOW,
      contribution_origin: { contributor_class: 'OWNER', contributor_ref: 'owner-host' },
    }, `${fields.scope}: ${role}`);
    assertPublicRecord(t, record, bench.dbPath, envelope);
    const after = bench.state();
    t.strictSame([after.records, after.fts, after.vec], [before.records + 1, before.fts + 1, before.vec + 1],
      `${fields.scope}: +1 record, FTS, vector`);
    t.equal(derivedRows(bench.dbPath, record.record_id).isCurrent, 1,
      `${fields.scope}: the vector of a current record is current`);
  }

  const verifiers: [string, string, string][] = [
    ['repo-verifier', 'CURRENT_REPO_CHECK', 'AUTOMATION'], ['automated-verifier', 'AUTOMATED_CHECK', 'AUTOMATION'],
  ];
  for (const [profile, basis, contributor] of verifiers) {
    const adapter = bench.adapter(profile as 'repo-verifier', { hostId: `${profile}-host` });
    const record = (await store(adapter, currentRequest({ fact: `${profile} fact` }))).results[0];
    t.match(record, {
      verified_by: basis, contribution_origin: { contributor_class: contributor, contributor_ref: `${profile}-host` },
      lifecycle_state: 'VALIDATED_CURRENT',
    }, profile);
    t.equal((await store(adapter, currentRequest({ fact: `${profile} explicit`, verified_by: basis })))
      .results[0].verified_by, basis, `${profile}: its own basis may be stated`);
    await refused(t, bench,
      () => store(adapter, currentRequest({ fact: `${profile} claims owner`, verified_by: 'OWNER' })),
      'WRITE_AUTHORIZATION_DENIED', undefined, `${profile} cannot claim OWNER`);
  }
  await refused(t, bench,
    () => store(owner, currentRequest({ fact: 'owner claims automation', verified_by: 'AUTOMATED_CHECK' })),
    'WRITE_AUTHORIZATION_DENIED', undefined, 'owner cannot claim AUTOMATED_CHECK');
  // A profile that may store current facts hears how, when it names a verifier on what would be a Candidate.
  await refused(t, bench,
    () => store(owner, storeRequest({ fact: 'owner forgot the lifecycle', verified_by: 'OWNER' })),
    'WRITE_AUTHORIZATION_DENIED',
    /Candidates as UNVERIFIED; remove verified_by, or store the fact current: requested_lifecycle_state VALIDATED_CURRENT with source_timestamp and last_verified_at, and verified_by absent or OWNER$/,
    'owner naming OWNER on a Candidate');
  await refused(t, bench,
    () => store(owner, currentRequest({ fact: 'owner says unverified', verified_by: 'UNVERIFIED' })),
    'WRITE_AUTHORIZATION_DENIED', undefined, 'an explicit UNVERIFIED on a current store');
  const candidate = (await store(owner, storeRequest({ fact: 'owner candidate', last_verified_at: NOW }))).results[0];
  t.match(candidate, {
    lifecycle_state: 'CANDIDATE', authority_role: 'UNRESOLVED', verified_by: 'UNVERIFIED',
    contribution_origin: { contributor_class: 'OWNER', contributor_ref: 'owner-host' },
  }, 'the owner may store a Candidate');
  t.equal(derivedRows(bench.dbPath, candidate.record_id).isCurrent, 0);
});

t.test('current admission: source_timestamp, last_verified_at and freshness at admission', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  await refused(t, bench, () => store(owner, currentRequest({ source_timestamp: null })), 'PROVENANCE_REQUIRED',
    /source_timestamp/, 'no source_timestamp');
  await refused(t, bench, () => store(owner, currentRequest({ last_verified_at: undefined })), 'UNVERIFIED_CURRENT',
    /last_verified_at/, 'no last_verified_at');
  await refused(t, bench,
    () => store(owner, currentRequest({ source_timestamp: undefined, last_verified_at: undefined })),
    'PROVENANCE_REQUIRED', undefined, 'source_timestamp is checked first');
  const ttl = { freshness_policy: { kind: 'ttl', ttl_seconds: 3600 } };
  await refused(t, bench, () => store(owner, currentRequest({ ...ttl, last_verified_at: '2026-11-30T08:59:59Z' })),
    'UNVERIFIED_CURRENT', /stale/, 'ttl expired one second before now');
  await refused(t, bench, () => store(owner, currentRequest({ ...ttl, last_verified_at: '2026-11-30T10:59:59+02:00' })),
    'UNVERIFIED_CURRENT', undefined, 'offsets are honoured');
  const edge = await store(owner,
    currentRequest({ ...ttl, fact: 'verified exactly one ttl ago', last_verified_at: '2026-11-30T09:00:00Z' }));
  t.equal(edge.results[0].lifecycle_state, 'VALIDATED_CURRENT', 'now = last_verified_at + ttl is still fresh');
  const manual = await store(owner, currentRequest({
    fact: 'verified long ago, manual', freshness_policy: { kind: 'manual', recheck_ref: 'docs/check' },
    last_verified_at: '2001-01-01T00:00:00Z',
  }));
  t.equal(manual.results[0].lifecycle_state, 'VALIDATED_CURRENT', 'manual is always fresh');
  const staleCandidate = await store(owner,
    storeRequest({ ...ttl, fact: 'stale candidate', last_verified_at: '2020-01-01T00:00:00Z' }));
  t.equal(staleCandidate.status, 'OK', 'admission applies to current stores only');
  t.equal(staleCandidate.results[0].lifecycle_state, 'CANDIDATE');
});

t.test('idempotency: replay, IDEMPOTENCY_CONFLICT, another host, and a replay is never refused as stale', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current', { hostId: 'host-a' });
  const request = currentRequest({
    fact: 'The build uses Node 20', idempotency_key: 'store-key-1',
    freshness_policy: { kind: 'ttl', ttl_seconds: 3600 }, last_verified_at: '2026-11-30T09:30:00Z',
  });
  const first = await store(owner, request);
  t.equal(first.status, 'OK');

  const before = bench.state();
  const replay = await store(owner, { ...request, request_id: 'replay-1' });
  t.strictSame(Object.keys(replay).sort(), [...ENVELOPE_KEYS, 'idempotent_replay'].sort());
  t.equal(replay.status, 'OK');
  t.equal(replay.idempotent_replay, true);
  t.strictSame(replay.results, first.results, 'the same record');
  t.strictSame(replay.contradictions, []);
  t.equal(replay.audit.local_embedding_calls, 0, 'no embedding call on replay');
  t.equal(replay.audit.request_id, 'replay-1');
  assertMeasuredBudget(t, replay);
  t.strictSame(bench.state(), before, 'a replay writes nothing');

  const normalisedAlike = {
    ...request, fact: ' The  build uses\nNode 20',
    source_provenance: provenance({ source_hash: HASH_A.toUpperCase(), source_class: ' repo_file ' }),
    last_verified_at: '2026-11-30T10:30:00+01:00',
  };
  t.equal((await store(owner, normalisedAlike)).idempotent_replay, true,
    'the fingerprint is over the normalised request');

  await refused(t, bench, () => store(owner, { ...request, fact: 'The build uses Node 22' }), 'IDEMPOTENCY_CONFLICT',
    undefined, 'same key, another fact');
  await refused(t, bench, () => store(owner, { ...request, confidence: 0.9 }), 'IDEMPOTENCY_CONFLICT', undefined,
    'same key, another confidence');
  await refused(t, bench, () => store(owner, { ...request, requested_lifecycle_state: 'CANDIDATE' }),
    'IDEMPOTENCY_CONFLICT', undefined, 'same key, another lifecycle');
  await refused(t, bench, () => store(owner, { ...request, ...PROJECT }), 'IDEMPOTENCY_CONFLICT', undefined,
    'same key, another scope');
  await refused(t, bench, () => store(bench.adapter('owner-current', { hostId: 'host-b' }), request),
    'IDEMPOTENCY_CONFLICT',
    new RegExp('already used for a different request \\(another body, or the same body from another host or write '
      + 'profile: keys are shared by every host of the database\\); use a new key$'),
    'same key and body through another --host-id, said so');
  await refused(t, bench, () => store(bench.adapter('repo-verifier', { hostId: 'host-a' }), request),
    'IDEMPOTENCY_CONFLICT', undefined, 'same key and body under another profile');
  await refused(t, bench, () => store(bench.adapter('delegated-candidate', { hostId: 'host-a' }), request),
    'WRITE_AUTHORIZATION_DENIED', undefined, 'authorization precedes the idempotency lookup');
  await refused(t, bench, () => store(bench.adapter('read-only', { hostId: 'host-a' }), request),
    'WRITE_AUTHORIZATION_DENIED', undefined, 'a key is never a bearer token');

  // Two hours later the ttl has expired: a replay still answers, a new request with the same body is stale.
  const later = bench.adapter('owner-current', { hostId: 'host-a', clock: fixedClock('2026-11-30T12:00:00Z') });
  const lateReplay = await store(later, request);
  t.equal(lateReplay.idempotent_replay, true, 'replay after the ttl expired');
  t.strictSame(lateReplay.results, first.results);
  await refused(t, bench, () => store(later, { ...request, idempotency_key: 'store-key-2' }), 'UNVERIFIED_CURRENT',
    undefined, 'the same body under a new key is stale now');
});

t.test('a replay or DUPLICATE found under the lock counts the embedding call the store made before it', async (t) => {
  // CONTRACT.md §6.1: local_embedding_calls counts the calls this request made; the pre-check's answers make none.
  const bench = await openWriteBench(t);
  const provider = new RacingProvider();
  const racer = new MemoryAdapter({
    engine: bench.engine, provider, writeProfile: 'delegated-candidate', hostId: 'host-a', clock: fixedClock(),
  });
  const other = bench.adapter('delegated-candidate');
  const request = storeRequest({ ...PROJECT, fact: 'The deploy job runs at 02:00 UTC' });
  provider.hook = () => store(other, request);
  const replay = await store(racer, request);
  t.equal(provider.hook, null, 'the race ran');
  t.match(replay, { status: 'OK', idempotent_replay: true, audit: { local_embedding_calls: 1 } },
    'a replay under the lock');
  provider.hook = () => store(other, storeRequest({ ...PROJECT, fact: 'The nightly job runs at 03:00 UTC' }));
  const duplicate = await store(racer, storeRequest({ ...PROJECT, fact: 'The nightly job runs at 03:00 UTC' }));
  t.equal(provider.hook, null, 'the race ran');
  t.match(duplicate, { status: 'DUPLICATE', audit: { local_embedding_calls: 1 } }, 'a DUPLICATE under the lock');
  t.equal(bench.state().records, 2, 'each fact stored once');
});

t.test('DUPLICATE: the same fact in the exact scope returns the existing record; another scope stores', async (t) => {
  const bench = await openWriteBench(t);
  const delegated = bench.adapter('delegated-candidate');
  const owner = bench.adapter('owner-current');
  const first = await store(delegated, storeRequest({ ...PROJECT, fact: 'The build uses Node 20' }));

  const before = bench.state();
  const duplicate = await store(delegated, storeRequest({
    ...PROJECT, fact: '  the BUILD   uses\tnode 20 ', idempotency_key: 'dup-key', confidence: 0.1, tags: ['other'],
  }));
  t.equal(duplicate.status, 'DUPLICATE');
  t.strictSame(duplicate.results, first.results, 'the existing record, unchanged');
  t.strictSame(duplicate.contradictions, []);
  t.equal(duplicate.audit.local_embedding_calls, 0);
  t.notOk('idempotent_replay' in duplicate);
  assertMeasuredBudget(t, duplicate);
  t.strictSame(bench.state(), before, 'DUPLICATE writes nothing');

  const asCurrent = await store(owner,
    currentRequest({ ...PROJECT, fact: 'THE BUILD USES NODE 20', idempotency_key: 'dup-key-2' }));
  t.equal(asCurrent.status, 'DUPLICATE', 'whatever lifecycle was requested');
  t.equal(asCurrent.results[0].record_id, first.results[0].record_id);
  t.equal(asCurrent.results[0].lifecycle_state, 'CANDIDATE');
  const fold = await store(delegated, storeRequest({ ...PROJECT, fact: 'Die Straße ist gesperrt' }));
  t.equal((await store(delegated, storeRequest({ ...PROJECT, fact: 'DIE STRASSE IST GESPERRT' }))).status, 'DUPLICATE',
    'ß and SS fold alike');
  t.equal((await store(delegated, storeRequest({ ...PROJECT, fact: 'die strasse ist gesperrt' }))).results[0].record_id,
    fold.results[0].record_id);
  t.strictSame(bench.state().records, before.records + 1, 'only the Straße fact was added');

  const reuse = await store(delegated,
    storeRequest({ ...PROJECT, fact: 'A different fact', idempotency_key: 'dup-key' }));
  t.equal(reuse.status, 'OK', 'the key of a DUPLICATE stays unused');

  const elsewhere: Json[] = [
    { ...PROJECT, agent_id: 'codex' }, { ...PROJECT, worktree_id: 'wt-2' }, { scope: 'PROJECT', project_id: 'p2' },
    { scope: 'GLOBAL_USER' },
  ];
  for (const scope of elsewhere) {
    const envelope = await store(delegated, storeRequest({ ...scope, fact: 'The build uses Node 20' }));
    t.equal(envelope.status, 'OK', `stored in ${JSON.stringify(scope)}`);
    t.not(envelope.results[0].memory_id, first.results[0].memory_id);
  }
});

t.test('CONTRADICTION: a current fact with the same key and another fact forces a Candidate', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current', { hostId: 'owner-host' });
  const delegated = bench.adapter('delegated-candidate', { hostId: 'agent-host' });
  const current = await store(owner,
    currentRequest({ ...PROJECT, fact: 'The build uses Node 20', subject: 'node version' }));
  t.strictSame(current.contradictions, []);

  const before = bench.state();
  const conflict = await store(delegated, storeRequest({
    ...PROJECT, fact: 'The build uses Node 22', subject: ' Node   VERSION ',
    source_provenance: provenance({ source_class: 'chat' }),
  }));
  t.equal(conflict.status, 'CONTRADICTION');
  const record = conflict.results[0];
  t.match(record, {
    lifecycle_state: 'CANDIDATE', authority_role: 'UNRESOLVED', verified_by: 'UNVERIFIED',
    contradiction_state: 'UNRESOLVED', fact: 'The build uses Node 22',
    contribution_origin: { contributor_class: 'DELEGATED_AGENT', contributor_ref: 'agent-host' }, revision: 1,
    supersedes: [],
  });
  assertPublicRecord(t, record, bench.dbPath, conflict);
  assertMeasuredBudget(t, conflict);
  t.equal(conflict.audit.local_embedding_calls, 1);
  const after = bench.state();
  t.strictSame([after.records, after.fts, after.vec], [before.records + 1, before.fts + 1, before.vec + 1],
    'the Candidate is written with its FTS row and vector');
  t.equal(derivedRows(bench.dbPath, record.record_id).isCurrent, 0);
  t.equal(after.lifecycles[current.results[0].record_id], 'VALIDATED_CURRENT', 'the current fact is untouched');
  const row = rawRecord(bench.dbPath, record.record_id)!;
  t.equal(row.contradiction_key, rawRecord(bench.dbPath, current.results[0].record_id)!.contradiction_key,
    'same contradiction key');
  t.equal(conflict.contradictions.length, 1);
  const item = conflict.contradictions[0];
  t.strictSame(Object.keys(item).sort(), CONTRADICTION_ITEM_KEYS, 'exactly the §6.5 keys');
  t.strictSame(item, {
    record_id: record.record_id, memory_id: record.memory_id, contradiction_key: row.contradiction_key,
    contradiction_state: 'UNRESOLVED', lifecycle_state: 'CANDIDATE', authority_role: 'UNRESOLVED', source_class: 'chat',
  });

  // An owner asking for VALIDATED_CURRENT is forced to a Candidate too; the subject may come from a subject: tag.
  const forced = await store(owner,
    currentRequest({ ...PROJECT, fact: 'The build uses Node 18', tags: ['misc', 'Subject:  Node Version'] }));
  t.equal(forced.status, 'CONTRADICTION');
  t.match(forced.results[0], {
    lifecycle_state: 'CANDIDATE', authority_role: 'UNRESOLVED', verified_by: 'UNVERIFIED',
    contradiction_state: 'UNRESOLVED', last_verified_at: '2026-11-29T00:00:00Z',
    contribution_origin: { contributor_class: 'OWNER' },
  });
  t.equal(derivedRows(bench.dbPath, forced.results[0].record_id).isCurrent, 0);
  const ids = forced.contradictions.map((c: Json) => c.record_id);
  t.equal(ids.length, 2, 'the scope summary lists both Candidates');
  t.strictSame([...ids].sort(), [record.record_id, forced.results[0].record_id].sort());
  t.strictSame(ids, [...ids].sort(), 'same created_at: ordered by record_id');

  const unrelated = await store(delegated, storeRequest({ ...PROJECT, fact: 'Tests run with tap' }));
  t.equal(unrelated.status, 'OK');
  t.strictSame(unrelated.contradictions.map((c: Json) => c.record_id), ids, 'an OK store carries the scope summary');

  t.equal((await store(delegated, storeRequest({
    ...PROJECT, fact: 'Node 22 is preferred', subject: 'node version', memory_type: 'PREFERENCE',
  }))).status, 'OK', 'another memory_type: another key');
  t.equal((await store(delegated, storeRequest({
    ...PROJECT, agent_id: 'codex', fact: 'The build uses Node 16', subject: 'node version',
  }))).status, 'OK', 'another scope: no contradiction');
  const elsewhere = await store(delegated,
    storeRequest({ ...PROJECT, agent_id: 'codex', fact: 'The build uses Node 14', subject: 'node version' }));
  t.strictSame(elsewhere.contradictions, [], 'the summary is per exact scope');
  t.equal((await store(delegated, storeRequest({ ...PROJECT, fact: 'The build uses Node 21' }))).status, 'OK',
    'the subject derives from the fact when absent');
});

t.test('the derived subject: first 96 code points of fold_key(fact); empty subject: tags are skipped', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  const delegated = bench.adapter('delegated-candidate');
  await store(owner, currentRequest({ ...PROJECT, fact: `${'😀'.repeat(60)} alpha` }));
  t.equal((await store(delegated, storeRequest({ ...PROJECT, fact: `${'😀'.repeat(60)} beta` }))).status, 'OK',
    '60 astral code points + the differing word fit in 96 code points');
  await store(owner, currentRequest({ ...PROJECT, fact: `${'Ä'.repeat(96)} alpha` }));
  t.equal((await store(delegated, storeRequest({ ...PROJECT, fact: `${'ä'.repeat(96)} BETA` }))).status,
    'CONTRADICTION', 'the same first 96 folded code points');
  await store(owner, currentRequest({ ...PROJECT, fact: 'Editor is vim', tags: ['subject: editor'] }));
  const tagged = await store(delegated, storeRequest({
    ...PROJECT, fact: 'Editor is emacs',
    tags: ['Subject:', 'subject:   ', 'notes', 'SUBJECT:  Editor', 'subject: other'],
  }));
  t.equal(tagged.status, 'CONTRADICTION', 'the first subject: tag with text decides');
});

t.test('DUPLICATE prefers the current match, then the newest Candidate, then any other; a store replay returns the '
  + 'record as it is now', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  const delegated = bench.adapter('delegated-candidate');
  const cand = (await store(delegated, storeRequest({
    ...PROJECT, fact: 'The build uses Node 22', subject: 'node version',
  }))).results[0];
  const oldRequest = currentRequest({
    ...PROJECT, fact: 'The build uses Node 20', subject: 'node version', idempotency_key: 'old-key',
  });
  const old = (await store(owner, oldRequest)).results[0];
  const replaced = (await update(owner, replaceRequest(old, {
    fact: 'the build uses NODE 22', subject: 'node version',
  }))).results[0];
  // Node 22: a Candidate and a current record; Node 20: a superseded record.
  const before = bench.state();
  const toCurrent = await store(delegated, storeRequest({ ...PROJECT, fact: 'THE BUILD USES NODE 22' }));
  t.equal(toCurrent.status, 'DUPLICATE');
  t.equal(toCurrent.results[0].record_id, replaced.record_id, 'the current match before the Candidate');
  const toSuperseded = await store(owner, currentRequest({ ...PROJECT, fact: 'the build uses node 20' }));
  t.equal(toSuperseded.status, 'DUPLICATE');
  t.equal(toSuperseded.results[0].record_id, old.record_id);
  t.equal(toSuperseded.results[0].lifecycle_state, 'SUPERSEDED', 'a superseded match counts');
  const replay = await store(owner, oldRequest);
  t.equal(replay.idempotent_replay, true);
  t.equal(replay.results[0].record_id, old.record_id);
  t.equal(replay.results[0].lifecycle_state, 'SUPERSEDED', 'the record the key created, as it is now');
  t.strictSame(bench.state(), before, 'nothing written');

  await update(owner, replaceRequest(replaced, { fact: 'The build uses Node 24', subject: 'node version' }));
  const toCandidate = await store(delegated, storeRequest({ ...PROJECT, fact: 'The build uses Node 22' }));
  t.equal(toCandidate.status, 'DUPLICATE');
  t.equal(toCandidate.results[0].record_id, cand.record_id, 'the Candidate before a superseded match');
});

t.test('Candidates never contradict each other; a Candidate-only key has no summary', async (t) => {
  const bench = await openWriteBench(t);
  const delegated = bench.adapter('delegated-candidate');
  const a = await store(delegated, storeRequest({ fact: 'Editor is vim', subject: 'editor' }));
  const b = await store(delegated, storeRequest({ fact: 'Editor is emacs', subject: 'editor' }));
  t.equal(a.status, 'OK');
  t.equal(b.status, 'OK');
  t.equal(b.results[0].contradiction_state, 'NONE');
  t.strictSame(b.contradictions, []);
});

t.test('record size: a record over 5800 bytes of public JSON is INVALID_ENVELOPE naming the budget', async (t) => {
  const bench = await openWriteBench(t);
  const delegated = bench.adapter('delegated-candidate');
  // Long but cheap in tokens: em dashes are 3 bytes and ~1/50 token each.
  const dash = (n: number) => '—'.repeat(n);
  const large = {
    tags: Array.from({ length: 12 }, (_, i) => `${String.fromCharCode(97 + i)}${dash(15)}`),
    source_provenance: {
      source_class: dash(32), source_ref: dash(85), source_hash: HASH_A, review_ref: dash(85),
      extraction_method: dash(32), source_fingerprint: HASH_B,
    },
    freshness_policy: { kind: 'manual', recheck_ref: dash(85) },
  };
  const probe = (await store(delegated, storeRequest({ ...large, fact: 'probe' }))).results[0];
  const base = bytes(sortedJson(probe)) - bytes('"probe"');
  // Backslashes double in JSON: a 2000-byte fact of backslashes, em dashes and letters filling the record to exactly
  // 5800 bytes.
  const need = 5800 - base - 2;
  const backslashes = Math.max(0, need - 2000);
  const dashes = Math.floor((need - 2 * backslashes) / 3);
  const fact = `${'\\'.repeat(backslashes)}${dash(dashes)}${'a'.repeat(need - 2 * backslashes - 3 * dashes)}`;
  t.ok(bytes(fact) <= 2000, `the fact itself is within 2000 bytes (${bytes(fact)})`);

  const fits = await store(delegated, storeRequest({ ...large, fact }));
  t.equal(fits.status, 'OK', 'exactly 5800 bytes is stored');
  const json = sortedJson(fits.results[0]);
  t.equal(bytes(json), 5800, 'the public record is exactly 5800 bytes');
  t.ok(tokens(json) < 1140, `within 1150 tokens (${tokens(json)})`);
  const oneMore = { ...large, tags: [`${large.tags[0]}x`, ...large.tags.slice(1)] };
  // Another fact of the same bytes (not a DUPLICATE), with one more tag byte: 5801 bytes, still under the token budget.
  const other = `${fact.slice(0, -1)}${fact.endsWith('a') ? 'b' : '―'}`;
  const wouldBe = sortedJson({ ...fits.results[0], fact: other, tags: oneMore.tags });
  t.equal(bytes(wouldBe), 5801, 'the refused record would be 5801 bytes');
  t.ok(tokens(wouldBe) <= 1150, 'and within the token budget, so bytes decide');
  await refused(t, bench, () => store(delegated, storeRequest({ ...oneMore, fact: other })), 'INVALID_ENVELOPE',
    /5800 bytes/, '5801 bytes (one more tag byte)');
  await refused(t, bench, () => store(delegated, storeRequest({ ...large, fact: `${'\\'.repeat(1900)}${dash(33)}` })),
    'INVALID_ENVELOPE', /5800 bytes \/ 1150 tokens/, 'far over');

  // The token budget alone: about 1000 tokens of 'é' in under 3000 bytes.
  const tokenHeavy = storeRequest({ fact: 'é'.repeat(1000) });
  const error = await refused(t, bench, () => store(delegated, tokenHeavy), 'INVALID_ENVELOPE', /1150 tokens/,
    'over 1150 tokens');
  t.ok(error, 'refused by tokens');
  const small = (await store(delegated, storeRequest({ fact: 'small probe' }))).results[0];
  t.ok(bytes(sortedJson({ ...small, fact: tokenHeavy.fact })) < 5800, 'while under 5800 bytes');
});

t.test('read-only launchers cannot store; authorization precedes field validation', async (t) => {
  const bench = await openWriteBench(t);
  const readOnly = bench.adapter('read-only');
  await refused(t, bench, () => store(readOnly, storeRequest()), 'WRITE_AUTHORIZATION_DENIED', /read-only/,
    'Candidate');
  await refused(t, bench, () => store(readOnly, currentRequest()), 'WRITE_AUTHORIZATION_DENIED', undefined, 'current');
  await refused(t, bench, () => store(readOnly, storeRequest({ fact: '', memory_type: 'NOPE' })),
    'WRITE_AUTHORIZATION_DENIED', undefined, 'before the fact and memory_type checks');
  await refused(t, bench, () => store(bench.adapter('owner-current'), storeRequest({
    source_provenance: provenance({ trusted_actor: true }),
  })), 'WRITE_AUTHORIZATION_DENIED', undefined, 'a nested trust claim');
});

t.test('CROSS_PROJECT_WORKFLOW: no identity keys, rule types, no source fingerprint, freshness rules', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  const cpw = (fields: Json = {}) => currentRequest({
    scope: 'CROSS_PROJECT_WORKFLOW', memory_type: 'WORKFLOW_RULE', fact: 'Every change gets a review', ...fields,
  });
  for (const key of ['project_id', 'worktree_id', 'workflow_id', 'agent_id']) {
    for (const value of [null, '', 'x1']) {
      await refused(t, bench, () => store(owner, cpw({ [key]: value })), 'CROSS_SCOPE_DENIED', key,
        `${key}: ${JSON.stringify(value)} counts as present`);
    }
  }
  for (const memory_type of [
    'USER_FACT', 'PREFERENCE', 'PROJECT_LEARNED_FACT', 'TOOL_ENVIRONMENT_FACT', 'NOT_A_TYPE',
  ]) {
    await refused(t, bench, () => store(owner, cpw({ memory_type })), 'SCOPE_TYPE_MISMATCH', undefined, memory_type);
  }
  await refused(t, bench, () => store(bench.adapter('read-only'), cpw({ memory_type: 'USER_FACT' })),
    'SCOPE_TYPE_MISMATCH', undefined, '§4.4 precedes authorization');
  await refused(t, bench, () => store(owner, cpw({ source_provenance: provenance({ source_fingerprint: HASH_A }) })),
    'SCOPE_FRESHNESS_MISMATCH');
  await refused(t, bench, () => store(owner, cpw({ freshness_policy: { kind: 'manual' } })), 'INVALID_FRESHNESS',
    undefined, 'manual without recheck_ref or fingerprint');
  await refused(t, bench, () => store(owner, cpw({ freshness_policy: { kind: 'manual', recheck_ref: '  ' } })),
    'INVALID_FRESHNESS', undefined, 'manual with a blank recheck_ref');
  await refused(t, bench,
    () => store(owner, cpw({ freshness_policy: { kind: 'on_change', recheck_ref: 'ci', source_fingerprint: HASH_A } })),
    'INVALID_FRESHNESS', undefined, 'on_change following the project source');

  const rule = await store(owner, cpw({ freshness_policy: { kind: 'manual', recheck_ref: 'docs/review.md' } }));
  t.match(rule.results[0], {
    authority_role: 'WORKFLOW_CURRENT', lifecycle_state: 'VALIDATED_CURRENT', memory_type: 'WORKFLOW_RULE',
    scope: { scope: 'CROSS_PROJECT_WORKFLOW', project_id: null, worktree_id: null, workflow_id: null, agent_id: null },
  });
  const byFingerprint = await store(owner, cpw({
    fact: 'Rationale: small PRs', memory_type: 'DECISION_RATIONALE',
    freshness_policy: { kind: 'manual', source_fingerprint: hex64('doc') },
  }));
  t.equal(byFingerprint.status, 'OK', 'manual with a freshness fingerprint');
  const candidate = await store(bench.adapter('delegated-candidate'),
    storeRequest({ scope: 'CROSS_PROJECT_WORKFLOW', memory_type: 'WORKFLOW_RULE', fact: 'Squash before merge' }));
  t.equal(candidate.results[0].authority_role, 'UNRESOLVED', 'a CROSS_PROJECT_WORKFLOW Candidate');
});

// ---- Through the real MCP stack ----

function envelopeOf(t: Test, result: CallToolResult): Json {
  t.notOk(result.isError, 'a governed answer, not isError');
  const text = textOf(result);
  const envelope = JSON.parse(text) as Json;
  t.strictSame(result.structuredContent, envelope, 'structuredContent equals the text');
  t.equal(text, sortedJson(envelope), 'the text is canonical JSON');
  return envelope;
}

t.test('MCP: a current store, its replay and an IDEMPOTENCY_CONFLICT on the wire', async (t) => {
  const dbPath = join(t.testdir(), 'wire.sqlite3');
  const { client } = await connectClient(t, dbPath, { writeProfile: 'owner-current', hostId: 'wire-host' });
  const request = currentRequest({
    ...PROJECT, fact: 'The wire stores Node 20', idempotency_key: 'wire-key', request_id: 'wire-req',
  });
  const before = diskState(dbPath);
  const envelope = envelopeOf(t, await call(client, 'memory_store', { request }));
  t.equal(envelope.status, 'OK');
  t.match(envelope.audit, {
    request_id: 'wire-req', operation: 'memory_store', local_embedding_calls: 1,
    host_binding: { host_id: 'wire-host', transport: 'stdio' },
  });
  t.match(envelope.results[0], {
    lifecycle_state: 'VALIDATED_CURRENT', authority_role: 'PROJECT_CURRENT', verified_by: 'OWNER',
    contribution_origin: { contributor_class: 'OWNER', contributor_ref: 'wire-host' },
  });
  t.strictSame(Object.keys(envelope.results[0]).sort(), PUBLIC_RECORD_KEYS);
  assertMeasuredBudget(t, envelope);
  const after = diskState(dbPath);
  t.strictSame([after.records, after.fts, after.vec], [before.records + 1, before.fts + 1, before.vec + 1]);

  const replay = envelopeOf(t, await call(client, 'memory_store', { request: JSON.stringify(request) }));
  t.equal(replay.idempotent_replay, true);
  t.strictSame(replay.results, envelope.results);

  const conflict = envelopeOf(t,
    await call(client, 'memory_store', { request: { ...request, fact: 'The wire stores Node 22' } }));
  t.strictSame(Object.keys(conflict).sort(), ['audit', 'degradation', 'error_code', 'message', 'results', 'status']);
  t.match(conflict, {
    status: 'BLOCKED', error_code: 'IDEMPOTENCY_CONFLICT', results: [], degradation: null,
    audit: { request_id: 'wire-req', retryable: false, raw_content_logged: false },
  });
  t.notMatch(conflict.message, /Node 22/, 'the fact is not echoed');
  t.strictSame(diskState(dbPath), after, 'nothing written');
});

t.test('MCP: a read-only launcher gets BLOCKED / WRITE_AUTHORIZATION_DENIED and writes nothing', async (t) => {
  const dbPath = join(t.testdir(), 'wire-ro.sqlite3');
  const { client } = await connectClient(t, dbPath, { hostId: 'ro-host' });
  const before = diskState(dbPath);
  const blocked = envelopeOf(t, await call(client, 'memory_store', { request: storeRequest({ request_id: 'ro-1' }) }));
  t.strictSame(Object.keys(blocked).sort(), ['audit', 'degradation', 'error_code', 'message', 'results', 'status']);
  t.match(blocked, {
    status: 'BLOCKED', error_code: 'WRITE_AUTHORIZATION_DENIED', results: [], degradation: null,
    audit: { request_id: 'ro-1', retryable: false, host_binding: { host_id: 'ro-host' } },
  });
  t.strictSame(diskState(dbPath), before, 'nothing written');
  t.equal(before.records, 0);
});

t.test('the contradiction summary orders by time, not by the text of created_at', async (t) => {
  const bench = await openWriteBench(t);
  await bench.adapter('owner-current').execute('memory_store',
    currentRequest({ fact: 'The build uses Node 20', subject: 'node version' }));
  // Whole seconds print without a fraction ("…:00Z"), which sorts after "…:00.500000Z" as text.
  const first = await bench.adapter('delegated-candidate', { clock: () => new Date('2026-11-30T10:00:00Z') })
    .execute('memory_store', storeRequest({ fact: 'The build uses Node 22', subject: 'node version' })) as Json;
  const second = await bench.adapter('delegated-candidate', { clock: () => new Date('2026-11-30T10:00:00.500Z') })
    .execute('memory_store', storeRequest({ fact: 'The build uses Node 18', subject: 'node version' })) as Json;
  t.equal(second.status, 'CONTRADICTION');
  t.same(second.contradictions.map((item: Json) => item.record_id),
    [first.results[0].record_id, second.results[0].record_id]);
});

t.test('CROSS_PROJECT_WORKFLOW on_change cannot follow the source hash by padding it', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  const request = (hash: string, fingerprint: string) => currentRequest({
    scope: 'CROSS_PROJECT_WORKFLOW', memory_type: 'WORKFLOW_RULE', fact: 'Run the linter before pushing',
    source_provenance: provenance({ source_hash: hash }),
    freshness_policy: { kind: 'on_change', recheck_ref: 'ci', source_fingerprint: fingerprint },
  });
  await refused(t, bench, () => owner.execute('memory_store', request(` ${HASH_A} `, HASH_A)), 'INVALID_FRESHNESS',
    undefined, 'padded hash');
  await refused(t, bench, () => owner.execute('memory_store', request(HASH_A, `${HASH_A.toUpperCase()}\t`)),
    'INVALID_FRESHNESS', undefined, 'padded upper-case fingerprint');
});

t.test('a committed record that does not read back unchanged is WRITE_UNCONFIRMED', async (t) => {
  const bench = await openWriteBench(t);
  // A temporary trigger lives in the engine's connection only: it alters the row inside the write
  // transaction, as a faulty extension or a concurrent repair would, so the read-back differs.
  await sql`CREATE TEMP TRIGGER alter_confidence AFTER INSERT ON main.adapter_records
    BEGIN UPDATE main.adapter_records SET confidence = 0.25 WHERE row_id = new.row_id; END`.execute(bench.engine.db);
  const error = await bench.adapter('delegated-candidate').execute('memory_store', storeRequest({ confidence: 0.5 }))
    .then(() => undefined, (caught: unknown) => caught);
  t.ok(error instanceof AdapterError);
  t.match(error, { code: 'WRITE_UNCONFIRMED', message: /read the memory before retrying/ });
  t.equal(bench.state().records, 1, 'the commit happened; only its confirmation failed');
  await sql`DROP TRIGGER temp.alter_confidence`.execute(bench.engine.db);
  const stored = await store(bench.adapter('delegated-candidate'),
    storeRequest({ fact: 'The deploy job runs at 02:00 UTC', idempotency_key: 'k-confirmed' }));
  t.equal(stored.status, 'OK', 'an unaltered write confirms');
});

t.test('the record-size check repeats under the lock: a conflict that disappears meanwhile can push the record over',
  async (t) => {
  const PROJECT_P1 = { scope: 'PROJECT', project_id: 'p1' };
  const dash = (n: number) => '—'.repeat(n);
  const large = {
    ...PROJECT_P1, memory_type: 'PROJECT_LEARNED_FACT', subject: 'node version',
    tags: Array.from({ length: 12 }, (_, i) => `${String.fromCharCode(97 + i)}${dash(15)}`),
    source_provenance: {
      source_class: dash(32), source_ref: dash(85), source_hash: HASH_A, review_ref: dash(85),
      extraction_method: dash(32), source_fingerprint: HASH_B,
    },
    freshness_policy: { kind: 'manual', recheck_ref: dash(85) },
  };
  const current = {
    ...PROJECT_P1, memory_type: 'PROJECT_LEARNED_FACT', subject: 'node version', fact: 'The build uses Node 20',
  };
  const open = async (name: string) => {
    const bench = await openWriteBench(t, name);
    const owner = bench.adapter('owner-current');
    const existing = (await store(owner, currentRequest(current))).results[0];
    const provider = new RacingProvider();
    const verifier = new MemoryAdapter({
      engine: bench.engine, provider, writeProfile: 'repo-verifier', hostId: 'verifier', clock: fixedClock(),
    });
    return { bench, owner, existing, provider, verifier };
  };

  // A current store that contradicts the owner's fact is kept as an UNRESOLVED Candidate: measure that form.
  const probeSide = await open('probe.sqlite3');
  const probe = await store(probeSide.verifier, currentRequest({ ...large, fact: 'probe' }));
  t.equal(probe.status, 'CONTRADICTION');
  const base = bytes(sortedJson(probe.results[0])) - bytes('"probe"');
  // Five bytes under the budget as a Candidate; as a current record (role, verifier, lifecycle, state) 15 bytes longer.
  const need = 5795 - base - 2;
  const backslashes = Math.max(0, need - 2000);
  const dashes = Math.floor((need - 2 * backslashes) / 3);
  const fact = `${'\\'.repeat(backslashes)}${dash(dashes)}${'a'.repeat(need - 2 * backslashes - 3 * dashes)}`;
  const request = currentRequest({ ...large, fact });
  const asCandidate = await store(probeSide.verifier, { ...request, idempotency_key: 'k-probe-fit' });
  t.equal(asCandidate.status, 'CONTRADICTION', 'with the conflict in place the record fits as a Candidate');
  t.equal(bytes(sortedJson(asCandidate.results[0])), 5795);

  // The race: the pre-check sees the conflict; the owner replaces its fact under another subject before the lock.
  const side = await open('race.sqlite3');
  side.provider.hook = () => update(side.owner, replaceRequest(side.existing, {
    fact: 'The runtime is Deno 2', subject: 'runtime',
  }));
  const error = await side.verifier.execute('memory_store', request).then(() => undefined, (caught: unknown) => caught);
  t.match(error, { code: 'INVALID_ENVELOPE', message: /5800 bytes/ },
    'measured again as the current record it would now be');
  t.equal(side.provider.hook, null, 'the race ran');
  const facts = withRaw(side.bench.dbPath,
    (db) => (db.prepare('SELECT fact FROM adapter_records').all() as { fact: string }[]).map((row) => row.fact));
  t.notOk(facts.includes(fact), 'nothing of the refused store was written');
  t.strictSame(facts.sort(), ['The build uses Node 20', 'The runtime is Deno 2'],
    'only the owner\'s two records exist');
});
