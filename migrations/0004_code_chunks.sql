-- SimHash codes in chunks of 512 (STORAGE.md §4.5, docs/decisions/0028-code-chunks.md). Frozen once landed.
-- Only a coded scope (more than 256 records) has codes, one vec0 partition per shard of at least 256 of them, so a
-- chunk of 128 split every shard into two or more, and the first pass paid vec0's cost per chunk that many times:
-- at 100k current facts (40 shards of 2,536 codes) the first pass took 10.6 ms with chunks of 128 and 7.2 ms with
-- chunks of 512, the same codes in one file; at 10k, 0.87 against 0.78 ms. An insert costs the same.
--
-- vec0 (sqlite-vec 0.1.9) fixes a chunk size at creation. The codes are derived forms: the table is created again
-- empty, and the migration runner rebuilds every eligible form from fact_vec right after this file, in the same
-- transaction.

DROP TABLE eligible_codes;

CREATE VIRTUAL TABLE eligible_codes USING vec0 (
  shard_key text partition key,
  simhash_v1 bit[768],
  chunk_size=512
);
