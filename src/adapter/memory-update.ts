import { AdapterError, REREAD_AND_RETRY } from '../core/adapter-error.js';
import { isJsonObject } from '../core/canonical-json.js';
import { canonicalDigest } from '../core/hashing.js';
import { isUuid } from '../core/identifiers.js';
import { searchText } from '../core/text.js';
import { contractNow } from '../core/timestamps.js';
import { UPDATE_MODES } from '@factlane/schema';
import {
  findCurrentWithKey, findLiveRecord, insertSuccessor, memoryPresence, type NewRecordRow, type Reader,
  type RecordRow,
} from '../storage/record-repository.js';
import { codeAheadOfWrite } from '../storage/eligible-vectors.js';
import { checkCrossProjectWrite } from '../storage/record-invariants.js';
import { envelopeScope } from './envelope.js';
import { isFresh } from './freshness.js';
import type { WriteContext } from './memory-store.js';
import { assertRecordFitsBudget, publicRecord } from './public-record.js';
import type { WriteAuthorization } from './request-policy.js';
import { requireEnum, requireIdentifier, type ScopeTuple } from './request-scope.js';
import { checkOnChange, type FreshnessPolicy, type SourceProvenance } from './write-fields.js';
import { requireCompatible } from './runtime-compatibility.js';
import { buildSuccessor, normalizePayload } from './update-successor.js';
import {
  embedDocument, idempotencyDecision, readBack, writeEnvelope, writeOrReplay, type WriteDeps,
} from './write-support.js';

const REPLACE_REQUIRED = ['fact', 'source_provenance', 'freshness_policy', 'source_timestamp'] as const;

/** The live record to update, or the right refusal (CONTRACT.md §13.4 target and CAS). */
async function targetRecord(
  reader: Reader, scope: ScopeTuple, memoryId: string, expectedRevision: number, expectedRecordId: string | null,
): Promise<RecordRow> {
  const live = await findLiveRecord(reader, scope, memoryId);
  if (!live) {
    const presence = await memoryPresence(reader, scope, memoryId);
    if (presence.purged) {
      throw new AdapterError('VERSION_CONFLICT', 'the memory was purged by incident recovery; it cannot be updated');
    }
    if (presence.inScope) {
      // No retry on this memory_id can succeed: say where the fact went, and how a timed-out REPLACE gets its answer.
      throw new AdapterError('VERSION_CONFLICT', 'the memory has no live record any more, so it cannot be updated: a '
        + 'REPLACE superseded it (the replacing record, a new memory, lists this memory_id in supersedes) or it was '
        + 'compacted; a retry of your own REPLACE with its idempotency_key returns that answer');
    }
    if (presence.anywhere)
      throw new AdapterError('CROSS_SCOPE_DENIED', 'the memory exists only under another scope; send its exact scope');
    throw new AdapterError('NOT_FOUND', 'no memory with this memory_id');
  }
  if (live.revision !== expectedRevision)
    throw new AdapterError('VERSION_CONFLICT',
      `expected_revision is not the live record's revision; ${REREAD_AND_RETRY}`);
  if (expectedRecordId !== null && live.record_id !== expectedRecordId)
    throw new AdapterError('VERSION_CONFLICT', `expected_record_id is not the live record; ${REREAD_AND_RETRY}`);
  return live;
}

type Decision = { kind: 'write'; live: RecordRow } | { kind: 'already_current'; row: RecordRow };

/** Promotion checks on the live record (CONTRACT.md §13.4 steps 1-3); REPLACE of a Candidate is refused. */
async function promotionDecision(
  reader: Reader, scope: ScopeTuple, live: RecordRow, mode: string, expectedRecordId: string | null,
): Promise<Decision> {
  if (live.lifecycle_state === 'CANDIDATE') {
    if (mode === 'REPLACE')
      throw new AdapterError('CANDIDATE_REPLACE_DENIED',
        'a Candidate cannot be replaced; promote it with REVERIFY or store a new fact');
    if (expectedRecordId === null)
      throw new AdapterError('INVALID_ENVELOPE', 'promoting a Candidate needs expected_record_id');
    if (live.contradiction_state === 'UNRESOLVED' || live.contradiction_state === 'QUARANTINED') {
      // Not "store it again": storing the same fact is a DUPLICATE of this Candidate (§13.2), whatever is current.
      throw new AdapterError('CONTRADICTION', 'this Candidate was stored as a contradiction and is never promoted; '
        + 'to make its fact current, REPLACE the current memory it contradicts (memory_update mode REPLACE on that '
        + 'memory, with replacement.fact this fact)');
    }
    const equivalent = await findCurrentWithKey(reader, scope, live.contradiction_key, live.native_content_hash, true);
    if (equivalent) return { kind: 'already_current', row: equivalent };
  }
  return { kind: 'write', live };
}

