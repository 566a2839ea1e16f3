import t from 'tap';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { assertRecordInvariants } from '../../src/storage/record-invariants.js';
import { findRecord, insertSuccessor } from '../../src/storage/record-repository.js';
import type { NewRecordRow, RecordRow } from '../../src/storage/record-rows.js';
import { candidateRow, openEngine, storeRow, unitVector } from '../helpers/storage.js';

// STORAGE.md §7.3: the storage floor checks every record it inserts, whoever the caller, behind the adapter.

const HASH = 'a'.repeat(64);
const current = (overrides: Partial<NewRecordRow> = {}) => candidateRow({
  lifecycle_state: 'VALIDATED_CURRENT', authority_role: 'OWNER_CURRENT', verified_by: 'OWNER',
  source_timestamp: '2026-11-01T00:00:00Z', last_verified_at: '2026-11-01T00:00:00Z', ...overrides,
});
const stored = (row: NewRecordRow) => ({ ...row, row_id: 1 }) as unknown as RecordRow;
const refused = (row: NewRecordRow, parent: RecordRow | null, code: string, message: RegExp) => {
  t.throws(() => assertRecordInvariants(row, parent), { code, message }, message.source);
};
const provenance = (fingerprint: string | null) => JSON.stringify({ source_class: 'doc', source_ref: 'r',
  source_hash: HASH, review_ref: 'v', extraction_method: 'm', source_fingerprint: fingerprint });
const freshness = (kind: string, recheckRef: string | null, fingerprint: string | null) =>
  JSON.stringify({ kind, recheck_ref: recheckRef, source_fingerprint: fingerprint, ttl_seconds: null });
const workflowRule = (overrides: Partial<NewRecordRow> = {}) => current({
  scope: 'CROSS_PROJECT_WORKFLOW', authority_role: 'WORKFLOW_CURRENT', memory_type: 'WORKFLOW_RULE',
  source_provenance: provenance(null), freshness_policy: freshness('manual', 'docs/review.md', null), ...overrides,
});

