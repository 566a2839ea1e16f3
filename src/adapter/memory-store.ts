import { AdapterError } from '../core/adapter-error.js';
import { canonicalJson } from '../core/canonical-json.js';
import { canonicalDigest } from '../core/hashing.js';
import { mintUuid } from '../core/identifiers.js';
import { searchText } from '../core/text.js';
import { contractNow } from '../core/timestamps.js';
import {
  findCurrentWithKey, findDuplicate, insertRecord, type NewRecordRow, type RecordRow,
} from '../storage/record-repository.js';
import { currentRoleOf } from '../storage/record-invariants.js';
import { codeAheadOfWrite } from '../storage/eligible-vectors.js';
import { contradictionKey, nativeContentHash, subjectOf } from './derived-identities.js';
import { envelopeScope } from './envelope.js';
import { isFresh } from './freshness.js';
import { assertRecordFitsBudget, publicRecord } from './public-record.js';
import type { WriteAuthorization } from './request-policy.js';
import { requireEnum, requireIdentifier, scopeDigest, type ScopeTuple } from './request-scope.js';
import {
  checkOnChange, normalizeConfidence, normalizeFact, normalizeFreshness, normalizeMemoryType, normalizeProvenance,
  normalizeSubject, normalizeTags, normalizeTimestamp, normalizeVerifiedBy,
} from './write-fields.js';
import { requireCompatible } from './runtime-compatibility.js';
import {
  embedDocument, idempotencyDecision, readBack, writeEnvelope, writeOrReplay, type WriteDeps,
} from './write-support.js';

/** The launcher's write context: who contributes, under which profile's decision. */
export interface WriteContext {
  readonly contributorClass: string;
  readonly contributorRef: string;
}

/**
 * memory_store (CONTRACT.md §5.3, §13.1-§13.3): validate in contract order, then idempotency, admission,
 * duplicate, contradiction and record size on current state; embed outside any transaction; repeat the
 * decisions inside BEGIN IMMEDIATE and write record, FTS row and vector together; read back.
 */
