import t from 'tap';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { canonicalJson } from '../../src/core/canonical-json.js';
import {
  countListTokens, countObjectTokens, countTokens, ENCODER_MERGE_CACHE_MAX, fixedRecordTokens, recordCoreTokens,
  tokenizerLoaded, warmUpTokenizer,
} from '../../src/adapter/token-measure.js';

// Budgets report real o200k_base counts (CONTRACT.md §12.5). countTokens adds up the counts of segments cut
// where a chunk always ends (docs/decisions/0011); countListTokens and countObjectTokens count an object's core
// once and add fixed joints (docs/decisions/0009). These tests hold all three to a whole-text encode: on
// public-record shapes, on texts that must fall back to counting whole, and on arbitrary text.

const AS_TEXT = { allowedSpecial: new Set<string>(), disallowedSpecial: new Set<string>() };
const whole = (text: string) => encode(text, AS_TEXT).length;
const list = (objects: readonly unknown[]) => `[${objects.map((object) => canonicalJson(object)).join(',')}]`;

let seed = 0x51f15e;
function random(): number {
  seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5;
  return (seed >>> 0) / 2 ** 32;
}
const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)]!;

const PIECES = [
  'The billing service retries webhook deliveries', 'يستخدم خادم البناء الإصدار ٢٠ من Node', 'it\'s cached for 3600 s',
  'port 8443', '"quoted" words', 'tab\there', 'line\nbreak', '  double  spaces ', 'emoji 🚀 launch', 'ملفّ الإعدادات',
  'x=1;y=2', 'trailing digits 42',
  'ÉCOLE naïve café', 'path/to/file.yaml', 'under_score', 'UPPER lower', '100%', 'ends with mark é\u0301', '',
];

t.test('warmUpTokenizer resolves once the encoder is loaded: the server awaits it before answering initialize',
  async (t) => {
  t.equal(tokenizerLoaded(), false, 'nothing in this process has counted yet');
  await warmUpTokenizer();
  t.equal(tokenizerLoaded(), true);
  t.equal(await countTokens('{"warm":"up"}'), whole('{"warm":"up"}'));
});

function fact(): string {
  return Array.from({ length: 1 + Math.floor(random() * 6) }, () => pick(PIECES)).join(pick([' ', '', '. ', ', ']));
}

/**
 * A public record shape (CONTRACT.md §6.4): its canonical text starts with `{"authority_role` and ends with the
 * verifier.
 */
function record(): Record<string, unknown> {
  return {
    memory_id: crypto.randomUUID(), record_id: crypto.randomUUID(), revision: 1 + Math.floor(random() * 5),
    parent_record_id: random() < 0.5 ? null : crypto.randomUUID(),
    scope: {
      scope: 'PROJECT', project_id: pick(['p1', 'مشروع', 'repo-42']), worktree_id: null, workflow_id: null,
      agent_id: null,
    },
    memory_type: 'PROJECT_LEARNED_FACT', fact: fact(),
    source_provenance: {
      source_class: 'repo', source_ref: pick(['a/b.ts', 'README.md#L10', 'ci']), source_hash: 'ab'.repeat(32),
    },
    source_timestamp: '2026-11-30T10:00:00Z', created_at: '2026-11-30T10:00:00.123456Z', last_verified_at: null,
    verified_by: pick(['UNVERIFIED', 'OWNER', 'CURRENT_REPO_CHECK', 'AUTOMATED_CHECK']),
    authority_role: pick(['UNRESOLVED', 'PROJECT_CURRENT', 'OWNER_CURRENT']),
    contribution_origin: { contributor_class: 'DELEGATED_AGENT', contributor_ref: 'codex' },
    freshness_policy: { kind: 'never' }, supersedes: [],
    contradiction_state: 'NONE', confidence: Math.round(random() * 100) / 100,
    tags: random() < 0.5 ? [] : ['ci', fact().slice(0, 12)],
    lifecycle_state: pick(['CANDIDATE', 'VALIDATED_CURRENT']),
    relevance_score: random() < 0.5 ? null : Number(random().toFixed(6)), retrieval_rank: random() < 0.5 ? null : 1,
  };
}

t.test('record lists count exactly what a whole-text encode counts', async (t) => {
  let mismatches = 0;
  for (let i = 0; i < 300; i += 1) {
    const records = Array.from({ length: Math.floor(random() * 7) }, record);
    const texts = records.map((r) => canonicalJson(r));
    if ((await countListTokens(texts)) !== whole(list(records))) mismatches += 1;
    for (const text of texts) if ((await countObjectTokens(text)) !== whole(text)) mismatches += 1;
  }
  t.equal(mismatches, 0);
});

t.test('prefixes of one list share the counted cores and stay exact', async (t) => {
  const records = Array.from({ length: 6 }, record);
  const texts = records.map((r) => canonicalJson(r));
  for (let kept = 0; kept <= texts.length; kept += 1) t.equal(await countListTokens(texts.slice(0, kept)),
    whole(list(records.slice(0, kept))), `first ${kept}`);
});

