import { createHash, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import {
  FRESHNESS_KINDS, INTENT_CLASSES, MEMORY_TYPES, RETRIEVAL_MODE_KINDS, RETRIEVAL_MODES, SCOPES, TOOL_NAMES, VERIFIED_BY,
  type ToolName,
} from '../../schema/enums.js';
import { IDENTITY_CLAIM_KEYS, RETIRED_KEYS, TRUST_CLAIM_KEYS } from '../../schema/reserved-keys.js';

// The fast-check arbitraries of the fuzz part: a case is a tool, a valid request template for it and a list of
// mutations (wrong types, unknown and reserved keys at every depth, confusable and oversized Unicode, boundary
// numbers, secrets and deny-listed phrases, scope and identity conflicts), or a request drawn at random. Cases
// are plain data; `buildRequest` turns one into the `arguments` of a tools/call, using the memories the server
// has acknowledged so far, so mutated valid requests reach deep into validation.

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = Record<string, any>;

/** A memory the server acknowledged: enough to address it in get and update. */
export interface KnownMemory {
  readonly memory_id: string;
  readonly record_id: string;
  readonly revision: number;
  readonly scope: Json;
  readonly lifecycle_state: string;
}

/** Scope tuples the seeds and the templates use (identities all valid for their scope). */
export const SCOPE_VARIANTS: readonly Json[] = [
  { scope: 'GLOBAL_USER' },
  { scope: 'GLOBAL_USER', agent_id: 'fz-a1' },
  { scope: 'PROJECT', project_id: 'fz-p1' },
  { scope: 'PROJECT', project_id: 'fz-p1', worktree_id: 'fz-wt1', agent_id: 'fz-a1' },
  { scope: 'PROJECT', project_id: 'fz-p2' },
  { scope: 'WORKFLOW', project_id: 'fz-p1', workflow_id: 'fz-w1' },
  { scope: 'TOOL_ENVIRONMENT', agent_id: 'fz-a1' },
  { scope: 'CROSS_PROJECT_WORKFLOW' },
];

/** Strings that are secret-like under every pattern of CONTRACT.md §9.4; no reply may carry one. */
export const SECRET_SAMPLES: readonly string[] = [
  `sk-${'Qz9'.repeat(8)}`, `ghp_${'w0rd'.repeat(6)}`, `Bearer ${'tok.en-'.repeat(4)}`, `AIza${'K3y_-'.repeat(7)}`,
  'password = hunter2hunter2', 'API_KEY:abcdefghijklmnop', 'token=ZZZZZZZZZZZZZZ', '-----BEGIN RSA PRIVATE KEY-----',
];
const NEAR_SECRETS =
  [`sk-${'a'.repeat(19)}`, `ghx_${'w'.repeat(30)}`, 'Bearer short', 'password: short', '-----BEGIN PUBLIC KEY-----'];
const DENIED_PHRASES = [
  'full transcript', 'FULL   Transcript', 'ｆｕｌｌ ｔｒａｎｓｃｒｉｐｔ', 'hidden\u00a0reasoning', 'HIDDEN\treasoning',
  'whole repoſitory', 'WHOLE\u2003REPOSITORY', 'the full transcript of it', 'hidden reason\u0131ng'];
const CONFUSABLES = [
  'раssword', 'ｓｋ-ＡＢＣＤＥＦＧＨＩＪＫＬＭＮＯＰＱＲＳＴ', 'GLOBAL_USEＲ', 'PROJECT\u200b', 'fz\u2011p1', 'ﬁle', 'Straße', 'STRASSE',
  'ς σ Σ',
  'a\u0301', '\u202eevil', '\u0000', '\ufeffBOM', 'İstanbul', 'ـبـ', 'أإآٱ ىة', '\ud800', '\udfff lone', '😀'.repeat(5),
  '\u001c\u001f\u0085 x ',
  ' ', '\r\n', 'a\nb', '\\', '"', '../../etc', '%00', '${x}', '<script>'];
const TIMESTAMPS = [
  '2026-11-01T00:00:00Z', '2026-11-01 00:00Z', '2026-02-30T00:00:00Z', '2026-01-01T00:00:60Z', '2026-01-01T24:00:00Z',
  '2026-01-01T00:00:00', '2026-01-01T00:00:00.1234567891Z', '2026-01-01T00:00:00.123456789+14:00',
  '9999-12-31T23:59:59-23:59', '0000-01-01T00:00Z',
  '2026-01-01T00:00:00Z'.padEnd(65, '0'), '2099-01-01T00:00:00Z', '20260101T000000Z', ''];
const BOUNDARY_NUMBERS = [
  0, -0, 1, -1, 0.5, 1.0000001, 7, 8, 9, 12, 13, 48, 96, 1600, 1601, 8000, 8001, 31_536_000, 31_536_001,
  2 ** 31, 2 ** 53, -(2 ** 53), 1e308, -1e308, 5e-324, 0.1 + 0.2];

const hex64 = (seed: string) => createHash('sha256').update(seed).digest('hex');
const HASH = hex64('fuzz-source');

/** A string of `count` copies of `unit` (ASCII, 2-, 3- and 4-byte UTF-8, combining). */
const oversized = fc.tuple(fc.constantFrom('x', 'é', 'ß', '語', '😀', 'a\u0301', ' '), fc.constantFrom(
  49, 97, 129, 257, 513, 2001, 5801, 20_000, 200_000,
))
  .map(([unit, count]) => unit.repeat(Math.ceil(count / unit.length)));

/** Any one odd value: wrong types, boundary numbers, and strings that probe every text rule. */
export const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: fc.constantFrom(...BOUNDARY_NUMBERS), weight: 4 },
  { arbitrary: fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })), weight: 2 },
  { arbitrary: fc.constantFrom(null, true, false, [], {}, [null], ['x'], { '': '' }), weight: 3 },
  { arbitrary: fc.constantFrom(...SECRET_SAMPLES, ...NEAR_SECRETS), weight: 3 },
  { arbitrary: fc.constantFrom(...DENIED_PHRASES), weight: 2 },
  { arbitrary: fc.constantFrom(...CONFUSABLES), weight: 3 },
  { arbitrary: fc.constantFrom(...TIMESTAMPS), weight: 2 },
  { arbitrary: fc.constantFrom(
    ...SCOPES, ...MEMORY_TYPES, ...INTENT_CLASSES, ...VERIFIED_BY, ...FRESHNESS_KINDS, 'REVERIFY', 'REPLACE',
    'global_user', 'VALIDATED_CURRENT', 'CANDIDATE',
  ), weight: 3 },
  { arbitrary: fc.constantFrom(
    randomUUID(), randomUUID().toUpperCase(), `${randomUUID()}0`, HASH, HASH.toUpperCase(), `${HASH}0`, 'a'.repeat(128),
    'a'.repeat(129), 'a/b:c.d-e', '.a',
  ), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 60 }), weight: 2 },
  { arbitrary: oversized, weight: 1 },
  { arbitrary: fc.array(
    fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.constant(null)), { maxLength: 14 },
  ), weight: 1 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 1 },
);

