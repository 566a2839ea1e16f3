import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MemoryAdapter } from '../../src/adapter/memory-adapter.js';
import { call, connectClient, sortedJson, textOf } from '../helpers/mcp.js';
import {
  HASH_A, HASH_B, HIDDEN_KEYS, NOW, PUBLIC_RECORD_KEYS, currentRequest, derivedRows, diskState, liveCounts, memoryRows,
  openWriteBench, provenance, refused, replaceRequest, reverifyRequest, store, storeRequest, update, type Json,
  type WriteBench,
  RacingProvider, fixedClock,
} from '../helpers/writes.js';

// memory_update through MemoryAdapter (CONTRACT.md §5.4, §8.3, §13.1, §13.3, §13.4): REVERIFY, Candidate
// promotion, REPLACE, CAS, replay; a fresh local-hash-384 database per test, a few cases over MCP.

const PROJECT = { scope: 'PROJECT', project_id: 'p1' };
const ENVELOPE_KEYS = [
  'audit', 'budget', 'contradictions', 'degradation', 'memory_needed', 'results', 'scope', 'status',
];

/** Exactly one live record for every memory in the database, and for `memoryId` in particular. */
function assertOneLive(t: Test, bench: WriteBench, memoryId: string): void {
  const live = liveCounts(bench.dbPath);
  t.equal(live[memoryId], 1, 'exactly one live record for the memory');
  t.strictSame(Object.values(live).filter((n) => n !== 1), [], 'no memory has more than one live record');
}

/** A successful write envelope: shape, measured budget, public record without internal columns. */
function assertWriteEnvelope(t: Test, envelope: Json, status = 'OK'): Json {
  t.equal(envelope.status, status);
  t.strictSame(Object.keys(envelope).sort(), ENVELOPE_KEYS);
  t.equal(envelope.results.length, 1);
  t.equal(envelope.audit.operation, 'memory_update');
  const text = sortedJson(envelope.results);
  t.strictSame(envelope.budget, {
    requested_top_k: null, returned: 1, serialized_bytes: Buffer.byteLength(text),
    serialized_tokens: encode(text).length, truncated: false,
  });
  const record = envelope.results[0];
  t.strictSame(Object.keys(record).sort(), PUBLIC_RECORD_KEYS);
  for (const key of HIDDEN_KEYS) t.notOk(text.includes(`"${key}"`), `no ${key}`);
  return record;
}

async function current(adapter: MemoryAdapter, fields: Json = {}): Promise<Json> {
  const envelope = await store(adapter, currentRequest({ ...PROJECT, ...fields }));
  if (envelope.status !== 'OK') throw new Error(`setup store: ${envelope.status}`);
  return envelope.results[0];
}

async function candidate(adapter: MemoryAdapter, fields: Json = {}): Promise<Json> {
  const envelope = await store(adapter, storeRequest({ ...PROJECT, ...fields }));
  if (envelope.status !== 'OK') throw new Error(`setup store: ${envelope.status}`);
  return envelope.results[0];
}

t.test('REVERIFY of a current record by another host: same memory, revision + 1, origin kept, predecessor SUPERSEDED',
  async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current', { hostId: 'host-a' });
  const verifier = bench.adapter('repo-verifier', { hostId: 'host-b' });
  const original = await current(owner, {
    fact: 'The build uses Node 20', tags: ['runtime'], confidence: 0.6,
    freshness_policy: { kind: 'ttl', ttl_seconds: 86400 }, last_verified_at: '2026-11-30T09:00:00Z',
  });

  const before = bench.state();
  const envelope = await update(verifier, reverifyRequest(original, { request_id: 'rv-1' }));
  const record = assertWriteEnvelope(t, envelope);
  t.match(envelope.audit,
    { request_id: 'rv-1', operation: 'memory_update', local_embedding_calls: 1, public_contract_revision: 2 });
  t.strictSame(envelope.scope, original.scope);
  t.strictSame(envelope.contradictions, []);
  t.not(record.record_id, original.record_id, 'a new record');
  t.strictSame(record, {
    ...original, record_id: record.record_id, revision: 2, parent_record_id: original.record_id, supersedes: [],
    created_at: NOW, last_verified_at: NOW, verified_by: 'CURRENT_REPO_CHECK',
    contribution_origin: { contributor_class: 'OWNER', contributor_ref: 'host-a' }, contradiction_state: 'NONE',
  }, 'everything else kept from the predecessor; last_verified_at defaults to now');

  const after = bench.state();
  t.strictSame([after.records, after.fts, after.vec], [before.records + 1, before.fts + 1, before.vec + 1],
    'successor, FTS row and vector written');
  t.equal(after.lifecycles[original.record_id], 'SUPERSEDED', 'the predecessor is SUPERSEDED');
  t.equal(after.lifecycles[record.record_id], 'VALIDATED_CURRENT');
  t.equal(derivedRows(bench.dbPath, original.record_id).isCurrent, 0, 'the predecessor vector is no longer current');
  t.equal(derivedRows(bench.dbPath, record.record_id).isCurrent, 1, 'the successor vector is current');
  assertOneLive(t, bench, original.memory_id);

  // Payload values replace the predecessor's; the origin is still the creating launcher.
  const restated = await update(owner, reverifyRequest(record, {
    verification: {
      last_verified_at: '2026-11-30 11:59:00+02:00', source_timestamp: '2026-11-29T00:00:00Z',
      source_provenance: provenance({ source_hash: HASH_B.toUpperCase() }),
      freshness_policy: { kind: 'manual', recheck_ref: 'ci/node' }, confidence: 0.9, tags: ['runtime', 'checked'],
      memory_type: 'USER_FACT', verified_by: 'OWNER',
    },
  }));
  const third = assertWriteEnvelope(t, restated);
  t.match(third, {
    memory_id: original.memory_id, revision: 3, parent_record_id: record.record_id, verified_by: 'OWNER',
    last_verified_at: '2026-11-30T09:59:00Z', source_timestamp: '2026-11-29T00:00:00Z',
    source_provenance: { source_hash: HASH_B },
    freshness_policy: { kind: 'manual', recheck_ref: 'ci/node', ttl_seconds: null }, confidence: 0.9,
    tags: ['runtime', 'checked'], contribution_origin: { contributor_class: 'OWNER', contributor_ref: 'host-a' },
    fact: 'The build uses Node 20',
  });
  t.equal(bench.state().lifecycles[record.record_id], 'SUPERSEDED');
  assertOneLive(t, bench, original.memory_id);
  t.strictSame(memoryRows(bench.dbPath, original.memory_id).map((r) => [r.revision, r.lifecycle_state]),
    [[1, 'SUPERSEDED'], [2, 'SUPERSEDED'], [3, 'VALIDATED_CURRENT']]);
});

