import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import {
  HASH_A, HASH_B, NOW, currentRequest, openWriteBench, provenance, refused, store, storeRequest, update, type Json,
  type WriteBench,
} from '../helpers/writes.js';
import type { MemoryAdapter } from '../../src/adapter/memory-adapter.js';

// Field rules of memory_store and of the update payloads (CONTRACT.md §2.3, §5.3, §5.6, §9.4), driven through
// MemoryAdapter on a fresh local-hash-384 database per test. Every refusal also proves nothing was written.

async function setup(t: Test): Promise<{ bench: WriteBench; delegated: MemoryAdapter; owner: MemoryAdapter }> {
  const bench = await openWriteBench(t);
  return { bench, delegated: bench.adapter('delegated-candidate'), owner: bench.adapter('owner-current') };
}

/** Stores a Candidate and returns its public record. */
async function stored(adapter: MemoryAdapter, overrides: Json): Promise<Json> {
  const envelope = await store(adapter, storeRequest(overrides));
  if (envelope.status !== 'OK') throw new Error(`expected OK, got ${envelope.status}`);
  return envelope.results[0];
}

let unique = 0;
/** A distinct fact, so stores never collapse into DUPLICATE. */
const fact = (label: string) => `fact ${label} number ${(unique += 1)}`;

t.test('fact: stored collapsed; 1-2000 bytes after collapsing, measured in bytes', async (t) => {
  const { bench, delegated } = await setup(t);
  t.equal((await stored(delegated, { fact: '  The   build\tuses\n\u001CNode\u0085 20  ' })).fact,
    'The build uses Node 20');
  t.equal((await stored(delegated, { fact: `  ${'x'.repeat(2000)}  ` })).fact, 'x'.repeat(2000),
    '2000 bytes after strip is accepted');
  t.equal((await stored(delegated, { fact: `${'x'.repeat(1998)}é` })).fact.length, 1999,
    '1999 characters = 2000 bytes accepted');
  await refused(t, bench, () => store(delegated, storeRequest({ fact: 'y'.repeat(2001) })), 'INVALID_ENVELOPE', /fact/,
    '2001 bytes');
  await refused(t, bench, () => store(delegated, storeRequest({ fact: `${'x'.repeat(1999)}é` })), 'INVALID_ENVELOPE',
    /fact/, '2000 characters, 2001 bytes');
  await refused(t, bench, () => store(delegated, storeRequest({ fact: 'ab '.repeat(700) })), 'INVALID_ENVELOPE', /fact/,
    '2099 bytes after collapse');
  for (const empty of ['', '   ', '\n\t \u001F\u0085']) {
    await refused(t, bench, () => store(delegated, storeRequest({ fact: empty })), 'INVALID_ENVELOPE', /fact/,
      `blank fact ${JSON.stringify(empty)}`);
  }
  await refused(t, bench, () => store(delegated, storeRequest({ fact: 42 })), 'INVALID_ENVELOPE', /fact/,
    'non-string fact');
  // A lone surrogate has no UTF-8 form: it used to be committed as bytes that never read back (WRITE_UNCONFIRMED).
  for (const fact of ['\ud800', 'Node build \udc00 step', 'tail \ud83d']) {
    await refused(t, bench, () => store(delegated, storeRequest({ fact })), 'INVALID_ENVELOPE', /well-formed Unicode/,
      `lone surrogate in ${JSON.stringify(fact)}`);
  }
  t.equal((await stored(delegated, { fact: 'Ship it \ud83d\ude80 on Friday' })).fact, 'Ship it \u{1F680} on Friday',
    'a paired surrogate (an emoji) is stored');
});