t.test('current and Candidate metadata', async () => {
  assertRecordInvariants(current(), null);
  assertRecordInvariants(candidateRow(), null);
  const shape = /^record rejected by storage validation: /;
  refused(current({ authority_role: 'PROJECT_CURRENT' }), null, 'INVALID_ENVELOPE', /its scope's authority role/);
  refused(current({ verified_by: 'UNVERIFIED' }), null, 'INVALID_ENVELOPE', /needs a verifier/);
  refused(current({ source_timestamp: null }), null, 'INVALID_ENVELOPE', /both timestamps/);
  refused(current({ last_verified_at: null }), null, 'INVALID_ENVELOPE', /both timestamps/);
  refused(current({ contradiction_state: 'UNRESOLVED' }), null, 'INVALID_ENVELOPE', /cannot be in contradiction/);
  refused(candidateRow({ verified_by: 'OWNER' }), null, 'INVALID_ENVELOPE', /UNRESOLVED and UNVERIFIED/);
  refused(candidateRow({ authority_role: 'OWNER_CURRENT' }), null, 'INVALID_ENVELOPE', /UNRESOLVED and UNVERIFIED/);
  for (const state of ['SUPERSEDED', 'HISTORICAL', 'QUARANTINED']) {
    refused(candidateRow({ lifecycle_state: state as NewRecordRow['lifecycle_state'] }), null, 'INVALID_ENVELOPE',
      /only live records are inserted/);
  }
  t.throws(() => assertRecordInvariants(current({ verified_by: 'UNVERIFIED' }), null), { message: shape });
});

t.test('roots and successors', async () => {
  refused(candidateRow({ revision: 2 }), null, 'INVALID_ENVELOPE', /a root is revision 1/);
  refused(candidateRow({ parent_record_id: randomUUID() }), null, 'INVALID_ENVELOPE', /a root is revision 1/);
  refused(candidateRow({ supersedes: JSON.stringify([randomUUID()]) }), null, 'INVALID_ENVELOPE',
    /a root is revision 1/);
  const parent = stored(current());
  const next = (overrides: Partial<NewRecordRow> = {}) => current({ memory_id: parent.memory_id, revision: 2,
    parent_record_id: parent.record_id, ...overrides });
  assertRecordInvariants(next(), parent);
  const replacing = current({ parent_record_id: parent.record_id, supersedes: JSON.stringify([parent.memory_id]) });
  assertRecordInvariants(replacing, parent);
  refused(next({ parent_record_id: randomUUID() }), parent, 'INVALID_ENVELOPE', /must name the predecessor/);
  refused(next({ scope: 'PROJECT', project_id: 'p', authority_role: 'PROJECT_CURRENT' }), parent, 'INVALID_ENVELOPE',
    /keeps its parent's scope/);
  refused(next({ revision: 3 }), parent, 'INVALID_ENVELOPE', /continues its memory or replaces it/);
  refused(next({ supersedes: JSON.stringify([parent.memory_id]) }), parent, 'INVALID_ENVELOPE',
    /continues its memory or replaces it/);
  refused(current({ parent_record_id: parent.record_id, supersedes: JSON.stringify([randomUUID()]) }), parent,
    'INVALID_ENVELOPE', /continues its memory or replaces it/);
  for (const state of ['SUPERSEDED', 'HISTORICAL', 'QUARANTINED'] as const) {
    refused(next(), { ...parent, lifecycle_state: state }, 'VERSION_CONFLICT', /no longer live/);
  }
});

t.test('CROSS_PROJECT_WORKFLOW records keep CONTRACT.md §4.4 at the storage floor too', async () => {
  assertRecordInvariants(workflowRule(), null);
  assertRecordInvariants(workflowRule({ memory_type: 'DECISION_RATIONALE' }), null);
  assertRecordInvariants(workflowRule({ freshness_policy: freshness('manual', null, HASH.replace(/a/g, 'b')) }), null);
  assertRecordInvariants(workflowRule({ freshness_policy: freshness('never', null, null) }), null);
  refused(workflowRule({ project_id: 'p' }), null, 'INVALID_ENVELOPE', /carry no identity/);
  refused(workflowRule({ memory_type: 'USER_FACT' }), null, 'INVALID_ENVELOPE',
    /stores only WORKFLOW_RULE and DECISION_RATIONALE/);
  refused(workflowRule({ source_provenance: provenance(HASH) }), null, 'INVALID_ENVELOPE',
    /carry no source_provenance.source_fingerprint/);
  refused(workflowRule({ freshness_policy: freshness('manual', null, null) }), null, 'INVALID_ENVELOPE',
    /manual freshness needs freshness_policy.recheck_ref or source_fingerprint/);
  refused(workflowRule({ freshness_policy: freshness('on_change', 'docs/x', HASH) }), null, 'INVALID_ENVELOPE',
    /on_change freshness cannot follow a project source/);
  // Other scopes are not held to §4.4.
  assertRecordInvariants(current({ memory_type: 'USER_FACT', source_provenance: provenance(HASH),
    freshness_policy: freshness('manual', null, null) }), null);
});

t.test('a successor is checked before the CAS supersedes its parent (STORAGE.md §7.3), not after', async (t) => {
  const engine = await openEngine(join(t.testdir(), 'order.sqlite3'));
  t.teardown(() => engine.close());
  const root = candidateRow();
  await storeRow(engine, root);
  const parent = (await engine.read((db) => findRecord(db, root.record_id)))!;
  // Revision 3 neither continues the memory nor replaces it: §7.3 refuses it.
  const broken = candidateRow({ memory_id: root.memory_id, revision: 3, parent_record_id: root.record_id });
  const derived = { searchText: broken.fact, embedding: unitVector(1) };
  let seenAtRefusal: string | undefined;
  await t.rejects(engine.write(async (trx) => {
    try {
      await insertSuccessor(trx, parent, broken, derived);
    } catch (error) {
      // Inside the transaction, before its rollback: the parent as the refusal left it.
      seenAtRefusal = (await findRecord(trx, root.record_id))!.lifecycle_state;
      throw error;
    }
  }), { code: 'INVALID_ENVELOPE', message: /continues its memory or replaces it/ });
  t.equal(seenAtRefusal, 'CANDIDATE', 'the parent was still live when the successor was refused: no CAS ran');
  t.equal((await engine.read((db) => findRecord(db, root.record_id)))!.lifecycle_state, 'CANDIDATE');
  // A successor that passes is written after the CAS: its parent superseded, itself live.
  const next = candidateRow({ memory_id: root.memory_id, revision: 2, parent_record_id: root.record_id });
  await engine.write((trx) => insertSuccessor(trx, parent, next, derived));
  t.equal((await engine.read((db) => findRecord(db, root.record_id)))!.lifecycle_state, 'SUPERSEDED');
  t.equal((await engine.read((db) => findRecord(db, next.record_id)))!.lifecycle_state, 'CANDIDATE');
});