t.test('Candidate promotion: expected_record_id required and matching, delegated origin kept', async (t) => {
  const bench = await openWriteBench(t);
  const delegated = bench.adapter('delegated-candidate', { hostId: 'agent-host' });
  const owner = bench.adapter('owner-current', { hostId: 'owner-host' });
  const cand = await candidate(delegated, { fact: 'Tests use tap 21' });
  const timestamp = { source_timestamp: '2026-11-28T00:00:00Z' };

  await refused(t, bench, () => update(owner, reverifyRequest(cand, { verification: timestamp })), 'INVALID_ENVELOPE',
    /expected_record_id/, 'promotion without expected_record_id');
  await refused(t, bench,
    () => update(owner, reverifyRequest(cand, { verification: timestamp, expected_record_id: null })),
    'INVALID_ENVELOPE', /expected_record_id/, 'null expected_record_id');
  await refused(t, bench,
    () => update(owner, reverifyRequest(cand, { verification: timestamp, expected_record_id: 'not-a-uuid' })),
    'INVALID_ENVELOPE', /expected_record_id/, 'malformed expected_record_id');
  await refused(t, bench,
    () => update(owner, reverifyRequest(cand, { verification: timestamp, expected_record_id: randomUUID() })),
    'VERSION_CONFLICT', /expected_record_id/, 'wrong expected_record_id');
  await refused(t, bench, () => update(owner, reverifyRequest(cand, {
    verification: timestamp, expected_record_id: cand.record_id, expected_revision: 2,
  })), 'VERSION_CONFLICT', /expected_revision/, 'stale expected_revision');
  await refused(t, bench, () => update(owner, reverifyRequest(cand, { expected_record_id: cand.record_id })),
    'PROVENANCE_REQUIRED', /source_timestamp/, 'the Candidate has no source_timestamp');
  await refused(t, bench, () => update(owner, reverifyRequest(cand, {
    expected_record_id: cand.record_id,
    verification: {
      ...timestamp, freshness_policy: { kind: 'ttl', ttl_seconds: 60 }, last_verified_at: '2026-11-30T09:58:59Z',
    },
  })), 'UNVERIFIED_CURRENT', undefined, 'stale at admission');
  await refused(t, bench, () => update(owner, reverifyRequest(cand, {
    expected_record_id: cand.record_id, verification: { ...timestamp, verified_by: 'AUTOMATED_CHECK' },
  })), 'WRITE_AUTHORIZATION_DENIED', undefined, 'claiming another basis');
  t.equal(bench.state().lifecycles[cand.record_id], 'CANDIDATE', 'still a Candidate');

  const before = bench.state();
  const envelope = await update(owner, reverifyRequest(cand, {
    expected_record_id: cand.record_id.toUpperCase(), verification: { ...timestamp, verified_by: 'OWNER' },
  }));
  const record = assertWriteEnvelope(t, envelope);
  t.match(record, {
    memory_id: cand.memory_id, revision: 2, parent_record_id: cand.record_id, supersedes: [],
    lifecycle_state: 'VALIDATED_CURRENT', authority_role: 'PROJECT_CURRENT', verified_by: 'OWNER',
    contribution_origin: { contributor_class: 'DELEGATED_AGENT', contributor_ref: 'agent-host' },
    contradiction_state: 'NONE',
    source_timestamp: '2026-11-28T00:00:00Z', last_verified_at: NOW, fact: 'Tests use tap 21',
  });
  const after = bench.state();
  t.strictSame([after.records, after.fts, after.vec], [before.records + 1, before.fts + 1, before.vec + 1]);
  t.equal(after.lifecycles[cand.record_id], 'SUPERSEDED');
  t.equal(derivedRows(bench.dbPath, cand.record_id).isCurrent, 0);
  t.equal(derivedRows(bench.dbPath, record.record_id).isCurrent, 1);
  assertOneLive(t, bench, cand.memory_id);

  // A Candidate that already carries source_timestamp is promoted without a payload.
  const stamped = await candidate(delegated, { fact: 'Lint with eslint', source_timestamp: '2026-11-01T00:00:00Z' });
  const promoted = await update(bench.adapter('automated-verifier', { hostId: 'bot' }),
    reverifyRequest(stamped, { expected_record_id: stamped.record_id }));
  t.match(assertWriteEnvelope(t, promoted), {
    verified_by: 'AUTOMATED_CHECK', source_timestamp: '2026-11-01T00:00:00Z',
    contribution_origin: { contributor_class: 'DELEGATED_AGENT', contributor_ref: 'agent-host' },
  });
  assertOneLive(t, bench, stamped.memory_id);
  await refused(t, bench,
    () => update(owner, reverifyRequest(promoted.results[0], { expected_record_id: randomUUID() })), 'VERSION_CONFLICT',
    /expected_record_id/, 'a given expected_record_id must match a current record too');
});

