import { AdapterError } from '../core/adapter-error.js';
import type { Clock } from '../core/time.js';
import { contractNow, parseTimestamp } from '../core/timestamps.js';
import type { MaintenanceTarget } from '../storage/maintenance-target.js';
import { scopeOf, type ScopeColumns } from '../storage/record-repository.js';
import type { RecordRow } from '../storage/record-rows.js';
import { readReviewQueue } from '../storage/review-repository.js';
import { assertNoInterlock, schemaRefusal } from '../storage/schema-inspection.js';

/** What `factlane-admin candidates` asks for: one exact scope tuple or every scope (null), at most `limit`. */
export interface CandidatesRequest {
  readonly scope: ScopeColumns | null;
  readonly limit: number;
  readonly clock: Clock;
}

/** A current fact of the Candidate's scope that shares its contradiction key. */
export interface CurrentFact {
  readonly memory_id: string;
  readonly record_id: string;
  readonly revision: number;
  readonly fact: string;
  readonly verified_by: string;
  readonly last_verified_at: string | null;
}

/** One pending Candidate as the owner reviews it. */
export interface CandidateEntry {
  readonly memory_id: string;
  readonly record_id: string;
  readonly revision: number;
  readonly scope: ScopeColumns;
  readonly memory_type: string;
  readonly fact: string;
  readonly source_provenance: Record<string, unknown>;
  readonly source_timestamp: string | null;
  readonly created_at: string;
  /** Whole seconds since created_at at the moment of the listing (0 for a clock behind it). */
  readonly age_seconds: number;
  readonly contribution_origin: Record<string, unknown>;
  readonly freshness_policy: Record<string, unknown>;
  readonly confidence: number;
  readonly tags: readonly string[];
  readonly contradiction_state: string;
  /** The current facts promotion would contradict: same scope and contradiction key, another fact. */
  readonly contradicts: readonly CurrentFact[];
  /**
   * A current fact equal to this one: same key and fact, so promotion answers ALREADY_CURRENT with it; for a
   * Candidate stored as a contradiction (never promoted), the same fact under any key.
   */
  readonly equivalent_current: CurrentFact | null;
}

/** The `factlane-admin candidates` report: how many match, how many are shown, and the Candidates oldest first. */
export interface CandidatesReport {
  readonly db_identity: string;
  readonly listed_at: string;
  readonly scope_filter: ScopeColumns | null;
  readonly total: number;
  readonly shown: number;
  readonly more: number;
  readonly limit: number;
  readonly candidates: readonly CandidateEntry[];
}

/** A Candidate stored as a contradiction (CONTRACT.md §13.4 promotion step 2): never promoted. */
export const storedAsContradiction = (contradictionState: string) =>
  contradictionState === 'UNRESOLVED' || contradictionState === 'QUARANTINED';

const currentFact = (row: RecordRow): CurrentFact => ({
  memory_id: row.memory_id, record_id: row.record_id, revision: row.revision, fact: row.fact,
  verified_by: row.verified_by, last_verified_at: row.last_verified_at,
});

function ageSeconds(createdAt: string, nowMicros: bigint): number {
  const created = parseTimestamp(createdAt);
  if (created === null || nowMicros < created.epochMicros) return 0;
  return Number((nowMicros - created.epochMicros) / 1_000_000n);
}

/**
 * Lists the pending Candidates (lifecycle CANDIDATE, the live record of each memory) under the shared lease the
 * caller holds, read-only, oldest first, at most `limit`, each with the current facts of its scope that share its
 * contradiction key or its fact. Refusals: MAINTENANCE_IN_PROGRESS (recovery interlock), SCHEMA_MISMATCH (not a
 * FactLane database, or one this release cannot serve).
 */
export async function listCandidates(target: MaintenanceTarget, request: CandidatesRequest): Promise<CandidatesReport> {
  const { findings } = target;
  assertNoInterlock(findings);
  if (findings.kind !== 'FACTLANE') throw new AdapterError('SCHEMA_MISMATCH', 'the file is not a FactLane database');
  const refusal = schemaRefusal(findings, target.shipped, null);
  if (refusal) throw new AdapterError('SCHEMA_MISMATCH', refusal);
  const now = contractNow(request.clock());
  const reading = await readReviewQueue(target.path, { scope: request.scope, limit: request.limit });
  const candidates = reading.candidates.map(({ candidate: row, relatedCurrent }): CandidateEntry => {
    const sameKey = relatedCurrent.filter((current) => current.contradiction_key === row.contradiction_key);
    // Promotion answers ALREADY_CURRENT only for its own key (CONTRACT.md §13.4); a Candidate stored as a
    // contradiction is never promoted, and its fact is settled once current under any key.
    const equivalent = (storedAsContradiction(row.contradiction_state) ? relatedCurrent : sameKey)
      .find((current) => current.native_content_hash === row.native_content_hash);
    return {
      memory_id: row.memory_id, record_id: row.record_id, revision: row.revision,
      scope: scopeOf(row),
      memory_type: row.memory_type, fact: row.fact, source_provenance: JSON.parse(row.source_provenance),
      source_timestamp: row.source_timestamp, created_at: row.created_at,
      age_seconds: ageSeconds(row.created_at, now.epochMicros),
      contribution_origin: JSON.parse(row.contribution_origin), freshness_policy: JSON.parse(row.freshness_policy),
      confidence: row.confidence, tags: JSON.parse(row.tags), contradiction_state: row.contradiction_state,
      contradicts: sameKey.filter((current) => current.native_content_hash !== row.native_content_hash)
        .map(currentFact),
      equivalent_current: equivalent ? currentFact(equivalent) : null,
    };
  });
  return {
    db_identity: target.dbIdentity, listed_at: now.text, scope_filter: request.scope, total: reading.total,
    shown: candidates.length, more: reading.total - candidates.length, limit: request.limit, candidates,
  };
}
