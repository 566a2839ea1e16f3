/** The enumerations of the public contract (CONTRACT.md §7), in contract order. Error messages sort them. */
export const SCOPES = ['CROSS_PROJECT_WORKFLOW', 'GLOBAL_USER', 'PROJECT', 'TOOL_ENVIRONMENT', 'WORKFLOW'] as const;
export const LIFECYCLE_STATES = [
  'CANDIDATE', 'VALIDATED_CURRENT', 'SUPERSEDED', 'STALE', 'QUARANTINED', 'HISTORICAL',
] as const;
export const CONTRADICTION_STATES = ['NONE', 'UNRESOLVED', 'RESOLVED', 'QUARANTINED'] as const;
export const AUTHORITY_ROLES = [
  'OWNER_CURRENT', 'PROJECT_CURRENT', 'WORKFLOW_CURRENT', 'TOOL_ENV_CURRENT', 'SUPPORTING', 'HISTORICAL', 'UNRESOLVED',
] as const;
export const VERIFIED_BY = ['OWNER', 'CURRENT_REPO_CHECK', 'AUTOMATED_CHECK', 'UNVERIFIED'] as const;
export const MEMORY_TYPES = [
  'USER_FACT', 'PREFERENCE', 'WORKFLOW_RULE', 'PROJECT_LEARNED_FACT', 'DECISION_RATIONALE', 'TOOL_ENVIRONMENT_FACT',
] as const;
export const INTENT_CLASSES = [
  'CURRENT_PROJECT_STATE', 'GENERAL_TASK_NO_MEMORY_REQUIRED', 'HISTORICAL_QUESTION', 'PROJECT_DESIGN_RATIONALE',
  'TOOL_ENVIRONMENT_STATE', 'USER_PREFERENCE_OR_DURABLE_FACT', 'WORKFLOW_RULE',
] as const;
export const RETRIEVAL_MODES = ['CURRENT', 'REVIEW_HISTORY'] as const;
export const RETRIEVAL_MODE_KINDS = ['EXACT', 'KEYWORD', 'SEMANTIC', 'HYBRID'] as const;
export const UPDATE_MODES = ['REVERIFY', 'REPLACE'] as const;
export const FRESHNESS_KINDS = ['never', 'ttl', 'on_change', 'manual'] as const;
export const WRITE_PROFILES = [
  'read-only', 'delegated-candidate', 'owner-current', 'repo-verifier', 'automated-verifier',
] as const;
export const CONTRIBUTOR_CLASSES = [
  'OWNER', 'DELEGATED_AGENT', 'AUTOMATION', 'INGESTION_OPERATOR', 'LEGACY_UNKNOWN',
] as const;
export const COMPATIBILITY_STATES = ['COMPATIBLE', 'UNPROVEN', 'INCOMPATIBLE'] as const;
export const COMPATIBILITY_BASES = ['FRESH_EMPTY_RUNTIME_BINDING', 'OPERATOR_REEMBED'] as const;
export const STATUSES = [
  'OK', 'DUPLICATE', 'CONTRADICTION', 'DEGRADED', 'NO_MEMORY_NEEDED', 'ALREADY_CURRENT', 'BLOCKED',
] as const;
export const DEGRADATIONS = [
  'STALE_ONLY', 'CONTRADICTION_UNRESOLVED', 'HISTORY_SEMANTIC_PARTIAL', 'BUDGET_EXCEEDED',
] as const;
/** The five tools, in the order `tools/list` returns them. */
export const TOOL_NAMES = ['memory_search', 'memory_get', 'memory_store', 'memory_update', 'memory_status'] as const;

export type Scope = (typeof SCOPES)[number];
export type LifecycleState = (typeof LIFECYCLE_STATES)[number];
export type VerifiedBy = (typeof VERIFIED_BY)[number];
export type MemoryType = (typeof MEMORY_TYPES)[number];
export type IntentClass = (typeof INTENT_CLASSES)[number];
export type WriteProfile = (typeof WRITE_PROFILES)[number];
export type ContributorClass = (typeof CONTRIBUTOR_CLASSES)[number];
export type ToolName = (typeof TOOL_NAMES)[number];
export type Status = (typeof STATUSES)[number];
export type Degradation = (typeof DEGRADATIONS)[number];
