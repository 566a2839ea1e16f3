/** Bits of the SimHash code of `eligible_codes.simhash_v1` (migrations/0002_eligible_vectors.sql). */
export const SIMHASH_BITS = 768;
// The projection's version is in the code column's name (simhash_v1): a change of seed or rule is a new column and
// a new migration.
const SIMHASH_V1_SEED = 0x5ca1ab1e;

/**
 * The non-zero weights of the planes, bit by bit: bit b's weights are `entries[ends[b - 1]]` up to `entries[ends[b]]`,
 * in ascending dimension order, each `2j` for a +1 weight on dimension j and `2j + 1` for a -1 weight.
 */
interface Planes {
  readonly ends: Uint32Array;
  readonly entries: Uint16Array | Uint32Array;
}

const planesByDimension = new Map<number, Planes>();

/** mulberry32: integer arithmetic only, so every platform draws the same sequence from the same seed. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/**
 * The random hyperplanes for `dimension`, sparse (Achlioptas): each weight is +1 or -1 with probability 1/6 each, else
 * 0, drawn in order (dimension j, then bit b) from one integer generator, so every runtime draws the same planes.
 */
function planesFor(dimension: number): Planes {
  let planes = planesByDimension.get(dimension);
  if (planes) return planes;
  const next = mulberry32(SIMHASH_V1_SEED ^ Math.imul(dimension, 0x9e3779b1));
  const sixth = 2 ** 32 / 6;
  const byBit: number[][] = Array.from({ length: SIMHASH_BITS }, () => []);
  for (let j = 0; j < dimension; j += 1) {
    for (let b = 0; b < SIMHASH_BITS; b += 1) {
      const draw = next();
      if (draw < sixth) byBit[b]!.push(2 * j);
      else if (draw < 2 * sixth) byBit[b]!.push(2 * j + 1);
    }
  }
  const ends = new Uint32Array(SIMHASH_BITS);
  let count = 0;
  for (let b = 0; b < SIMHASH_BITS; b += 1) ends[b] = count += byBit[b]!.length;
  const entries = 2 * dimension <= 0x10000 ? new Uint16Array(count) : new Uint32Array(count);
  entries.set(byBit.flat());
  planes = { ends, entries };
  planesByDimension.set(dimension, planes);
  return planes;
}

/** Builds the planes for `dimension` now (a few milliseconds), so the first code computed later does not. */
export function prepareSimhashPlanes(dimension: number): void {
  planesFor(dimension);
}

/**
 * The 768-bit SimHash code of a stored float vector (STORAGE.md §4.5 rule 3): bit b is set exactly when the dot
 * product with hyperplane b is positive. Deterministic: every weight is ±1 or 0, so each bit's sum adds and subtracts
 * the vector's components (as doubles) in ascending dimension order, from +0. The first build skipped zero components
 * and kept one sum per bit in memory; adding ±0 leaves a non-zero sum unchanged and a zero sum zero (only its sign can
 * differ, and `> 0` reads neither), so the bits are the same (test/10-storage/25-simhash-projection.test.ts pins them).
 * A third of the weights are non-zero, which keeps a store's code at a third of a dense projection's cost with the
 * same recall (decision 0017). Bits are packed little-endian within each byte, as vec0's `bit[N]` stores a blob;
 * only Hamming distances between codes built here are ever compared.
 */
export function simhashCode(vector: Float32Array): Uint8Array {
  const { ends, entries } = planesFor(vector.length);
  // signed[2j] is component j and signed[2j + 1] its negation: adding the negation is exactly subtracting it.
  const signed = new Float64Array(2 * vector.length);
  for (let j = 0; j < vector.length; j += 1) {
    signed[2 * j] = vector[j]!;
    signed[2 * j + 1] = -vector[j]!;
  }
  const code = new Uint8Array(SIMHASH_BITS / 8);
  // Two bits at a time: two independent chains of additions run about twice as fast as one.
  for (let b = 0; b < SIMHASH_BITS; b += 2) {
    let first = b === 0 ? 0 : ends[b - 1]!;
    const firstEnd = ends[b]!;
    let second = firstEnd;
    const secondEnd = ends[b + 1]!;
    let firstSum = 0;
    let secondSum = 0;
    const both = Math.min(firstEnd - first, secondEnd - second);
    for (let w = 0; w < both; w += 1) {
      firstSum += signed[entries[first + w]!]!;
      secondSum += signed[entries[second + w]!]!;
    }
    for (first += both; first < firstEnd; first += 1) firstSum += signed[entries[first]!]!;
    for (second += both; second < secondEnd; second += 1) secondSum += signed[entries[second]!]!;
    if (firstSum > 0) code[b >> 3]! |= 1 << (b & 7);
    if (secondSum > 0) code[b >> 3]! |= 2 << (b & 7);
  }
  return code;
}
