-- A generation for each shard of a coded scope (docs/decisions/0054-shard-generations.md). Frozen once landed.
--
-- A search keeps a coded scope's SimHash codes in memory between searches (decision 0053). Until this schema it read
-- all of them again after any commit, in any scope, by any process: 0.75 ms for a 10k scope, 9 ms for a 100k one.
-- Every statement that changes the codes of a shard (a code added or removed, a scope coded or rebuilt) now gives that
-- shard a new generation in the same transaction, a random positive integer below 2^53 (exact in JavaScript), so a
-- search reads again only the shards whose generation moved. Random, not counted: a rebuild deletes and recreates
-- every shard, and a count would start again at the same numbers. A shard coded before this schema keeps generation
-- 0 until its codes next change; no writer gives 0.
ALTER TABLE eligible_shards ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
