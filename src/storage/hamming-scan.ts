import { SIMHASH_BITS } from './simhash-projection.js';

// The first pass of a CURRENT semantic search over a coded scope (decision 0053): the Hamming distance from the
// query's SimHash code to each code of the scope, in a WebAssembly loop that counts bits with the CPU's `popcnt`
// (about 40 µs for 10,000 codes; vec0's KNN over the same codes took 0.7-2 ms, and the same loop in JavaScript
// 0.7 ms), then each shard's k nearest picked by a count of distances, not by k passes over the shard.

/** Bytes of one SimHash code (`bit[768]`, as vec0 stores it). */
export const CODE_BYTES = SIMHASH_BITS / 8;
const WORDS = CODE_BYTES / 8;
/** Where the query's code sits in the module's memory; the codes follow it, then their distances. */
const CODES_AT = 128;
const PAGE_BYTES = 65_536;

/**
 * The module, written out by hand (WebAssembly binary format 1): one memory, exported as `memory`, and one function
 * `scan(codes, count, query, out)` that writes, for i below count, the popcount of (code i XOR query) as a 16-bit
 * distance at `out + 2i`. The query's twelve 64-bit words are held in locals; each code costs twelve loads, XORs,
 * popcounts and adds. test/10-storage/32-hamming-scan.test.ts checks it against a bit-by-bit count.
 */
function scanModule(): Uint8Array {
  const uleb = (value: number): number[] => {
    const out: number[] = [];
    do {
      let byte = value & 0x7f;
      value >>>= 7;
      if (value !== 0) byte |= 0x80;
      out.push(byte);
    } while (value !== 0);
    return out;
  };
  const section = (id: number, body: number[]) => [id, ...uleb(body.length), ...body];
  const name = (text: string) => [text.length, ...new TextEncoder().encode(text)];
  const [I32, I64] = [0x7f, 0x7e];
  // Opcodes used below.
  const op = {
    block: 0x02, loop: 0x03, br: 0x0c, brIf: 0x0d, end: 0x0b, get: 0x20, set: 0x21, i32Const: 0x41,
    i64Load: 0x29, i32Store16: 0x3b, i32GeU: 0x4f, i32Add: 0x6a, i64Popcnt: 0x7b, i64Add: 0x7c, i64Xor: 0x85,
    i32WrapI64: 0xa7, void: 0x40,
  };
  // Parameters 0 codes, 1 count, 2 query, 3 out; locals 4 i (i32), 5 distance (i64), 6.. the query's words (i64).
  const [codes, count, query, out, i, distance, word0] = [0, 1, 2, 3, 4, 5, 6];
  const body: number[] = [2, 1, I32, 1 + WORDS, I64];
  for (let w = 0; w < WORDS; w += 1) body.push(op.get, query, op.i64Load, 3, ...uleb(8 * w), op.set, word0 + w);
  body.push(op.block, op.void, op.loop, op.void, op.get, i, op.get, count, op.i32GeU, op.brIf, 1);
  for (let w = 0; w < WORDS; w += 1) {
    body.push(op.get, codes, op.i64Load, 3, ...uleb(8 * w), op.get, word0 + w, op.i64Xor, op.i64Popcnt);
    if (w > 0) body.push(op.i64Add);
  }
  body.push(op.set, distance, op.get, out, op.get, distance, op.i32WrapI64, op.i32Store16, 1, 0);
  body.push(op.get, out, op.i32Const, 2, op.i32Add, op.set, out);
  // i32.const takes a signed LEB128: 96 is 0xe0 0x00 (a lone 0x60 would read as -32).
  body.push(op.get, codes, op.i32Const, 0x80 | (CODE_BYTES & 0x7f), CODE_BYTES >> 7, op.i32Add, op.set, codes);
  body.push(op.get, i, op.i32Const, 1, op.i32Add, op.set, i, op.br, 0, op.end, op.end, op.end);
  return new Uint8Array([0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    ...section(1, [1, 0x60, 4, I32, I32, I32, I32, 0]),
    ...section(3, [1, 0]),
    ...section(5, [1, 0, 1]),
    ...section(7, [2, ...name('scan'), 0, 0, ...name('memory'), 2, 0]),
    ...section(10, [1, ...uleb(body.length), ...body]),
  ]);
}

