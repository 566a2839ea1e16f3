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
  if (record.verified_by === 'UNVERIFIED' || record.last_verified_at === null) return false;
  const policy = record.freshness_policy;
  if (policy.kind === 'never' || policy.kind === 'manual') return true;
  if (policy.kind === 'on_change')
    return policy.source_fingerprint !== null && policy.source_fingerprint === record.source_provenance.source_hash;
  const verified = parseTimestamp(record.last_verified_at);
  return verified !== null && policy.ttl_seconds !== null
    && nowMicros <= verified.epochMicros + BigInt(policy.ttl_seconds) * 1_000_000n;
}

/** The stored columns freshness is decided on. */
export type FreshnessColumns = Pick<RecordRow,
  'verified_by' | 'last_verified_at' | 'freshness_policy' | 'source_provenance'>;

/** Freshness of a stored row at `nowMicros`. */
export function rowIsFresh(row: FreshnessColumns, nowMicros: bigint): boolean {
  return isFresh({ verified_by: row.verified_by, last_verified_at: row.last_verified_at,
    freshness_policy: JSON.parse(row.freshness_policy),
    source_provenance: JSON.parse(row.source_provenance) }, nowMicros);
}