// Stored counts (docs/decisions/0036): a record's count without its four changing pieces is stored when it is written;
// a later read adds the pieces as they are then. The count must be exact whatever the changing pieces became.
const core = (text: string) => whole(text) - whole('{"') - whole('"}');
const CHANGES: readonly Record<string, unknown>[] = [
  {}, { contradiction_state: 'UNRESOLVED' }, { lifecycle_state: 'SUPERSEDED' },
  { relevance_score: 0.123456, retrieval_rank: 7 },
  { contradiction_state: 'RESOLVED', lifecycle_state: 'HISTORICAL', relevance_score: 1, retrieval_rank: 12 },
  { relevance_score: 0.5, retrieval_rank: 1 }, { relevance_score: 1e-6, retrieval_rank: 100 },
  { relevance_score: null, retrieval_rank: null },
];

t.test('a stored fixed count plus the changing pieces as they are now counts a record core exactly', async (t) => {
  let mismatches = 0;
  let checked = 0;
  for (let i = 0; i < 300; i += 1) {
    const written = record();
    const fixed = await fixedRecordTokens(written, canonicalJson(written));
    if (fixed === null) { mismatches += 1; continue; }
    for (const change of CHANGES) {
      const now = { ...written, ...change };
      const text = canonicalJson(now);
      if ((await recordCoreTokens(now, text, fixed)) !== core(text)) mismatches += 1;
      checked += 1;
    }
  }
  t.equal(checked, 300 * CHANGES.length, 'every record counts by pieces');
  t.equal(mismatches, 0);
});

t.test('a text that does not count by pieces gets no stored count, and a stored one is not applied to it',
  async (t) => {
  const written = record();
  const without = { ...written };
  delete without.retrieval_rank;
  t.equal(await fixedRecordTokens(without, canonicalJson(without)), null, 'a changing key missing');
  const odd = { ...written, fact: 'ends in a mark é\u0301', verified_by: 'é\u0301' };
  t.equal(await fixedRecordTokens(odd, canonicalJson(odd)), null, 'a core that does not end with a letter');
  const other = {
    a: 'x', contradiction_state: 'NONE', lifecycle_state: 'CANDIDATE', relevance_score: null, retrieval_rank: 1,
  };
  t.equal(await fixedRecordTokens(other, canonicalJson(other)), null, 'a changing key last');
  t.equal(await recordCoreTokens(without, canonicalJson(without), 100), undefined,
    'nothing added to a count it cannot use');
  const text = canonicalJson(written);
  const pieces = core(text) - (await fixedRecordTokens(written, text))!;
  t.equal(await recordCoreTokens(written, text, 100), 100 + pieces, 'the stored count plus the pieces of this text');
  t.equal(await recordCoreTokens({ ...written, retrieval_rank: 99 }, text, 100), undefined,
    'a record whose changing piece is not in the text gets nothing');
});

t.test('countListTokens takes a known core count instead of counting that core', async (t) => {
  const records = [record(), record()];
  const texts = records.map((r) => canonicalJson(r));
  const exact = whole(list(records));
  t.equal(await countListTokens(texts, [core(texts[0]!), undefined]), exact, 'a right known count');
  t.equal(await countListTokens(texts, [core(texts[0]!) + 5, undefined]), exact + 5,
    'the known count is what is added');
});

t.test('texts outside the core shape are counted whole, still exactly', async (t) => {
  const odd = [
    { 1: 'starts with a digit key' }, { a: 1 }, { a: 'ends with a mark e\u0301' }, { 'é': 'x' },
    { a: 'emoji at the end 🚀' },
    { a: 'spaces at the end   ' }, { a: "it's" }, {}, { '"': 'quote key' }, { a: 'ok', b: 'done' },
  ];
  for (const object of odd) {
    const text = canonicalJson(object);
    t.equal(await countObjectTokens(text), whole(text), text);
  }
  t.equal(await countListTokens(odd.map((object) => canonicalJson(object))), whole(list(odd)), 'mixed list');
  t.equal(await countListTokens([]), whole('[]'), 'empty list');
  t.equal(await countTokens('hello world'), whole('hello world'));
});

/** The first 5 of 20,000 texts of 1 to `most` random atoms whose count differs from a whole-text encode. */
async function miscounted(atoms: readonly string[], most: number): Promise<string[]> {
  const mismatches: string[] = [];
  for (let i = 0; i < 20_000; i += 1) {
    let text = '';
    for (let length = 1 + Math.floor(random() * most); length > 0; length -= 1) text += pick(atoms);
    if ((await countTokens(text)) !== whole(text)) mismatches.push(text);
  }
  return mismatches.slice(0, 5);
}