interface ScanExports {
  readonly memory: { readonly buffer: ArrayBuffer; grow(pages: number): number };
  readonly scan: (codes: number, count: number, query: number, out: number) => void;
}

let instance: ScanExports | undefined;

// Node's WebAssembly, typed here as far as it is used: the project's `lib` has no DOM and @types/node no Module.
interface WasmApi {
  readonly Module: new (bytes: Uint8Array) => object;
  readonly Instance: new (module: object) => { readonly exports: object };
}
const { WebAssembly: wasm } = globalThis as unknown as { readonly WebAssembly: WasmApi };

/** The module compiled and instantiated once per process, on the first search of a coded scope. */
function scanner(): ScanExports {
  instance ??= new wasm.Instance(new wasm.Module(scanModule())).exports as ScanExports;
  return instance;
}

/**
 * Bytes of codes the module's memory keeps for later calls (decision 0056): three scopes of 100,000 codes, or dozens of
 * 10,000. A call whose own runs hold more keeps only those.
 */
export const RESIDENT_CODE_BYTES = 32 * 1024 * 1024;

/** A run of codes held in the module's memory: its array (held weakly), where it starts and its length. */
interface Resident {
  readonly codes: WeakRef<Uint8Array>;
  at: number;
  readonly bytes: number;
}
const residentOf = new WeakMap<Uint8Array, Resident>();
/** The runs held, least recently passed first. */
const byUse = new Set<Resident>();
/** The end of the highest run held. */
let top = CODES_AT;
/**
 * The places that released runs leave free, beyond the bytes of the runs held, before they are taken back by moving
 * the runs down: so a scope whose shards a commit replaces one by one does not spread over the whole bound.
 */
export const FREE_SLACK_BYTES = 1024 * 1024;
/**
 * Where the distances are written: past the runs held. At a fixed place while they fit RESIDENT_CODE_BYTES, so that the
 * distances' pages stay the same as runs come and go.
 */
const DISTANCES_AT = CODES_AT + RESIDENT_CODE_BYTES;

/**
 * The Hamming distance from `query` to each code of `runs` (arrays of codes), run after run, as one array: a view of
 * the module's memory, to read before the next call. The module's memory keeps the runs it was given, of this scope
 * and of others, up to RESIDENT_CODE_BYTES (place): a run passed again (the same array) is not copied from JavaScript
 * again, so a search after a commit copies only the shards it changed (decision 0055), and a search of a scope
 * searched before copies nothing while its runs are held (decision 0056). An array passed here must not change
 * afterwards; one that will not be passed again is released (releaseRun).
 */
export function hammingDistances(runs: readonly Uint8Array[], query: Uint8Array): Uint16Array {
  if (query.length !== CODE_BYTES || runs.some((codes) => codes.length % CODE_BYTES !== 0))
    throw new RangeError(`hammingDistances: codes of ${CODE_BYTES} bytes expected`);
  const { memory, scan } = scanner();
  const starts = place(memory, runs);
  const count = runs.reduce((sum, codes) => sum + codes.length, 0) / CODE_BYTES;
  const out = Math.max(top, DISTANCES_AT);
  grow(memory, out + 2 * count);
  new Uint8Array(memory.buffer).set(query, 0);
  let written = out;
  for (const [i, codes] of runs.entries()) {
    const codesInRun = codes.length / CODE_BYTES;
    if (codesInRun > 0) scan(starts[i]!, codesInRun, 0, written);
    written += 2 * codesInRun;
  }
  return new Uint16Array(memory.buffer, out, count);
}

/**
 * Forgets the run of `codes`, an array that will not be passed again (KeptCodes lets it go): its place is free, and
 * the next `compact` takes it back. Nothing happens when the run is not held.
 */
export function releaseRun(codes: Uint8Array): void {
  const run = residentOf.get(codes);
  if (run === undefined) return;
  residentOf.delete(codes);
  byUse.delete(run);
}

/** The bytes the runs held span in the module's memory, the free places among them included (for tests). */
export function heldSpan(): number {
  return top - CODES_AT;
}

/** The bytes of the runs held. */
function heldBytes(): number {
  let bytes = 0;
  for (const run of byUse) bytes += run.bytes;
  return bytes;
}

