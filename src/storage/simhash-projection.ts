/** Bits of the SimHash code of `eligible_codes.simhash_v1` (migrations/0002_eligible_vectors.sql). */
export const SIMHASH_BITS = 768;
// The projection's version is in the code column's name (simhash_v1): a change of seed or rule is a new column and
// a new migration.
const SIMHASH_V1_SEED = 0x5ca1ab1e;

/** The non-zero weights of one dimension's row of the planes: the bits weighted +1 and the bits weighted -1. */
interface PlaneRow {
  readonly plus: Uint16Array;
  readonly minus: Uint16Array;
}

const planesByDimension = new Map<number, readonly PlaneRow[]>();

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
 * Kept by dimension as the bits of its +1 weights and the bits of its -1 weights, each in ascending order.
 */
function planesFor(dimension: number): readonly PlaneRow[] {
  let planes = planesByDimension.get(dimension);
  if (planes) return planes;
  const next = mulberry32(SIMHASH_V1_SEED ^ Math.imul(dimension, 0x9e3779b1));
  const sixth = 2 ** 32 / 6;
  planes = Array.from({ length: dimension }, () => {
    const plus: number[] = [];
    const minus: number[] = [];
    for (let b = 0; b < SIMHASH_BITS; b += 1) {
      const draw = next();
      if (draw < sixth) plus.push(b);
      else if (draw < 2 * sixth) minus.push(b);
    }
    return { plus: Uint16Array.from(plus), minus: Uint16Array.from(minus) };
  });
  planesByDimension.set(dimension, planes);
  return planes;
}

/**
 * The 768-bit SimHash code of a stored float vector (STORAGE.md §4.5 rule 3): bit b is set exactly when the dot
 * product with hyperplane b is positive. Deterministic: every weight is ±1 or 0, so each sum adds and subtracts the
 * vector's components (as doubles) in ascending dimension order; a zero component is skipped (it adds nothing).
 * A third of the weights are non-zero, which keeps a store's code at a third of a dense projection's cost with the
 * same recall (decision 0017). Each bit meets at most one weight per dimension, so adding a dimension's +1 bits, then
 * subtracting its -1 bits, keeps every sum's order of operations: no branch per weight. Bits are packed little-endian within each byte, as vec0's `bit[N]` stores a blob;
 * only Hamming distances between codes built here are ever compared.
 */
export function simhashCode(vector: Float32Array): Uint8Array {
  const planes = planesFor(vector.length);
  const sums = new Float64Array(SIMHASH_BITS);
  for (let j = 0; j < vector.length; j += 1) {
    const component = vector[j]!;
    if (component === 0) continue;
    const { plus, minus } = planes[j]!;
    for (let w = 0; w < plus.length; w += 1) sums[plus[w]!]! += component;
    for (let w = 0; w < minus.length; w += 1) sums[minus[w]!]! -= component;
  }
  const code = new Uint8Array(SIMHASH_BITS / 8);
  for (let b = 0; b < SIMHASH_BITS; b += 1) if (sums[b]! > 0) code[b >> 3]! |= 1 << (b & 7);
  return code;
}