/** An odd string: the text rules are governed (BLOCKED), so these reach deeper than a wrong type. */
const oddText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...SECRET_SAMPLES, ...NEAR_SECRETS, ...DENIED_PHRASES, ...CONFUSABLES, ...TIMESTAMPS),
  fc.constantFrom(
    ...SCOPES, ...MEMORY_TYPES, ...INTENT_CLASSES, ...VERIFIED_BY, ...FRESHNESS_KINDS, 'REVERIFY', 'REPLACE',
    'VALIDATED_CURRENT', 'CANDIDATE', HASH, randomUUID(),
  ),
  fc.string({ unit: 'binary', maxLength: 40 }), oversized,
);

const KNOWN_KEYS = [
  'scope', 'project_id', 'worktree_id', 'workflow_id', 'agent_id', 'request_id', 'query', 'intent_class',
  'retrieval_mode', 'retrieval_mode_kind',
  'top_k', 'max_memories', 'max_bytes', 'max_tokens', 'memory_id', 'fact', 'memory_type', 'source_provenance',
  'freshness_policy', 'idempotency_key',
  'source_timestamp', 'last_verified_at', 'verified_by', 'requested_lifecycle_state', 'confidence', 'tags', 'subject',
  'expected_revision', 'mode',
  'expected_record_id', 'verification', 'replacement', 'source_class', 'source_ref', 'source_hash', 'review_ref',
  'extraction_method', 'source_fingerprint',
  'kind', 'ttl_seconds', 'recheck_ref'];
const UNKNOWN_KEYS = [
  'provenance', 'memoryId', 'Scope', 'scope ', 'fact\u200b', '__proto__', 'constructor', 'prototype', 'toString', '',
  'x'.repeat(100),
  SECRET_SAMPLES[0]!, 'db_path', 'authority', 'lifecycle_state', 'record_id', 'revision', ...RETIRED_KEYS];

