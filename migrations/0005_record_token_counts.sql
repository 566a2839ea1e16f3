-- The token count of each record's public form, kept beside it (docs/decisions/0036-record-token-counts.md). Frozen
-- once landed.
--
-- A search fits its results into an o200k_base token budget (CONTRACT.md §12.5), and counting a record it has not
-- counted before took about 75 µs, most of a 10k search's budget fitting (0.36 ms). The count of a public record's
-- canonical JSON is the sum of the counts of its key pieces (decision 0011): four of them change after the record is
-- written or from one search to the next (contradiction_state, lifecycle_state, relevance_score, retrieval_rank),
-- the others never do, apart from a recovery purge, which deletes the count with the rest of the derived rows. The
-- writer counts the record anyway (the single-record budget, the write envelope), so the count of its fixed pieces
-- is stored in the same transaction, and a search adds the four short pieces it reads. A record without a count
-- (written before this schema, or a purged tombstone) is counted whole, as before.
CREATE TABLE record_token_counts (
  row_id INTEGER PRIMARY KEY NOT NULL,
  fixed_tokens INTEGER NOT NULL CHECK (fixed_tokens > 0)
);

CREATE TRIGGER factlane_v2_token_counts_insert_fence BEFORE INSERT ON record_token_counts
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

CREATE TRIGGER factlane_v2_token_counts_update_fence BEFORE UPDATE ON record_token_counts
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

CREATE TRIGGER factlane_v2_token_counts_delete_fence BEFORE DELETE ON record_token_counts
WHEN factlane_contract_v2_writer() IS NOT 1
BEGIN SELECT RAISE(ABORT, 'FACTLANE_STORAGE_V2_WRITER_REQUIRED'); END;

-- Read by nothing since schema 4's shards fill one at a time (docs/decisions/0035-shards-of-whole-chunks.md).
DROP INDEX idx_eligible_shards_size;
