-- vec0 chunks: SimHash codes in chunks of 512, and each vec0 table's chunks found by partition through an index
-- (STORAGE.md §4.5, docs/decisions/0028-vec0-chunks.md). Frozen once landed.
--
-- vec0 (sqlite-vec 0.1.9) finds a partition's chunks with `SELECT … FROM <table>_chunks WHERE partition00 = ?` for
-- every KNN, and the partition's last chunk with `SELECT max(rowid) … WHERE partition00 = ?` for every insert. Its
-- chunks table has no index on that column, so both scanned every chunk of every partition in the file: with 1,000
-- scopes of 20 facts, a small scope's CURRENT KNN took 152 µs and a vector insert 72 µs, and 621 / 366 µs with 5,000,
-- against 38 / 13 µs with the index, whatever the number of scopes. The index keeps the rows in chunk id order
-- within a partition, the order the scan gave, so every KNN returns the same rows.
--
-- Only a coded scope (more than 256 records) has codes, one partition per shard of at least 256, so a chunk of 128
-- split every shard into two or more: at 100k current facts (40 shards of 2,536) the first pass took 10.6 ms with
-- chunks of 128 and 7.2 ms with chunks of 512 (the same codes, one file); an insert costs the same. vec0 fixes a
-- chunk size at creation: the codes' table is created again, empty, and the migration runner rebuilds every eligible
-- form from fact_vec right after this file, in the same transaction.

DROP TABLE eligible_codes;

CREATE VIRTUAL TABLE eligible_codes USING vec0 (
  shard_key text partition key,
  simhash_v1 bit[768],
  chunk_size=512
);

CREATE INDEX idx_eligible_codes_chunks_partition ON eligible_codes_chunks (partition00);

CREATE INDEX idx_fact_vec_chunks_partition ON fact_vec_chunks (partition00);
