import { sql, type DatabaseConnection } from 'kysely';
import { CODE_BYTES, releaseRun } from './hamming-scan.js';
import type { Reader } from './read-snapshot.js';
import { runShape } from './statement-shapes.js';

// A coded scope's SimHash codes, read from vec0's chunks of `eligible_codes` and kept per connection (decision 0053),
// shard by shard while each shard's generation stays the same (schema 6, decision 0054), so a search's first pass
// reads memory, not the file, and a commit makes it read again only the shards whose codes it changed. Each shard's
// codes are arrays of their own, kept as the same objects while its generation holds (decision 0055).

/** One shard's valid codes and their records' row ids, as read from vec0's chunks. */
export interface ShardCodes {
  /** Codes of CODE_BYTES each, laid end to end. */
  readonly codes: Uint8Array;
  /** The record's row id of each code, by position (vec0 keeps them as 64-bit integers). */
  readonly rowIds: BigInt64Array;
}

/**
 * A coded scope's codes, by shard number in the order the shards were asked for (shard order: eligible_shards is read
 * `ORDER BY shard`). A shard without a chunk has no entry. Each shard's codes are arrays of their own: a commit
 * replaces the arrays of the shards it changed, and the others stay the same objects (the first pass's WebAssembly
 * memory does not copy them again, hamming-scan.ts).
 */
export type ScopeCodes = ReadonlyMap<number, ShardCodes>;

/** A shard of a scope as `eligible_shards` holds it: its number and its generation. */
export interface ShardGeneration {
  readonly shard: number;
  readonly generation: number;
}

/** Codes kept per connection, at most this many bytes; the scope searched longest ago goes first. */
export const KEPT_CODE_BYTES = 64 * 1024 * 1024;

/** A scope's codes as kept: its codes, their bytes, and the generation each of its shards had when they were read. */
interface KeptScope {
  readonly codes: ScopeCodes;
  readonly bytes: number;
  readonly generations: ReadonlyMap<number, number>;
}

/** What one connection keeps: its scopes' codes, least recent first, and their bytes. */
interface Kept {
  bytes: number;
  readonly scopes: Map<string, KeptScope>;
}

/**
 * Scopes' codes kept per connection, at most `maxBytes` of codes and row ids per connection, the scope asked for
 * longest ago dropped first. A shard's codes are served while its generation is the one they were read in: every
 * statement that changes them gives the shard a new one (eligible-vectors.ts). A scope of more than `maxBytes` is read
 * and returned, and keeps nothing out.
 */
export class KeptCodes {
  readonly #byConnection = new WeakMap<object, Kept>();
  readonly #release: (codes: Uint8Array) => void;

  /** `release` is told of each array of codes let go: dropped with its scope, or replaced by a read. */
  constructor(readonly maxBytes: number, release: (codes: Uint8Array) => void = () => {}) {
    this.#release = release;
  }

  /**
   * The codes of `scopeKey`'s `shards` (in shard order) for `connection`: those of the shards kept in the same
   * generation (the same arrays), and `read(shards)`'s for the others (all of them when nothing is kept).
   */
  async codes(
    connection: object, scopeKey: string, shards: readonly ShardGeneration[],
    read: (shards: readonly number[]) => Promise<ScopeCodes>,
  ): Promise<ScopeCodes> {
    let kept = this.#byConnection.get(connection);
    if (kept === undefined) this.#byConnection.set(connection, kept = { bytes: 0, scopes: new Map() });
    const known = kept.scopes.get(scopeKey);
    const moved = shards.filter(({ shard, generation }) => known?.generations.get(shard) !== generation);
    if (known !== undefined) {
      kept.scopes.delete(scopeKey);
      kept.bytes -= known.bytes;
      if (moved.length === 0 && known.generations.size === shards.length) {
        kept.scopes.set(scopeKey, known);
        kept.bytes += known.bytes;
        return known.codes;
      }
    }
    const fresh = await read(moved.map(({ shard }) => shard));
    const movedShards = new Set(moved.map(({ shard }) => shard));
    const codes = new Map<number, ShardCodes>();
    for (const { shard } of shards) {
      const codesOfShard = (movedShards.has(shard) ? fresh : known?.codes)?.get(shard);
      if (codesOfShard !== undefined) codes.set(shard, codesOfShard);
    }
    if (known !== undefined) this.#letGo(known.codes, codes);
    const bytes = keptBytes(codes);
    if (bytes > this.maxBytes) return codes;
    // A connection serves one snapshot at a time, so no other search kept this scope meanwhile; if one did, it goes.
    const meanwhile = kept.scopes.get(scopeKey);
    if (meanwhile !== undefined) {
      kept.scopes.delete(scopeKey);
      kept.bytes -= meanwhile.bytes;
      this.#letGo(meanwhile.codes, codes);
    }
    for (const [key, old] of kept.scopes) {
      if (kept.bytes + bytes <= this.maxBytes) break;
      kept.scopes.delete(key);
      kept.bytes -= old.bytes;
      this.#letGo(old.codes);
    }
    const generations = new Map(shards.map(({ shard, generation }) => [shard, generation]));
    kept.scopes.set(scopeKey, { codes, bytes, generations });
    kept.bytes += bytes;
    return codes;
  }

  /** Releases the code arrays of `old` that `still` does not hold. */
  #letGo(old: ScopeCodes, still?: ScopeCodes): void {
    const held = new Set(still === undefined ? [] : [...still.values()].map(({ codes }) => codes));
    for (const { codes } of old.values()) if (!held.has(codes)) this.#release(codes);
  }
}

function keptBytes(scope: ScopeCodes): number {
  let bytes = 0;
  for (const { codes, rowIds } of scope.values()) bytes += codes.byteLength + rowIds.byteLength;
  return bytes;
}