t.test('promotion of a Candidate in UNRESOLVED contradiction is CONTRADICTION', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  const node20 = await current(owner, { fact: 'The build uses Node 20', subject: 'node version' });
  const conflict = await store(bench.adapter('delegated-candidate'),
    storeRequest({ ...PROJECT, fact: 'The build uses Node 22', subject: 'node version' }));
  t.equal(conflict.status, 'CONTRADICTION');
  const cand = conflict.results[0];
  await refused(t, bench, () => update(owner, reverifyRequest(cand, {
    expected_record_id: cand.record_id, verification: { source_timestamp: NOW },
  })), 'CONTRADICTION',
    /was stored as a contradiction and is never promoted; to make its fact current, REPLACE the current memory it /,
    'UNRESOLVED Candidate');
  // The advice works: storing the fact again is a DUPLICATE of the Candidate; a REPLACE of the current memory with it
  // makes it current.
  const again = await store(owner, currentRequest({ ...PROJECT, fact: cand.fact, subject: 'node version' }));
  t.match(again, { status: 'DUPLICATE', results: [{ memory_id: cand.memory_id }] }, 'storing it again is no way out');
  const replaced = await update(owner, replaceRequest(node20, { fact: cand.fact, subject: 'node version' }));
  t.match(replaced, { status: 'OK', results: [{ fact: cand.fact, lifecycle_state: 'VALIDATED_CURRENT' }] });
});

t.test('an update that would leave two current records with one key and different facts is CONTRADICTION',
  async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  // The Candidate is stored first, so it is not in contradiction; the current fact arrives later.
  const cand = await candidate(bench.adapter('delegated-candidate'),
    { fact: 'The build uses Node 22', subject: 'node version', source_timestamp: NOW });
  const node20 = await current(owner, { fact: 'The build uses Node 20', subject: 'node version' });
  t.equal(bench.state().lifecycles[cand.record_id], 'CANDIDATE');
  // A Candidate keeps its subject: the message names the one way that works, a REPLACE of the other memory.
  await refused(t, bench, () => update(owner, reverifyRequest(cand, { expected_record_id: cand.record_id })),
    'CONTRADICTION', 'so this Candidate cannot be promoted: find that memory with memory_search and REPLACE it with '
      + 'this fact', 'promotion against another current fact');

  const shell = await current(owner, { fact: 'The shell is zsh', subject: 'shell' });
  await refused(t, bench,
    () => update(owner, replaceRequest(shell, { fact: 'The build uses Node 18', subject: 'NODE version' })),
    'CONTRADICTION', /REPLACE that memory instead, or give this fact another replacement.subject$/,
    'REPLACE onto the key of another current fact');
  await refused(t, bench,
    () => update(owner, replaceRequest(shell, { fact: 'The build uses Node 18', tags: ['subject: node version'] })),
    'CONTRADICTION', undefined, 'REPLACE onto that key through a subject: tag');
  const ok = await update(owner, replaceRequest(shell, { fact: 'The shell is fish', subject: 'shell' }));
  t.equal(ok.status, 'OK', 'replacing the fact of its own key is not a contradiction');
  assertOneLive(t, bench, ok.results[0].memory_id);
  const followed = await update(owner, replaceRequest(node20, { fact: cand.fact, subject: 'node version' }));
  t.match(followed, { status: 'OK', results: [{ fact: cand.fact, lifecycle_state: 'VALIDATED_CURRENT' }] },
    'the promotion message followed: its fact is current');
});

t.test('ALREADY_CURRENT: promotion finds an equivalent current fact, writes nothing, leaves the key unused',
  async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  const cand = await candidate(bench.adapter('delegated-candidate', { hostId: 'agent-host' }),
    { fact: 'The build uses Node 22', subject: 'node version' });
  const old = await current(owner, { fact: 'The build uses Node 20', subject: 'node version' });
  // REPLACE makes the Candidate's fact current under the same key (same scope, fact folding alike).
  const replaced = await update(owner,
    replaceRequest(old, { fact: 'the build uses NODE 22', subject: 'node version' }));
  t.equal(replaced.status, 'OK');
  const equivalent = replaced.results[0];

  const before = bench.state();
  const answer = await update(owner, reverifyRequest(cand, {
    expected_record_id: cand.record_id, idempotency_key: 'ac-key', verification: { source_timestamp: NOW },
  }));
  t.equal(answer.status, 'ALREADY_CURRENT');
  t.strictSame(answer.results, [equivalent], 'the equivalent current record, as it is');
  t.strictSame(answer.contradictions, []);
  t.equal(answer.audit.local_embedding_calls, 0);
  t.notOk('idempotent_replay' in answer);
  t.strictSame(Object.keys(answer).sort(), ENVELOPE_KEYS);
  const text = sortedJson(answer.results);
  t.strictSame(answer.budget, {
    requested_top_k: null, returned: 1, serialized_bytes: Buffer.byteLength(text),
    serialized_tokens: encode(text).length, truncated: false,
  });
  t.strictSame(bench.state(), before, 'nothing written; the Candidate is untouched');

  const reuse = await update(owner, reverifyRequest(equivalent, { idempotency_key: 'ac-key' }));
  t.equal(reuse.status, 'OK', 'the key of ALREADY_CURRENT stays unused');
  t.notOk(reuse.idempotent_replay);
  t.equal(reuse.results[0].revision, 2);
  assertOneLive(t, bench, equivalent.memory_id);
});

