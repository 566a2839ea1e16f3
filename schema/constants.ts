/** Public contract revision of the five MCP tools (CONTRACT.md). */
export const PUBLIC_CONTRACT_REVISION = 2;
/** Storage contract version: the meaning of stored records (STORAGE.md). */
export const STORAGE_CONTRACT_VERSION = 2;
/**
 * The schema version this package describes (STORAGE.md §12.5): the newest shipped migration. Its audit queries (L10
 * in particular, see ELIGIBLE_AUDIT_QUERY_SINCE_SCHEMA) are those of this version.
 */
export const SCHEMA_VERSION = 6;
/** Oldest linked SQLite runtime FactLane accepts (STORAGE.md §1). */
export const SQLITE_MINIMUM_VERSION = '3.42.0';
/** Oldest sqlite-vec FactLane accepts (STORAGE.md §1). */
export const SQLITE_VEC_MINIMUM_VERSION = '0.1.6';
/**
 * The most records (of any lifecycle) a scope holds while it keeps no eligible vector forms (STORAGE.md §4.5; schema
 * 3, docs/decisions/0027-small-scope-vectors.md). Such a scope's CURRENT semantic search is exact, on `fact_vec`. A
 * scope with more records is coded: it has an `eligible_shards` row and the eligible forms of every
 * VALIDATED_CURRENT record. Records are never deleted, so a scope is coded from its 257th record on, for good.
 */
export const UNCODED_SCOPE_MAX_RECORDS = 256;
/** Name of the connection-local writer function the fence triggers call (STORAGE.md §5). */
export const WRITER_FUNCTION_NAME = 'factlane_contract_v2_writer';
/** Marker raised by a fence trigger when the writer gate is closed (STORAGE.md §5). */
export const WRITER_FENCE_MARKER = 'FACTLANE_STORAGE_V2_WRITER_REQUIRED';
/**
 * The fence triggers (STORAGE.md §5, §4.6), in table order: the nine of schema 1, the six that schema 2 adds on its
 * real vector tables (`eligible_vectors`, `eligible_shards`), and the three of schema 5's `record_token_counts`. A
 * database checks those its version defines.
 */
export const FENCE_TRIGGER_NAMES = Object.freeze([
  'factlane_v2_adapter_insert_fence',
  'factlane_v2_adapter_update_fence',
  'factlane_v2_adapter_delete_fence',
  'factlane_v2_meta_insert_fence',
  'factlane_v2_meta_update_fence',
  'factlane_v2_meta_delete_fence',
  'factlane_v2_migrations_insert_fence',
  'factlane_v2_migrations_update_fence',
  'factlane_v2_migrations_delete_fence',
  'factlane_v2_eligible_vectors_insert_fence',
  'factlane_v2_eligible_vectors_update_fence',
  'factlane_v2_eligible_vectors_delete_fence',
  'factlane_v2_eligible_shards_insert_fence',
  'factlane_v2_eligible_shards_update_fence',
  'factlane_v2_eligible_shards_delete_fence',
  'factlane_v2_token_counts_insert_fence',
  'factlane_v2_token_counts_update_fence',
  'factlane_v2_token_counts_delete_fence',
] as const);
/** The table each fence trigger guards: a database that has the table must have its three fences. */
export const FENCED_TABLE_OF: Readonly<Record<(typeof FENCE_TRIGGER_NAMES)[number], string>> = Object.freeze({
  factlane_v2_adapter_insert_fence: 'adapter_records',
  factlane_v2_adapter_update_fence: 'adapter_records',
  factlane_v2_adapter_delete_fence: 'adapter_records',
  factlane_v2_meta_insert_fence: 'adapter_meta',
  factlane_v2_meta_update_fence: 'adapter_meta',
  factlane_v2_meta_delete_fence: 'adapter_meta',
  factlane_v2_migrations_insert_fence: 'schema_migrations',
  factlane_v2_migrations_update_fence: 'schema_migrations',
  factlane_v2_migrations_delete_fence: 'schema_migrations',
  factlane_v2_eligible_vectors_insert_fence: 'eligible_vectors',
  factlane_v2_eligible_vectors_update_fence: 'eligible_vectors',
  factlane_v2_eligible_vectors_delete_fence: 'eligible_vectors',
  factlane_v2_eligible_shards_insert_fence: 'eligible_shards',
  factlane_v2_eligible_shards_update_fence: 'eligible_shards',
  factlane_v2_eligible_shards_delete_fence: 'eligible_shards',
  factlane_v2_token_counts_insert_fence: 'record_token_counts',
  factlane_v2_token_counts_update_fence: 'record_token_counts',
  factlane_v2_token_counts_delete_fence: 'record_token_counts',
});
