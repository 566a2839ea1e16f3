/**
 * The closed error-code catalogue (CONTRACT.md §10, OPERATIONS.md §1): every governed code with its
 * `audit.retryable` flag, who can see it, and what it means. Codes are wire names and never change.
 */
export type ErrorAudience = 'tool' | 'startup' | 'operator' | 'internal' | 'reserved';

export interface ErrorCodeEntry {
  readonly retryable: boolean;
  readonly audience: ErrorAudience;
  readonly meaning: string;
}

function entry(audience: ErrorAudience, meaning: string, retryable = false): ErrorCodeEntry {
  return Object.freeze({ retryable, audience, meaning });
}

export const ERROR_CODES = Object.freeze({
  HOST_IDENTITY_CLAIM_DENIED: entry('tool', 'a reserved host identity key was sent at the top level'),
  BOUND_CONTEXT_IDENTITY_MISMATCH: entry('tool', 'a governed identity key differs from the launcher-bound value'),
  HOST_TRANSPORT_IDENTITY_MISMATCH: entry('internal',
    'internal invariant guard: a gateway built for a transport other than stdio (library use; the launcher builds '
    + 'only stdio, so no tool call carries it)'),
  INVALID_HOST_BINDING: entry('startup', '--host-id or --binding-source is not a host label (exit 2)'),
  INVALID_CONTEXT_BINDING: entry('startup', 'a bound context id or its source label is invalid (exit 2)'),
  UNBOUND_GATEWAY: entry('internal',
    'reserved invariant guard, not produced by this build: gateway used without a binding'),
  INVALID_OPERATION: entry('internal', 'internal invariant guard: unknown operation'),
  INVALID_ADAPTER_RESPONSE: entry('internal',
    'reserved invariant guard, not produced by this build: adapter answered out of contract'),
  INVALID_WRITE_CONTEXT: entry('internal',
    'reserved invariant guard, not produced by this build: write context missing or malformed'),
  INVALID_ENVELOPE: entry('tool', 'the request or a nested payload is malformed'),
  INVALID_ENUM: entry('tool', 'a value is not one of its enumeration'),
  UNKNOWN_INTENT: entry('tool', 'intent_class is not in the enumeration'),
  UNKNOWN_SCOPE: entry('tool', 'scope is the empty string (a call without scope fails its schema first: isError)'),
  UNKNOWN_PROJECT_ID: entry('tool', 'the scope requires a project_id (WORKFLOW: a project_id and a workflow_id)'),
  UNKNOWN_AGENT: entry('tool', 'the scope requires an agent_id'),
  CROSS_SCOPE_DENIED: entry('tool',
    'a forbidden identity for the scope, or a memory that exists only under another scope'),
  SCOPE_INTENT_MISMATCH: entry('tool', 'intent not allowed for CROSS_PROJECT_WORKFLOW'),
  SCOPE_TYPE_MISMATCH: entry('tool', 'memory_type not allowed for CROSS_PROJECT_WORKFLOW'),
  SCOPE_FRESHNESS_MISMATCH: entry('tool', 'CROSS_PROJECT_WORKFLOW refuses source_provenance.source_fingerprint'),
  INVALID_FRESHNESS: entry('tool', 'the freshness policy breaks its rules'),
  PROVENANCE_REQUIRED: entry('tool', 'provenance missing, incomplete or invalid'),
  RAW_OR_SENSITIVE_CONTENT: entry('tool', 'the content looks raw or sensitive'),
  INVALID_TIMESTAMP: entry('tool', 'a timestamp does not follow the contract format'),
  UNVERIFIED_CURRENT: entry('tool', 'a current admission is not verified or not fresh'),
  WRITE_AUTHORIZATION_DENIED: entry('tool', 'the write profile does not allow this write, or a trust claim was sent'),
  IDEMPOTENCY_CONFLICT: entry('tool', 'the idempotency key is bound to a different request'),
  VERSION_CONFLICT: entry('tool', 'a stale revision or record id, or a concurrent writer won'),
  CANDIDATE_REPLACE_DENIED: entry('tool', 'REPLACE on a memory whose live record is a Candidate'),
  CONTRADICTION: entry('tool', 'promoting a Candidate stored as a contradiction (never promoted: REPLACE the '
    + 'current memory it contradicts instead), or an update that would leave two current records contradicting '
    + 'each other'),
  NOT_FOUND: entry('tool', 'no record qualifies'),
  WRITE_UNCONFIRMED: entry('tool', 'a committed record could not be read back unchanged'),
  PROFILE_MISMATCH: entry('tool', 'the embedding profile is not compatible with the database binding'),
  EMBEDDING_UNAVAILABLE: entry('tool', 'the embedding provider failed'),
  SCHEMA_MISMATCH: entry('tool', 'the database schema or a provider contract does not match this release'),
  BACKEND_BUSY: entry('tool', 'the database stayed busy or locked after the bounded retry', true),
  BACKEND_UNAVAILABLE: entry('tool', 'storage closed, disk full, I/O error, read-only file or lease path changed',
    true),
  BACKEND_CORRUPT: entry('tool', 'SQLite reports corruption or a non-database file'),
  BACKEND_COMPATIBILITY_MISMATCH: entry('startup',
    'the SQLite runtime floor or the effective pragmas are not met (exit 1)'),
  MAINTENANCE_IN_PROGRESS: entry('tool',
    'another FactLane process holds a conflicting lease, or the recovery interlock is present'),
  COMPACTION_NOT_ELIGIBLE: entry('operator', 'compaction of a record that is not SUPERSEDED'),
  COMPACTION_STATE_INVALID: entry('operator', 'compaction of a partially materialised record'),
  SOURCE_NOT_FOUND: entry('operator',
    'the named database or backup file, or the directory a backup is to be written in, does not exist'),
  TARGET_EXISTS: entry('operator', 'the output file or one of its companions already exists'),
  VERIFY_FAILED: entry('operator', 'a verification step failed'),
  MANIFEST_MISMATCH: entry('operator', 'a backup does not match its manifest'),
  TIMEOUT: entry('reserved', 'reserved; not produced', true),
  ADMIN_OPERATION_DENIED: entry('reserved', 'reserved; not produced'),
  POLICY_BYPASS_DENIED: entry('reserved', 'reserved; not produced'),
} satisfies Record<string, ErrorCodeEntry>);

/** A governed error code of the catalogue. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** True when `value` names a code of the catalogue. */
export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_CODES, value);
}