t.test('REPLACE: a new memory superseding the old, RESOLVED, origin of the replacing launcher', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current', { hostId: 'host-a' });
  const verifier = bench.adapter('repo-verifier', { hostId: 'host-b' });
  const old = await current(owner, {
    fact: 'The build uses Node 20', memory_type: 'PROJECT_LEARNED_FACT', tags: ['runtime'], confidence: 0.7,
    subject: 'node version',
  });
  const conflict = await store(bench.adapter('delegated-candidate'), storeRequest({
    ...PROJECT, fact: 'The build uses Node 22', memory_type: 'PROJECT_LEARNED_FACT', subject: 'node version',
  }));
  t.equal(conflict.contradictions.length, 1, 'a live contradiction before the REPLACE');

  const before = bench.state();
  const envelope = await update(verifier, replaceRequest(old, {
    fact: '  The build uses   Node 22 ', source_timestamp: '2026-11-20T01:00:00+01:00', subject: 'node version',
  }));
  const record = assertWriteEnvelope(t, envelope);
  t.not(record.memory_id, old.memory_id, 'a new memory_id');
  t.strictSame(record, {
    memory_id: record.memory_id, record_id: record.record_id, revision: 1, parent_record_id: old.record_id,
    scope: old.scope, memory_type: 'PROJECT_LEARNED_FACT', fact: 'The build uses Node 22',
    source_provenance: { ...provenance({ source_hash: HASH_B }), source_fingerprint: null },
    source_timestamp: '2026-11-20T00:00:00Z', created_at: NOW, last_verified_at: NOW, verified_by: 'CURRENT_REPO_CHECK',
    authority_role: 'PROJECT_CURRENT',
    contribution_origin: { contributor_class: 'AUTOMATION', contributor_ref: 'host-b' },
    freshness_policy: { kind: 'never', recheck_ref: null, source_fingerprint: null, ttl_seconds: null },
    supersedes: [old.memory_id], contradiction_state: 'RESOLVED', confidence: 0.7, tags: ['runtime'],
    lifecycle_state: 'VALIDATED_CURRENT', relevance_score: null, retrieval_rank: null,
  }, 'memory_type, confidence and tags from the old record; the rest from the payload');
  t.strictSame(envelope.contradictions, [], 'the Candidate no longer conflicts with the current fact');
  const after = bench.state();
  t.strictSame([after.records, after.fts, after.vec], [before.records + 1, before.fts + 1, before.vec + 1]);
  t.equal(after.lifecycles[old.record_id], 'SUPERSEDED');
  t.equal(derivedRows(bench.dbPath, old.record_id).isCurrent, 0);
  t.equal(derivedRows(bench.dbPath, record.record_id).isCurrent, 1);
  t.equal(derivedRows(bench.dbPath, record.record_id).searchText, 'the build uses node 22');
  t.equal(liveCounts(bench.dbPath)[old.memory_id], undefined, 'the old memory has no live record');
  assertOneLive(t, bench, record.memory_id);

  // The replaced memory exists in the scope only as a superseded record: a stale writer.
  await refused(t, bench, () => update(owner, reverifyRequest(old)), 'VERSION_CONFLICT', /no live record/,
    'REVERIFY of the replaced memory');
  await refused(t, bench, () => update(owner, replaceRequest(old, { fact: 'The build uses Node 23' })),
    'VERSION_CONFLICT',
    /cannot be updated: a REPLACE superseded it \(the replacing record, a new memory, lists this memory_id in supersedes\) or it was compacted; a retry of your own REPLACE with its idempotency_key returns that answer$/,
    'REPLACE of the replaced memory: where the fact went, and how a retry gets its answer');

  // REPLACE may reclassify and restate everything.
  const reclassified = await update(owner, replaceRequest(record, {
    fact: 'Node 22 was chosen for its LTS window', memory_type: 'DECISION_RATIONALE', tags: ['why'], confidence: 0.2,
    last_verified_at: '2026-11-30T08:00:00Z',
  }));
  t.match(assertWriteEnvelope(t, reclassified), {
    memory_type: 'DECISION_RATIONALE', tags: ['why'], confidence: 0.2, last_verified_at: '2026-11-30T08:00:00Z',
    supersedes: [record.memory_id], parent_record_id: record.record_id,
    contribution_origin: { contributor_class: 'OWNER', contributor_ref: 'host-a' }, verified_by: 'OWNER',
  });
  assertOneLive(t, bench, reclassified.results[0].memory_id);
  await refused(t, bench, () => update(owner, replaceRequest(reclassified.results[0], {
    fact: 'stale replacement', freshness_policy: { kind: 'ttl', ttl_seconds: 60 },
    last_verified_at: '2026-11-30T09:00:00Z',
  })), 'UNVERIFIED_CURRENT', undefined, 'a stale successor');
  await refused(t, bench, () => update(owner, replaceRequest(reclassified.results[0], { fact: 'é'.repeat(1000) })),
    'INVALID_ENVELOPE', /1150 tokens/, 'a successor over the record budget');
});