/** CONTRADICTION when another current record of the scope has the successor's key and another fact. */
async function assertNoContradiction(
  reader: Reader, scope: ScopeTuple, live: RecordRow, successor: NewRecordRow,
): Promise<void> {
  // The live record itself is being superseded, so it never conflicts with its successor.
  if (await findCurrentWithKey(reader, scope, successor.contradiction_key, successor.native_content_hash, false,
    live.memory_id)) {
    // A Candidate keeps its subject (REVERIFY cannot change it, REPLACE of a Candidate is refused): only the other
    // memory can be replaced with this fact.
    throw new AdapterError('CONTRADICTION', live.lifecycle_state === 'CANDIDATE'
      ? 'another current memory of this scope has the same memory_type and subject and a different fact, so this '
        + 'Candidate cannot be promoted: find that memory with memory_search and REPLACE it with this fact'
      : 'another current memory of this scope has the same memory_type and subject and a different fact: find it '
        + 'with memory_search and REPLACE that memory instead, or give this fact another replacement.subject');
  }
}

/**
 * memory_update (CONTRACT.md §5.4, §13.4): REVERIFY (same memory, revision + 1, also promotes a
 * Candidate) or REPLACE (new memory superseding the old), with expected_revision compare-and-swap
 * repeated inside the BEGIN IMMEDIATE transaction that supersedes the parent and writes the successor.
 */
