/**
 * A map that holds at most `max` entries and, when full, forgets the oldest to take a new key: first in, first out.
 * A value set again under a key it holds keeps that key's place. Every operation takes amortized constant time.
 *
 * The plain form of this, `map.delete(map.keys().next().value)` before each new key, is not constant: V8 keeps a
 * deleted entry of a Map as a hole until the table is rebuilt, and an iterator walks the holes before the first
 * live entry. With 65,536 entries each eviction took about 21 µs (4,096: 1.7 µs). A store's token count of its
 * record, 66 µs p50 in a fresh process, took 180-310 µs from some 16,000 records on, once the segment counts were
 * full, rising and falling as V8 rebuilt the table (docs/performance.md, stop 47). Here the keys wait in a ring,
 * oldest first, and no iterator is ever made.
 */
export class BoundedMap<K, V> {
  readonly #max: number;
  readonly #entries = new Map<K, V>();
  /** The keys held, in the order they came: a ring once full, its oldest key at #oldest. */
  readonly #order: K[] = [];
  #oldest = 0;

  /** `max`: a positive integer. */
  constructor(max: number) {
    if (!Number.isInteger(max) || max < 1)
      throw new RangeError(`a BoundedMap's max must be a positive integer, not ${max}`);
    this.#max = max;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: K): V | undefined {
    return this.#entries.get(key);
  }

  has(key: K): boolean {
    return this.#entries.has(key);
  }

  set(key: K, value: V): void {
    if (!this.#entries.has(key)) {
      if (this.#order.length < this.#max) {
        this.#order.push(key);
      } else {
        this.#entries.delete(this.#order[this.#oldest]!);
        this.#order[this.#oldest] = key;
        this.#oldest = (this.#oldest + 1) % this.#max;
      }
    }
    this.#entries.set(key, value);
  }
}