/** A key to add: reserved (identity or trust claim), known in another place, or unknown. */
const keyToAdd = fc.oneof(
  { arbitrary: fc.constantFrom(...IDENTITY_CLAIM_KEYS), weight: 2 },
  { arbitrary: fc.constantFrom(...TRUST_CLAIM_KEYS), weight: 3 },
  { arbitrary: fc.constantFrom(...KNOWN_KEYS), weight: 3 },
  { arbitrary: fc.constantFrom(...UNKNOWN_KEYS), weight: 2 },
  { arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }), weight: 1 },
);

/** One change to a request; `at` picks the object it applies to (the request itself or a nested payload). */
export type Mutation =
  | {
    readonly kind: 'set'; readonly at: number; readonly key: number; readonly value: unknown; readonly text: string;
    readonly keepType: boolean;
  }
  | { readonly kind: 'delete'; readonly at: number; readonly key: number }
  | { readonly kind: 'add'; readonly at: number; readonly name: string; readonly value: unknown; readonly nest: number }
  | { readonly kind: 'scope'; readonly variant: number; readonly keepIds: boolean }
  | {
    readonly kind: 'identity'; readonly name: 'project_id' | 'worktree_id' | 'workflow_id' | 'agent_id';
    readonly value: unknown;
  }
  | { readonly kind: 'wrap'; readonly as: 'json-string' | 'array' | 'value'; readonly value: unknown }
  | { readonly kind: 'extra-argument'; readonly name: string; readonly value: unknown };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { arbitrary: fc.record({
    kind: fc.constant('set' as const), at: fc.nat(), key: fc.nat(), value: oddValue, text: oddText,
    keepType: fc.boolean(),
  }), weight: 10 },
  { arbitrary: fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), key: fc.nat() }), weight: 3 },
  { arbitrary: fc.record(
    { kind: fc.constant('add' as const), at: fc.nat(), name: keyToAdd, value: oddValue, nest: fc.nat({ max: 3 }) },
  ), weight: 6 },
  { arbitrary: fc.record(
    { kind: fc.constant('scope' as const), variant: fc.nat(), keepIds: fc.boolean() },
  ), weight: 2 },
  { arbitrary: fc.record(
    { kind: fc.constant('identity' as const), name: fc.constantFrom(
      'project_id' as const, 'worktree_id' as const, 'workflow_id' as const, 'agent_id' as const,
    ), value: fc.oneof(fc.constantFrom('fz-p1', 'fz-p2', 'fz-a1', 'fz-w1', '', null), oddValue) },
  ), weight: 3 },
  { arbitrary: fc.record({
    kind: fc.constant('wrap' as const), as: fc.constantFrom('json-string' as const, 'array' as const, 'value' as const),
    value: oddValue,
  }), weight: 1 },
  { arbitrary: fc.record(
    { kind: fc.constant('extra-argument' as const), name: fc.string({ maxLength: 8 }), value: oddValue },
  ), weight: 1 },
);

/** One generated request: the tool, its template parameters and mutations, or a wholly random request. */
export interface FuzzCase {
  readonly tool: ToolName;
  readonly variant: number;
  readonly pick: number;
  readonly choice: number;
  readonly mutations: readonly Mutation[];
  readonly random: unknown;
}

const RANDOM_KEYS = fc.constantFrom(...KNOWN_KEYS, ...IDENTITY_CLAIM_KEYS, ...TRUST_CLAIM_KEYS, ...UNKNOWN_KEYS);
const { tree: randomObject } = fc.letrec((tie) => ({
  tree: fc.dictionary(
    RANDOM_KEYS, fc.oneof({ arbitrary: oddValue, weight: 4 }, { arbitrary: tie('tree'), weight: 1 }),
    { maxKeys: 6, depthIdentifier: 'fuzz' },
  ),
}));

/** The case arbitrary: about one in ten wholly random, the rest valid templates with 0-3 mutations. */
export const fuzzCase: fc.Arbitrary<FuzzCase> = fc.record({
  tool: fc.constantFrom(...TOOL_NAMES),
  variant: fc.nat(),
  pick: fc.nat(),
  choice: fc.nat(),
  mutations: fc.oneof({ arbitrary: fc.constant([] as Mutation[]), weight: 1 }, {
    arbitrary: fc.array(mutation, { minLength: 1, maxLength: 3 }), weight: 6,
  }),
  random: fc.oneof({ arbitrary: fc.constant(undefined), weight: 9 }, { arbitrary: randomObject, weight: 1 }),
});

