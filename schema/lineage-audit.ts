// The lineage invariant queries of STORAGE.md §7.4 that `factlane-admin audit` runs (OPERATIONS.md §4.4).
// Each query returns the offending rows as `sample` (a record_id, or `table:rowid` for rows without a
// record); an empty result is a PASS. Plain SQL over the storage contract v2 tables, read-only.

import { UNCODED_SCOPE_MAX_RECORDS } from './constants.js';

const LIVE = "('CANDIDATE', 'VALIDATED_CURRENT')";
const CURRENT_ROLE =
  "CASE r.scope WHEN 'GLOBAL_USER' THEN 'OWNER_CURRENT' WHEN 'PROJECT' THEN 'PROJECT_CURRENT' WHEN 'TOOL_ENVIRONMENT' "
    + "THEN 'TOOL_ENV_CURRENT' ELSE 'WORKFLOW_CURRENT' END";

/** Audit check name → the SQL selecting its violations as `sample`, ordered for stable reports. */
export const LINEAGE_AUDIT_QUERIES = Object.freeze({
  /** L2: at most one live record per memory. */
  no_current_forks: `SELECT r.record_id AS sample FROM adapter_records r WHERE r.lifecycle_state IN ${LIVE}
    AND r.memory_id IN (SELECT memory_id FROM adapter_records WHERE lifecycle_state IN ${LIVE}
      GROUP BY memory_id HAVING count(*) > 1)
    ORDER BY r.record_id`,
  /** L3: at most one successor per record. */
  single_successor: `SELECT p.record_id AS sample FROM adapter_records p
    WHERE (SELECT count(*) FROM adapter_records c WHERE c.parent_record_id = p.record_id) > 1 ORDER BY p.record_id`,
  /** L7: every SUPERSEDED or HISTORICAL record has exactly one successor; a live record has none. */
  superseded_have_successor: `SELECT p.record_id AS sample FROM adapter_records p
    WHERE (p.lifecycle_state IN ('SUPERSEDED', 'HISTORICAL')
             AND (SELECT count(*) FROM adapter_records c WHERE c.parent_record_id = p.record_id) <> 1)
       OR (p.lifecycle_state IN ${LIVE}
             AND EXISTS (SELECT 1 FROM adapter_records c WHERE c.parent_record_id = p.record_id))
    ORDER BY p.record_id`,
  /** L1, L4: revisions 1…n per memory; revision k > 1 has the memory's revision k − 1 as parent. */
  revisions_consecutive: `SELECT r.record_id AS sample FROM adapter_records r
    WHERE (r.revision > 1 AND NOT EXISTS (SELECT 1 FROM adapter_records p WHERE p.record_id = r.parent_record_id
             AND p.memory_id = r.memory_id AND p.revision = r.revision - 1))
       OR r.memory_id IN (SELECT memory_id FROM adapter_records GROUP BY memory_id
             HAVING min(revision) <> 1 OR max(revision) <> count(*))
    ORDER BY r.record_id`,
  /** L5, L6: revision 1 is a root or a REPLACE successor; a successor keeps its parent's scope tuple. */
  lineage_shape: `SELECT r.record_id AS sample FROM adapter_records r
    LEFT JOIN adapter_records p ON p.record_id = r.parent_record_id
    WHERE (r.revision = 1 AND NOT ((r.parent_record_id IS NULL AND r.supersedes = '[]')
             OR (p.record_id IS NOT NULL AND p.memory_id <> r.memory_id AND r.supersedes = json_array(p.memory_id))))
       OR (r.revision > 1 AND r.supersedes <> '[]')
       OR (r.parent_record_id IS NOT NULL AND p.record_id IS NULL)
       OR (p.record_id IS NOT NULL AND (p.scope IS NOT r.scope OR p.project_id IS NOT r.project_id
             OR p.worktree_id IS NOT r.worktree_id OR p.workflow_id IS NOT r.workflow_id
             OR p.agent_id IS NOT r.agent_id))
    ORDER BY r.record_id`,
  /** L8: current and Candidate metadata (STORAGE.md §7.3). */
  current_metadata: `SELECT r.record_id AS sample FROM adapter_records r
    WHERE (r.lifecycle_state = 'VALIDATED_CURRENT' AND (r.authority_role <> ${CURRENT_ROLE}
             OR r.verified_by NOT IN ('OWNER', 'CURRENT_REPO_CHECK', 'AUTOMATED_CHECK') OR r.source_timestamp IS NULL
             OR r.last_verified_at IS NULL OR r.contradiction_state NOT IN ('NONE', 'RESOLVED')))
       OR (r.lifecycle_state = 'CANDIDATE' AND (r.authority_role <> 'UNRESOLVED' OR r.verified_by <> 'UNVERIFIED'))
    ORDER BY r.record_id`,
  /** L9: no two current records of one scope share a contradiction key with different content. */
  contradiction_exclusive: `SELECT a.record_id AS sample FROM adapter_records a
    WHERE a.lifecycle_state = 'VALIDATED_CURRENT'
    AND EXISTS (SELECT 1 FROM adapter_records b WHERE b.lifecycle_state = 'VALIDATED_CURRENT'
      AND b.scope_key = a.scope_key AND b.contradiction_key = a.contradiction_key
      AND b.native_content_hash <> a.native_content_hash)
    ORDER BY a.record_id`,
  /**
   * L10: FTS and vector rows per lifecycle (STORAGE.md §4.5); the vector's scope_key and is_current equal the
   * record's.
   */
  derived_state: `SELECT record_id AS sample FROM (
      SELECT r.record_id, r.lifecycle_state AS state, r.scope_key AS key,
        EXISTS (SELECT 1 FROM fact_fts f WHERE f.rowid = r.row_id) AS has_fts,
        (SELECT count(*) FROM fact_vec v WHERE v.rowid = r.row_id) AS vec_rows,
        (SELECT v.scope_key FROM fact_vec v WHERE v.rowid = r.row_id) AS vec_key,
        (SELECT v.is_current FROM fact_vec v WHERE v.rowid = r.row_id) AS vec_current
      FROM adapter_records r)
    WHERE (state IN ('CANDIDATE', 'VALIDATED_CURRENT', 'SUPERSEDED')
             AND (NOT has_fts OR vec_rows <> 1 OR vec_key IS NOT key
                  OR vec_current IS NOT (state = 'VALIDATED_CURRENT')))
       OR (state = 'HISTORICAL' AND (NOT has_fts OR vec_rows <> 0))
       OR (state = 'QUARANTINED' AND (has_fts OR vec_rows <> 0))
    ORDER BY record_id`,
  /** L10: no FTS or vector row lacks its record. */
  no_orphans: `SELECT 'fact_fts:' || f.rowid AS sample FROM fact_fts f
      WHERE f.rowid NOT IN (SELECT row_id FROM adapter_records)
    UNION ALL SELECT 'fact_vec:' || v.rowid AS sample FROM fact_vec v
      WHERE v.rowid NOT IN (SELECT row_id FROM adapter_records)`,
} as const);