export async function updateMemory(deps: WriteDeps & { clock: () => Date }, input: {
  request: Readonly<Record<string, unknown>>; scope: ScopeTuple; requestId: string; authorization: WriteAuthorization;
  context: WriteContext;
}): Promise<Record<string, unknown>> {
  const { request, scope } = input;
  const runtime = await requireCompatible(deps);
  if (typeof request.memory_id !== 'string' || !isUuid(request.memory_id))
    throw new AdapterError('INVALID_ENVELOPE', 'memory_id must be a UUID');
  const memoryId = request.memory_id.toLowerCase();
  const mode = requireEnum('mode', request.mode, UPDATE_MODES);
  const idempotencyKey = requireIdentifier('idempotency_key', request.idempotency_key);
  let expectedRecordId: string | null = null;
  if (request.expected_record_id !== undefined && request.expected_record_id !== null) {
    if (typeof request.expected_record_id !== 'string' || !isUuid(request.expected_record_id))
      throw new AdapterError('INVALID_ENVELOPE', 'expected_record_id must be a UUID');
    expectedRecordId = request.expected_record_id.toLowerCase();
  }
  const expectedRevision = request.expected_revision as number;
  const other = mode === 'REVERIFY' ? 'replacement' : 'verification';
  if (request[other] !== undefined && request[other] !== null)
    throw new AdapterError('INVALID_ENVELOPE', `${other} does not belong to mode ${mode}`);
  const rawPayload = mode === 'REVERIFY' ? request.verification : request.replacement;
  if (rawPayload !== undefined && rawPayload !== null && !isJsonObject(rawPayload))
    throw new AdapterError('INVALID_ENVELOPE',
      `${mode === 'REVERIFY' ? 'verification' : 'replacement'} must be an object`);
  const raw = (rawPayload ?? {}) as Record<string, unknown>;
  if (mode === 'REPLACE') {
    const missing = REPLACE_REQUIRED.filter((key) => raw[key] === undefined || raw[key] === null);
    if (missing.length > 0)
      throw new AdapterError('INVALID_ENVELOPE',
        `REPLACE needs ${missing.map((key) => `replacement.${key}`).join(', ')}`);
  }
  const payloadName = mode === 'REVERIFY' ? 'verification' : 'replacement';
  const payload = normalizePayload(payloadName, raw, input.authorization.verifiedBy);
  const contributionOrigin = {
    contributor_class: input.context.contributorClass, contributor_ref: input.context.contributorRef,
  };
  const fingerprint = canonicalDigest({
    contribution_origin: contributionOrigin, expected_record_id: expectedRecordId, expected_revision: expectedRevision,
    memory_id: memoryId, mode,
    replacement: mode === 'REPLACE' ? payload : {}, scope: envelopeScope(scope),
    verification: mode === 'REVERIFY' ? payload : {},
  });
  // embeddingCalls: a replay found under the lock, after this request embedded its successor, made that one call.
  const replayEnvelope = (row: RecordRow, embeddingCalls = 0) => writeEnvelope({
    deps, operation: 'memory_update', requestId: input.requestId, scope, status: 'OK', record: row, withSummary: false,
    replay: true,
    embeddingCalls,
  });
  const now = contractNow(deps.clock());
  // Pre-check on current state, one snapshot of it (CONTRACT.md §13.1 step 2): read one by one, an update another
  // process commits in between could be missed by the idempotency read and then seen as a moved target, so a retry
  // of that very update would get VERSION_CONFLICT instead of its replay (and a reader who then retried would apply
  // it twice); promotion and contradiction answers could likewise mix two states.
  const pre = await deps.engine.readSnapshot(async (db) => {
    const replay = await idempotencyDecision(db, idempotencyKey, fingerprint);
    if (replay) return { replay };
    const live = await targetRecord(db, scope, memoryId, expectedRevision, expectedRecordId);
    const decision = await promotionDecision(db, scope, live, mode, expectedRecordId);
    if (decision.kind === 'already_current') return { alreadyCurrent: decision.row };
    const successor = buildSuccessor({
      live, mode, payload, scope, now: now.text, idempotencyKey, fingerprint, contributionOrigin, deps,
      digest: runtime.digest,
    });
    // §11 order after the guards: §4.4 and on_change on the merged successor, source_timestamp, contradiction,
    // admission freshness.
    const provenance = JSON.parse(successor.source_provenance) as SourceProvenance;
    const freshness = JSON.parse(successor.freshness_policy) as FreshnessPolicy;
    if (scope.scope === 'CROSS_PROJECT_WORKFLOW') {
      checkCrossProjectWrite({
        memory_type: successor.memory_type, source_provenance: provenance, freshness_policy: freshness,
      });
    }
    checkOnChange(freshness, provenance);
    if (successor.source_timestamp === null) {
      throw new AdapterError('PROVENANCE_REQUIRED',
        'the successor needs a source_timestamp; state verification.source_timestamp');
    }
    await assertNoContradiction(db, scope, live, successor);
    return { live, successor, provenance, freshness };
  });
  if (pre.replay) return replayEnvelope(pre.replay);
  if (pre.alreadyCurrent) {
    return writeEnvelope({
      deps, operation: 'memory_update', requestId: input.requestId, scope, status: 'ALREADY_CURRENT',
      record: pre.alreadyCurrent,
      withSummary: false, embeddingCalls: 0,
    });
  }
  const { live, successor, provenance, freshness } = pre as Required<typeof pre>;
  if (!isFresh({ verified_by: successor.verified_by, last_verified_at: successor.last_verified_at,
    freshness_policy: freshness, source_provenance: provenance }, now.epochMicros)) {
    throw new AdapterError('UNVERIFIED_CURRENT',
      'the successor would be stale at admission; check last_verified_at and freshness_policy');
  }
  const fixedTokens = await assertRecordFitsBudget(publicRecord({ ...successor, row_id: 0 } as RecordRow));
  const embedding = await embedDocument(deps, successor.fact, runtime.fingerprint);
  codeAheadOfWrite(successor.scope_key, embedding); // the successor is current

  const outcome = await writeOrReplay(deps, idempotencyKey, fingerprint, () => deps.engine.write(async (trx) => {
    const lockedReplay = await idempotencyDecision(trx, idempotencyKey, fingerprint);
    if (lockedReplay) return { kind: 'replay' as const, row: lockedReplay };
    const lockedLive = await targetRecord(trx, scope, memoryId, expectedRevision, expectedRecordId);
    if (lockedLive.row_id !== live.row_id)
      throw new AdapterError('VERSION_CONFLICT',
        `a concurrent writer changed this memory first; ${REREAD_AND_RETRY}`);
    const locked = await promotionDecision(trx, scope, lockedLive, mode, expectedRecordId);
    if (locked.kind === 'already_current') return { kind: 'already_current' as const, row: locked.row };
    await assertNoContradiction(trx, scope, lockedLive, successor);
    const derived = { searchText: searchText(successor.fact), embedding, fixedTokens };
    await insertSuccessor(trx, lockedLive, successor, derived);
    return { kind: 'written' as const };
  }));
  if ('record_id' in outcome) return replayEnvelope(outcome, 1);
  if (outcome.kind === 'replay') return replayEnvelope(outcome.row, 1);
  if (outcome.kind === 'already_current') {
    return writeEnvelope({
      deps, operation: 'memory_update', requestId: input.requestId, scope, status: 'ALREADY_CURRENT',
      record: outcome.row, withSummary: false, embeddingCalls: 1,
    });
  }
  const row = await readBack(deps, successor);
  return writeEnvelope({
    deps, operation: 'memory_update', requestId: input.requestId, scope, status: 'OK', record: row, withSummary: true,
    embeddingCalls: 1,
  });
}
