import { canonicalJson } from '../core/canonical-json.js';
import { sha256Hex } from '../core/hashing.js';
import { isHostLabel, isIdentifier } from '../core/identifiers.js';
import type { TombstoneColumns } from '../storage/recovery-repository.js';
import { RecoveryHold } from './recovery-hold.js';

// The recovery plan of OPERATIONS.md §5.2 and the tombstone it asks for (§5.5).

/** The lifecycles a target may have before its purge. */
export const TARGET_LIFECYCLES = ['CANDIDATE', 'VALIDATED_CURRENT', 'SUPERSEDED', 'HISTORICAL'] as const;

/** The materialisation classes of §5.4; only PM0 and PM1 proceed. */
export const MATERIALIZATION_CLASSES = [
  'PM0_HISTORICAL_RECORD_AND_FTS', 'PM1_FULL_MATERIALIZATION', 'PM2_DERIVED_ROW_MISSING_OR_MISMATCHED',
  'PM3_UNATTRIBUTABLE_DERIVED_ROW', 'PM4_UNEXPECTED_DERIVED_STATE',
] as const;
export type MaterializationClass = (typeof MATERIALIZATION_CLASSES)[number];

const SCOPES = ['CROSS_PROJECT_WORKFLOW', 'GLOBAL_USER', 'PROJECT', 'TOOL_ENVIRONMENT', 'WORKFLOW'] as const;
const SCOPE_KEYS = ['scope', 'project_id', 'worktree_id', 'workflow_id', 'agent_id'] as const;
const TARGET_KEYS = [
  'record_id', 'memory_id', 'revision', 'scope', 'expected_lifecycle', 'expected_materialization',
  'expected_content_hash',
];
const REQUIRED_PLAN_KEYS = [
  'operation_id', 'db_path', 'database_id', 'profile', 'incident_class', 'propagation_state',
  'retained_identity_fields_classified_non_sensitive', 'targets',
];
const PLAN_KEYS = [...REQUIRED_PLAN_KEYS, 'safe_ids_for_receipt'];
/** The most targets one plan may name. */
export const MAX_RECOVERY_TARGETS = 64;

/** The scope of a target, the five keys of CONTRACT.md §4.2. */
export interface TargetScope {
  readonly scope: (typeof SCOPES)[number];
  readonly project_id: string | null;
  readonly worktree_id: string | null;
  readonly workflow_id: string | null;
  readonly agent_id: string | null;
}

/** One record the plan names for purging. */
export interface RecoveryTarget {
  readonly record_id: string;
  readonly memory_id: string;
  readonly revision: number;
  readonly scope: TargetScope;
  readonly expected_lifecycle: (typeof TARGET_LIFECYCLES)[number];
  readonly expected_materialization: MaterializationClass;
  readonly expected_content_hash: string;
}

/** A validated recovery plan. */
export interface RecoveryPlan {
  readonly operation_id: string;
  readonly db_path: string;
  readonly database_id: string;
  readonly profile: string;
  readonly incident_class: 'S1' | 'M1';
  readonly propagation_state: 'EXPLICIT_TARGET_SET_COMPLETE';
  readonly retained_identity_fields_classified_non_sensitive: true;
  readonly safe_ids_for_receipt?: boolean;
  readonly targets: readonly RecoveryTarget[];
}

const invalid = (message: string) => new RecoveryHold('HOLD_PLAN_INVALID_NO_MUTATION', message);
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function exactKeys(
  value: Record<string, unknown>, allowed: readonly string[], required: readonly string[], where: string,
): void {
  const unknown = Object.keys(value).filter((key) => !allowed.includes(key));
  if (unknown.length > 0) throw invalid(`${where} has unknown key(s): ${unknown.join(', ')}`);
  const missing = required.filter((key) => !Object.hasOwn(value, key));
  if (missing.length > 0) throw invalid(`${where} is missing: ${missing.join(', ')}`);
}

function oneOf<T extends string>(value: unknown, values: readonly T[], field: string): T {
  if (typeof value !== 'string' || !values.includes(value as T)) {
    throw invalid(`${field} must be one of ${values.join(', ')}`);
  }
  return value as T;
}

function identifier(value: unknown, field: string): string {
  if (typeof value !== 'string' || !isIdentifier(value)) throw invalid(`${field} must be an identifier`);
  return value;
}

function targetScope(value: unknown, where: string): TargetScope {
  if (!isObject(value)) throw invalid(`${where}.scope must be an object with the five scope keys`);
  exactKeys(value, SCOPE_KEYS, SCOPE_KEYS, `${where}.scope`);
  const id = (key: (typeof SCOPE_KEYS)[number]) =>
    (value[key] === null ? null : identifier(value[key], `${where}.scope.${key}`));
  return {
    scope: oneOf(value.scope, SCOPES, `${where}.scope.scope`),
    project_id: id('project_id'), worktree_id: id('worktree_id'), workflow_id: id('workflow_id'),
    agent_id: id('agent_id'),
  };
}

function target(value: unknown, index: number): RecoveryTarget {
  const where = `targets[${index}]`;
  if (!isObject(value)) throw invalid(`${where} must be an object`);
  exactKeys(value, TARGET_KEYS, TARGET_KEYS, where);
  if (!Number.isSafeInteger(value.revision) || (value.revision as number) < 1) {
    throw invalid(`${where}.revision must be a whole number of at least 1`);
  }
  if (typeof value.expected_content_hash !== 'string' || !/^[0-9a-f]{64}$/.test(value.expected_content_hash)) {
    throw invalid(`${where}.expected_content_hash must be 64 lower-case hex digits`);
  }
  return {
    record_id: identifier(value.record_id, `${where}.record_id`),
    memory_id: identifier(value.memory_id, `${where}.memory_id`),
    revision: value.revision as number,
    scope: targetScope(value.scope, where),
    expected_lifecycle: oneOf(value.expected_lifecycle, TARGET_LIFECYCLES, `${where}.expected_lifecycle`),
    expected_materialization: oneOf(
      value.expected_materialization, MATERIALIZATION_CLASSES, `${where}.expected_materialization`,
    ),
    expected_content_hash: value.expected_content_hash,
  };
}