t.test('REPLACE: Candidates, missing fields, payload of the other mode', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  const cand = await candidate(bench.adapter('delegated-candidate'), { fact: 'A candidate fact' });
  await refused(t, bench, () => update(owner, replaceRequest(cand)), 'CANDIDATE_REPLACE_DENIED');
  await refused(t, bench, () => update(owner, replaceRequest(cand, {}, { expected_record_id: cand.record_id })),
    'CANDIDATE_REPLACE_DENIED', undefined, 'even with expected_record_id');

  const live = await current(owner, { fact: 'A current fact' });
  const base = replaceRequest(live);
  const all = [
    'replacement.fact', 'replacement.source_provenance', 'replacement.freshness_policy', 'replacement.source_timestamp',
  ];
  for (const [name, replacement] of [
    ['no replacement', undefined], ['null replacement', null], ['empty replacement', {}],
  ] as const) {
    const error = await refused(t, bench, () => update(owner, { ...base, replacement }), 'INVALID_ENVELOPE', undefined,
      name);
    for (const field of all) t.match(error?.message, field, `${name}: names ${field}`);
  }
  const partial = await refused(t, bench,
    () => update(owner, { ...base, replacement: { fact: 'only a fact', source_timestamp: null } }), 'INVALID_ENVELOPE');
  t.notMatch(partial?.message, 'replacement.fact', 'a stated field is not named');
  for (const field of all.slice(1)) t.match(partial?.message, field, `names ${field} (null is missing)`);

  await refused(t, bench, () => update(owner, { ...base, verification: { confidence: 0.5 } }), 'INVALID_ENVELOPE',
    /verification/, 'REPLACE with a verification');
  await refused(t, bench, () => update(owner, { ...reverifyRequest(live), replacement: base.replacement }),
    'INVALID_ENVELOPE', /replacement/, 'REVERIFY with a replacement');
  await refused(t, bench, () => update(owner, { ...reverifyRequest(live), replacement: {} }), 'INVALID_ENVELOPE',
    /replacement/, 'REVERIFY with an empty replacement');
  await refused(t, bench, () => update(owner, { ...reverifyRequest(live), verification: [] }), 'INVALID_ENVELOPE',
    /verification/, 'verification not an object');
  await refused(t, bench, () => update(owner, { ...reverifyRequest(live), verification: { fact: 'changed' } }),
    'INVALID_ENVELOPE', /fact/, 'REVERIFY cannot restate the fact');
  await refused(t, bench, () => update(owner, reverifyRequest(live, { mode: 'RESET' })), 'INVALID_ENUM',
    'REPLACE, REVERIFY', 'unknown mode lists both');
});

t.test('REVERIFY identity guards: memory_type, subject and the subject: tag cannot change', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  const bySubject = await current(owner, { fact: 'The build uses Node 20', subject: 'node version' });
  await refused(t, bench,
    () => update(owner, reverifyRequest(bySubject, { verification: { memory_type: 'PREFERENCE' } })),
    'INVALID_ENVELOPE', /memory_type/, 'memory_type change');
  await refused(t, bench, () => update(owner, reverifyRequest(bySubject, { verification: { subject: 'os version' } })),
    'INVALID_ENVELOPE', /subject/, 'subject change');
  await refused(t, bench,
    () => update(owner, reverifyRequest(bySubject, { verification: { tags: ['subject: node version'] } })),
    'INVALID_ENVELOPE', /subject: tag/, 'adding a subject: tag');
  const same = await update(owner, reverifyRequest(bySubject, {
    verification: { memory_type: 'USER_FACT', subject: '  NODE   Version', tags: ['plain'] },
  }));
  t.equal(same.status, 'OK', 'restating the same memory_type and subject (folded) is allowed');
  t.strictSame(same.results[0].tags, ['plain']);
  assertOneLive(t, bench, bySubject.memory_id);

  const byTag = await current(owner, { fact: 'Editor is vim', tags: ['subject: editor', 'tools'] });
  await refused(t, bench,
    () => update(owner, reverifyRequest(byTag, { verification: { tags: ['subject: shell', 'tools'] } })),
    'INVALID_ENVELOPE', /subject/, 'another subject: tag');
  await refused(t, bench, () => update(owner, reverifyRequest(byTag, { verification: { tags: ['tools'] } })),
    'INVALID_ENVELOPE', /subject/, 'dropping the subject: tag');
  const kept = await update(owner, reverifyRequest(byTag, { verification: { tags: ['new', 'SUBJECT:EDITOR'] } }));
  t.equal(kept.status, 'OK', 'the same first subject: value, folded');
  t.strictSame(kept.results[0].tags, ['new', 'SUBJECT:EDITOR']);
  assertOneLive(t, bench, byTag.memory_id);

  const plain = await current(owner, { fact: 'Lint runs in CI', tags: ['ci'] });
  t.equal((await update(owner, reverifyRequest(plain, { verification: { tags: ['ci', 'lint'] } }))).status, 'OK',
    'both absent is equal');
  t.equal((await update(owner, reverifyRequest(plain, { expected_revision: 2, verification: { subject: '' } }))).status,
    'OK', '"" is no subject');
  assertOneLive(t, bench, plain.memory_id);
});