/** Grows the module's memory to at least `bytes`. */
function grow(memory: ScanExports['memory'], bytes: number): void {
  if (memory.buffer.byteLength < bytes) memory.grow(Math.ceil((bytes - memory.buffer.byteLength) / PAGE_BYTES));
}

/**
 * Where each of `runs` starts in the module's memory. A run held there is marked as just used; the others are copied
 * in after the highest run held, once each. Before that, `compact` takes the free places back when the runs would
 * reach past RESIDENT_CODE_BYTES, or past twice the bytes held and FREE_SLACK_BYTES.
 */
function place(memory: ScanExports['memory'], runs: readonly Uint8Array[]): number[] {
  const passed = new Set(runs);
  let fresh = 0;
  for (const codes of passed) {
    const run = residentOf.get(codes);
    if (run === undefined) fresh += codes.length;
    else {
      byUse.delete(run);
      byUse.add(run);
    }
  }
  const extent = top - CODES_AT + fresh;
  if (fresh > 0 && (extent > RESIDENT_CODE_BYTES || extent > 2 * (heldBytes() + fresh) + FREE_SLACK_BYTES))
    compact(memory, passed, fresh);
  grow(memory, top + fresh);
  const bytes = new Uint8Array(memory.buffer);
  for (const codes of passed) {
    if (residentOf.has(codes)) continue;
    const run: Resident = { codes: new WeakRef(codes), at: top, bytes: codes.length };
    residentOf.set(codes, run);
    byUse.add(run);
    bytes.set(codes, top);
    top += codes.length;
  }
  return runs.map((codes) => residentOf.get(codes)!.at);
}

/**
 * Makes room for `fresh` bytes: keeps the runs of this call held, then the others most recently used first while
 * they fit RESIDENT_CODE_BYTES beside them (a run whose array is gone is dropped), and moves those kept down to
 * CODES_AT end to end, lowest first, so that none overwrites a run not yet moved: the places of the runs released
 * or dropped are free again.
 */
function compact(memory: ScanExports['memory'], passed: ReadonlySet<Uint8Array>, fresh: number): void {
  const keep = new Set<Resident>();
  let room = RESIDENT_CODE_BYTES - fresh;
  for (const codes of passed) {
    const run = residentOf.get(codes);
    if (run !== undefined) {
      keep.add(run);
      room -= run.bytes;
    }
  }
  for (const run of [...byUse].reverse()) {
    if (keep.has(run) || run.codes.deref() === undefined) continue;
    if (run.bytes > room) break;
    keep.add(run);
    room -= run.bytes;
  }
  for (const run of byUse) {
    if (keep.has(run)) continue;
    byUse.delete(run);
    const codes = run.codes.deref();
    if (codes !== undefined) residentOf.delete(codes);
  }
  const bytes = new Uint8Array(memory.buffer);
  top = CODES_AT;
  for (const run of [...keep].sort((a, b) => a.at - b.at)) {
    if (run.at !== top) bytes.copyWithin(top, run.at, run.at + run.bytes);
    run.at = top;
    top += run.bytes;
  }
}

/**
 * The positions in [from, to) of the `k` smallest `distances`, ties taken in position order: every position nearer
 * than the k-th distance, then those at it from the first. All of them when the range holds at most k. One count of
 * the distances finds the k-th, and one more pass takes the positions, so the cost does not grow with k.
 */
export function nearestPositions(distances: Uint16Array, from: number, to: number, k: number, into: number[]): void {
  if (to - from <= k) {
    for (let p = from; p < to; p += 1) into.push(p);
    return;
  }
  const counts = COUNTS.fill(0);
  for (let p = from; p < to; p += 1) counts[distances[p]!]! += 1;
  let below = 0;
  let threshold = 0;
  while (below + counts[threshold]! < k) below += counts[threshold++]!;
  let ties = k - below;
  for (let p = from; p < to; p += 1) {
    const distance = distances[p]!;
    if (distance < threshold) into.push(p);
    else if (distance === threshold && ties > 0) {
      into.push(p);
      ties -= 1;
    }
  }
}
const COUNTS = new Uint32Array(SIMHASH_BITS + 1);
