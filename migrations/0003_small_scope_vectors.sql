-- Small scopes keep each vector once (STORAGE.md §4.5 rule 4, docs/decisions/0027-small-scope-vectors.md).
-- Frozen once landed. fact_vec stays the float source of every vector, with the same columns; only its chunk
-- size goes from 16 to 8, the least vec0 allows, so a scope of 20 vectors fills 24 slots instead of 32.
-- The eligible forms of schema 2 become derived forms of large scopes only: a scope holding at most 256 records
-- keeps none and is searched exactly on fact_vec. The migration runner rebuilds them from fact_vec right after
-- this file, under that rule.
--
-- vec0 (sqlite-vec 0.1.9) cannot rename a table, and a chunk size is fixed at creation: the vectors are copied
-- out to a work table and back into fact_vec as now defined. Row ids, scope keys, is_current and the float bytes
-- are kept as they are; the copy also drops the holes that deleted vectors left in the old chunks.

CREATE VIRTUAL TABLE fact_vec_rechunk USING vec0 (
  scope_key text partition key,
  is_current integer,
  embedding float[{{VECTOR_DIMENSION}}] distance_metric=cosine,
  chunk_size=8
);
INSERT INTO fact_vec_rechunk (rowid, scope_key, is_current, embedding)
  SELECT rowid, scope_key, is_current, embedding FROM fact_vec ORDER BY rowid;
DROP TABLE fact_vec;

CREATE VIRTUAL TABLE fact_vec USING vec0 (
  scope_key text partition key,
  is_current integer,
  embedding float[{{VECTOR_DIMENSION}}] distance_metric=cosine,
  chunk_size=8
);
INSERT INTO fact_vec (rowid, scope_key, is_current, embedding)
  SELECT rowid, scope_key, is_current, embedding FROM fact_vec_rechunk ORDER BY rowid;
DROP TABLE fact_vec_rechunk;