t.test('target lookup: NOT_FOUND, CROSS_SCOPE_DENIED, malformed ids, stale revision', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  const live = await current(owner, { fact: 'Scoped fact' });
  await refused(t, bench, () => update(owner, { ...reverifyRequest(live), memory_id: randomUUID() }), 'NOT_FOUND');
  for (const scope of [
    { scope: 'PROJECT', project_id: 'p2' }, { ...PROJECT, agent_id: 'codex' }, { ...PROJECT, worktree_id: 'wt' },
    { scope: 'GLOBAL_USER' },
  ]) {
    const request = { ...reverifyRequest(live), project_id: undefined, ...scope };
    await refused(t, bench, () => update(owner, request), 'CROSS_SCOPE_DENIED', undefined,
      `from ${JSON.stringify(scope)}`);
  }
  for (const bad of ['not-a-uuid', `${live.memory_id}0`, '']) {
    await refused(t, bench, () => update(owner, { ...reverifyRequest(live), memory_id: bad }), 'INVALID_ENVELOPE',
      /memory_id/, `memory_id ${JSON.stringify(bad)}`);
  }
  await refused(t, bench, () => update(owner, reverifyRequest(live, { expected_revision: 2 })), 'VERSION_CONFLICT',
    /expected_revision/, 'a future revision');
  const ok = await update(owner, { ...reverifyRequest(live), memory_id: live.memory_id.toUpperCase() });
  t.equal(ok.results[0].memory_id, live.memory_id, 'an upper-case memory_id is normalised');
  await refused(t, bench, () => update(owner, reverifyRequest(live)), 'VERSION_CONFLICT',
    /expected_revision is not the live record's revision; read the memory again with memory_get retrieval_mode REV/,
    'revision 1 is stale now');
  // What the message says to do works: REVIEW_HISTORY lists the live record first, with the revision to send.
  const history = (await owner.execute('memory_get',
    { ...PROJECT, memory_id: live.memory_id, retrieval_mode: 'REVIEW_HISTORY' })) as Json;
  t.match(history.results[0], { revision: 2, lifecycle_state: 'VALIDATED_CURRENT' });
  t.equal((await update(owner, reverifyRequest(history.results[0]))).status, 'OK', 'the retry with it is written');
  assertOneLive(t, bench, live.memory_id);
});

t.test('a replay found under the lock counts the embedding call the update made before it (audit)', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current', { hostId: 'host-a' });
  const provider = new RacingProvider();
  const racer = new MemoryAdapter({
    engine: bench.engine, provider, writeProfile: 'owner-current', hostId: 'host-a', clock: fixedClock(),
  });
  const live = await current(owner, { fact: 'Raced fact', idempotency_key: 'raced-store' });
  const request = reverifyRequest(live, { idempotency_key: 'raced-update', verification: { confidence: 0.8 } });
  provider.hook = () => update(owner, request);
  const replay = await update(racer, request);
  t.equal(provider.hook, null, 'the race ran');
  t.match(replay, { status: 'OK', idempotent_replay: true, audit: { local_embedding_calls: 1 } });
  assertOneLive(t, bench, live.memory_id);
});

t.test('replay and IDEMPOTENCY_CONFLICT', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current', { hostId: 'host-a' });
  const live = await current(owner, { fact: 'Replayed fact', idempotency_key: 'store-key' });
  const request = reverifyRequest(live, { idempotency_key: 'update-key', verification: { confidence: 0.8 } });
  const first = await update(owner, request);
  t.equal(first.status, 'OK');
  assertOneLive(t, bench, live.memory_id);

  const before = bench.state();
  const replay = await update(owner, { ...request, request_id: 'again' });
  t.equal(replay.status, 'OK');
  t.equal(replay.idempotent_replay, true);
  t.strictSame(replay.results, first.results,
    'the record the key created (expected_revision is stale, it does not matter)');
  t.strictSame(replay.contradictions, []);
  t.equal(replay.audit.local_embedding_calls, 0);
  t.equal(replay.audit.request_id, 'again');
  t.strictSame(bench.state(), before, 'a replay writes nothing');

  await refused(t, bench, () => update(owner, { ...request, verification: { confidence: 0.9 } }),
    'IDEMPOTENCY_CONFLICT', undefined, 'another payload');
  await refused(t, bench, () => update(owner, { ...request, expected_revision: 2 }), 'IDEMPOTENCY_CONFLICT', undefined,
    'another expected_revision');
  await refused(t, bench, () => update(bench.adapter('owner-current', { hostId: 'host-b' }), request),
    'IDEMPOTENCY_CONFLICT', undefined, 'same body through another --host-id');
  await refused(t, bench, () => update(bench.adapter('automated-verifier', { hostId: 'host-a' }), request),
    'IDEMPOTENCY_CONFLICT', undefined, 'same body under another basis');
  await refused(t, bench, () => update(owner, reverifyRequest(first.results[0], { idempotency_key: 'store-key' })),
    'IDEMPOTENCY_CONFLICT', undefined, 'a store key reused for an update');
  await refused(t, bench,
    () => store(owner, currentRequest({ ...PROJECT, fact: 'Another fact', idempotency_key: 'update-key' })),
    'IDEMPOTENCY_CONFLICT', undefined, 'an update key reused for a store');
  await refused(t, bench, () => update(bench.adapter('delegated-candidate', { hostId: 'host-a' }), request),
    'WRITE_AUTHORIZATION_DENIED', undefined, 'authorization precedes the replay');

  // After a later revision the replay returns the record as it is now: SUPERSEDED.
  const next = await update(owner, reverifyRequest(first.results[0]));
  t.equal(next.results[0].revision, 3);
  const late = await update(owner, request);
  t.equal(late.idempotent_replay, true);
  t.equal(late.results[0].record_id, first.results[0].record_id);
  t.equal(late.results[0].lifecycle_state, 'SUPERSEDED', 'as it is now');
  assertOneLive(t, bench, live.memory_id);
});

