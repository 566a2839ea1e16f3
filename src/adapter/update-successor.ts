import { AdapterError } from '../core/adapter-error.js';
import { canonicalJson } from '../core/canonical-json.js';
import { mintUuid } from '../core/identifiers.js';
import type { NewRecordRow, RecordRow } from '../storage/record-repository.js';
import { currentRoleOf } from '../storage/record-invariants.js';
import { contradictionKey, nativeContentHash, subjectOf, tagSubject } from './derived-identities.js';
import { scopeDigest, type ScopeTuple } from './request-scope.js';
import {
  normalizeConfidence, normalizeFact, normalizeFreshness, normalizeMemoryType, normalizeProvenance, normalizeSubject,
  normalizeTags, normalizeTimestamp, normalizeVerifiedBy, type FreshnessPolicy, type SourceProvenance,
} from './write-fields.js';
import type { WriteDeps } from './write-support.js';

// What memory_update writes (CONTRACT.md §13.4): its payload normalised by the memory_store rules, and the successor
// record built from the live record and that payload. memory-update.ts runs the update around them.

/** A normalised verification or replacement payload; absent fields are undefined. */
export interface Payload {
  fact?: string; source_provenance?: SourceProvenance; freshness_policy?: FreshnessPolicy;
  source_timestamp?: string | null;
  last_verified_at?: string | null; verified_by?: string; memory_type?: string; confidence?: number; tags?: string[];
  subject?: string | null;
}

// Each payload field follows its memory_store rule (CONTRACT.md §5.6): null means absent only where the store's
// default is null (§3.5: these timestamps, and subject, which normalizeSubject reads); a null confidence, tags, fact,
// type or nested object is refused.
const NULL_IS_ABSENT = new Set(['source_timestamp', 'last_verified_at']);

/** Payload fields in store order (without on_change); the profile basis is injected as verified_by. */
export function normalizePayload(name: string, raw: Record<string, unknown>, basis: string): Payload {
  const has = (key: string) => raw[key] !== undefined && !(raw[key] === null && NULL_IS_ABSENT.has(key));
  const payload: Payload = {};
  if (has('fact')) payload.fact = normalizeFact(raw.fact, `${name}.fact`);
  if (has('memory_type')) payload.memory_type = normalizeMemoryType(raw.memory_type, `${name}.memory_type`);
  if (has('source_provenance'))
    payload.source_provenance = normalizeProvenance(raw.source_provenance, `${name}.source_provenance`);
  if (has('freshness_policy'))
    payload.freshness_policy = normalizeFreshness(raw.freshness_policy, `${name}.freshness_policy`);
  if (has('source_timestamp'))
    payload.source_timestamp = normalizeTimestamp(`${name}.source_timestamp`, raw.source_timestamp);
  if (has('last_verified_at'))
    payload.last_verified_at = normalizeTimestamp(`${name}.last_verified_at`, raw.last_verified_at);
  normalizeVerifiedBy(raw.verified_by, `${name}.verified_by`);
  payload.verified_by = basis;
  if (has('confidence')) payload.confidence = normalizeConfidence(raw.confidence, `${name}.confidence`)!;
  if (has('tags')) payload.tags = normalizeTags(raw.tags, `${name}.tags`)!;
  // null and "" mean absent (CONTRACT.md §2.1, §5.3): they leave no key, so they fingerprint alike.
  const subject = normalizeSubject(raw.subject, `${name}.subject`);
  if (subject !== null) payload.subject = subject;
  return payload;
}

/** The successor record of CONTRACT.md §13.4 (both modes), with REVERIFY's identity guards. */
export function buildSuccessor(input: {
  live: RecordRow; mode: string; payload: Payload; scope: ScopeTuple; now: string; idempotencyKey: string;
  fingerprint: string;
  contributionOrigin: Record<string, string>; deps: WriteDeps; digest: string;
}): NewRecordRow {
  const { live, payload, scope } = input;
  const liveTags = JSON.parse(live.tags) as string[];
  const reverify = input.mode === 'REVERIFY';
  if (reverify) {
    if (payload.memory_type !== undefined && payload.memory_type !== live.memory_type)
      throw new AdapterError('INVALID_ENVELOPE', 'REVERIFY cannot change memory_type; use REPLACE');
    if (payload.subject !== undefined && payload.subject !== null
      && contradictionKey(live.memory_type, scope,
        subjectOf(payload.subject, [], live.fact)) !== live.contradiction_key) {
      throw new AdapterError('INVALID_ENVELOPE', 'REVERIFY cannot change the subject; use REPLACE');
    }
    if (payload.tags !== undefined && tagSubject(payload.tags) !== tagSubject(liveTags))
      throw new AdapterError('INVALID_ENVELOPE', 'REVERIFY cannot change the subject: tag; use REPLACE');
  }
  const fact = reverify ? live.fact : payload.fact!;
  const memoryType = payload.memory_type ?? live.memory_type;
  const tags = payload.tags ?? liveTags;
  const key = reverify ? live.contradiction_key
    : contradictionKey(memoryType, scope, subjectOf(payload.subject ?? null, tags, fact));
  return {
    record_id: mintUuid(), memory_id: reverify ? live.memory_id : mintUuid(),
    revision: reverify ? live.revision + 1 : 1, parent_record_id: live.record_id,
    scope: scope.scope, project_id: scope.project_id, worktree_id: scope.worktree_id, workflow_id: scope.workflow_id,
    agent_id: scope.agent_id,
    scope_key: scopeDigest(scope), memory_type: memoryType, fact,
    source_provenance: payload.source_provenance ? canonicalJson(payload.source_provenance) : live.source_provenance,
    source_timestamp: payload.source_timestamp ?? (reverify ? live.source_timestamp : null),
    created_at: input.now, last_verified_at: payload.last_verified_at ?? input.now, verified_by: payload.verified_by!,
    authority_role: currentRoleOf(scope.scope),
    contribution_origin: reverify ? live.contribution_origin : canonicalJson(input.contributionOrigin),
    freshness_policy: payload.freshness_policy ? canonicalJson(payload.freshness_policy) : live.freshness_policy,
    supersedes: reverify ? '[]' : canonicalJson([live.memory_id]), contradiction_key: key,
    contradiction_state: reverify ? 'NONE' : 'RESOLVED', confidence: payload.confidence ?? live.confidence,
    tags: canonicalJson(tags),
    lifecycle_state: 'VALIDATED_CURRENT', native_content_hash: nativeContentHash(scope, fact),
    payload_fingerprint: input.fingerprint,
    idempotency_key: input.idempotencyKey, embedding_profile_id: input.deps.provider.profile.profileId,
    embedding_model_digest: input.digest,
    embedding_output_dimension: input.deps.provider.profile.outputDimension,
  };
}