const at = <T>(list: readonly T[], index: number): T => list[index % list.length]!;

/** A complete, valid source_provenance. */
export function provenance(hash = HASH): Json {
  return {
    source_class: 'repo_file', source_ref: 'docs/fuzz.md', source_hash: hash, review_ref: 'review/fuzz',
    extraction_method: 'manual_read',
  };
}

/** The freshness policy a scope admits for a stored fact. */
function freshnessFor(scope: string, choice: number): Json {
  if (scope === 'CROSS_PROJECT_WORKFLOW') return { kind: 'manual', recheck_ref: 'docs/rules.md' };
  return at([{ kind: 'never' }, { kind: 'ttl', ttl_seconds: 86_400 }, { kind: 'manual', recheck_ref: 'docs/x.md' }, {
    kind: 'on_change', recheck_ref: 'docs/x.md', source_fingerprint: HASH,
  }], choice);
}

const TYPE_FOR: Record<string, string> = {
  GLOBAL_USER: 'USER_FACT', PROJECT: 'PROJECT_LEARNED_FACT', WORKFLOW: 'WORKFLOW_RULE',
  TOOL_ENVIRONMENT: 'TOOL_ENVIRONMENT_FACT', CROSS_PROJECT_WORKFLOW: 'WORKFLOW_RULE',
};
const INTENT_FOR: Record<string, string> = {
  GLOBAL_USER: 'USER_PREFERENCE_OR_DURABLE_FACT', PROJECT: 'CURRENT_PROJECT_STATE', WORKFLOW: 'WORKFLOW_RULE',
  TOOL_ENVIRONMENT: 'TOOL_ENVIRONMENT_STATE', CROSS_PROJECT_WORKFLOW: 'WORKFLOW_RULE',
};
const WORDS = [
  'build', 'node', 'cache', 'lint', 'deploy', 'review', 'branch', 'schema', 'index', 'queue', 'retry', 'budget',
  'token', 'vector', 'shard',
];

/** A valid memory_store request in `scopeFields`: current when `current`, else a Candidate; `n` makes the fact new. */
export function validStore(scopeFields: Json, n: number, current: boolean, choice = 0): Json {
  const fact = `Fuzz fact ${n}: the ${at(WORDS, n)} step uses ${at(WORDS, n * 7 + 3)} ${at(WORDS, n * 13 + 5)} ` +
    `number ${n * 31 + choice}`;
  const request: Json = {
    ...scopeFields, fact, memory_type: TYPE_FOR[scopeFields.scope as string] ?? 'USER_FACT',
    source_provenance: provenance(),
    freshness_policy: freshnessFor(scopeFields.scope as string, choice),
    idempotency_key: `fz-store-${n}-${randomUUID()}`,
    tags: at([[], ['fuzz'], ['fuzz', 'qualify']], choice), confidence: at([0.5, 0, 1, 0.75], choice),
  };
  if (current) Object.assign(request, {
    requested_lifecycle_state: 'VALIDATED_CURRENT', source_timestamp: '2026-11-01T00:00:00Z',
    last_verified_at: new Date(Date.now() - 60_000).toISOString(),
  });
  return request;
}

function scopeOf(memory: KnownMemory): Json {
  return Object.fromEntries(Object.entries(memory.scope).filter(([, value]) => value !== null));
}

