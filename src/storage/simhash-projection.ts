/** Bits of the SimHash code of `eligible_codes.simhash_v1` (migrations/0002_eligible_vectors.sql). */
export const SIMHASH_BITS = 768;
// The projection's version is in the code column's name (simhash_v1): a change of seed or rule is a new column and
// a new migration.
const SIMHASH_V1_SEED = 0x5ca1ab1e;

/**
 * The non-zero weights of the planes, dimension by dimension: dimension j has a +1 weight in the planes (bits)
 * `bits[ends[2j - 1]]` up to `bits[ends[2j]]` and a -1 weight in those up to `bits[ends[2j + 1]]`, each run in
 * ascending bit order (`ends[-1]` reads as 0).
 */
interface Planes {
  readonly ends: Uint32Array;
  readonly bits: Uint16Array;
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
  const bits: number[] = [];
  const ends = new Uint32Array(2 * dimension);
  for (let j = 0; j < dimension; j += 1) {
    const minusBits: number[] = [];
    for (let b = 0; b < SIMHASH_BITS; b += 1) {
      const draw = next();
      if (draw < sixth) bits.push(b);
      else if (draw < 2 * sixth) minusBits.push(b);
    }
    ends[2 * j] = bits.length;
    bits.push(...minusBits);
    ends[2 * j + 1] = bits.length;
  }
  planes = { ends, bits: Uint16Array.from(bits) };
  planesByDimension.set(dimension, planes);
  return planes;
}

/** Codes prepareSimhash computes: past them V8 runs the code compiled (docs/decisions/0049-simhash-warm-up.md). */
const WARM_UP_CODES = 50;

/**
 * Builds the planes for `dimension` (about 20 ms at 384 dimensions), then computes the codes of WARM_UP_CODES
 * synthetic vectors (about 5 ms), so that neither lands on a write. The insert that codes a scope computes the codes
 * of its current records inside its write transaction, holding the writer lock (STORAGE.md §6): in a fresh process
 * V8 interprets the first codes, and 257 codes of short facts took 40-45 ms there against 14-15 ms once compiled.
 */
export function prepareSimhash(dimension: number): void {
  planesFor(dimension);
  const next = mulberry32(SIMHASH_V1_SEED);
  const vector = new Float32Array(dimension);
  for (let i = 0; i < WARM_UP_CODES; i += 1) {
    // Sparse, as local-hash-384 vectors are: about one component in eight, of either sign.
    for (let j = 0; j < dimension; j += 1) {
      const draw = next();
      vector[j] = draw % 8 === 0 ? draw / 2 ** 32 - 0.5 : 0;
    }
    simhashCode(vector);
  }
}

// One sum per bit, shared by every code: a fresh Float64Array per code (its buffer lives outside the V8 heap) made a
// code cost about a quarter more, measured. A code never yields, so two codes never use it at once.
const bitSums = new Float64Array(SIMHASH_BITS);

/**
 * The 768-bit SimHash code of a stored float vector (STORAGE.md §4.5 rule 3): bit b is set exactly when the dot
 * product with hyperplane b is positive. Deterministic: every weight is ±1 or 0, so each bit's sum adds the vector's
 * components or their negations (as doubles) in ascending dimension order, from +0. The code walks the non-zero
 * components in ascending order and adds each into the sums of the planes that weigh it, so every bit's sum receives
 * the same terms in the same order as the plain definition. Zero components are skipped: adding ±0 leaves a non-zero
 * sum unchanged and a zero sum zero (only its sign can differ, and `> 0` reads neither), so the bits are the same
 * (test/10-storage/25-simhash-projection.test.ts pins them). The cost follows the count of non-zero components: a
 * local-hash-384 query (about 50 of 384) costs about a fifth of a dense vector's code (decision 0017).
 * Bits are packed little-endian within each byte, as vec0's `bit[N]` stores a blob; only Hamming distances between
 * codes built here are ever compared.
 */
export function simhashCode(vector: Float32Array): Uint8Array {
  const { ends, bits } = planesFor(vector.length);
  bitSums.fill(0);
  for (let j = 0; j < vector.length; j += 1) {
    const component = vector[j]!;
    if (component === 0) continue;
    const plusEnd = ends[2 * j]!;
    // Adding the negation is exactly subtracting the component, as the definition does for a -1 weight.
    addToBitSums(bits, j === 0 ? 0 : ends[2 * j - 1]!, plusEnd, component);
    addToBitSums(bits, plusEnd, ends[2 * j + 1]!, -component);
  }
  const code = new Uint8Array(SIMHASH_BITS / 8);
  for (let b = 0; b < SIMHASH_BITS; b += 1) if (bitSums[b]! > 0) code[b >> 3]! |= 1 << (b & 7);
  return code;
}

/** Adds `term` to the sum of each bit of `bits[from..to)`; the bits of one run are distinct, so any order is exact. */
function addToBitSums(bits: Uint16Array, from: number, to: number, term: number): void {
  let e = from;
  // Eight at a time: the additions are independent, and the unrolled loop ran about twice as fast as a plain one.
  for (; e + 8 <= to; e += 8) {
    bitSums[bits[e]!]! += term;
    bitSums[bits[e + 1]!]! += term;
    bitSums[bits[e + 2]!]! += term;
    bitSums[bits[e + 3]!]! += term;
    bitSums[bits[e + 4]!]! += term;
    bitSums[bits[e + 5]!]! += term;
    bitSums[bits[e + 6]!]! += term;
    bitSums[bits[e + 7]!]! += term;
  }
  for (; e < to; e += 1) bitSums[bits[e]!]! += term;
}