/**
 * The scope keys of the coded scopes (STORAGE.md §4.5, schema 3): those holding more than UNCODED_SCOPE_MAX_RECORDS
 * records of any lifecycle, in key order. The rebuild of the eligible forms and L10 read the rule from here.
 */
export const CODED_SCOPE_KEYS_QUERY = `SELECT scope_key FROM adapter_records GROUP BY scope_key
      HAVING count(*) > ${UNCODED_SCOPE_MAX_RECORDS} ORDER BY scope_key`;

/** The checks common to both rules below: each form in its record's scope with the record's float bytes and shard. */
const ELIGIBLE_FORMS_MATCH = `e.row_id IS NOT NULL AND (e.scope_key IS NOT r.scope_key
               OR e.embedding IS NOT (SELECT v.embedding FROM fact_vec v WHERE v.rowid = r.row_id)
               OR (SELECT c.shard_key FROM eligible_codes c WHERE c.rowid = r.row_id)
                  IS NOT e.scope_key || '/' || e.shard)`;

/** Eligible rows without their record or their float copy, and shard sizes that do not count their vectors. */
const ELIGIBLE_ROWS_CONSISTENT = `SELECT 'eligible_vectors:' || e.row_id FROM eligible_vectors e
      WHERE e.row_id NOT IN (SELECT row_id FROM adapter_records)
         OR NOT EXISTS (SELECT 1 FROM eligible_shards s WHERE s.scope_key = e.scope_key AND s.shard = e.shard)
    UNION ALL SELECT 'eligible_codes:' || c.rowid FROM eligible_codes c
      WHERE c.rowid NOT IN (SELECT row_id FROM eligible_vectors)
    UNION ALL SELECT 'eligible_shards:' || s.scope_key || '/' || s.shard FROM eligible_shards s
      LEFT JOIN (SELECT scope_key, shard, count(*) AS n FROM eligible_vectors GROUP BY scope_key, shard) g
        ON g.scope_key = s.scope_key AND g.shard = s.shard
      WHERE s.size IS NOT coalesce(g.n, 0)`;