t.test('arbitrary text counts exactly what a whole-text encode counts, segment cuts and all', async (t) => {
  // Atoms crowd the cut rule's edges: the punctuation pairs it cuts after, single punctuation before a letter
  // (no cut there: a letter chunk may take one leading mark), marks, contractions, escapes, newlines after
  // punctuation, digits runs, non-Latin letters and a special-token string counted as text.
  const atoms = ['"', ',', ':', '{', '}', '[', ']', ',"', '":', '{"', '"}', '],', 'a', 'Z', 'abc', 'ABC', 'Ab', '1',
    '123', '4567', ' ', '  ', '\n', '\r\n', '\t', "'", "'s", "'LL", '/', '\\', '\\"', '\\n', 'é', 'e\u0301', '\u0301',
    'ب', 'بَ', '٢٠', '🚀', '_', '-', '.', '<|endoftext|>', 'ǅ', 'ʰ', '中文'];
  t.same(await miscounted(atoms, 30), [], 'no text counts differently');
  t.equal(await countTokens(''), 0, 'the empty text has no tokens');
  const repeated = canonicalJson({ memory_type: 'PROJECT_LEARNED_FACT', scope: { scope: 'PROJECT' } });
  t.equal(await countTokens(repeated), whole(repeated), 'a text counted again from remembered segments');
  t.equal(await countTokens(repeated), whole(repeated), 'and again');
  const long = `{"fact":"${'word '.repeat(200)}","tags":["a"]}`;
  t.equal(await countTokens(long), whole(long), 'a long segment (a fact) counted first');
  t.equal(await countTokens(long), whole(long), 'and again from its remembered count');
  // More long segments than are remembered: the oldest are dropped, and every count stays exact.
  const facts = Array.from({ length: 2100 },
    (_, i) => `{"fact":"fact ${i} ${'مرحبا word '.repeat(30 + (i % 7))}","x":1}`);
  const wrong = [];
  for (const text of [...facts, ...facts.slice(0, 50), ...facts.slice(-50)])
    if ((await countTokens(text)) !== whole(text)) wrong.push(text);
  t.same(wrong, [], 'long segments past the remembered number count exactly');
  // More short segments (ids, timestamps) than are remembered: the oldest are dropped, and every count stays exact.
  const ids = Array.from({ length: 66_000 }, (_, i) =>
    `{"record_id":"${(i * 2654435761 % 2 ** 32).toString(16)}-${i}","x":1}`);
  const wrongIds = [];
  for (const text of [...ids, ...ids.slice(0, 50), ...ids.slice(-50)]) {
    if ((await countTokens(text)) !== whole(text)) wrongIds.push(text);
  }
  t.same(wrongIds, [], 'short segments past the remembered number count exactly');
  const tooLong = `{"fact":"${'word '.repeat(600)}","tags":["a"]}`;
  t.equal(await countTokens(tooLong), whole(tooLong), 'a segment too long to remember is counted directly');
});

t.test('the encoder\'s own merge cache is bounded like ours, and holds no slice of a counted text', async (t) => {
  // gpt-tokenizer caches merges by chunk, 100,000 entries by default, keyed by the string it is given: a chunk sliced
  // from a record text kept that whole text alive (a soak held about 1.5 KB an entry with CJK records).
  await warmUpTokenizer();
  const encoder = (await import('gpt-tokenizer/encoding/o200k_base')).default as unknown as {
    bytePairEncodingCoreProcessor: { mergeCacheSize: number; mergeCache?: Map<string, unknown> };
  };
  const core = encoder.bytePairEncodingCoreProcessor;
  t.equal(core.mergeCacheSize, ENCODER_MERGE_CACHE_MAX, 'the bound is set when the encoder loads');
  for (let i = 0; i < ENCODER_MERGE_CACHE_MAX + 2000; i += 1) await countTokens(`{"fact":"zq${i.toString(36)}vx"}`);
  t.ok(core.mergeCache!.size <= ENCODER_MERGE_CACHE_MAX, `${core.mergeCache!.size} entries at most`);
});

t.test('chunk counts remembered from one text serve another exactly (docs/decisions/0037)', async (t) => {
  // The encoder's expression splits a text into chunks; a chunk counted in one text is reused in the next. Whitespace
  // runs end by look-ahead (`\s+(?!\S)`), a letter chunk takes one leading mark, a number chunk stops at 3 digits:
  // texts without the segment cuts of 0011, so every chunk meets the remembered table.
  const atoms = [' ', '  ', '   ', '\t', '\n', '\r', '\r\n', ' \n', 'a', 'Ab', 'HTTP', "'s", "'T", "'ll", '1', '12',
    '1234', '.', '..', '/', '//', '-', 'é', 'e\u0301', 'ب', '٣', '🚀', '中', 'ǅ', 'ff60ba', 'c2c8', '<|endoftext|>',
    '\u00a0', '\u3000', '\u2028',
    '\u0085', '\ud800', '\udc00', '\u{1d400}', '\u{1d7d9}', '\u{10437}', '👩\u200d💻'];
  t.same(await miscounted(atoms, 24), [], 'no text counts differently');
  // More distinct chunks than are remembered (oldest dropped), and chunks too long to remember: still exact.
  const wrong: string[] = [];
  for (let i = 0; i < 20_000; i += 1) {
    const text = `${(i * 2654435761 % 2 ** 32).toString(36)}x${'q'.repeat(i % 50)} ${i}`;
    if ((await countTokens(text)) !== whole(text)) wrong.push(text);
  }
  t.same(wrong.slice(0, 5), [], 'past the remembered number and the remembered length');
});