t.test('authorization: delegated and read-only launchers cannot update; the basis is injected', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  const live = await current(owner, { fact: 'Authorised fact' });
  await refused(t, bench, () => update(bench.adapter('delegated-candidate'), reverifyRequest(live)),
    'WRITE_AUTHORIZATION_DENIED', /delegated-candidate/, 'delegated-candidate');
  await refused(t, bench, () => update(bench.adapter('read-only'), reverifyRequest(live)), 'WRITE_AUTHORIZATION_DENIED',
    /read-only/, 'read-only');
  await refused(t, bench,
    () => update(bench.adapter('delegated-candidate'), { ...reverifyRequest(live), memory_id: 'junk' }),
    'WRITE_AUTHORIZATION_DENIED', undefined, 'before the memory_id check');
  await refused(t, bench,
    () => update(owner, reverifyRequest(live, { verification: { verified_by: 'CURRENT_REPO_CHECK' } })),
    'WRITE_AUTHORIZATION_DENIED', undefined, 'another basis in verification');
  await refused(t, bench, () => update(owner, reverifyRequest(live, { verification: { verified_by: 'UNVERIFIED' } })),
    'WRITE_AUTHORIZATION_DENIED', undefined, 'UNVERIFIED in verification');
  await refused(t, bench, () => update(owner, replaceRequest(live, { verified_by: 'AUTOMATED_CHECK' })),
    'WRITE_AUTHORIZATION_DENIED', undefined, 'another basis in replacement');
  await refused(t, bench,
    () => update(owner, reverifyRequest(live, { verification: { source_provenance: provenance({ grant_ref: 'x' }) } })),
    'WRITE_AUTHORIZATION_DENIED', /trusted or derived authority/, 'a nested trust claim');
  const ok = await update(owner, reverifyRequest(live, { verification: { verified_by: 'OWNER' } }));
  t.equal(ok.results[0].verified_by, 'OWNER');
  assertOneLive(t, bench, live.memory_id);
});

t.test('freshness rules on the merged successor: on_change and CROSS_PROJECT_WORKFLOW', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  const watched = await current(owner,
    { fact: 'Watched fact', freshness_policy: { kind: 'on_change', recheck_ref: 'ci', source_fingerprint: HASH_A } });
  await refused(t, bench, () => update(owner, reverifyRequest(watched, {
    verification: { source_provenance: provenance({ source_hash: HASH_B }) },
  })), 'INVALID_FRESHNESS', undefined, 'a new source hash against the kept on_change fingerprint');
  await refused(t, bench, () => update(owner, reverifyRequest(watched, {
    verification: { freshness_policy: { kind: 'on_change', recheck_ref: 'ci' } },
  })), 'INVALID_FRESHNESS', undefined, 'on_change without a fingerprint');
  const moved = await update(owner, reverifyRequest(watched, {
    verification: {
      source_provenance: provenance({ source_hash: HASH_B }),
      freshness_policy: { kind: 'on_change', recheck_ref: 'ci', source_fingerprint: HASH_B },
    },
  }));
  t.equal(moved.status, 'OK', 'hash and fingerprint move together');
  assertOneLive(t, bench, watched.memory_id);

  const cpw = { scope: 'CROSS_PROJECT_WORKFLOW', memory_type: 'WORKFLOW_RULE' };
  const rule = (await store(owner, currentRequest({ ...cpw, fact: 'Every change gets a review' }))).results[0];
  await refused(t, bench, () => update(owner, replaceRequest(rule, { memory_type: 'USER_FACT' })),
    'SCOPE_TYPE_MISMATCH', undefined, 'REPLACE to a type CROSS_PROJECT_WORKFLOW does not hold');
  await refused(t, bench, () => update(owner, reverifyRequest(rule, {
    verification: { source_provenance: provenance({ source_fingerprint: HASH_A }) },
  })), 'SCOPE_FRESHNESS_MISMATCH');
  await refused(t, bench,
    () => update(owner, reverifyRequest(rule, { verification: { freshness_policy: { kind: 'manual' } } })),
    'INVALID_FRESHNESS', undefined, 'manual without recheck_ref or fingerprint');
  await refused(t, bench, () => update(owner, { ...reverifyRequest(rule), project_id: 'p1' }), 'CROSS_SCOPE_DENIED',
    undefined, 'identity keys in CROSS_PROJECT_WORKFLOW');
  const rv = await update(owner,
    reverifyRequest(rule, { verification: { freshness_policy: { kind: 'manual', recheck_ref: 'docs/review.md' } } }));
  t.match(rv.results[0], {
    authority_role: 'WORKFLOW_CURRENT', revision: 2,
    freshness_policy: { kind: 'manual', recheck_ref: 'docs/review.md' },
  });
  assertOneLive(t, bench, rule.memory_id);
});