/**
 * L10 under the vector layout of schema 3 (STORAGE.md §4.5, docs/decisions/0027-small-scope-vectors.md): a scope with
 * more than UNCODED_SCOPE_MAX_RECORDS records is coded (at least one `eligible_shards` row), and each of its
 * VALIDATED_CURRENT records, and no other, has its eligible forms: an `eligible_vectors` row holding the same float
 * bytes as its `fact_vec` row, and an `eligible_codes` row in that row's shard. A scope with fewer records has no
 * eligible row of any kind. No eligible row lacks its record or its float copy; each `eligible_shards` size counts its
 * shard's vectors. (That each code is the SimHash of its vector is checked by code: the projection is not SQL.)
 */
export const ELIGIBLE_AUDIT_QUERY = `WITH coded AS (${CODED_SCOPE_KEYS_QUERY})
  SELECT sample FROM (
    SELECT r.record_id AS sample FROM adapter_records r LEFT JOIN eligible_vectors e ON e.row_id = r.row_id
      WHERE (r.lifecycle_state = 'VALIDATED_CURRENT' AND r.scope_key IN (SELECT scope_key FROM coded))
              <> (e.row_id IS NOT NULL)
         OR (${ELIGIBLE_FORMS_MATCH})
    UNION ALL ${ELIGIBLE_ROWS_CONSISTENT}
    UNION ALL SELECT 'eligible_shards:' || s.scope_key || '/' || s.shard FROM eligible_shards s
      WHERE s.scope_key NOT IN (SELECT scope_key FROM coded)
    UNION ALL SELECT 'eligible_shards:' || c.scope_key FROM coded c
      WHERE NOT EXISTS (SELECT 1 FROM eligible_shards s WHERE s.scope_key = c.scope_key))
  ORDER BY sample`;

/**
 * L10 under the schema-2 layout, for a database not yet migrated to schema 3: every VALIDATED_CURRENT record, and no
 * other, has its eligible forms, whatever the size of its scope; the rest as ELIGIBLE_AUDIT_QUERY.
 */
export const ELIGIBLE_AUDIT_QUERY_SCHEMA_2 = `SELECT sample FROM (
    SELECT r.record_id AS sample FROM adapter_records r LEFT JOIN eligible_vectors e ON e.row_id = r.row_id
      WHERE (r.lifecycle_state = 'VALIDATED_CURRENT') <> (e.row_id IS NOT NULL)
         OR (${ELIGIBLE_FORMS_MATCH})
    UNION ALL ${ELIGIBLE_ROWS_CONSISTENT})
  ORDER BY sample`;

/** The schema version from which ELIGIBLE_AUDIT_QUERY applies; older eligible layouts use the schema-2 query. */
export const ELIGIBLE_AUDIT_QUERY_SINCE_SCHEMA = 3;

/** The names of the lineage checks, in report order. */
export type LineageCheck = keyof typeof LINEAGE_AUDIT_QUERIES;

/**
 * The stored token counts (schema 5, docs/decisions/0036-record-token-counts.md): no count without its record
 * (`record_token_counts:<rowid>`), and none for a QUARANTINED record (its record_id: a purge deletes its count, since
 * the tombstone changes the pieces it covers). A record may lack a count (written before schema 5, or by a migration
 * run without a counter): it is counted whole when read.
 */
export const TOKEN_COUNTS_AUDIT_QUERY = `SELECT coalesce(r.record_id, 'record_token_counts:' || t.row_id)
    FROM record_token_counts t LEFT JOIN adapter_records r ON r.row_id = t.row_id
    WHERE r.row_id IS NULL OR r.lifecycle_state = 'QUARANTINED'
  ORDER BY t.row_id`;