t.test('fact: secret-like values and raw-content phrases are RAW_OR_SENSITIVE_CONTENT', async (t) => {
  const { bench, delegated } = await setup(t);
  const secrets = {
    'sk- key': `use sk-${'A1b2'.repeat(5)} for the api`,
    'ghp_ token': `token ghp_${'x'.repeat(20)} here`,
    'gho_ token': `gho_${'Ab_9'.repeat(5)}`,
    'ghs_ token': `ghs_${'a'.repeat(30)}`,
    'password =': 'the db password = hunter2hunter2',
    'PASSWORD: (any case, no spaces)': 'PASSWORD:correcthorse12',
    'api_key=': `api_key=${'q'.repeat(12)}`,
    'secret:': `Secret : ${'s'.repeat(16)}`,
    'token=': `token=${'t'.repeat(12)}`,
    'RSA PEM header': '-----BEGIN RSA PRIVATE KEY----- MIIEow',
    'PEM header': 'key: -----BEGIN PRIVATE KEY-----',
    'PEM header after other BEGINs': `${'-----BEGIN'.repeat(3)} x PRIVATE KEY-----`,
    'bearer token': `Authorization: Bearer ${'abcDEF123-._~+/='.repeat(2)}`,
    'bearer, lower case': `bearer ${'z'.repeat(20)}`,
    'AIza key': `AIza${'k'.repeat(30)}`,
    'full transcript': 'Here is the full transcript of the session',
    'FULL TRANSCRIPT (case)': 'FULL TRANSCRIPT follows',
    'hidden reasoning across whitespace': 'my hidden \n\t reasoning was',
    'whole repository': 'attach the Whole Repository',
    'whole repository (long s, NFKC)': 'WHOLE REPOſITORY dump',
    'full transcript (fullwidth, NFKC)': 'ｆｕｌｌ ｔｒａｎｓｃｒｉｐｔ',
    'hidden reasoning (non-breaking space)': 'Hidden\u00A0Reasoning',
  };
  // The message says which rule refused the fact (never the fact): the phrase it holds, or a secret.
  for (const [name, text] of Object.entries(secrets)) {
    const phrase = /transcript|reasoning|repository/i.exec(name);
    await refused(t, bench, () => store(delegated, storeRequest({ fact: text })), 'RAW_OR_SENSITIVE_CONTENT',
      phrase ? new RegExp(`^fact says "(full|hidden|whole) ${phrase[0].toLowerCase()}", which marks raw content`)
        : /^fact looks like it holds a secret \(a key, token or password\); state the fact without it$/, name);
  }
  // Near misses are ordinary facts: the refusals above are caused by the pattern, not by the words.
  const allowed = [
    `use sk-${'A'.repeat(19)}`, `ghp_${'x'.repeat(19)}`, 'the db password = hunter2', `bearer ${'z'.repeat(19)}`,
    `AIza${'k'.repeat(29)}`, '-----BEGIN PUBLIC KEY-----', 'PRIVATE KEY----- before -----BEGIN',
    'a full-transcript is not kept', 'the hidden_reasoning flag', 'the whole repo is small',
  ];
  for (const text of allowed) t.equal((await stored(delegated, { fact: text })).fact, text, `allowed: ${text}`);
});

t.test('the secret check is linear: megabytes of PEM openers are refused in milliseconds, not minutes', async (t) => {
  const { bench, delegated } = await setup(t);
  // The lazy regex /-----BEGIN[\s\S]*?PRIVATE KEY-----/ rescanned the rest of the value from every opener: this
  // 3 MB value held the server 38 s (a 10 MiB frame, minutes). A bound 1000 times the linear cost, not a speed target.
  const openers = '-----BEGIN'.repeat(300_000);
  const started = performance.now();
  await refused(t, bench, () => store(delegated, storeRequest({ fact: openers })), 'INVALID_ENVELOPE', /fact/,
    'too long');
  await refused(t, bench, () => store(delegated, storeRequest({ fact: `${openers}PRIVATE KEY-----` })),
    'RAW_OR_SENSITIVE_CONTENT', /fact/, 'with its terminator at the end');
  t.ok(performance.now() - started < 5000, 'both answered within 5 s');
});