// ---- Through the real MCP stack ----

function envelopeOf(t: Test, result: CallToolResult): Json {
  t.notOk(result.isError, 'a governed answer, not isError');
  const text = textOf(result);
  const envelope = JSON.parse(text) as Json;
  t.strictSame(result.structuredContent, envelope);
  t.equal(text, sortedJson(envelope), 'canonical JSON text');
  return envelope;
}

t.test('MCP: a delegated launcher contributes, the owner promotes; BLOCKED outcomes write nothing', async (t) => {
  const dbPath = join(t.testdir(), 'wire.sqlite3');
  const agent = await connectClient(t, dbPath, { writeProfile: 'delegated-candidate', hostId: 'agent-wire' });
  const owner = await connectClient(t, dbPath, { writeProfile: 'owner-current', hostId: 'owner-wire' });
  const stored = envelopeOf(t, await call(agent.client, 'memory_store', {
    request: storeRequest({ ...PROJECT, fact: 'Wire Candidate fact', source_timestamp: '2026-11-01T00:00:00Z' }),
  }));
  t.equal(stored.status, 'OK');
  const cand = stored.results[0];
  t.match(cand, {
    lifecycle_state: 'CANDIDATE',
    contribution_origin: { contributor_class: 'DELEGATED_AGENT', contributor_ref: 'agent-wire' },
  });

  const before = diskState(dbPath);
  const denied = envelopeOf(t, await call(agent.client, 'memory_update', {
    request: reverifyRequest(cand, { expected_record_id: cand.record_id, request_id: 'agent-upd' }),
  }));
  t.strictSame(Object.keys(denied).sort(), ['audit', 'degradation', 'error_code', 'message', 'results', 'status']);
  t.match(denied, {
    status: 'BLOCKED', error_code: 'WRITE_AUTHORIZATION_DENIED',
    audit: { request_id: 'agent-upd', retryable: false, host_binding: { host_id: 'agent-wire' } },
  });
  const missing = envelopeOf(t, await call(owner.client, 'memory_update', { request: reverifyRequest(cand) }));
  t.match(missing, { status: 'BLOCKED', error_code: 'INVALID_ENVELOPE', message: /expected_record_id/ });
  const stale = envelopeOf(t, await call(owner.client, 'memory_update',
    { request: reverifyRequest(cand, { expected_record_id: randomUUID() }) }));
  t.match(stale, { status: 'BLOCKED', error_code: 'VERSION_CONFLICT', results: [] });
  t.strictSame(diskState(dbPath), before, 'the refusals wrote nothing');

  const promoted = envelopeOf(t, await call(owner.client, 'memory_update',
    { request: reverifyRequest(cand, { expected_record_id: cand.record_id }) }));
  t.equal(promoted.status, 'OK');
  t.match(promoted.audit,
    { operation: 'memory_update', local_embedding_calls: 1, host_binding: { host_id: 'owner-wire' } });
  t.match(promoted.results[0], {
    memory_id: cand.memory_id, revision: 2, parent_record_id: cand.record_id, lifecycle_state: 'VALIDATED_CURRENT',
    authority_role: 'PROJECT_CURRENT', verified_by: 'OWNER',
    contribution_origin: { contributor_class: 'DELEGATED_AGENT', contributor_ref: 'agent-wire' },
  });
  const after = diskState(dbPath);
  t.strictSame([after.records, after.fts, after.vec], [before.records + 1, before.fts + 1, before.vec + 1]);
  t.equal(after.lifecycles[cand.record_id], 'SUPERSEDED');
  t.equal(liveCounts(dbPath)[cand.memory_id], 1);
});

t.test('REPLACE: the §4.4 and on_change rules on the merged successor come before the contradiction check',
  async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  await current(owner, { fact: 'The build uses Node 20', subject: 'node version' });
  const shell = await current(owner, { fact: 'The shell is zsh', subject: 'shell' });
  // Contradicts the Node fact AND breaks on_change: the freshness rule decides first (CONTRACT.md §11).
  await refused(t, bench, () => update(owner, replaceRequest(shell, {
    fact: 'The build uses Node 18', subject: 'node version', freshness_policy: { kind: 'on_change', recheck_ref: 'ci' },
  })), 'INVALID_FRESHNESS');
});

t.test('a null or empty replacement subject is absent: the same request without it replays', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  const live = await current(owner, { fact: 'The shell is zsh', subject: 'shell' });
  const request = replaceRequest(live, { fact: 'The shell is fish', subject: null },
    { idempotency_key: 'replace-subject-key' });
  t.equal((await update(owner, request)).status, 'OK');
  const { subject: _subject, ...withoutSubject } = request.replacement;
  const replay = await update(owner, { ...request, replacement: withoutSubject });
  t.equal(replay.idempotent_replay, true, 'no subject key fingerprints like subject: null');
  const replayEmpty = await update(owner, { ...request, replacement: { ...withoutSubject, subject: '' } });
  t.equal(replayEmpty.idempotent_replay, true, 'subject "" fingerprints like absent');
});