const KEPT = new KeptCodes(KEPT_CODE_BYTES, releaseRun);

/**
 * The codes of `scopeKey`'s `shards` (its `eligible_shards` rows, in shard order) as the snapshot `reader` is in sees
 * them: kept per SQLite connection (KeptCodes), a shard's codes read again when its generation moved. Only a read
 * snapshot (inSnapshot, which never writes) keeps codes; a write transaction reads them all (out of caution: a rolled
 * back generation is never drawn again, but searches inside a write are rare and nothing would be gained).
 */
export async function scopeCodes(
  reader: Reader, scopeKey: string, shards: readonly ShardGeneration[],
): Promise<ScopeCodes> {
  const all = shards.map(({ shard }) => shard);
  if (reader.isTransaction) return readScopeCodes(reader, scopeKey, all);
  const connection: DatabaseConnection = await reader.getExecutor().provideConnection(async (held) => held);
  return KEPT.codes(connection, scopeKey, shards, (moved) => readScopeCodes(reader, scopeKey, moved));
}

/**
 * Reads the codes of a scope's `shards` from vec0's own tables for `eligible_codes` (sqlite-vec 0.1.9): per chunk of
 * a shard's partition, a validity bitmap, the row ids (64-bit) and the codes of its slots; a slot counts when its
 * validity bit is set. A KNN through vec0 reads the same rows. Migration 0004 indexes the chunks by partition (a
 * shard's partition is `scope_key/shard`), so each shard asked for is one lookup of that index (the LEFT JOIN keeps
 * the chunks first, where SQLite without statistics would rather walk every chunk's codes, and shows a chunk without
 * codes).
 * vec0 declares its codes' `rowid` without a type: compared with the integer `chunk_id` it would take numeric affinity
 * and leave its index unused, hence the `+`. A chunk laid out otherwise (another sqlite-vec) or without its codes
 * (a damaged file) throws.
 */
async function readScopeCodes(reader: Reader, scopeKey: string, shards: readonly number[]): Promise<ScopeCodes> {
  type Chunk = { shard_key: string; validity: Uint8Array; rowids: Uint8Array; vectors: Uint8Array | null };
  const partitions = JSON.stringify(shards.map((shard) => `${scopeKey}/${shard}`));
  const { rows } = await runShape(reader, 'scopeCodeChunks', [partitions], ([keys]) =>
    sql<Chunk>`SELECT c.partition00 AS shard_key, c.validity, c.rowids, v.vectors
      FROM eligible_codes_chunks c LEFT JOIN eligible_codes_vector_chunks00 v ON v.rowid = +c.chunk_id
      WHERE c.partition00 IN (SELECT value FROM json_each(${keys})) ORDER BY c.partition00, c.chunk_id`
      .compile(reader));
  const shardOf = (shardKey: string) => Number(shardKey.slice(scopeKey.length + 1));
  const valid = new Map<number, number>();
  for (const chunk of rows) {
    const chunkSlots = chunk.validity.length * 8;
    if (chunk.vectors === null)
      throw new Error(`eligible_codes: a chunk of ${chunk.shard_key} has no codes (a damaged file)`);
    if (chunk.rowids.length !== chunkSlots * 8 || chunk.vectors.length !== chunkSlots * CODE_BYTES)
      throw new Error(`eligible_codes: a chunk of ${chunkSlots} slots holds ${chunk.rowids.length} bytes of row ids `
        + `and ${chunk.vectors.length} of codes (not sqlite-vec 0.1.9's layout)`);
    const shard = shardOf(chunk.shard_key);
    let count = valid.get(shard) ?? 0;
    for (let slot = 0; slot < chunkSlots; slot += 1) if (isValid(chunk.validity, slot)) count += 1;
    valid.set(shard, count);
  }
  // Every byte is written below, so the codes' memory is not zeroed first (a 10k scope's codes are 0.9 MiB). In the
  // order of `shards`, not of the chunks' partition keys (as text, shard 10 comes before shard 2).
  const codes = new Map<number, ShardCodes>();
  for (const shard of shards) {
    const count = valid.get(shard);
    if (count !== undefined)
      codes.set(shard, { codes: Buffer.allocUnsafeSlow(count * CODE_BYTES), rowIds: new BigInt64Array(count) });
  }
  let shard = -1;
  let count = 0;
  for (const chunk of rows) {
    const chunkShard = shardOf(chunk.shard_key);
    if (chunkShard !== shard) [shard, count] = [chunkShard, 0];
    const { codes: shardCodes, rowIds } = codes.get(shard)!;
    const rowIdBytes = new Uint8Array(rowIds.buffer);
    const chunkSlots = chunk.validity.length * 8;
    // Each run of valid slots in one copy of its codes and one of its row ids (little-endian, as this platform's
    // BigInt64Array): a full chunk is one.
    for (let slot = 0; slot < chunkSlots;) {
      if (!isValid(chunk.validity, slot)) {
        slot += 1;
        continue;
      }
      const first = slot;
      while (slot < chunkSlots && isValid(chunk.validity, slot)) slot += 1;
      shardCodes.set(chunk.vectors!.subarray(first * CODE_BYTES, slot * CODE_BYTES), count * CODE_BYTES);
      rowIdBytes.set(chunk.rowids.subarray(first * 8, slot * 8), count * 8);
      count += slot - first;
    }
  }
  return codes;
}

/** Whether `slot`'s bit is set in a chunk's validity bitmap (least significant bit first). */
function isValid(validity: Uint8Array, slot: number): boolean {
  return (validity[slot >> 3]! & (1 << (slot & 7))) !== 0;
}