/**
 * Parses and validates a plan's text (OPERATIONS.md §5.2): exactly the plan keys, 1-64 targets with distinct
 * record_ids, each with exactly the target keys. `operation_id` names a file beside the database, so it is an
 * identifier without `/` (docs/decisions/0019). HOLD_PLAN_INVALID_NO_MUTATION otherwise.
 */
export function parseRecoveryPlan(text: string): RecoveryPlan {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid('the plan is not JSON');
  }
  if (!isObject(value)) throw invalid('the plan must be a JSON object');
  exactKeys(value, PLAN_KEYS, REQUIRED_PLAN_KEYS, 'the plan');
  if (typeof value.operation_id !== 'string' || !isHostLabel(value.operation_id)) {
    throw invalid('operation_id must be an identifier without "/" (letters, digits, . _ : -; at most 128)');
  }
  if (typeof value.db_path !== 'string' || value.db_path === '') throw invalid('db_path must be the database path');
  if (typeof value.database_id !== 'string' || value.database_id === '') {
    throw invalid('database_id must be the database_id of adapter_meta');
  }
  if (value.propagation_state !== 'EXPLICIT_TARGET_SET_COMPLETE') {
    throw invalid('propagation_state must be EXPLICIT_TARGET_SET_COMPLETE');
  }
  if (value.retained_identity_fields_classified_non_sensitive !== true) {
    throw invalid('retained_identity_fields_classified_non_sensitive must be true: the tombstones keep those fields');
  }
  if (value.safe_ids_for_receipt !== undefined && typeof value.safe_ids_for_receipt !== 'boolean') {
    throw invalid('safe_ids_for_receipt must be a boolean');
  }
  if (!Array.isArray(value.targets) || value.targets.length < 1 || value.targets.length > MAX_RECOVERY_TARGETS) {
    throw invalid(`targets must list 1 to ${MAX_RECOVERY_TARGETS} records`);
  }
  const targets = value.targets.map(target);
  if (new Set(targets.map((t) => t.record_id)).size !== targets.length) throw invalid('targets name a record_id twice');
  return {
    operation_id: value.operation_id, db_path: value.db_path, database_id: value.database_id,
    profile: identifier(value.profile, 'profile'),
    incident_class: oneOf(value.incident_class, ['S1', 'M1'] as const, 'incident_class'),
    propagation_state: 'EXPLICIT_TARGET_SET_COMPLETE', retained_identity_fields_classified_non_sensitive: true,
    ...(value.safe_ids_for_receipt === undefined ? {} : { safe_ids_for_receipt: value.safe_ids_for_receipt }),
    targets,
  };
}

/** plan_sha256: SHA-256 of the plan's canonical JSON. */
export function planSha256(plan: RecoveryPlan): string {
  return sha256Hex(canonicalJson(plan));
}

/** The fact every tombstone carries. */
export const TOMBSTONE_FACT = '[purged-sensitive-memory]';

/**
 * The columns a purge writes over target `recordId` of operation `operationId` (OPERATIONS.md §5.5). Every derived
 * value comes from the two identifiers only, so a tombstone says nothing of what it replaced.
 */
export function tombstoneColumns(operationId: string, recordId: string): TombstoneColumns {
  const derived = (role: string) => sha256Hex(`${role}:${operationId}:${recordId}`);
  return {
    fact: TOMBSTONE_FACT,
    source_provenance: canonicalJson({
      source_class: 'RECOVERY_TOMBSTONE', source_ref: `recovery:${operationId}`,
      source_hash: sha256Hex(`${operationId}:${recordId}`),
      review_ref: 'operator-recovery', extraction_method: 'SENSITIVE_MEMORY_PURGE', source_fingerprint: null,
    }),
    lifecycle_state: 'QUARANTINED', contradiction_state: 'QUARANTINED', verified_by: 'UNVERIFIED',
    authority_role: 'UNRESOLVED',
    confidence: 0, tags: '[]', source_timestamp: null, last_verified_at: null,
    freshness_policy: canonicalJson({ kind: 'manual', recheck_ref: null, source_fingerprint: null, ttl_seconds: null }),
    contradiction_key: derived('recovery-contradiction-key'),
    native_content_hash: derived('recovery-native-content-hash'),
    payload_fingerprint: derived('recovery-payload-fingerprint'),
  };
}

/** True when `row` carries exactly the tombstone of `operationId` for its record. */
export function isTombstoneOf(
  row: Readonly<Record<string, unknown>> & { record_id: string }, operationId: string,
): boolean {
  const expected = tombstoneColumns(operationId, row.record_id) as unknown as Record<string, unknown>;
  return Object.entries(expected).every(([column, value]) => row[column] === value);
}

/** True when `row` is a recovery tombstone of any operation. */
export function isAnyTombstone(row: { source_provenance: string; lifecycle_state: string }): boolean {
  if (row.lifecycle_state !== 'QUARANTINED') return false;
  try {
    return (JSON.parse(row.source_provenance) as { source_class?: unknown }).source_class === 'RECOVERY_TOMBSTONE';
  } catch {
    return false;
  }
}
