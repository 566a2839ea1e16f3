// The holds of incident recovery (OPERATIONS.md §5.3-§5.5): a recovery that meets one stops without mutating the
// database (exit 3). They are operator outcomes, not codes of the CONTRACT.md catalogue.

/** Every hold `factlane-admin recover` can end in. */
export const RECOVERY_HOLD_CODES = Object.freeze([
  'HOLD_UNSUPPORTED_PLATFORM_NO_MUTATION',
  'HOLD_PLAN_INVALID_NO_MUTATION',
  'HOLD_AUTHORIZATION_MISSING_NO_MUTATION',
  'HOLD_SQLITE_RUNTIME_UNSUPPORTED_NO_MUTATION',
  'HOLD_SQLITE_VEC_UNAVAILABLE_NO_MUTATION',
  'HOLD_DB_NOT_FOUND_NO_MUTATION',
  'HOLD_HARD_LINK_ALIAS_NO_MUTATION',
  'HOLD_NONQUIESCENT_NO_MUTATION',
  'HOLD_RECOVERY_STATE_MISMATCH',
  'HOLD_SCHEMA_MISMATCH_NO_MUTATION',
  'HOLD_DB_IDENTITY_MISMATCH_NO_MUTATION',
  'HOLD_UNSUPPORTED_DB_MODE_NO_MUTATION',
  'HOLD_DB_INTEGRITY_NO_MUTATION',
  'HOLD_SECURE_DELETE_UNAVAILABLE_NO_MUTATION',
  'HOLD_FTS_UNAVAILABLE_NO_MUTATION',
  'HOLD_FTS_SECURE_DELETE_UNAVAILABLE_NO_MUTATION',
  'HOLD_PROFILE_MISMATCH_NO_MUTATION',
  'HOLD_PUBLIC_CONTRACT_DRIFT_NO_MUTATION',
  'HOLD_TARGET_DRIFT_NO_MUTATION',
  'HOLD_TARGET_SET_PARTIALLY_APPLIED',
  'HOLD_TARGET_SET_INCOMPLETE_NO_MUTATION',
  'HOLD_UNATTRIBUTABLE_VECTOR_NO_MUTATION',
  'HOLD_MATERIALIZATION_DRIFT_NO_MUTATION',
  'HOLD_PARTIAL_MATERIALIZATION_NO_MUTATION',
  'HOLD_UNEXPECTED_DERIVED_STATE_NO_MUTATION',
  'HOLD_LOGICAL_PURGE_VERIFY_FAILED',
] as const);

/** One hold code. */
export type RecoveryHoldCode = (typeof RECOVERY_HOLD_CODES)[number];

/** A recovery that stopped at a hold; the message is safe (no content, no path). */
export class RecoveryHold extends Error {
  override name = 'RecoveryHold';
  readonly code: RecoveryHoldCode;

  constructor(code: RecoveryHoldCode, message: string) {
    super(message);
    this.code = code;
  }
}
