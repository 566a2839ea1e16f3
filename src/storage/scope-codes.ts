import { sql, type DatabaseConnection } from 'kysely';
import { CODE_BYTES } from './hamming-scan.js';
import { sameChangeState, type ChangeState, type Reader } from './read-snapshot.js';
import { runShape } from './statement-shapes.js';

// A coded scope's SimHash codes, read from vec0's chunks of `eligible_codes` and kept per connection while the
// database stays unchanged (decision 0053), so a search's first pass reads memory, not the file.

/** The valid codes of a coded scope, shard after shard, and where each shard's run starts and ends. */
export interface ScopeCodes {
  /** Codes of CODE_BYTES each, laid end to end. */
  readonly codes: Uint8Array;
  /** The record's row id of each code, by position (vec0 keeps them as 64-bit integers). */
  readonly rowIds: BigInt64Array;
  /** Per shard number, the positions [from, to) of its codes. */
  readonly runs: ReadonlyMap<number, readonly [number, number]>;
}

/** Codes kept per connection, at most this many bytes; the scope searched longest ago goes first. */
export const KEPT_CODE_BYTES = 64 * 1024 * 1024;

/** What one connection keeps: the state its codes were read in, and the codes by scope, least recent first. */
interface Kept {
  state: ChangeState;
  bytes: number;
  readonly scopes: Map<string, ScopeCodes>;
}

/**
 * Scopes' codes kept per connection while the database is in one state, at most `maxBytes` of codes and row ids per
 * connection, the scope asked for longest ago dropped first. The state is `total_changes()` and `data_version`: both
 * only grow, so when they move every scope kept is dropped at once (none can be served again). A scope of more than
 * `maxBytes` is read and returned, and keeps nothing out.
 */
export class KeptCodes {
  readonly #byConnection = new WeakMap<object, Kept>();

  constructor(readonly maxBytes: number) {}

  /** The codes of `scopeKey` for `connection` in `state`: the ones kept, or `read()`'s, kept when they fit. */
  async codes(
    connection: object, state: ChangeState, scopeKey: string, read: () => Promise<ScopeCodes>,
  ): Promise<ScopeCodes> {
    let kept = this.#byConnection.get(connection);
    if (kept === undefined) this.#byConnection.set(connection, kept = { state, bytes: 0, scopes: new Map() });
    if (!sameChangeState(kept.state, state)) {
      kept.scopes.clear();
      kept.bytes = 0;
      kept.state = state;
    }
    const known = kept.scopes.get(scopeKey);
    if (known !== undefined) {
      kept.scopes.delete(scopeKey);
      kept.scopes.set(scopeKey, known);
      return known;
    }
    const scope = await read();
    const bytes = keptBytes(scope);
    // Kept only if nothing moved the state while it was read (a connection serves one snapshot at a time).
    if (bytes > this.maxBytes || !sameChangeState(kept.state, state)) return scope;
    for (const [key, old] of kept.scopes) {
      if (kept.bytes + bytes <= this.maxBytes) break;
      kept.scopes.delete(key);
      kept.bytes -= keptBytes(old);
    }
    kept.scopes.set(scopeKey, scope);
    kept.bytes += bytes;
    return scope;
  }
}

function keptBytes(scope: ScopeCodes): number {
  return scope.codes.byteLength + scope.rowIds.byteLength;
}

const KEPT = new KeptCodes(KEPT_CODE_BYTES);

/**
 * The codes of `scopeKey` as the snapshot `reader` is in sees them. `state` is `total_changes()` and
 * `data_version` read in that snapshot: kept codes (KeptCodes, per SQLite connection) are served only while both are
 * what they were when the codes were read, so any commit since, of this connection (its count of changed rows moves)
 * or of another one (`data_version` moves), makes the next search read them again. Only a read snapshot (inSnapshot,
 * which never writes) keeps codes: inside a write transaction the codes may be ones a rollback takes back, with the
 * count of changes already moved past them.
 */
