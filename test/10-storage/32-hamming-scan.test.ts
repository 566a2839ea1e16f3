import t from 'tap';
import { randomBytes } from 'node:crypto';
import {
  CODE_BYTES, hammingDistances, nearestPositions, RESIDENT_CODE_BYTES,
} from '../../src/storage/hamming-scan.js';
import { arePositionDistances, positionCodes } from '../helpers/position-codes.js';

// The first pass's WebAssembly loop (decision 0053) against a count done bit by bit, and the pick of each shard's k
// nearest positions.

/** The Hamming distance of two codes, one bit at a time. */
function bitByBit(a: Uint8Array, b: Uint8Array): number {
  let distance = 0;
  for (let bit = 0; bit < a.length * 8; bit += 1) {
    if (((a[bit >> 3]! >> (bit & 7)) & 1) !== ((b[bit >> 3]! >> (bit & 7)) & 1)) distance += 1;
  }
  return distance;
}

/** The distance from `query` to each code of `runs`, run after run, bit by bit. */
function bitByBitDistances(runs: readonly Uint8Array[], query: Uint8Array): number[] {
  return runs.flatMap((codes) => Array.from({ length: codes.length / CODE_BYTES },
    (_, i) => bitByBit(codes.subarray(i * CODE_BYTES, (i + 1) * CODE_BYTES), query)));
}

t.test('each distance is the count of differing bits, from 0 to every bit, and the memory grows as asked', (t) => {
  const query = randomBytes(CODE_BYTES);
  const inverse = query.map((byte) => ~byte & 0xff);
  const oneBit = Uint8Array.from(query);
  oneBit[CODE_BYTES - 1]! ^= 0x80;
  for (const count of [1, 7, 3000, 40_000]) {
    const codes = new Uint8Array(randomBytes(count * CODE_BYTES));
    codes.set(query, 0);
    if (count > 1) codes.set(inverse, CODE_BYTES);
    if (count > 2) codes.set(oneBit, 2 * CODE_BYTES);
    const distances = Array.from(hammingDistances([codes], query));
    t.equal(distances.length, count);
    const expected = bitByBitDistances([codes], query);
    t.strictSame(distances, expected, `${count} codes`);
    t.strictSame(distances.slice(0, 3), [0, CODE_BYTES * 8, 1].slice(0, count), 'equal, opposite, one bit apart');
  }
  t.strictSame(Array.from(hammingDistances([new Uint8Array(0)], query)), [], 'no codes, no distances');
  t.strictSame(Array.from(hammingDistances([], query)), [], 'no runs, no distances');
  t.end();
});

/** A seeded draw of an integer below n. */
function seeded(seed: number): (n: number) => number {
  return (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
  };
}

/** Fresh random codes, `count` of them. */
const codesOf = (count: number) => new Uint8Array(randomBytes(count * CODE_BYTES));

t.test('runs passed again are served from the module\'s memory, whatever runs come before them', (t) => {
  const query = randomBytes(CODE_BYTES);
  const expected = (runs: readonly Uint8Array[]) => bitByBitDistances(runs, query);
  const [a, b, c, d] = [codesOf(50), codesOf(30), codesOf(40), codesOf(20)];
  const [longerB, shorterB, longerA, empty] = [codesOf(45), codesOf(5), codesOf(70), codesOf(0)];
  const large = codesOf(60_000);
  const steps: [string, Uint8Array[]][] = [
    ['four runs', [a, b, c, d]], ['the same again', [a, b, c, d]],
    ['b replaced by a longer run', [a, longerB, c, d]], ['b replaced by a shorter run', [a, shorterB, c, d]],
    ['a and b replaced', [longerA, b, c, d]],
    ['a new run at the end, one dropped', [longerA, b, d, codesOf(9)]], ['an empty run first', [empty, a, b, c, d]],
    ['the runs in another order', [d, c, b, a]], ['one run that grows the memory', [large]],
    ['after the growth', [a, b, large, c]], ['large among others', [b, large, c]],
    ['the same array twice', [a, a]], ['then once', [a]], ['then after another', [b, a]],
  ];
  for (const [name, runs] of steps) t.strictSame(Array.from(hammingDistances(runs, query)), expected(runs), name);
  // A run passed again is read from the module's memory, not from its array (which must not change): changed here,
  // the array shows that the memory kept its codes, wherever the run comes in the list.
  const kept = codesOf(10);
  const first = codesOf(8);
  hammingDistances([first, kept], query);
  const original = Uint8Array.from(kept);
  kept.fill(0);
  const [longer, shorter] = [codesOf(13), codesOf(2)];
  t.strictSame(Array.from(hammingDistances([longer, kept], query)), expected([longer, original]),
    'after a longer run: the codes as they were passed');
  t.strictSame(Array.from(hammingDistances([shorter, kept], query)), expected([shorter, original]),
    'after a shorter run');
  t.strictSame(Array.from(hammingDistances([kept, shorter], query)), expected([original, shorter]), 'first');
  t.end();
});

