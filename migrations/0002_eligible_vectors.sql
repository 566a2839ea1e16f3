-- Eligible vector forms (STORAGE.md §4.5, docs/decisions/0017-eligible-vector-layout.md): CURRENT semantic search
-- reads only VALIDATED_CURRENT vectors of the exact scope, so Candidates are neither scored nor counted against k.
-- Frozen once landed. fact_vec stays the float source of every vector; these three tables are derived from it and
-- are kept in the same transaction as every lifecycle change. The migration runner rebuilds them from fact_vec
-- right after this file (a database created at this version starts them empty).

-- The float vector of each VALIDATED_CURRENT record, copied from fact_vec: the exact re-scoring reads it by row_id.
-- shard says which part of the scope's codes holds its SimHash code.
CREATE TABLE eligible_vectors (
  row_id INTEGER PRIMARY KEY NOT NULL,
  scope_key TEXT NOT NULL,
  shard INTEGER NOT NULL CHECK (shard >= 0),
  embedding BLOB NOT NULL
);

-- How many eligible vectors each shard of a scope holds. A scope's codes are split into shards (8 x sqrt of the
-- scope's size, at least 256, at most 400 shards: shardCapacity), so the first pass asks each shard for a small k
-- (vec0's top-k costs rows x k).
CREATE TABLE eligible_shards (
  scope_key TEXT NOT NULL,
  shard INTEGER NOT NULL CHECK (shard >= 0),
  size INTEGER NOT NULL CHECK (size >= 0),
  PRIMARY KEY (scope_key, shard)
) WITHOUT ROWID;
CREATE INDEX idx_eligible_shards_size ON eligible_shards (scope_key, size, shard);

-- The approximate first pass: a 768-bit SimHash of each eligible vector (seeded projection, version 1 in the
-- column name), partitioned by scope_key || '/' || shard. Results are always re-scored exactly on the float vector.
CREATE VIRTUAL TABLE eligible_codes USING vec0 (
  shard_key text partition key,
  simhash_v1 bit[768],
  chunk_size=128
);

CREATE TRIGGER factlane_v2_eligible_vectors_insert_fence BEFORE INSERT ON eligible_vectors
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

CREATE TRIGGER factlane_v2_eligible_vectors_update_fence BEFORE UPDATE ON eligible_vectors
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

CREATE TRIGGER factlane_v2_eligible_vectors_delete_fence BEFORE DELETE ON eligible_vectors
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

CREATE TRIGGER factlane_v2_eligible_shards_insert_fence BEFORE INSERT ON eligible_shards
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

CREATE TRIGGER factlane_v2_eligible_shards_update_fence BEFORE UPDATE ON eligible_shards
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

CREATE TRIGGER factlane_v2_eligible_shards_delete_fence BEFORE DELETE ON eligible_shards
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;
