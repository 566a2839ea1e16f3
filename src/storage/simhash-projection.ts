/** Bits of the SimHash code of `eligible_codes.simhash_v1` (migrations/0002_eligible_vectors.sql). */
export const SIMHASH_BITS = 768;
/** The projection's version, named in the code column: a change of seed or rule is a new column and migration. */
export const SIMHASH_VERSION = 1;
const SIMHASH_V1_SEED = 0x5ca1ab1e;

const planesByDimension = new Map<number, Float64Array>();

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
 * The random hyperplanes for `dimension`, row j holding the SIMHASH_BITS weights of dimension j. Each weight is a sum
 * of four uniform draws minus 2 (close to a normal law), every term a multiple of 2⁻³², so the sum is exact in a
 * double: no transcendental function whose last bit could differ between runtimes.
 */
function planesFor(dimension: number): Float64Array {
  let planes = planesByDimension.get(dimension);
  if (planes) return planes;
  const next = mulberry32(SIMHASH_V1_SEED ^ Math.imul(dimension, 0x9e3779b1));
  planes = new Float64Array(dimension * SIMHASH_BITS);
  for (let i = 0; i < planes.length; i += 1) planes[i] = (next() + next() + next() + next()) / 2 ** 32 - 2;
  planesByDimension.set(dimension, planes);
  return planes;
}

/**
 * The 768-bit SimHash code of a stored float vector (STORAGE.md §4.5 rule 3): bit b is set exactly when the dot
 * product with hyperplane b is positive. Deterministic: the sums run in ascending dimension order in doubles, and
 * zero components are skipped (they add nothing to a sign). Bits are packed little-endian within each byte, as
 * vec0's `bit[N]` stores a blob; only Hamming distances between codes built here are ever compared.
 */
export function simhashCode(vector: Float32Array): Uint8Array {
  const dimension = vector.length;
  const planes = planesFor(dimension);
  const sums = new Float64Array(SIMHASH_BITS);
  for (let j = 0; j < dimension; j += 1) {
    const component = vector[j]!;
    if (component === 0) continue;
    const row = j * SIMHASH_BITS;
    for (let b = 0; b < SIMHASH_BITS; b += 1) sums[b]! += component * planes[row + b]!;
  }
  const code = new Uint8Array(SIMHASH_BITS / 8);
  for (let b = 0; b < SIMHASH_BITS; b += 1) if (sums[b]! > 0) code[b >> 3]! |= 1 << (b & 7);
  return code;
}
