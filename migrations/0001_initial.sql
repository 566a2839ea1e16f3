-- FactLane storage contract v2: the whole schema of STORAGE.md §4-§5.
-- Frozen once landed: its SHA-256 is recorded in schema_migrations and checked on every open.

CREATE TABLE adapter_meta (
  key TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
);

CREATE TABLE schema_migrations (
  version INTEGER PRIMARY KEY NOT NULL,
  name TEXT NOT NULL,
  checksum TEXT NOT NULL,
  applied_at TEXT NOT NULL,
  applied_by TEXT NOT NULL
);

CREATE TABLE adapter_records (
  row_id INTEGER PRIMARY KEY,
  record_id TEXT NOT NULL UNIQUE,
  memory_id TEXT NOT NULL,
  revision INTEGER NOT NULL CHECK (revision >= 1),
  parent_record_id TEXT REFERENCES adapter_records (record_id),
  scope TEXT NOT NULL CHECK (scope IN ('CROSS_PROJECT_WORKFLOW', 'GLOBAL_USER', 'PROJECT', 'TOOL_ENVIRONMENT', 'WORKFLOW')),
  project_id TEXT,
  worktree_id TEXT,
  workflow_id TEXT,
  agent_id TEXT,
  scope_key TEXT NOT NULL,
  memory_type TEXT NOT NULL CHECK (memory_type IN ('USER_FACT', 'PREFERENCE', 'WORKFLOW_RULE', 'PROJECT_LEARNED_FACT', 'DECISION_RATIONALE', 'TOOL_ENVIRONMENT_FACT')),
  fact TEXT NOT NULL,
  source_provenance TEXT NOT NULL,
  source_timestamp TEXT,
  created_at TEXT NOT NULL,
  last_verified_at TEXT,
  verified_by TEXT NOT NULL CHECK (verified_by IN ('OWNER', 'CURRENT_REPO_CHECK', 'AUTOMATED_CHECK', 'UNVERIFIED')),
  authority_role TEXT NOT NULL CHECK (authority_role IN ('OWNER_CURRENT', 'PROJECT_CURRENT', 'WORKFLOW_CURRENT', 'TOOL_ENV_CURRENT', 'SUPPORTING', 'HISTORICAL', 'UNRESOLVED')),
  contribution_origin TEXT NOT NULL,
  freshness_policy TEXT NOT NULL,
  supersedes TEXT NOT NULL,
  contradiction_key TEXT NOT NULL,
  contradiction_state TEXT NOT NULL CHECK (contradiction_state IN ('NONE', 'UNRESOLVED', 'RESOLVED', 'QUARANTINED')),
  confidence REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
  tags TEXT NOT NULL,
  lifecycle_state TEXT NOT NULL CHECK (lifecycle_state IN ('CANDIDATE', 'VALIDATED_CURRENT', 'SUPERSEDED', 'QUARANTINED', 'HISTORICAL')),
  native_content_hash TEXT NOT NULL,
  payload_fingerprint TEXT NOT NULL,
  idempotency_key TEXT NOT NULL UNIQUE,
  embedding_profile_id TEXT NOT NULL,
  embedding_model_digest TEXT NOT NULL,
  embedding_output_dimension INTEGER NOT NULL
);

CREATE UNIQUE INDEX ux_adapter_memory_revision ON adapter_records (memory_id, revision);
CREATE UNIQUE INDEX ux_adapter_live_memory ON adapter_records (memory_id)
  WHERE lifecycle_state IN ('CANDIDATE', 'VALIDATED_CURRENT');
CREATE UNIQUE INDEX ux_adapter_parent ON adapter_records (parent_record_id)
  WHERE parent_record_id IS NOT NULL;
CREATE INDEX idx_adapter_scope_current ON adapter_records (scope, project_id, worktree_id, workflow_id, agent_id, lifecycle_state);
CREATE INDEX idx_adapter_scope_key ON adapter_records (scope_key, contradiction_state, created_at, record_id);
CREATE INDEX idx_adapter_content ON adapter_records (native_content_hash, lifecycle_state);
CREATE INDEX idx_adapter_contradiction ON adapter_records (contradiction_key, lifecycle_state);

-- Keyword index. Marks (M*) stay inside tokens so scripts such as Devanagari are not split.
CREATE VIRTUAL TABLE fact_fts USING fts5 (
  search_text,
  tokenize = 'unicode61 remove_diacritics 2 categories ''L* N* Co M*'''
);
-- Persistent option: deleted rows leave no index entries behind (incident recovery relies on it).
INSERT INTO fact_fts (fact_fts, rank) VALUES ('secure-delete', 1);

-- Vector index, partitioned by exact scope; is_current is a metadata column so CURRENT eligibility
-- is applied inside the KNN query before k. chunk_size 16 keeps small partitions small (STORAGE.md §4.5).
CREATE VIRTUAL TABLE fact_vec USING vec0 (
  scope_key text partition key,
  is_current integer,
  embedding float[{{VECTOR_DIMENSION}}] distance_metric=cosine,
  chunk_size=16
);

CREATE TRIGGER factlane_v2_adapter_insert_fence BEFORE INSERT ON adapter_records
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

CREATE TRIGGER factlane_v2_adapter_update_fence BEFORE UPDATE ON adapter_records
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

CREATE TRIGGER factlane_v2_adapter_delete_fence BEFORE DELETE ON adapter_records
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

CREATE TRIGGER factlane_v2_meta_insert_fence BEFORE INSERT ON adapter_meta
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

CREATE TRIGGER factlane_v2_meta_update_fence BEFORE UPDATE ON adapter_meta
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

CREATE TRIGGER factlane_v2_meta_delete_fence BEFORE DELETE ON adapter_meta
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

CREATE TRIGGER factlane_v2_migrations_insert_fence BEFORE INSERT ON schema_migrations
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

CREATE TRIGGER factlane_v2_migrations_update_fence BEFORE UPDATE ON schema_migrations
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

CREATE TRIGGER factlane_v2_migrations_delete_fence BEFORE DELETE ON schema_migrations
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;
