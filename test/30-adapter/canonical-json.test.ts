import t from 'tap';
import { canonicalJson, freezeCanonical } from '../../src/core/canonical-json.js';

// Canonical JSON (CONTRACT.md §2.2): fingerprints, record columns, budgets and the text item of every
// envelope depend on it, so its output is pinned here against a plain reference implementation.

/** The definition, written as directly as possible: sort keys by UTF-16 code units, recurse, no whitespace. */
function reference(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.keys(value).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${reference((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}

t.test('keys sort by UTF-16 code units at every depth, integer-like keys included', async (t) => {
  t.equal(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }),
    '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
  // A JS object lists integer-like keys first in numeric order; the canonical order is textual.
  t.equal(canonicalJson({ 9: 'nine', 10: 'ten', a: 'a', B: 'b' }), '{"10":"ten","9":"nine","B":"b","a":"a"}');
  // U+FF21 sorts after U+D83D in UTF-16 although its code point is smaller.
  t.equal(canonicalJson({ '\uff21': 1, '\u{1F600}': 2 }), `{"\u{1F600}":2,"\uff21":1}`);
});

t.test('strings and numbers print as ECMAScript does; undefined members are dropped', async (t) => {
  t.equal(canonicalJson({
    s: 'quote " backslash \\ newline \n tab \t nul \u0000', n: 1e21, f: 0.1, neg: -0, u: undefined,
  }),
    '{"f":0.1,"n":1e+21,"neg":0,"s":"quote \\" backslash \\\\ newline \\n tab \\t nul \\u0000"}');
  t.equal(canonicalJson([true, false, null, 'ش']), '[true,false,null,"ش"]');
  t.equal(canonicalJson('lone \ud800'), '"lone \\ud800"');
});

t.test('values JSON cannot carry are refused, not approximated', async (t) => {
  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, { n: Number.NEGATIVE_INFINITY }, [Number.NaN]]) {
    t.throws(() => canonicalJson(bad), TypeError);
  }
  t.throws(() => canonicalJson(10n), TypeError);
  t.throws(() => canonicalJson({ f: () => 1 }), TypeError);
  t.throws(() => canonicalJson(Symbol('s')), TypeError);
});

t.test('agrees with the reference on generated values, including keys seen many times', async (t) => {
  let seed = 0x2545f491;
  const next = () => {
    seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32;
  };
  const keyPool = ['a', 'b', 'Z', '10', '9', 'é', 'ش', 'key "q"', '', 'x\ny', 'lifecycle_state'];
  const generate = (depth: number): unknown => {
    const pick = Math.floor(next() * (depth > 3 ? 4 : 6));
    if (pick === 0) return null;
    if (pick === 1) return next() < 0.5;
    if (pick === 2) return Math.round((next() - 0.5) * 1e6) / (next() < 0.5 ? 1 : 1000);
    if (pick === 3) return keyPool[Math.floor(next() * keyPool.length)]!
      + String.fromCharCode(32 + Math.floor(next() * 2000));
    if (pick === 4) return Array.from({ length: Math.floor(next() * 4) }, () => generate(depth + 1));
    return Object.fromEntries(Array.from({ length: Math.floor(next() * 5) },
      () => [keyPool[Math.floor(next() * keyPool.length)]!, generate(depth + 1)]));
  };
  let mismatches = 0;
  for (let i = 0; i < 2000; i += 1) {
    const value = generate(0);
    const text = canonicalJson(value);
    if (text !== reference(value) || canonicalJson(JSON.parse(text)) !== text) mismatches += 1;
  }
  t.equal(mismatches, 0);
});

t.test('freezeCanonical deep-freezes a value; its text is reused wherever it appears and stays equal to a fresh walk',
  async (t) => {
  const binding = { z: [1, { b: 'x', a: null }], a: { '10': 'ten', '9': 'nine' } };
  const expected = reference(binding);
  const frozen = freezeCanonical(binding);
  t.equal(frozen, binding, 'the same object, now frozen');
  t.ok(Object.isFrozen(binding) && Object.isFrozen(binding.z) && Object.isFrozen(binding.z[1])
    && Object.isFrozen(binding.a), 'frozen at every depth');
  t.throws(() => { (binding.z[1] as Record<string, unknown>).b = 'changed'; }, TypeError,
    'nested values cannot change under the remembered text');
  t.equal(canonicalJson(binding), expected);
  t.equal(canonicalJson({ outer: binding, list: [binding, binding] }),
    `{"list":[${expected},${expected}],"outer":${expected}}`);
  let reads = 0;
  const counted = freezeCanonical({ get a() { reads += 1; return 1; } });
  const readsWhenFrozen = reads;
  t.equal(canonicalJson({ x: counted }), '{"x":{"a":1}}');
  t.equal(reads, readsWhenFrozen, 'the remembered text is copied, the object not walked again');
  // A frozen object that did not go through freezeCanonical is walked as usual.
  t.equal(canonicalJson(Object.freeze({ b: 1, a: 2 })), '{"a":2,"b":1}');
  t.equal(freezeCanonical('text'), 'text', 'primitives pass through');
  t.throws(() => freezeCanonical({ n: Number.NaN }), TypeError, 'no canonical form, refused like canonicalJson');
});
