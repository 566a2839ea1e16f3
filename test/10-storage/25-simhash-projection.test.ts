import t from 'tap';
import { createHash } from 'node:crypto';
import { SIMHASH_BITS, simhashCode } from '../../src/storage/simhash-projection.js';

// The SimHash codes of `eligible_codes.simhash_v1` are frozen: audit L10 recomputes every stored code from its float
// vector, so a build that computes one bit differently turns every existing database's audit red. These vectors
// crowd the edges: zero components (skipped by the first build), pairs that cancel exactly, tiny magnitudes.

function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = Math.imul(state ^ (state >>> 15), state | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return (x ^ (x >>> 14)) >>> 0;
  };
}

function edgeVectors(): Float32Array[] {
  const next = mulberry32(20261202);
  const vectors: Float32Array[] = [];
  for (const dimension of [384, 768, 3]) {
    for (let i = 0; i < 64; i += 1) {
      const vector = new Float32Array(dimension);
      for (let j = 0; j < dimension; j += 1) {
        const draw = next();
        vector[j] = i % 4 === 0 && draw % 3 !== 0 ? 0 : (draw / 2 ** 32 - 0.5) * (i % 4 === 1 ? 1e-30 : 1);
      }
      if (i % 4 === 2) for (let j = 1; j < dimension; j += 2) vector[j] = -vector[j - 1]!;
      vectors.push(vector);
    }
  }
  return vectors;
}

/** The definition, written plainly: plane weights drawn dimension by dimension, one dot product per bit. */
function definitionCode(vector: Float32Array): Uint8Array {
  const next = mulberry32(0x5ca1ab1e ^ Math.imul(vector.length, 0x9e3779b1));
  const sixth = 2 ** 32 / 6;
  const weights: number[][] = [];
  for (let j = 0; j < vector.length; j += 1) {
    weights.push(Array.from({ length: SIMHASH_BITS }, () => {
      const draw = next();
      return draw < sixth ? 1 : draw < 2 * sixth ? -1 : 0;
    }));
  }
  const code = new Uint8Array(SIMHASH_BITS / 8);
  for (let b = 0; b < SIMHASH_BITS; b += 1) {
    let sum = 0;
    for (let j = 0; j < vector.length; j += 1) {
      const weight = weights[j]![b]!;
      if (weight === 1) sum += vector[j]!;
      else if (weight === -1) sum -= vector[j]!;
    }
    if (sum > 0) code[b >> 3]! |= 1 << (b & 7);
  }
  return code;
}

t.test('codes equal the definition on vectors with zeros, exact cancellations and tiny components', async (t) => {
  const vectors = edgeVectors();
  let differing = 0;
  for (const vector of vectors) {
    if (!Buffer.from(simhashCode(vector)).equals(Buffer.from(definitionCode(vector)))) differing += 1;
  }
  t.equal(differing, 0, `all ${vectors.length} codes match`);
});

t.test('codes are the frozen simhash_v1 codes (digest taken from the first build)', async (t) => {
  const digest = createHash('sha256');
  for (const vector of edgeVectors()) digest.update(simhashCode(vector));
  t.equal(digest.digest('hex'), '26d615b57584fccb9ab4b0d52ca97f520ea25fb37c12a35301acf7877a8a4bf9');
});

t.test('a code has one bit per plane and does not depend on earlier calls', async (t) => {
  const vector = edgeVectors()[5]!;
  const first = simhashCode(vector);
  t.equal(first.length, SIMHASH_BITS / 8);
  simhashCode(new Float32Array(384).fill(-1));
  t.same(simhashCode(vector), first);
});