export async function storeMemory(deps: WriteDeps & { clock: () => Date }, input: {
  request: Readonly<Record<string, unknown>>; scope: ScopeTuple; requestId: string; authorization: WriteAuthorization;
  context: WriteContext;
}): Promise<Record<string, unknown>> {
  const { request, scope } = input;
  const runtime = await requireCompatible(deps);
  const fact = normalizeFact(request.fact);
  const memoryType = normalizeMemoryType(request.memory_type);
  const provenance = normalizeProvenance(request.source_provenance);
  const freshness = normalizeFreshness(request.freshness_policy);
  checkOnChange(freshness, provenance);
  const idempotencyKey = requireIdentifier('idempotency_key', request.idempotency_key);
  const sourceTimestamp = normalizeTimestamp('source_timestamp', request.source_timestamp);
  const lastVerifiedAt = normalizeTimestamp('last_verified_at', request.last_verified_at);
  normalizeVerifiedBy(request.verified_by);
  const confidence = normalizeConfidence(request.confidence) ?? 0.5;
  const tags = normalizeTags(request.tags) ?? [];
  const subject = normalizeSubject(request.subject);
  const requested = request.requested_lifecycle_state ?? 'CANDIDATE';
  const lifecycle = requireEnum('requested_lifecycle_state', requested, ['CANDIDATE', 'VALIDATED_CURRENT'] as const);

  const current = lifecycle === 'VALIDATED_CURRENT';
  const authorityRole = current ? currentRoleOf(scope.scope) : 'UNRESOLVED';
  const contributionOrigin = {
    contributor_class: input.context.contributorClass, contributor_ref: input.context.contributorRef,
  };
  const fingerprint = canonicalDigest({
    authority_role: authorityRole, confidence, contribution_origin: contributionOrigin, fact,
    freshness_policy: freshness, memory_type: memoryType,
    requested_lifecycle_state: lifecycle, scope: envelopeScope(scope), source_provenance: provenance,
    source_timestamp: sourceTimestamp,
    subject, tags, verified_by: input.authorization.verifiedBy,
  });
  const now = contractNow(deps.clock());
  const contentHash = nativeContentHash(scope, fact);
  const key = contradictionKey(memoryType, scope, subjectOf(subject, tags, fact));
  // embeddingCalls: a replay or duplicate found under the lock, after this request embedded its fact, made that call.
  const replayEnvelope = (row: RecordRow, embeddingCalls = 0) => writeEnvelope({
    deps, operation: 'memory_store', requestId: input.requestId, scope, status: 'OK', record: row, withSummary: false,
    replay: true,
    embeddingCalls,
  });
  const duplicateEnvelope = (row: RecordRow, embeddingCalls = 0) => writeEnvelope({
    deps, operation: 'memory_store', requestId: input.requestId, scope, status: 'DUPLICATE', record: row,
    withSummary: false,
    embeddingCalls,
  });

  const admit = () => {
    if (!current) return;
    if (sourceTimestamp === null)
      throw new AdapterError('PROVENANCE_REQUIRED', 'a current fact needs source_timestamp');
    if (lastVerifiedAt === null) throw new AdapterError('UNVERIFIED_CURRENT', 'a current fact needs last_verified_at');
    if (!isFresh({ verified_by: input.authorization.verifiedBy, last_verified_at: lastVerifiedAt,
      freshness_policy: freshness, source_provenance: provenance }, now.epochMicros)) {
      throw new AdapterError('UNVERIFIED_CURRENT',
        'the fact is already stale at admission; re-verify it (last_verified_at, freshness_policy)');
    }
  };

  // Pre-check on current state, one snapshot of it: read one by one, a store another process commits in between
  // could be missed by the idempotency read and then found as a duplicate, so a retry of that very store would get
  // DUPLICATE instead of its replay. Replay and DUPLICATE return here without an embedding call.
  const pre = await deps.engine.readSnapshot(async (db) => {
    const replay = await idempotencyDecision(db, idempotencyKey, fingerprint);
    if (replay) return { replay };
    admit();
    const duplicate = await findDuplicate(db, scope, contentHash);
    if (duplicate) return { duplicate };
    return { conflictBefore: (await findCurrentWithKey(db, scope, key, contentHash, false)) !== undefined };
  });
  if (pre.replay) return replayEnvelope(pre.replay);
  if (pre.duplicate) return duplicateEnvelope(pre.duplicate);
  const conflictBefore = pre.conflictBefore!;

  // One pair of ids for the pre-check and the locked write, so the record measured is the record written.
  const ids = { record_id: mintUuid(), memory_id: mintUuid() };
  // The columns that do not depend on the contradiction outcome, serialised once for both builds.
  const stored = {
    scope_key: scopeDigest(scope), source_provenance: canonicalJson(provenance),
    contribution_origin: canonicalJson(contributionOrigin), freshness_policy: canonicalJson(freshness),
    tags: canonicalJson(tags),
  };
  // A plain literal: after a leading spread, V8 (Node 20) adds each further key on a slow path, about 1 µs
  // apiece, and this record has 31 (docs/performance.md).
  const buildRecord = (conflict: boolean, modelDigest: string): NewRecordRow => ({
    record_id: ids.record_id, memory_id: ids.memory_id, revision: 1, parent_record_id: null,
    scope: scope.scope, project_id: scope.project_id, worktree_id: scope.worktree_id, workflow_id: scope.workflow_id,
    agent_id: scope.agent_id,
    scope_key: stored.scope_key, memory_type: memoryType, fact, source_provenance: stored.source_provenance,
    source_timestamp: sourceTimestamp,
    created_at: now.text, last_verified_at: lastVerifiedAt,
    verified_by: current && !conflict ? input.authorization.verifiedBy : 'UNVERIFIED',
    authority_role: current && !conflict ? authorityRole : 'UNRESOLVED',
    contribution_origin: stored.contribution_origin, freshness_policy: stored.freshness_policy, supersedes: '[]',
    contradiction_key: key, contradiction_state: conflict ? 'UNRESOLVED' : 'NONE', confidence, tags: stored.tags,
    lifecycle_state: current && !conflict ? 'VALIDATED_CURRENT' : 'CANDIDATE', native_content_hash: contentHash,
    payload_fingerprint: fingerprint, idempotency_key: idempotencyKey,
    embedding_profile_id: deps.provider.profile.profileId,
    embedding_model_digest: modelDigest, embedding_output_dimension: deps.provider.profile.outputDimension,
  });
  const fixedBefore = await assertRecordFitsBudget(publicRecord({ ...buildRecord(conflictBefore, runtime.digest),
    row_id: 0 }));
  const embedding = await embedDocument(deps, fact, runtime.fingerprint);
  if (current) codeAheadOfWrite(stored.scope_key, embedding);

  // The locked state decides: repeat every pre-check inside the transaction.
  const outcome = await writeOrReplay(deps, idempotencyKey, fingerprint, () => deps.engine.write(async (trx) => {
    const lockedReplay = await idempotencyDecision(trx, idempotencyKey, fingerprint);
    if (lockedReplay) return { kind: 'replay' as const, row: lockedReplay };
    const lockedDuplicate = await findDuplicate(trx, scope, contentHash);
    if (lockedDuplicate) return { kind: 'duplicate' as const, row: lockedDuplicate };
    const conflict = (await findCurrentWithKey(trx, scope, key, contentHash, false)) !== undefined;
    const record = buildRecord(conflict, runtime.digest);
    // The record-size check repeats on the locked state (§13.1 step 4); it can only change with the contradiction
    // outcome.
    const fixedTokens = conflict === conflictBefore ? fixedBefore
      : await assertRecordFitsBudget(publicRecord({ ...record, row_id: 0 }));
    await insertRecord(trx, record, { searchText: searchText(fact), embedding, fixedTokens });
    return { kind: 'written' as const, record, conflict };
  }));
  if ('record_id' in outcome) return replayEnvelope(outcome, 1);
  if (outcome.kind === 'replay') return replayEnvelope(outcome.row, 1);
  if (outcome.kind === 'duplicate') return duplicateEnvelope(outcome.row, 1);
  const row = await readBack(deps, outcome.record);
  return writeEnvelope({
    deps, operation: 'memory_store', requestId: input.requestId, scope,
    status: outcome.conflict ? 'CONTRADICTION' : 'OK', record: row, withSummary: true, embeddingCalls: 1,
  });
}