/** A valid template for `fuzz.tool` (no mutation yet). */
function template(fuzz: FuzzCase, pool: readonly KnownMemory[], n: number): Json {
  const scopeFields = at(SCOPE_VARIANTS, fuzz.variant);
  const memory = pool.length > 0 ? at(pool, fuzz.pick) : undefined;
  switch (fuzz.tool) {
    case 'memory_status':
      return { ...scopeFields, request_id: `fz-${n}` };
    case 'memory_search':
      return {
        ...scopeFields, query: `${at(WORDS, fuzz.choice)} ${at(WORDS, fuzz.pick)} step`, intent_class: at(
          [INTENT_FOR[scopeFields.scope as string]!, ...INTENT_CLASSES], fuzz.choice % 3 === 0 ? fuzz.pick : 0,
        ),
        retrieval_mode: at(RETRIEVAL_MODES, fuzz.choice),
        retrieval_mode_kind: at(RETRIEVAL_MODE_KINDS, fuzz.choice >> 1), top_k: 1 + (fuzz.pick % 8),
        max_memories: 1 + (fuzz.choice % 8),
      };
    case 'memory_get':
      return memory
        ? { ...scopeOf(memory), memory_id: memory.memory_id, retrieval_mode: at(RETRIEVAL_MODES, fuzz.choice) } : {
          ...scopeFields, memory_id: randomUUID(),
        };
    case 'memory_store': {
      // every seventh reuses one of ten facts (DUPLICATE), every fifth one of four keys (replay, IDEMPOTENCY_CONFLICT)
      const request =
        validStore(scopeFields, fuzz.choice % 7 === 0 ? fuzz.pick % 10 : n, fuzz.choice % 2 === 0, fuzz.choice);
      if (fuzz.choice % 5 === 0) request.idempotency_key = `fz-store-shared-${fuzz.pick % 4}`;
      return request;
    }
    case 'memory_update': {
      if (!memory) return {
        ...scopeFields, memory_id: randomUUID(), expected_revision: 1, mode: 'REVERIFY',
        idempotency_key: `fz-update-${n}`,
      };
      const key = fuzz.choice % 5 === 0 ? `fz-update-shared-${fuzz.pick % 4}` : `fz-update-${n}-${randomUUID()}`;
      const base = {
        ...scopeOf(memory), memory_id: memory.memory_id, expected_revision: memory.revision, idempotency_key: key,
      };
      if (fuzz.choice % 2 === 0) return {
        ...base, mode: 'REVERIFY', expected_record_id: memory.record_id,
        verification: { last_verified_at: new Date(Date.now() - 1000).toISOString() },
      };
      return {
        ...base, mode: 'REPLACE', replacement: {
          fact: `Fuzz replacement ${n}: ${at(WORDS, n)} now uses ${at(WORDS, n + 4)}`,
          source_provenance: provenance(hex64(`r${n}`)),
          freshness_policy: freshnessFor(memory.scope.scope as string, fuzz.choice >> 1),
          source_timestamp: '2026-11-20T00:00:00Z',
        },
      };
    }
  }
}

/** The request and every object nested in it (payloads, provenance, freshness), in document order. */
function containers(root: Json): Json[] {
  const found: Json[] = [];
  const walk = (value: unknown) => {
    if (value === null || typeof value !== 'object') return;
    if (!Array.isArray(value)) found.push(value as Json);
    for (const child of Object.values(value as Json)) walk(child);
  };
  walk(root);
  return found;
}

function applyMutation(request: Json, original: Mutation, args: Json): unknown {
  // fast-check hands out the same instance of a constant object each time: mutate copies only
  const change = structuredClone(original);
  const targets = containers(request);
  switch (change.kind) {
    case 'set': case 'delete': {
      const target = at(targets, change.at);
      const keys = Object.keys(target);
      if (keys.length === 0) return request;
      const key = at(keys, change.key);
      const keepString = change.kind === 'set' && change.keepType && typeof target[key] === 'string';
      if (change.kind === 'set') target[key] = keepString ? change.text : change.value;
      else delete target[key];
      return request;
    }
    case 'add': {
      let value: unknown = change.value;
      for (let depth = 0; depth < change.nest; depth += 1) value = depth % 2 === 0 ? { nested: value } : [value];
      // defineProperty so `__proto__` becomes an own key, as JSON.parse would make it
      Object.defineProperty(
        at(targets, change.at), change.name, { value, enumerable: true, writable: true, configurable: true },
      );
      return request;
    }
    case 'scope': {
      const variant = at(SCOPE_VARIANTS, change.variant);
      if (!change.keepIds)
        for (const key of ['project_id', 'worktree_id', 'workflow_id', 'agent_id']) delete request[key];
      return Object.assign(request, variant);
    }
    case 'identity':
      request[change.name] = change.value;
      return request;
    case 'wrap':
      return change.as === 'json-string' ? JSON.stringify(request) : change.as === 'array' ? [request] : change.value;
    case 'extra-argument':
      args[change.name === 'request' ? 'request_' : change.name] = change.value;
      return request;
  }
}

/** The `arguments` of the tools/call for `fuzz`; `n` is the case number (fresh facts and keys). */
export function buildArguments(fuzz: FuzzCase, pool: readonly KnownMemory[], n: number): Json {
  const args: Json = {};
  if (fuzz.random !== undefined) {
    args.request = structuredClone(fuzz.random);
    return args;
  }
  let request: unknown = template(fuzz, pool, n);
  for (const change of fuzz.mutations) {
    if (request === null || typeof request !== 'object' || Array.isArray(request)) break;
    request = applyMutation(request as Json, change, args);
  }
  args.request = request;
  return args;
}
