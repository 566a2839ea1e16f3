import { AdapterError, REREAD_AND_RETRY } from '../core/adapter-error.js';
import { isJsonObject } from '../core/canonical-json.js';
import { strip } from '../core/text.js';
import type { NewRecordRow, RecordRow } from './record-rows.js';

// STORAGE.md §7.3: the storage floor re-validates lineage and current-authority metadata on every write,
// as a second line of defence behind the adapter.

const SCOPE_ROLE: Readonly<Record<string, string>> = {
  GLOBAL_USER: 'OWNER_CURRENT', PROJECT: 'PROJECT_CURRENT', WORKFLOW: 'WORKFLOW_CURRENT',
  CROSS_PROJECT_WORKFLOW: 'WORKFLOW_CURRENT', TOOL_ENVIRONMENT: 'TOOL_ENV_CURRENT',
};
const VERIFIERS = new Set(['OWNER', 'CURRENT_REPO_CHECK', 'AUTOMATED_CHECK']);
const SCOPE_COLUMNS = ['scope', 'project_id', 'worktree_id', 'workflow_id', 'agent_id'] as const;

/**
 * CONTRACT.md §4.4 rules of CROSS_PROJECT_WORKFLOW writes, with their codes: the adapter checks a store's request (and
 * an update's merged successor), and assertRecordInvariants every record it inserts (STORAGE.md §7.3).
 */
export function checkCrossProjectWrite(
  fields: { memory_type: unknown; source_provenance: unknown; freshness_policy: unknown },
): void {
  if (fields.memory_type !== 'WORKFLOW_RULE' && fields.memory_type !== 'DECISION_RATIONALE') {
    throw new AdapterError('SCOPE_TYPE_MISMATCH',
      'CROSS_PROJECT_WORKFLOW stores only WORKFLOW_RULE and DECISION_RATIONALE memories');
  }
  const provenance = isJsonObject(fields.source_provenance) ? fields.source_provenance : {};
  if (provenance.source_fingerprint !== undefined && provenance.source_fingerprint !== null) {
    throw new AdapterError('SCOPE_FRESHNESS_MISMATCH',
      'CROSS_PROJECT_WORKFLOW facts carry no source_provenance.source_fingerprint');
  }
  const freshness = isJsonObject(fields.freshness_policy) ? fields.freshness_policy : {};
  const blank = (value: unknown) => typeof value !== 'string' || strip(value) === '';
  if (freshness.kind === 'manual' && blank(freshness.recheck_ref) && blank(freshness.source_fingerprint)) {
    throw new AdapterError('INVALID_FRESHNESS',
      'CROSS_PROJECT_WORKFLOW manual freshness needs freshness_policy.recheck_ref or source_fingerprint');
  }
  // Values are compared as they will be stored: stripped, hex in lower case (CONTRACT.md §5.6).
  const hex = (value: unknown) => (typeof value === 'string' ? strip(value).toLowerCase() : null);
  if (freshness.kind === 'on_change' && !blank(freshness.recheck_ref) && hex(freshness.source_fingerprint) !== null &&
    hex(freshness.source_fingerprint) === hex(provenance.source_hash)) {
    throw new AdapterError('INVALID_FRESHNESS',
      'CROSS_PROJECT_WORKFLOW on_change freshness cannot follow a project source; use manual with recheck_ref');
  }
}

/** The authority role a current record of `scope` carries. */
export function currentRoleOf(scope: string): string {
  return SCOPE_ROLE[scope]!;
}

function shape(message: string): AdapterError {
  return new AdapterError('INVALID_ENVELOPE', `record rejected by storage validation: ${message}`);
}

/**
 * Throws INVALID_ENVELOPE when `record` breaks the current/Candidate metadata or lineage shape, and
 * VERSION_CONFLICT when its parent is no longer live. `parent` is the predecessor for a successor, null
 * for a root.
 */
export function assertRecordInvariants(record: NewRecordRow, parent: RecordRow | null): void {
  if (record.lifecycle_state === 'VALIDATED_CURRENT') {
    if (record.authority_role !== SCOPE_ROLE[record.scope])
      throw shape('a current record carries its scope\'s authority role');
    if (!VERIFIERS.has(record.verified_by)) throw shape('a current record needs a verifier');
    if (record.source_timestamp === null || record.last_verified_at === null)
      throw shape('a current record needs both timestamps');
    if (record.contradiction_state !== 'NONE' && record.contradiction_state !== 'RESOLVED')
      throw shape('a current record cannot be in contradiction');
  } else if (record.lifecycle_state === 'CANDIDATE') {
    if (record.authority_role !== 'UNRESOLVED' || record.verified_by !== 'UNVERIFIED')
      throw shape('a Candidate is UNRESOLVED and UNVERIFIED');
  } else {
    throw shape('only live records are inserted');
  }
  if (record.scope === 'CROSS_PROJECT_WORKFLOW') {
    if (SCOPE_COLUMNS.slice(1).some((key) => record[key] !== null))
      throw shape('CROSS_PROJECT_WORKFLOW records carry no identity');
    try {
      checkCrossProjectWrite({ memory_type: record.memory_type, source_provenance: JSON.parse(record.source_provenance),
        freshness_policy: JSON.parse(record.freshness_policy) });
    } catch (error) {
      if (error instanceof AdapterError) throw shape(error.message);
      throw error;
    }
  }
  const supersedes = JSON.parse(record.supersedes) as string[];
  if (parent === null) {
    if (record.revision !== 1 || record.parent_record_id !== null || supersedes.length !== 0)
      throw shape('a root is revision 1 without parent or supersedes');
    return;
  }
  if (record.parent_record_id !== parent.record_id) throw shape('parent_record_id must name the predecessor');
  if (SCOPE_COLUMNS.some((key) => record[key] !== parent[key])) throw shape('a successor keeps its parent\'s scope');
  const sameMemory = record.memory_id === parent.memory_id && record.revision === parent.revision + 1
    && supersedes.length === 0;
  const replacement = record.memory_id !== parent.memory_id && record.revision === 1 && supersedes.length === 1
    && supersedes[0] === parent.memory_id;
  if (!sameMemory && !replacement) throw shape('a successor continues its memory or replaces it');
  if (parent.lifecycle_state !== 'CANDIDATE' && parent.lifecycle_state !== 'VALIDATED_CURRENT') {
    throw new AdapterError('VERSION_CONFLICT', `the predecessor is no longer live; ${REREAD_AND_RETRY}`);
  }
}
