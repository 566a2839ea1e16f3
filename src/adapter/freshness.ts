import { parseTimestamp } from '../core/timestamps.js';
import type { RecordRow } from '../storage/record-repository.js';
import type { FreshnessPolicy, SourceProvenance } from './write-fields.js';

/**
 * Whether a record is fresh at `nowMicros` (CONTRACT.md §12.3): verified (not UNVERIFIED, with
 * last_verified_at) and, by kind: never/manual always; ttl until last_verified_at + ttl_seconds;
 * on_change while the policy fingerprint equals the source hash.
 */
export function isFresh(
  record: { verified_by: string; last_verified_at: string | null; freshness_policy: FreshnessPolicy;
    source_provenance: SourceProvenance },
  nowMicros: bigint,
): boolean {
  return freshUnder(record, () => record.freshness_policy, () => record.source_provenance.source_hash, nowMicros);
}

/**
 * isFresh's rule, reading the policy only for a verified record and the provenance's source hash only for an on_change
 * policy with a fingerprint.
 */
function freshUnder(
  verification: { verified_by: string; last_verified_at: string | null }, policyOf: () => FreshnessPolicy,
  sourceHashOf: () => string, nowMicros: bigint,
): boolean {
  if (verification.verified_by === 'UNVERIFIED' || verification.last_verified_at === null) return false;
  const policy = policyOf();
  if (policy.kind === 'never' || policy.kind === 'manual') return true;
  if (policy.kind === 'on_change')
    return policy.source_fingerprint !== null && policy.source_fingerprint === sourceHashOf();
  const verified = parseTimestamp(verification.last_verified_at);
  return verified !== null && policy.ttl_seconds !== null
    && nowMicros <= verified.epochMicros + BigInt(policy.ttl_seconds) * 1_000_000n;
}

/** The stored columns freshness is decided on. */
export type FreshnessColumns = Pick<RecordRow,
  'verified_by' | 'last_verified_at' | 'freshness_policy' | 'source_provenance'>;

/**
 * Freshness of a stored row at `nowMicros`. Its JSON columns are parsed only as far as the rule reads them: a search
 * decides this for every current candidate of its pools.
 */
export function rowIsFresh(row: FreshnessColumns, nowMicros: bigint): boolean {
  return freshUnder(row, () => JSON.parse(row.freshness_policy) as FreshnessPolicy,
    () => (JSON.parse(row.source_provenance) as SourceProvenance).source_hash, nowMicros);
}
