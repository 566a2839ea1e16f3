import t from 'tap';
import { randomBytes } from 'node:crypto';
import { CODE_BYTES, hammingDistances, nearestPositions } from '../../src/storage/hamming-scan.js';

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

/** Fresh random codes, `count` of them. */
const codesOf = (count: number) => new Uint8Array(randomBytes(count * CODE_BYTES));

t.test('runs passed again are served from the module\'s memory, moved when the runs before them change', (t) => {
  const query = randomBytes(CODE_BYTES);
  const expected = (runs: readonly Uint8Array[]) => bitByBitDistances(runs, query);
  const [a, b, c, d] = [codesOf(50), codesOf(30), codesOf(40), codesOf(20)];
  const [longerB, shorterB, longerA, empty] = [codesOf(45), codesOf(5), codesOf(70), codesOf(0)];
  const large = codesOf(60_000);
  const steps: [string, Uint8Array[]][] = [
    ['four runs', [a, b, c, d]], ['the same again', [a, b, c, d]],
    ['b grows: c and d move up', [a, longerB, c, d]], ['b shrinks: c and d move down', [a, shorterB, c, d]],
    ['a grows, b shrinks: b\'s successors move both ways', [longerA, b, c, d]],
    ['a new run at the end, one dropped', [longerA, b, d, codesOf(9)]], ['an empty run first', [empty, a, b, c, d]],
    ['runs in another order are copied whole', [d, c, b, a]], ['one run that grows the memory', [large]],
    ['after the growth', [a, b, large, c]], ['large moved down', [b, large, c]],
    ['the same array twice', [a, a]], ['then once', [a]], ['then after another', [b, a]],
  ];
  for (const [name, runs] of steps) t.strictSame(Array.from(hammingDistances(runs, query)), expected(runs), name);
  // A run passed again is read from the module's memory, not from its array (which must not change): changed here,
  // the array shows that the memory kept its codes, and moved them when the run before it changed length.
  const kept = codesOf(10);
  const first = codesOf(8);
  hammingDistances([first, kept], query);
  const original = Uint8Array.from(kept);
  kept.fill(0);
  const [longer, shorter] = [codesOf(13), codesOf(2)];
  t.strictSame(Array.from(hammingDistances([longer, kept], query)), expected([longer, original]),
    'moved up: the codes as they were passed');
  t.strictSame(Array.from(hammingDistances([shorter, kept], query)), expected([shorter, original]), 'moved down');
  t.strictSame(Array.from(hammingDistances([kept, shorter], query)), expected([kept, shorter]),
    'out of order: copied again, from the array as it is now');
  t.end();
});

t.test('a scope\'s shards changed at random between searches: every distance right, from the memory\'s own copy',
  (t) => {
  const query = randomBytes(CODE_BYTES);
  let seed = 17;
  const draw = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
  };
  // Each shard's array and a copy of its codes: every array is zeroed after each call, so a right answer comes only
  // from codes the module's memory kept and moved.
  let shards = Array.from({ length: 6 }, () => codesOf(draw(5)));
  const copies = new Map(shards.map((codes) => [codes, Uint8Array.from(codes)]));
  const wrong: number[] = [];
  for (let call = 0; call < 400; call += 1) {
    const changes = 1 + draw(3);
    for (let change = 0; change < changes; change += 1) {
      const at = draw(shards.length + 1);
      const kind = draw(4);
      const fresh = codesOf(draw(5));
      copies.set(fresh, Uint8Array.from(fresh));
      if (kind === 0 || shards.length === 0) shards.splice(at, 0, fresh);
      else if (kind === 1) shards.splice(Math.min(at, shards.length - 1), 1);
      else shards[Math.min(at, shards.length - 1)] = fresh;
    }
    if (shards.length > 12) shards = shards.slice(0, 12);
    const got = Array.from(hammingDistances(shards, query));
    if (JSON.stringify(got) !== JSON.stringify(bitByBitDistances(shards.map((codes) => copies.get(codes)!), query)))
      wrong.push(call);
    for (const codes of shards) codes.fill(0);
  }
  t.strictSame(wrong, [], '400 calls, shards added, dropped and replaced, of 0 to 4 codes');
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