export async function scopeCodes(reader: Reader, scopeKey: string, state: ChangeState): Promise<ScopeCodes> {
  if (reader.isTransaction) return readScopeCodes(reader, scopeKey);
  const connection: DatabaseConnection = await reader.getExecutor().provideConnection(async (held) => held);
  return KEPT.codes(connection, state, scopeKey, () => readScopeCodes(reader, scopeKey));
}

/**
 * Reads the scope's codes from vec0's own tables for `eligible_codes` (sqlite-vec 0.1.9): per chunk of a shard's
 * partition, a validity bitmap, the row ids (64-bit) and the codes of its slots; a slot counts when its validity
 * bit is set. A KNN through vec0 reads the same rows. Migration 0004 indexes the chunks by partition, and a scope's
 * partitions are `scope_key/shard`, so one range of that index holds them all (the LEFT JOIN keeps the chunks
 * first, where SQLite without statistics would rather walk every chunk's codes, and shows a chunk without codes).
 * vec0 declares its codes' `rowid` without a type: compared with the integer `chunk_id` it would take numeric affinity
 * and leave its index unused, hence the `+`. A chunk laid out otherwise (another sqlite-vec) or without its codes
 * (a damaged file) throws.
 */
async function readScopeCodes(reader: Reader, scopeKey: string): Promise<ScopeCodes> {
  type Chunk = { shard_key: string; validity: Uint8Array; rowids: Uint8Array; vectors: Uint8Array | null };
  const { rows } = await runShape(reader, 'scopeCodeChunks', [`${scopeKey}/`, `${scopeKey}0`], ([from, to]) =>
    sql<Chunk>`SELECT c.partition00 AS shard_key, c.validity, c.rowids, v.vectors
      FROM eligible_codes_chunks c LEFT JOIN eligible_codes_vector_chunks00 v ON v.rowid = +c.chunk_id
      WHERE c.partition00 >= ${from} AND c.partition00 < ${to} ORDER BY c.partition00, c.chunk_id`.compile(reader));
  let valid = 0;
  for (const chunk of rows) {
    const chunkSlots = chunk.validity.length * 8;
    if (chunk.vectors === null)
      throw new Error(`eligible_codes: a chunk of ${chunk.shard_key} has no codes (a damaged file)`);
    if (chunk.rowids.length !== chunkSlots * 8 || chunk.vectors.length !== chunkSlots * CODE_BYTES)
      throw new Error(`eligible_codes: a chunk of ${chunkSlots} slots holds ${chunk.rowids.length} bytes of row ids `
        + `and ${chunk.vectors.length} of codes (not sqlite-vec 0.1.9's layout)`);
    for (let slot = 0; slot < chunkSlots; slot += 1) if (isValid(chunk.validity, slot)) valid += 1;
  }
  // Every byte is written below, so the codes' memory is not zeroed first (a 10k scope's codes are 0.9 MiB).
  const codes: Uint8Array = Buffer.allocUnsafeSlow(valid * CODE_BYTES);
  const rowIds = new BigInt64Array(valid);
  const rowIdBytes = new Uint8Array(rowIds.buffer);
  const runs = new Map<number, [number, number]>();
  let count = 0;
  for (const chunk of rows) {
    const shard = Number(chunk.shard_key.slice(scopeKey.length + 1));
    const run = runs.get(shard) ?? [count, count];
    runs.set(shard, run);
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
      codes.set(chunk.vectors!.subarray(first * CODE_BYTES, slot * CODE_BYTES), count * CODE_BYTES);
      rowIdBytes.set(chunk.rowids.subarray(first * 8, slot * 8), count * 8);
      count += slot - first;
    }
    run[1] = count;
  }
  return { codes, rowIds, runs };
}

/** Whether `slot`'s bit is set in a chunk's validity bitmap (least significant bit first). */
function isValid(validity: Uint8Array, slot: number): boolean {
  return (validity[slot >> 3]! & (1 << (slot & 7))) !== 0;
}