t.test('source_provenance: required keys, lengths, hex, CR/LF and secrets', async (t) => {
  const { bench, delegated } = await setup(t);
  const missing = await refused(t, bench, () => store(delegated, storeRequest({
    source_provenance: { source_ref: 'a', source_hash: HASH_A, extraction_method: 'read', review_ref: null },
  })), 'PROVENANCE_REQUIRED');
  t.match(missing?.message, /source_provenance\.source_class/);
  t.match(missing?.message, /source_provenance\.review_ref/, 'null counts as missing');
  t.notMatch(missing?.message, /source_ref|source_hash|extraction_method/, 'only the missing keys are listed');
  const allMissing = await refused(t, bench, () => store(delegated, storeRequest({ source_provenance: {} })),
    'PROVENANCE_REQUIRED');
  for (const key of ['source_class', 'source_ref', 'source_hash', 'review_ref', 'extraction_method'])
    t.match(allMissing?.message, `source_provenance.${key}`);
  for (const value of [null, 'package.json', ['a']]) {
    await refused(t, bench, () => store(delegated, storeRequest({ source_provenance: value })), 'PROVENANCE_REQUIRED',
      undefined, `source_provenance ${JSON.stringify(value)}`);
  }

  const limits = { source_class: 96, source_ref: 256, review_ref: 256, extraction_method: 96 } as const;
  for (const [key, max] of Object.entries(limits)) {
    t.equal((await stored(delegated, { fact: fact(key), source_provenance: provenance({ [key]: 'r'.repeat(max) }) }))
      .source_provenance[key], 'r'.repeat(max), `${key}: ${max} bytes accepted`);
    await refused(t, bench,
      () => store(delegated, storeRequest({ source_provenance: provenance({ [key]: 'r'.repeat(max + 1) }) })),
      'PROVENANCE_REQUIRED', key, `${key}: ${max + 1} bytes`);
    await refused(t, bench,
      () => store(delegated, storeRequest({ source_provenance: provenance({ [key]: 'é'.repeat(max / 2) + 'r' }) })),
      'PROVENANCE_REQUIRED', key, `${key}: bytes, not characters`);
    await refused(t, bench, () => store(delegated, storeRequest({ source_provenance: provenance({ [key]: '  \t ' }) })),
      'PROVENANCE_REQUIRED', key, `${key}: blank`);
    await refused(t, bench, () => store(delegated, storeRequest({ source_provenance: provenance({ [key]: 7 }) })),
      'PROVENANCE_REQUIRED', key, `${key}: not a string`);
    await refused(t, bench,
      () => store(delegated, storeRequest({ source_provenance: provenance({ [key]: 'line one\nline two' }) })),
      'RAW_OR_SENSITIVE_CONTENT', `source_provenance.${key} holds a line break; send it on a single line`,
      `${key}: LF`);
    await refused(t, bench, () => store(delegated, storeRequest({ source_provenance: provenance({ [key]: 'a\rb' }) })),
      'RAW_OR_SENSITIVE_CONTENT', /holds a line break/, `${key}: CR`);
    await refused(t, bench,
      () => store(delegated, storeRequest({ source_provenance: provenance({ [key]: `ref sk-${'Z'.repeat(24)}` }) })),
      'RAW_OR_SENSITIVE_CONTENT',
      `source_provenance.${key} looks like a secret (a key, token or password); send it without the secret`,
      `${key}: secret-like`);
  }
  // Provenance strings are stripped, not collapsed: every §2.1 whitespace character separates `bearer` from its token.
  for (const separator of ['\u0085', '\u001C', '\u001F', '\u3000']) {
    const name = `U+${separator.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
    const sourceRef = `Bearer${separator}${'t'.repeat(24)}`;
    const request = storeRequest({ source_provenance: provenance({ source_ref: sourceRef }) });
    await refused(t, bench, () => store(delegated, request), 'RAW_OR_SENSITIVE_CONTENT', 'source_ref',
      `bearer, ${name}`);
  }
  const nel = `password=${'p'.repeat(11)}\u0085x`;
  t.equal((await stored(delegated, { fact: fact('nel'), source_provenance: provenance({ source_ref: nel }) }))
    .source_provenance.source_ref, nel, 'U+0085 is not one of the 12 non-whitespace characters of an assignment');
  for (const key of ['source_hash', 'source_fingerprint']) {
    for (const bad of ['a'.repeat(63), 'a'.repeat(65), 'g'.repeat(64), `${'a'.repeat(62)} b`, '']) {
      await refused(t, bench, () => store(delegated, storeRequest({ source_provenance: provenance({ [key]: bad }) })),
        'PROVENANCE_REQUIRED', `${key} must be 64 hex digits`, `${key} ${JSON.stringify(bad)}`);
    }
  }

  const record = await stored(delegated, {
    fact: fact('provenance'),
    source_provenance: {
      source_class: '  repo_file ', source_ref: '\tpackage.json\n', source_hash: HASH_A.toUpperCase(),
      review_ref: ' review/1 ', extraction_method: 'read', source_fingerprint: ` ${HASH_B.toUpperCase()} `,
    },
  });
  t.strictSame(record.source_provenance, {
    source_class: 'repo_file', source_ref: 'package.json', source_hash: HASH_A, review_ref: 'review/1',
    extraction_method: 'read', source_fingerprint: HASH_B,
  }, 'stripped, hex lower-cased, six keys');
  const noFingerprint = await stored(delegated, { fact: fact('no fingerprint') });
  t.strictSame(Object.keys(noFingerprint.source_provenance).sort(),
    ['extraction_method', 'review_ref', 'source_class', 'source_fingerprint', 'source_hash', 'source_ref']);
  t.equal(noFingerprint.source_provenance.source_fingerprint, null, 'absent fingerprint is returned as null');
});

t.test('freshness_policy: kinds, ttl_seconds, recheck_ref, source_fingerprint', async (t) => {
  const { bench, delegated } = await setup(t);
  const freshnessOf = async (policy: Json, extra: Json = {}) =>
    (await stored(delegated, { fact: fact('freshness'), freshness_policy: policy, ...extra })).freshness_policy;
  t.strictSame(await freshnessOf({ kind: 'never' }),
    { kind: 'never', recheck_ref: null, source_fingerprint: null, ttl_seconds: null }, 'exactly four keys');
  t.strictSame(await freshnessOf({ kind: 'manual', recheck_ref: '  docs/runbook.md ' }),
    { kind: 'manual', recheck_ref: 'docs/runbook.md', source_fingerprint: null, ttl_seconds: null });
  t.strictSame(await freshnessOf({ kind: 'ttl', ttl_seconds: 1 }),
    { kind: 'ttl', recheck_ref: null, source_fingerprint: null, ttl_seconds: 1 });
  t.strictSame(await freshnessOf({ kind: 'ttl', ttl_seconds: 31_536_000 }),
    { kind: 'ttl', recheck_ref: null, source_fingerprint: null, ttl_seconds: 31_536_000 });
  t.strictSame(await freshnessOf({ kind: 'never', ttl_seconds: null }),
    { kind: 'never', recheck_ref: null, source_fingerprint: null, ttl_seconds: null }, 'null ttl_seconds is absent');
  t.strictSame(await freshnessOf({
    kind: 'on_change', recheck_ref: 'ci/check', source_fingerprint: HASH_A.toUpperCase(),
  }),
    { kind: 'on_change', recheck_ref: 'ci/check', source_fingerprint: HASH_A, ttl_seconds: null },
    'fingerprint lower-cased and compared with the source hash');
  t.equal((await freshnessOf({ kind: 'manual', recheck_ref: 'r'.repeat(256) })).recheck_ref, 'r'.repeat(256),
    'recheck_ref of 256 bytes');

  const policy = (p: Json) => () => store(delegated, storeRequest({ freshness_policy: p }));
  for (const ttl of [0, 31_536_001, 1.5, -5, '60', true])
    await refused(t, bench, policy({ kind: 'ttl', ttl_seconds: ttl }), 'INVALID_ENVELOPE', /ttl_seconds/,
      `ttl_seconds ${JSON.stringify(ttl)}`);
  await refused(t, bench, policy({ kind: 'ttl' }), 'INVALID_ENVELOPE', /ttl_seconds/, 'ttl without ttl_seconds');
  for (const kind of ['never', 'manual']) await refused(t, bench, policy({ kind, ttl_seconds: 60 }), 'INVALID_ENVELOPE',
    /ttl_seconds/, `ttl_seconds with ${kind}`);
  await refused(t, bench, policy({ kind: 'on_change', recheck_ref: 'ci', source_fingerprint: HASH_A, ttl_seconds: 60 }),
    'INVALID_ENVELOPE', /ttl_seconds/, 'ttl_seconds with on_change');
  await refused(t, bench, policy({}), 'INVALID_ENVELOPE', /kind/, 'kind missing');
  await refused(t, bench, policy({ kind: 3 }), 'INVALID_ENVELOPE', /kind/, 'kind not a string');
  for (const kind of ['TTL', 'daily', '']) {
    await refused(t, bench, policy({ kind }), 'INVALID_ENUM', 'manual, never, on_change, ttl',
      `kind ${JSON.stringify(kind)} lists the choices sorted`);
  }
  await refused(t, bench, policy({ kind: 'manual', recheck_ref: 'r'.repeat(257) }), 'INVALID_ENVELOPE', /recheck_ref/,
    'recheck_ref 257 bytes');
  await refused(t, bench, policy({ kind: 'manual', recheck_ref: 5 }), 'INVALID_ENVELOPE', /recheck_ref/,
    'recheck_ref not a string');
  await refused(t, bench, policy({ kind: 'manual', recheck_ref: 'a\nb' }), 'RAW_OR_SENSITIVE_CONTENT', /recheck_ref/,
    'recheck_ref LF');
  await refused(t, bench, policy({ kind: 'manual', recheck_ref: 'a\rb' }), 'RAW_OR_SENSITIVE_CONTENT', /recheck_ref/,
    'recheck_ref CR');
  await refused(t, bench, policy({ kind: 'manual', recheck_ref: `password=${'p'.repeat(12)}` }),
    'RAW_OR_SENSITIVE_CONTENT', /recheck_ref/, 'recheck_ref secret-like');
  for (const bad of ['f'.repeat(63), 'x'.repeat(64), '']) {
    await refused(t, bench, policy({ kind: 'never', source_fingerprint: bad }), 'INVALID_ENVELOPE',
      'source_fingerprint must be 64 hex digits', `freshness source_fingerprint ${JSON.stringify(bad)}`);
  }
  await refused(t, bench, policy({ kind: 'never', source_fingerprint: `sk-${'a'.repeat(61)}` }),
    'RAW_OR_SENSITIVE_CONTENT', /source_fingerprint/, 'secret check before the hex format');
  await refused(t, bench, policy({ kind: 'never', source_fingerprint: `${'a'.repeat(32)}\n${'a'.repeat(31)}` }),
    'RAW_OR_SENSITIVE_CONTENT', /source_fingerprint/, 'fingerprint LF');
  for (const value of [null, 'never', []]) await refused(t, bench, policy(value as Json), 'INVALID_ENVELOPE',
    /freshness_policy/, `freshness_policy ${JSON.stringify(value)}`);
  for (const kind of [undefined, null]) {
    await refused(t, bench, policy({ kind }), 'INVALID_ENVELOPE', /freshness_policy\.kind is required/, `kind ${kind}`);
  }
  for (const kind of [true, 0, ['never']]) {
    await refused(t, bench, policy({ kind }), 'INVALID_ENVELOPE', /freshness_policy\.kind must be a string/,
      `kind ${JSON.stringify(kind)}: not "is required"`);
  }
});

t.test('on_change needs a non-blank recheck_ref and a fingerprint equal to the source hash (INVALID_FRESHNESS)',
  async (t) => {
  const { bench, delegated, owner } = await setup(t);
  const onChange = (p: Json) => () => store(delegated, storeRequest({ freshness_policy: { kind: 'on_change', ...p } }));
  await refused(t, bench, onChange({ source_fingerprint: HASH_A }), 'INVALID_FRESHNESS', undefined, 'no recheck_ref');
  await refused(t, bench, onChange({ source_fingerprint: HASH_A, recheck_ref: '   ' }), 'INVALID_FRESHNESS', undefined,
    'blank recheck_ref');
  await refused(t, bench, onChange({ recheck_ref: 'ci/check' }), 'INVALID_FRESHNESS', undefined, 'no fingerprint');
  await refused(t, bench, onChange({ recheck_ref: 'ci/check', source_fingerprint: HASH_B }), 'INVALID_FRESHNESS',
    undefined, 'fingerprint of another source');
  await refused(t, bench, () => store(delegated, storeRequest({
    freshness_policy: { kind: 'on_change', recheck_ref: 'ci' }, idempotency_key: 'bad key!',
  })), 'INVALID_FRESHNESS', undefined, 'on_change precedes idempotency_key');
  // Any scope, and a current store too.
  await refused(t, bench, () => store(owner, currentRequest({
    scope: 'PROJECT', project_id: 'p1',
    freshness_policy: { kind: 'on_change', recheck_ref: 'ci', source_fingerprint: HASH_B },
  })), 'INVALID_FRESHNESS', undefined, 'PROJECT, current');
  const ok = await store(owner, currentRequest({
    freshness_policy: { kind: 'on_change', recheck_ref: 'ci', source_fingerprint: HASH_A },
    source_provenance: provenance({ source_hash: HASH_A.toUpperCase() }),
  }));
  t.equal(ok.results[0].lifecycle_state, 'VALIDATED_CURRENT',
    'a matching fingerprint is fresh at admission (hex compared after lower-casing)');
});

t.test('timestamps: accepted forms, normalised to UTC Z with 0 or 6 fraction digits', async (t) => {
  const { delegated } = await setup(t);
  const cases: [string, string][] = [
    ['2026-01-31T12:00:00Z', '2026-01-31T12:00:00Z'],
    ['2026-01-31T12:00Z', '2026-01-31T12:00:00Z'],
    ['2026-01-31 12:00:00Z', '2026-01-31T12:00:00Z'],
    ['2026-01-31 12:00+02:00', '2026-01-31T10:00:00Z'],
    ['2026-01-31T23:30:00-01:30', '2026-02-01T01:00:00Z'],
    ['2026-12-31T23:59:59-00:01', '2027-01-01T00:00:59Z'],
    ['2026-10-02T01:02:03.456Z', '2026-10-02T01:02:03.456000Z'],
    ['2026-10-02T01:02:03.000Z', '2026-10-02T01:02:03Z'],
    ['2026-10-02T01:02:03.1Z', '2026-10-02T01:02:03.100000Z'],
    ['2026-10-02T01:02:03.123456789Z', '2026-10-02T01:02:03.123456Z'],
    ['2026-10-02T01:02:03.9999999Z', '2026-10-02T01:02:03.999999Z'],
    ['2026-10-02T01:02:03.0000009+00:00', '2026-10-02T01:02:03Z'],
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00Z'],
    ['2000-02-29T12:00:00+01:00', '2000-02-29T11:00:00Z'],
  ];
  for (const [input, expected] of cases) {
    const record = await stored(delegated,
      { fact: fact('timestamp'), source_timestamp: input, last_verified_at: input });
    t.equal(record.source_timestamp, expected, `source_timestamp ${input}`);
    t.equal(record.last_verified_at, expected, `last_verified_at ${input}`);
  }
  const bare = await stored(delegated, { fact: fact('no timestamps') });
  t.equal(bare.source_timestamp, null, 'absent source_timestamp is null');
  t.equal(bare.last_verified_at, null, 'a Candidate store does not default last_verified_at');
  t.equal(bare.created_at, NOW, 'created_at comes from the clock');
});

t.test('timestamps: every other shape is INVALID_TIMESTAMP, naming the field', async (t) => {
  const { bench, delegated } = await setup(t);
  const bad = [
    '2026-06-30T23:59:60Z', // leap second
    '2026-01-31T12:00:00', // no offset
    '2026-01-31 12:00', // no offset
    '2025-02-29T00:00:00Z', // not a leap year
    '1900-02-29T00:00:00Z', // century, not a leap year
    '2026-04-31T00:00:00Z', '2026-13-01T00:00:00Z', '2026-00-10T00:00:00Z', '2026-01-00T00:00:00Z',
    '2026-01-31T24:00:00Z', '2026-01-31T12:60:00Z',
    '2026-01-31T12:00:00.1234567890Z', // 10 fraction digits
    '2026-01-31T12:00.5Z', // a fraction needs seconds
    '2026-01-31T12:00:00.Z', '2026-01-31', '2026-01-31T12Z', '2026-1-31T12:00:00Z', '26-01-31T12:00:00Z',
    '2026-01-31t12:00:00Z', '2026-01-31T12:00:00z', '2026-01-31T12:00:00+0200', '2026-01-31T12:00:00+02',
    '2026-01-31T12:00:00 Z',
    '2026-01-31  12:00:00Z', ' 2026-01-31T12:00:00Z', '2026-01-31T12:00:00Z ', '2026-01-31T12:00:00+02:60',
    '２０２６-01-31T12:00:00Z', // full-width digits
    '',
  ];
  for (const field of ['source_timestamp', 'last_verified_at']) {
    for (const value of bad) {
      await refused(t, bench, () => store(delegated, storeRequest({ [field]: value })), 'INVALID_TIMESTAMP', field,
        `${field} ${JSON.stringify(value)}`);
    }
    await refused(t, bench, () => store(delegated, storeRequest({ [field]: 1767225600 })), 'INVALID_TIMESTAMP', field,
      `${field}: a number`);
  }
  await refused(t, bench,
    () => store(delegated, storeRequest({ source_timestamp: '2026-01-31T12:00:60Z', tags: ['x'.repeat(49)] })),
    'INVALID_TIMESTAMP', undefined, 'timestamps precede tags');
});

t.test('tags: at most 12, collapsed, 1-48 bytes, duplicates dropped keeping the first, no secrets', async (t) => {
  const { bench, delegated } = await setup(t);
  const twelve = Array.from({ length: 12 }, (_, i) => `tag-${i}`);
  t.strictSame((await stored(delegated, { fact: fact('tags'), tags: twelve })).tags, twelve, '12 tags kept in order');
  t.strictSame((await stored(delegated, { fact: fact('tags') })).tags, [], 'default []');
  await refused(t, bench, () => store(delegated, storeRequest({ fact: fact('tags'), tags: null })), 'INVALID_ENVELOPE',
    /tags/, 'null is not absent (the schema refuses it first over MCP: its default is [])');
  t.strictSame((await stored(delegated, {
    fact: fact('tags'), tags: ['  build \t tool ', 'b', 'build tool', 'a', 'b', 'build  tool', 'B'],
  })).tags, ['build tool', 'b', 'a', 'B'], 'collapsed, then duplicates dropped keeping the first');
  t.strictSame((await stored(delegated, { fact: fact('tags'), tags: ['t'.repeat(48), 'é'.repeat(24)] })).tags,
    ['t'.repeat(48), 'é'.repeat(24)], '48 bytes accepted');
  const tagged = (tags: unknown) => () => store(delegated, storeRequest({ tags }));
  await refused(t, bench, tagged([...twelve, 'tag-12']), 'INVALID_ENVELOPE', /tags/, '13 tags');
  await refused(t, bench, tagged(['t'.repeat(49)]), 'INVALID_ENVELOPE', /tags/, '49 bytes');
  await refused(t, bench, tagged(['é'.repeat(24) + 'x']), 'INVALID_ENVELOPE', /tags/, '25 characters, 49 bytes');
  await refused(t, bench, tagged([`  ${'t'.repeat(48)}  `.replace('tt', 't  t')]), 'INVALID_ENVELOPE', /tags/,
    'collapsed length counts the inner space');
  await refused(t, bench, tagged(['ok', '   ']), 'INVALID_ENVELOPE', /tags/, 'blank tag');
  await refused(t, bench, tagged(['ok', 5]), 'INVALID_ENVELOPE', /tags/, 'non-string tag');
  await refused(t, bench, tagged('ops'), 'INVALID_ENVELOPE', /tags/, 'not an array');
  await refused(t, bench, tagged([`ghp_${'a'.repeat(20)}`]), 'RAW_OR_SENSITIVE_CONTENT', /tags/, 'secret-like tag');
  await refused(t, bench, tagged([`token: ${'x'.repeat(12)}`]), 'RAW_OR_SENSITIVE_CONTENT', /tags/,
    'secret assignment tag');
});

t.test('subject: collapsed, at most 96 bytes, not secret-like, "" is absent; it feeds the contradiction key only',
  async (t) => {
  const { bench, delegated, owner } = await setup(t);
  const subjected = (subject: unknown) => () => store(delegated, storeRequest({ subject }));
  await refused(t, bench, subjected('s'.repeat(97)), 'INVALID_ENVELOPE', /subject/, '97 bytes');
  await refused(t, bench, subjected('é'.repeat(48) + 's'), 'INVALID_ENVELOPE', /subject/, '49 characters, 97 bytes');
  await refused(t, bench, subjected(12), 'INVALID_ENVELOPE', /subject/, 'not a string');
  await refused(t, bench, subjected(`sk-${'Q'.repeat(20)}`), 'RAW_OR_SENSITIVE_CONTENT', /subject/, 'secret-like');

  const first = await store(owner,
    currentRequest({ fact: 'The runtime is Node 20', subject: ` ${'s'.repeat(40)}   node ` }));
  t.notOk('subject' in first.results[0], 'subject is not stored or returned');
  const conflicting = await store(delegated,
    storeRequest({ fact: 'The runtime is Node 22', subject: `${'S'.repeat(40)} NODE` }));
  t.equal(conflicting.status, 'CONTRADICTION', 'subjects compare collapsed and folded');
  const empty = await store(delegated, storeRequest({ fact: 'The runtime is Node 18', subject: '' }));
  t.equal(empty.status, 'OK', '"" falls back to the fact: another subject, no contradiction');

  // "" and absent are the same request: a replay, not IDEMPOTENCY_CONFLICT.
  const request = storeRequest({ fact: fact('subject replay'), idempotency_key: 'subject-replay' });
  const stored1 = await store(delegated, { ...request, subject: '' });
  const replay = await store(delegated, request);
  t.equal(replay.idempotent_replay, true);
  t.equal(replay.results[0].record_id, stored1.results[0].record_id);
  await refused(t, bench, () => store(delegated, { ...request, subject: 'another subject' }), 'IDEMPOTENCY_CONFLICT',
    undefined, 'a subject is part of the fingerprint');
});

t.test('confidence: a number 0-1, default 0.5', async (t) => {
  const { bench, delegated } = await setup(t);
  t.equal((await stored(delegated, { fact: fact('confidence') })).confidence, 0.5);
  for (const value of [0, 1, 0.25])
    t.equal((await stored(delegated, { fact: fact('confidence'), confidence: value })).confidence, value);
  for (const value of [-0.01, 1.01, '0.5', true]) {
    await refused(t, bench, () => store(delegated, storeRequest({ confidence: value })), 'INVALID_ENVELOPE',
      /confidence/, `confidence ${JSON.stringify(value)}`);
  }
});

t.test('enums: memory_type and requested_lifecycle_state', async (t) => {
  const { bench, delegated, owner } = await setup(t);
  await refused(t, bench, () => store(delegated, storeRequest({ memory_type: 'FACT' })), 'INVALID_ENUM',
    'DECISION_RATIONALE, PREFERENCE, PROJECT_LEARNED_FACT, TOOL_ENVIRONMENT_FACT, USER_FACT, WORKFLOW_RULE',
    'memory_type lists the choices sorted');
  await refused(t, bench, () => store(owner, currentRequest({ requested_lifecycle_state: 'SUPERSEDED' })),
    'INVALID_ENUM', /requested_lifecycle_state/, 'owner asking for SUPERSEDED');
  await refused(t, bench, () => store(delegated, storeRequest({ requested_lifecycle_state: 'SUPERSEDED' })),
    'WRITE_AUTHORIZATION_DENIED', undefined, 'delegated: authorization precedes the enum');
  t.equal((await store(owner, storeRequest({
    fact: fact('explicit candidate'), requested_lifecycle_state: 'CANDIDATE',
  }))).results[0].lifecycle_state, 'CANDIDATE');
});

t.test('handler order: fact → memory_type → source_provenance → freshness_policy → idempotency_key → timestamps → '
  + 'confidence → tags → subject', async (t) => {
  const { bench, delegated } = await setup(t);
  const all = {
    fact: '', memory_type: 'FACT', source_provenance: {}, freshness_policy: { kind: 'daily' },
    idempotency_key: 'bad key!',
    source_timestamp: 'yesterday', confidence: 7, tags: ['t'.repeat(49)], subject: 's'.repeat(97),
  };
  const steps: [keyof typeof all, string][] = [
    ['fact', 'INVALID_ENVELOPE'], ['memory_type', 'INVALID_ENUM'], ['source_provenance', 'PROVENANCE_REQUIRED'],
    ['freshness_policy', 'INVALID_ENUM'], ['idempotency_key', 'INVALID_ENVELOPE'],
    ['source_timestamp', 'INVALID_TIMESTAMP'], ['confidence', 'INVALID_ENVELOPE'], ['tags', 'INVALID_ENVELOPE'],
    ['subject', 'INVALID_ENVELOPE'],
  ];
  const request = storeRequest();
  for (const [field, code] of steps) {
    // Every field from this one on is bad; the first decides.
    const fromHere = Object.fromEntries(steps.slice(steps.findIndex(([f]) => f === field)).map(([f]) => [f, all[f]]));
    await refused(t, bench, () => store(delegated, { ...request, ...fromHere }), code, field, `${field} decides`);
  }
  await refused(t, bench, () => store(delegated, storeRequest({ idempotency_key: `sk-${'k'.repeat(20)}` })),
    'RAW_OR_SENSITIVE_CONTENT', /idempotency_key/, 'secret-like idempotency_key');
  await refused(t, bench, () => store(delegated, storeRequest({ idempotency_key: 'k'.repeat(129) })),
    'INVALID_ENVELOPE', /idempotency_key/, 'idempotency_key over 128 characters');
});

t.test('update payloads follow the same rules and name the payload field, before any lookup', async (t) => {
  const { bench, owner } = await setup(t);
  const memory_id = randomUUID(); // unknown: field checks come before the lookup (NOT_FOUND)
  const base = { scope: 'GLOBAL_USER', memory_id, expected_revision: 1, idempotency_key: 'u-1' };
  const reverify = (verification: Json) => () => update(owner, { ...base, mode: 'REVERIFY', verification });
  const replace = (replacement: Json) => () => update(owner, {
    ...base, mode: 'REPLACE',
    replacement: {
      fact: 'The build uses Node 22', source_provenance: provenance(), freshness_policy: { kind: 'never' },
      source_timestamp: NOW, ...replacement,
    },
  });
  await refused(t, bench, replace({ fact: `key sk-${'x'.repeat(20)}` }), 'RAW_OR_SENSITIVE_CONTENT',
    'replacement.fact');
  await refused(t, bench, replace({ fact: 'the hidden reasoning' }), 'RAW_OR_SENSITIVE_CONTENT', 'replacement.fact');
  await refused(t, bench, replace({ fact: 'z'.repeat(2001) }), 'INVALID_ENVELOPE', 'replacement.fact');
  await refused(t, bench, replace({ memory_type: 'NOPE' }), 'INVALID_ENUM', 'replacement.memory_type');
  await refused(t, bench, replace({ source_provenance: { source_ref: 'x' } }), 'PROVENANCE_REQUIRED',
    'replacement.source_provenance.source_class');
  await refused(t, bench, replace({ freshness_policy: { kind: 'ttl' } }), 'INVALID_ENVELOPE',
    'replacement.freshness_policy.ttl_seconds');
  await refused(t, bench, replace({ source_timestamp: '2026-02-30T00:00:00Z' }), 'INVALID_TIMESTAMP',
    'replacement.source_timestamp');
  await refused(t, bench, reverify({ last_verified_at: '2026-11-30T10:00:00' }), 'INVALID_TIMESTAMP',
    'verification.last_verified_at');
  await refused(t, bench, reverify({ source_timestamp: 20261130 }), 'INVALID_TIMESTAMP',
    'verification.source_timestamp', 'a nested non-string timestamp');
  await refused(t, bench, reverify({ confidence: 2 }), 'INVALID_ENVELOPE', 'verification.confidence');
  await refused(t, bench, reverify({ confidence: 'high' }), 'INVALID_ENVELOPE', 'verification.confidence');
  await refused(t, bench, reverify({ tags: Array.from({ length: 13 }, (_, i) => `t${i}`) }), 'INVALID_ENVELOPE',
    'verification.tags', '13 nested tags');
  await refused(t, bench, reverify({ tags: [`bearer ${'b'.repeat(24)}`] }), 'RAW_OR_SENSITIVE_CONTENT',
    'verification.tags');
  await refused(t, bench, reverify({ subject: 'q'.repeat(97) }), 'INVALID_ENVELOPE', 'verification.subject');
  await refused(t, bench, reverify({ source_provenance: provenance({ source_hash: 'nothex' }) }), 'PROVENANCE_REQUIRED',
    'verification.source_provenance.source_hash');
  await refused(t, bench, reverify({ source_provenance: provenance({ review_ref: 'a\nb' }) }),
    'RAW_OR_SENSITIVE_CONTENT', 'verification.source_provenance.review_ref');
  await refused(t, bench, reverify({ freshness_policy: { kind: 'hourly' } }), 'INVALID_ENUM',
    'verification.freshness_policy.kind');
  await refused(t, bench, reverify({ freshness_policy: { kind: 'never', recheck_ref: 'a\rb' } }),
    'RAW_OR_SENSITIVE_CONTENT', 'verification.freshness_policy.recheck_ref');
  await refused(t, bench, reverify({}), 'NOT_FOUND', undefined, 'valid payload: the lookup decides');
  // null is absent only where memory_store's default is null (§3.5); elsewhere the store rule refuses it (§5.6).
  for (const [field, code] of [['confidence', 'INVALID_ENVELOPE'], ['tags', 'INVALID_ENVELOPE'],
    ['memory_type', 'INVALID_ENUM'], ['verified_by', 'INVALID_ENUM'],
    ['source_provenance', 'PROVENANCE_REQUIRED'], ['freshness_policy', 'INVALID_ENVELOPE']] as const) {
    await refused(t, bench, reverify({ [field]: null }), code, `verification.${field}`, `a nested null ${field}`);
    // A REPLACE names its four required fields as missing when null (one message for all of them).
    await refused(t, bench, replace({ [field]: null }), field === 'source_provenance' ? 'INVALID_ENVELOPE' : code,
      `replacement.${field}`, `a replacement's null ${field}`);
  }
  await refused(t, bench, reverify({ source_timestamp: null, last_verified_at: null, subject: null }), 'NOT_FOUND',
    undefined, 'null timestamps and subject are absent');
});

t.test('timestamps before 1970 keep their second; instants outside years 0000-9999 are refused', async (t) => {
  const { parseTimestamp } = await import('../../src/core/timestamps.js');
  t.equal(parseTimestamp('1969-12-31T23:59:59.9999999Z')?.text, '1969-12-31T23:59:59.999999Z',
    'truncated, same second');
  t.equal(parseTimestamp('1969-12-31T23:59:58.9995Z')?.text, '1969-12-31T23:59:58.999500Z');
  t.equal(parseTimestamp('1969-12-31T23:59:59Z')?.text, '1969-12-31T23:59:59Z');
  t.equal(parseTimestamp('0000-01-01T00:00+01:00'), null, 'falls before year 0000');
  t.equal(parseTimestamp('9999-12-31T23:59-01:00'), null, 'falls after year 9999');
  t.equal(parseTimestamp('0000-01-01T00:00Z')?.text, '0000-01-01T00:00:00Z');
  const { bench, delegated } = await setup(t);
  await refused(t, bench, () => store(delegated, storeRequest({ source_timestamp: '9999-12-31T23:59-01:00' })),
    'INVALID_TIMESTAMP', 'source_timestamp');
});
