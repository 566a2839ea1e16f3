import type { SeededRandom } from './seeded-random.js';

/** Vocabulary size: a few thousand words, so popular words hit many rows and rare ones few. */
export const VOCABULARY_SIZE = 3000;

const ONSETS = ['b', 'c', 'd', 'f', 'g', 'h', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'z', 'br', 'st', 'tr', 'pl'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ou'];

/**
 * Seeded pseudo-words with a Zipf (s = 1) frequency, as natural text has: the commonest word appears in
 * most facts, the median word in a few hundred of 100k. Words are ASCII letters only, so FTS5's
 * unicode61 tokenizer keeps each one a single token and a quoted word is a valid MATCH term.
 */
export class FactVocabulary {
  readonly words: readonly string[];
  readonly #cumulative: Float64Array;

  constructor(rng: SeededRandom, size: number = VOCABULARY_SIZE) {
    const words = new Set<string>();
    while (words.size < size) {
      const syllables = 2 + rng.int(3);
      let word = '';
      for (let i = 0; i < syllables; i += 1) word += ONSETS[rng.int(ONSETS.length)]! + VOWELS[rng.int(VOWELS.length)]!;
      words.add(word);
    }
    this.words = Object.freeze([...words]);
    this.#cumulative = new Float64Array(size);
    let total = 0;
    for (let rank = 0; rank < size; rank += 1) {
      total += 1 / (rank + 1);
      this.#cumulative[rank] = total;
    }
    for (let rank = 0; rank < size; rank += 1) this.#cumulative[rank]! /= total;
  }

  /** Zipf rank of one word draw (0 = commonest). */
  sampleRank(rng: SeededRandom): number {
    const target = rng.next();
    let low = 0;
    let high = this.#cumulative.length - 1;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.#cumulative[middle]! < target) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** A fact sentence of 8 to 20 Zipf-drawn words. */
  factText(rng: SeededRandom): string {
    const length = 8 + rng.int(13);
    const words: string[] = [];
    for (let i = 0; i < length; i += 1) words.push(this.words[this.sampleRank(rng)]!);
    return words.join(' ');
  }
}
