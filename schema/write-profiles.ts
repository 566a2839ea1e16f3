import type { ContributorClass, VerifiedBy, WriteProfile } from './enums.js';

/** One launcher write profile (CONTRACT.md §8.1). */
export interface WriteProfileSpec {
  readonly authorizationClass: 'READ_ONLY' | 'DELEGATED_AGENT_CONTRIBUTION' | 'DIRECT_OWNER_OPERATOR'
    | 'TRUSTED_ADMIN_OPERATOR';
  readonly operations: readonly ('memory_store' | 'memory_update')[];
  readonly maxLifecycle: 'CANDIDATE' | 'VALIDATED_CURRENT' | null;
  readonly basis: Exclude<VerifiedBy, 'UNVERIFIED'> | null;
  readonly contributorClass: ContributorClass;
}

/** The five write profiles; `read-only` is the default. */
export const WRITE_PROFILE_SPECS: Readonly<Record<WriteProfile, WriteProfileSpec>> = Object.freeze({
  'read-only': { authorizationClass: 'READ_ONLY', operations: [], maxLifecycle: null, basis: null,
    contributorClass: 'LEGACY_UNKNOWN' },
  'delegated-candidate': { authorizationClass: 'DELEGATED_AGENT_CONTRIBUTION', operations: ['memory_store'],
    maxLifecycle: 'CANDIDATE', basis: null, contributorClass: 'DELEGATED_AGENT' },
  'owner-current': { authorizationClass: 'DIRECT_OWNER_OPERATOR', operations: ['memory_store', 'memory_update'],
    maxLifecycle: 'VALIDATED_CURRENT', basis: 'OWNER', contributorClass: 'OWNER' },
  'repo-verifier': { authorizationClass: 'TRUSTED_ADMIN_OPERATOR', operations: ['memory_store', 'memory_update'],
    maxLifecycle: 'VALIDATED_CURRENT', basis: 'CURRENT_REPO_CHECK', contributorClass: 'AUTOMATION' },
  'automated-verifier': { authorizationClass: 'TRUSTED_ADMIN_OPERATOR', operations: ['memory_store', 'memory_update'],
    maxLifecycle: 'VALIDATED_CURRENT', basis: 'AUTOMATED_CHECK', contributorClass: 'AUTOMATION' },
});