t.test('the memory keeps the runs passed most recently, up to RESIDENT_CODE_BYTES, moved down to make room', (t) => {
  // Codes of one repeated byte against a query of zeros: every distance is that byte's bit count times CODE_BYTES.
  const query = new Uint8Array(CODE_BYTES);
  const count = Math.floor(RESIDENT_CODE_BYTES / 3.5 / CODE_BYTES);
  const filled = (byte: number) => new Uint8Array(count * CODE_BYTES).fill(byte);
  const distanceOf = (byte: number) => byte.toString(2).replaceAll('0', '').length * CODE_BYTES;
  const every = (runs: Uint8Array[], distance: number) => {
    const distances = hammingDistances(runs, query);
    return distances.length === count * runs.length && distances.every((value) => value === distance);
  };
  const [a, b, c, d] = [filled(0x01), filled(0x03), filled(0x07), filled(0x0f)];
  // Three runs fit, a fourth does not; each array is zeroed once passed, so a right answer comes from the memory.
  for (const run of [a, b, c]) hammingDistances([run], query);
  for (const run of [a, b, c]) run.fill(0);
  t.ok(every([b], distanceOf(0x03)), 'b held');
  t.ok(every([a], distanceOf(0x01)), 'a held');
  t.ok(every([c], distanceOf(0x07)), 'c held; b, between a and c, is now the run passed least recently');
  t.ok(every([d], distanceOf(0x0f)), 'd copied in');
  d.fill(0);
  t.ok(every([c], distanceOf(0x07)), 'c still held: moved down into b\'s place');
  t.ok(every([a], distanceOf(0x01)), 'a still held');
  t.ok(every([d], distanceOf(0x0f)), 'd held');
  t.ok(every([b], 0), 'b was dropped: copied again, from its array as it is now');
  t.end();
});

t.test('two scopes\' shards changed at random between searches of either: every distance right, from the memory\'s '
  + 'own copy', (t) => {
  const query = randomBytes(CODE_BYTES);
  const draw = seeded(17);
  // Each shard's array and a copy of its codes: every array is zeroed after each call, so a right answer comes only
  // from codes the module's memory kept, for the scope searched and for the other one.
  const scopes = [0, 1].map(() => Array.from({ length: 6 }, () => codesOf(draw(5))));
  const copies = new Map(scopes.flat().map((codes) => [codes, Uint8Array.from(codes)]));
  const wrong: number[] = [];
  for (let call = 0; call < 400; call += 1) {
    const scope = draw(2);
    let shards = scopes[scope]!;
    const changes = draw(3);
    for (let change = 0; change < changes; change += 1) {
      const at = draw(shards.length + 1);
      const kind = draw(4);
      const fresh = codesOf(draw(5));
      copies.set(fresh, Uint8Array.from(fresh));
      if (kind === 0 || shards.length === 0) shards.splice(at, 0, fresh);
      else if (kind === 1) shards.splice(Math.min(at, shards.length - 1), 1);
      else shards[Math.min(at, shards.length - 1)] = fresh;
    }
    if (shards.length > 12) scopes[scope] = shards = shards.slice(0, 12);
    const got = Array.from(hammingDistances(shards, query));
    if (JSON.stringify(got) !== JSON.stringify(bitByBitDistances(shards.map((codes) => copies.get(codes)!), query)))
      wrong.push(call);
    for (const codes of shards) codes.fill(0);
  }
  t.strictSame(wrong, [], '400 calls, shards added, dropped and replaced, of 0 to 4 codes');
  t.end();
});

t.test('five scopes near the bound, runs replaced: every distance right as runs are dropped and moved',
  (t) => {
  // Codes that carry their own position (helpers/position-codes.ts): a run read from the wrong place, or shifted,
  // gives other distances.
  const query = new Uint8Array(CODE_BYTES);
  const draw = seeded(29);
  const run = () => positionCodes(draw(20_000), draw(256));
  // Five scopes of up to eight runs of up to 1.9 MB: 26-31 MiB in all, against RESIDENT_CODE_BYTES of 32 MiB, and the
  // replaced runs' old copies (never released here) fill the rest, so runs are dropped and moved. The arrays stay as
  // they are: a run dropped is copied in again from its array.
  const scopes = Array.from({ length: 5 }, () => Array.from({ length: 1 + draw(8) }, run));
  const wrong: number[] = [];
  for (let call = 0; call < 120; call += 1) {
    const runs = scopes[draw(scopes.length)]!;
    if (draw(3) === 0) runs[draw(runs.length)] = run();
    if (!arePositionDistances(hammingDistances(runs, query), runs)) wrong.push(call);
  }
  t.strictSame(wrong, [], '120 calls over five scopes, a run replaced in a third of them');
  t.end();
});

t.test('codes or a query of the wrong length are refused', (t) => {
  const [code, query] = [new Uint8Array(CODE_BYTES), new Uint8Array(CODE_BYTES)];
  t.throws(() => hammingDistances([code, new Uint8Array(CODE_BYTES + 1)], query), RangeError);
  t.throws(() => hammingDistances([code], new Uint8Array(CODE_BYTES - 1)), RangeError);
  t.end();
});

t.test('the k nearest positions of a run, given in position order; ties at the k-th distance taken from the first',
  (t) => {
  const distances = Uint16Array.from([9, 3, 3, 7, 1, 3, 3, 0, 5]);
  const pick = (from: number, to: number, k: number) => {
    const into: number[] = [];
    nearestPositions(distances, from, to, k, into);
    return into;
  };
  t.strictSame(pick(0, 9, 1), [7]);
  t.strictSame(pick(0, 9, 3), [1, 4, 7], 'distances 0 and 1, then the first 3');
  t.strictSame(pick(0, 9, 5), [1, 2, 4, 5, 7], 'three of the four 3s, in position order');
  t.strictSame(pick(2, 7, 2), [2, 4], 'within the run only: the first 3 (at 2) and the 1 (at 4)');
  t.strictSame(pick(2, 5, 3), [2, 3, 4], 'a run of at most k gives every position');
  t.strictSame(pick(3, 3, 4), [], 'an empty run gives none');
  const into = [42];
  nearestPositions(distances, 0, 9, 1, into);
  t.strictSame(into, [42, 7], 'appended after what is there');
  t.end();
});
