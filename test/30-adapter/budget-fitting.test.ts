import t from 'tap';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { fitBudget } from '../../src/adapter/budget-fitting.js';
import { canonicalJson } from '../../src/core/canonical-json.js';

// CONTRACT.md §12.5: the longest prefix of the results whose canonical JSON list fits both budgets, with
// the measures of what is returned.

const AS_TEXT = { allowedSpecial: new Set<string>(), disallowedSpecial: new Set<string>() };
const record = (n: number) => ({
  record_id: `r-${n}`, fact: `fact number ${n}: ${'words '.repeat(n)}`, tags: ['a'], confidence: 0.5,
});
const measure = (list: readonly unknown[]) => {
  const text = canonicalJson(list);
  return { bytes: Buffer.byteLength(text), tokens: encode(text, AS_TEXT).length };
};

t.test('everything fits: all results, measured as one canonical list', async (t) => {
  const results = [record(1), record(2), record(3)];
  const fitted = await fitBudget(results, 100_000, 100_000);
  const whole = measure(results);
  t.equal(fitted.results.length, 3);
  t.notOk(fitted.truncated);
  t.equal(fitted.serializedBytes, whole.bytes);
  t.equal(fitted.serializedTokens, whole.tokens);
  t.strictSame(await fitBudget([], 10, 10), { results: [], truncated: false, serializedBytes: 0, serializedTokens: 0 },
    'nothing to fit measures 0 and 0');
});

t.test('the longest prefix within both budgets, whichever binds', async (t) => {
  const results = [record(1), record(5), record(9), record(13)];
  const two = measure(results.slice(0, 2));
  const byBytes = await fitBudget(results, two.bytes, 100_000);
  t.equal(byBytes.results.length, 2, 'the byte budget binds');
  t.ok(byBytes.truncated);
  t.equal(byBytes.serializedBytes, two.bytes);
  t.equal(byBytes.serializedTokens, two.tokens);
  const byTokens = await fitBudget(results, 100_000, two.tokens + 1);
  t.equal(byTokens.results.length, 2, 'the token budget binds');
  t.equal((await fitBudget(results, 5, 100_000)).results.length, 0, 'not even the first fits');
});

t.test('returned results are deep-frozen and keep the text they were measured with', async (t) => {
  const results = [record(2), record(4)];
  const fitted = await fitBudget(results, 100_000, 100_000);
  t.equal(fitted.results[0], results[0], 'the same objects, not copies');
  t.ok(Object.isFrozen(fitted.results[0]) && Object.isFrozen(fitted.results[0]!.tags), 'frozen, nested values too');
  t.throws(() => { (fitted.results[0] as { fact: string }).fact = 'changed'; }, TypeError,
    'a measured result cannot change behind its measure');
  t.equal(canonicalJson(fitted.results), canonicalJson(results.map((r) => ({ ...r, tags: [...r.tags] }))),
    'the remembered text is the canonical text');
});
