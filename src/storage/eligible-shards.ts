// Where a coded scope's SimHash codes go (STORAGE.md §4.5; decisions 0017, 0028 and 0035): the shards of a scope and
// their capacity, as arithmetic on shard sizes. The writes that add a code (eligible-vectors.ts) and the rebuild that
// codes a whole scope at once follow the same rule, so both leave the same shards.

/** The codes one chunk of `eligible_codes` holds (`chunk_size=512`, migration 0004). */
export const CODE_CHUNK_ROWS = 512;
/** SQLite allows 500 terms in a compound SELECT: one UNION ALL arm per shard, so a scope keeps fewer shards. */
const MAX_SHARDS = 400;

/**
 * How many vectors a scope of `total` eligible vectors fills a shard with: whole chunks of CODE_CHUNK_ROWS, as many as
 * 8·√total rounds to (at least one), and enough that the scope keeps at most MAX_SHARDS. vec0 reads and ranks every
 * slot of each chunk a first pass touches, filled or not, so a shard ending just past a chunk's end costs a whole
 * chunk more (decision 0035). The first pass costs about k × shard size per shard, with k in proportion to the shard's
 * share of FIRST_PASS_ROWS, so about FIRST_PASS_ROWS × shard size in all: small shards for small scopes. Each shard
 * also costs a statement arm and at least MIN_SHARD_K candidates to re-score, so big scopes want fewer, bigger
 * shards; √total balances the two (decisions 0017 and 0035 have the measurements).
 */
export function shardCapacity(total: number): number {
  const chunks = Math.max(1, Math.round((8 * Math.sqrt(total)) / CODE_CHUNK_ROWS),
    Math.ceil(total / MAX_SHARDS / CODE_CHUNK_ROWS));
  return chunks * CODE_CHUNK_ROWS;
}

/**
 * Which of a scope's shards (their sizes, in shard order) the next eligible vector goes to: the newest shard still
 * under shardCapacity of the new total, else a new shard (`sizes.length`). Shards fill one at a time, so all but the
 * one filling stay in whole chunks while the capacity grows. A place freed in an older shard (a record superseded) is
 * taken again only once every newer shard is full: vec0 reuses a free slot of a partition's last chunk only, so filling
 * an older shard's gap could open a chunk for one code.
 */
export function nextShard(sizes: readonly number[]): number {
  const capacity = shardCapacity(sizes.reduce((sum, size) => sum + size, 1));
  for (let shard = sizes.length - 1; shard >= 0; shard -= 1) if (sizes[shard]! < capacity) return shard;
  return sizes.length;
}

/**
 * The shard of each of `count` vectors added one at a time, in order, to a scope without shards, exactly as
 * addEligibleVector chooses it (nextShard), and each shard's size after the last.
 */
export function shardsOfNewScope(count: number): { shards: readonly number[]; sizes: readonly number[] } {
  const shards: number[] = [];
  const sizes: number[] = [];
  for (let added = 0; added < count; added += 1) {
    const shard = nextShard(sizes);
    sizes[shard] = (sizes[shard] ?? 0) + 1;
    shards.push(shard);
  }
  return { shards, sizes };
}
