import t from 'tap';
import { BoundedMap } from '../../src/core/bounded-map.js';

// The bounded maps behind the token counts, the scope digests and the scopes seen coded (src/core/bounded-map.ts):
// first in, first out.

const held = (map: BoundedMap<string, number>, keys: readonly string[]) => keys.filter((key) => map.has(key));

t.test('a full map forgets its oldest key to take a new one, round after round', async (t) => {
  const map = new BoundedMap<string, number>(3);
  for (const [n, key] of ['a', 'b', 'c'].entries()) map.set(key, n);
  t.equal(map.size, 3);
  map.set('d', 3);
  t.same(held(map, ['a', 'b', 'c', 'd']), ['b', 'c', 'd'], 'a, the oldest, went');
  const keys = Array.from({ length: 11 }, (_, n) => `k${n}`);
  for (const [n, key] of keys.entries()) map.set(key, n);
  t.equal(map.size, 3, 'never more than three');
  t.same(held(map, [...keys, 'b', 'c', 'd']), ['k8', 'k9', 'k10'], 'the three newest, after the ring went round');
  t.same([map.get('k8'), map.get('k9'), map.get('k10')], [8, 9, 10], 'each with its own value');
});

t.test('a key set again takes the new value and keeps its place in the order', async (t) => {
  const map = new BoundedMap<string, number>(2);
  map.set('a', 1);
  map.set('b', 2);
  map.set('a', 10);
  t.equal(map.size, 2);
  t.equal(map.get('a'), 10, 'the new value');
  map.set('c', 3);
  t.same(held(map, ['a', 'b', 'c']), ['b', 'c'], 'a was still the oldest: setting it again did not make it new');
});

t.test('a map of one entry, and sizes that are not positive integers', async (t) => {
  const map = new BoundedMap<number, string>(1);
  map.set(1, 'one');
  map.set(2, 'two');
  t.equal(map.size, 1);
  t.same([map.get(1), map.get(2), map.has(1), map.has(2)], [undefined, 'two', false, true]);
  for (const max of [0, -1, 1.5, Number.NaN]) {
    const refusal = { name: 'RangeError', message: `a BoundedMap's max must be a positive integer, not ${max}` };
    t.throws(() => new BoundedMap(max), refusal, `max ${max} is refused`);
  }
});
