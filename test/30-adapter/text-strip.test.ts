import t from 'tap';
import { WHITESPACE_CLASS, strip } from '../../src/core/text.js';

// strip (CONTRACT.md §2.1): leading and trailing whitespace removed, whitespace being ECMAScript \s plus U+001C-U+001F
// and U+0085. It runs on queries and provenance strings before their length is checked, so it must stay linear.

/** The definition, written as an expression (quadratic on inner whitespace runs, fine for short texts). */
const reference = (value: string) =>
  value.replace(new RegExp(`^[${WHITESPACE_CLASS}]+|[${WHITESPACE_CLASS}]+$`, 'gu'), '');

t.test('strip agrees with the expression of its definition', async (t) => {
  const units = [' ', '\t', '\n', '\r', '\u000B', '\u000C', '\u001C', '\u001F', '\u0085', '\u00A0', '\u1680', '\u2000',
    '\u200A', '\u2028', '\u2029', '\u202F', '\u205F', '\u3000', '\uFEFF', '\u200B', '\u180E', 'a', 'é', '中', '\uD83D',
    '\uDE00', '\uD83D\uDE00', '\u0000', '-'];
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  for (let n = 0; n < 5000; n += 1) {
    const length = next() % 9;
    let text = '';
    for (let i = 0; i < length; i += 1) text += units[next() % units.length];
    if (strip(text) !== reference(text)) {
      t.fail(`differs on ${JSON.stringify(text)}`);
      return;
    }
  }
  t.equal(strip(' \u3000 a b \u0085'), 'a b');
  t.equal(strip('\u200B a \u200B'), '\u200B a \u200B', 'U+200B is not whitespace');
  t.equal(strip('   '), '');
  t.equal(strip(''), '');
  const untouched = 'no edges';
  t.equal(strip(untouched), untouched);
});

t.test('strip is linear in the length of inner whitespace runs', async (t) => {
  // The expression took 7.8 s for 80,000 inner spaces and about a minute for 200,000. A bound far above the linear
  // cost (a few milliseconds), not a speed target.
  const started = performance.now();
  t.equal(strip(` a${' '.repeat(200_000)}b `).length, 200_002);
  t.equal(strip(`a${'\u3000'.repeat(200_000)}b`).length, 200_002);
  t.ok(performance.now() - started < 5000, 'answered within 5 s');
});
