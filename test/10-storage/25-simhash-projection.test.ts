import t from 'tap';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SIMHASH_BITS, simhashCode } from '../../src/storage/simhash-projection.js';
import { REPO_ROOT, TS_IMPORT } from '../helpers/storage.js';

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

/**
 * Sparse vectors whose bits depend on the order of the additions and on every term: a few ±1 components between a
 * tiny first and a tiny last one (±2^-60). Where a bit's ±1 terms cancel exactly, the first tiny term was absorbed
 * before them and the last one decides the bit; summed backwards or without the last term, the bit changes. Around
 * them: negative zeros, a vector of zeros, one of negative zeros, one of subnormals and two dense vectors.
 */
function orderVectors(): Float32Array[] {
  const next = mulberry32(20261203);
  const vectors = [new Float32Array(384), new Float32Array(384).fill(-0)];
  for (let i = 0; i < 48; i += 1) {
    const vector = new Float32Array(384);
    const first = next() % 64;
    const last = 320 + (next() % 64);
    for (let k = 0; k < 2 + (i % 5); k += 1) vector[first + 1 + (next() % 255)] = next() % 2 === 0 ? 1 : -1;
    for (let k = 0; k < 4; k += 1) vector[first + 1 + (next() % 255)] ||= -0;
    vector[first] = (next() % 2 === 0 ? 1 : -1) * 2 ** -60;
    vector[last] = (next() % 2 === 0 ? 1 : -1) * 2 ** -60;
    vectors.push(vector);
  }
  vectors.push(Float32Array.from({ length: 384 }, (_, j) => (j % 7 === 0 ? (j % 2 === 0 ? 1 : -3) * 2 ** -149 : 0)));
  for (const dimension of [384, 768]) {
    vectors.push(Float32Array.from({ length: dimension }, () => next() / 2 ** 32 - 0.5 || 2 ** -20));
  }
  return vectors;
}

const weightsByDimension = new Map<number, number[][]>();

/** The plane weights, `weights[j][b]` for dimension j and bit b, drawn dimension by dimension. */
function planeWeights(dimension: number): number[][] {
  const known = weightsByDimension.get(dimension);
  if (known) return known;
  const next = mulberry32(0x5ca1ab1e ^ Math.imul(dimension, 0x9e3779b1));
  const sixth = 2 ** 32 / 6;
  const weights = Array.from({ length: dimension }, () => Array.from({ length: SIMHASH_BITS }, () => {
    const draw = next();
    return draw < sixth ? 1 : draw < 2 * sixth ? -1 : 0;
  }));
  weightsByDimension.set(dimension, weights);
  return weights;
}

/**
 * The definition, written plainly: one dot product per bit, in ascending dimension order (descending when
 * `descending`, only to show that a test's vectors tell the orders apart).
 */
function definitionCode(vector: Float32Array, descending = false): Uint8Array {
  const weights = planeWeights(vector.length);
  const code = new Uint8Array(SIMHASH_BITS / 8);
  for (let b = 0; b < SIMHASH_BITS; b += 1) {
    let sum = 0;
    for (let k = 0; k < vector.length; k += 1) {
      const j = descending ? vector.length - 1 - k : k;
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

t.test('codes equal the definition on sparse vectors whose bits depend on the order and on every term', async (t) => {
  const vectors = orderVectors();
  let differing = 0;
  let differingDescending = 0;
  let differingWithoutLast = 0;
  for (const vector of vectors) {
    const expected = Buffer.from(definitionCode(vector));
    if (!Buffer.from(simhashCode(vector)).equals(expected)) differing += 1;
    if (!Buffer.from(definitionCode(vector, true)).equals(expected)) differingDescending += 1;
    const withoutLast = vector.slice();
    withoutLast[withoutLast.findLastIndex((component) => component !== 0)] = 0;
    if (!Buffer.from(definitionCode(withoutLast)).equals(expected)) differingWithoutLast += 1;
  }
  t.equal(differing, 0, `all ${vectors.length} codes match`);
  t.ok(differingDescending >= 40, `summed backwards, ${differingDescending} codes differ`);
  t.ok(differingWithoutLast >= 40, `without the last non-zero term, ${differingWithoutLast} codes differ`);
  const zeroCodes = [...simhashCode(vectors[0]!), ...simhashCode(vectors[1]!)];
  t.same(zeroCodes, new Array(SIMHASH_BITS / 4).fill(0), 'zeros and negative zeros set no bit');
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

// V8's %GetOptimizationStatus bits (src/runtime/runtime.h): how the function would run on its next call.
const V8_INTERPRETED = 1 << 7;
const V8_BASELINE = 1 << 15;
const V8_IS_LAZY = 1 << 18;
const V8_COMPILED = V8_BASELINE | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 10); // optimized, Maglev, TurboFan, compiling

t.test('prepareSimhash leaves the code compiled, so a write holding the writer lock never runs it interpreted',
  async (t) => {
  // A fresh process, as a server starts: the status of simhashCode before and after prepareSimhash, and a code
  // computed after it, which the warm-up must not change (its sums are shared by every code).
  const module = pathToFileURL(join(REPO_ROOT, 'src/storage/simhash-projection.ts')).href;
  const script = `const m = await import(${JSON.stringify(module)});
    const vector = Float32Array.from({ length: 384 }, (_, j) => (j % 5 === 0 ? Math.sin(j) : 0));
    const before = %GetOptimizationStatus(m.simhashCode);
    m.prepareSimhash(384);
    const after = %GetOptimizationStatus(m.simhashCode);
    console.log(JSON.stringify({ before, after, code: Buffer.from(m.simhashCode(vector)).toString('hex') }));`;
  const child = spawnSync(process.execPath,
    ['--allow-natives-syntax', '--import', TS_IMPORT, '--input-type=module', '-e', script], { encoding: 'utf8' });
  t.equal(child.status, 0, child.stderr);
  const { before, after, code } = JSON.parse(child.stdout) as { before: number; after: number; code: string };
  t.ok((before & (V8_IS_LAZY | V8_INTERPRETED)) !== 0, `not compiled before (status ${before.toString(2)})`);
  t.equal(after & (V8_IS_LAZY | V8_INTERPRETED), 0, `no longer lazy nor interpreted (status ${after.toString(2)})`);
  t.ok((after & V8_COMPILED) !== 0, 'compiled: baseline or optimized');
  const vector = Float32Array.from({ length: 384 }, (_, j) => (j % 5 === 0 ? Math.sin(j) : 0));
  t.equal(code, Buffer.from(simhashCode(vector)).toString('hex'), 'a code after the warm-up is the same code');
});
