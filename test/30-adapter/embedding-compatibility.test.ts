import t from 'tap';
import { createHash } from 'node:crypto';
import { evaluateCompatibility, freshBindingJson, runtimeFingerprint } from '../../src/embedding/embedding-binding.js';
import { freezeCanonical } from '../../src/core/canonical-json.js';
import { EMBEDDING_PROFILES } from '../../src/embedding/embedding-profiles.js';
import type { RuntimeProvenance } from '../../src/embedding/embedding-provider.js';
import {
  fnv1a32, LOCAL_HASH_DIGEST, localHashEmbedding, LocalHashProvider,
} from '../../src/embedding/local-hash-provider.js';
import { searchText } from '../../src/core/text.js';

// CONTRACT.md §14.3 (local-hash-384), §14.5 (fingerprint, binding), §14.6 (compatibility rows, first match decides).

const provider = new LocalHashProvider();
const profile = provider.profile;
const provenance = await provider.statusCheck();
const BOUND_AT = '2026-01-01T00:00:00Z';
const goodBinding = freshBindingJson(profile, provenance, BOUND_AT);
const edited = (edit: (binding: Record<string, any>) => void) => {
  const binding = JSON.parse(goodBinding) as Record<string, any>;
  edit(binding);
  return JSON.stringify(binding);
};
const evaluate = (
  bindingText: string | null, tableDimension: number | null = 384, observed: RuntimeProvenance | null = provenance,
) =>
  evaluateCompatibility({ profile, bindingText, tableDimension, provenance: observed });

t.test('the fresh binding and the runtime fingerprint follow §14.5', async (t) => {
  const expectedFingerprint = createHash('sha256').update(JSON.stringify({
    effective_context_window: null, model: 'local-hash-384', model_digest: LOCAL_HASH_DIGEST, native_dimension: 384,
    ollama_version: null, output_dimension: 384, provider_kind: 'BUILTIN_LOCAL_HASH', semantic_family: 'lexical-hash',
  })).digest('hex');
  t.equal(runtimeFingerprint(provenance), expectedFingerprint, 'hash of the canonical eight-field object');
  t.equal(LOCAL_HASH_DIGEST, createHash('sha256').update('factlane-local-hash-384-v1').digest('hex'));
  t.match(JSON.parse(goodBinding), {
    metadata_revision: 2, profile_id: 'local-hash-384', store_key: 'local-hash-384', vector_dimension: 384,
    compatibility_proof: { basis: 'FRESH_EMPTY_RUNTIME_BINDING', bound_at: BOUND_AT },
    runtime_fingerprint: expectedFingerprint,
    semantic_identity: {
      base_model_identity: 'local-hash-384', semantic_family: 'lexical-hash', source_dimension: 384,
      output_dimension: 384, document_prefix: '', query_prefix: '', normalization_policy: 'L2_UNIT_FEATURE_HASH',
      distance_metric: 'cosine', projection_version: 'local-hash-v1', compatibility_revision: 1,
    },
  });
});

t.test('§14.6 rows', async (t) => {
  t.strictSame(evaluate(goodBinding), {
    state: 'COMPATIBLE', reason: 'BOUND_RUNTIME_MATCH', store_key: 'local-hash-384', vector_dimension: 384,
    binding: JSON.parse(goodBinding), runtime_fingerprint_matches_bound: true,
  });

  const minilm = freshBindingJson(EMBEDDING_PROFILES['minilm-384']!, { ...provenance, model: 'all-minilm:l6-v2' },
    BOUND_AT);
  t.match(evaluate(minilm),
    { state: 'INCOMPATIBLE', reason: 'SEMANTIC_IDENTITY_MISMATCH', store_key: 'minilm-384', vector_dimension: 384 },
    'same dimension, other model');
  for (const field of [
    'projection_version', 'normalization_policy', 'document_prefix', 'compatibility_revision', 'base_model_identity',
  ]) {
    const changed = edited((b) => { b.semantic_identity[field] = field === 'compatibility_revision' ? 2 : 'other'; });
    t.match(evaluate(changed), { state: 'INCOMPATIBLE', reason: 'SEMANTIC_IDENTITY_MISMATCH' },
      `semantic_identity.${field}`);
  }
  const nomic = freshBindingJson(EMBEDDING_PROFILES['nomic-768']!, provenance, BOUND_AT);
  t.match(evaluate(nomic, 768), { state: 'INCOMPATIBLE', reason: 'SEMANTIC_IDENTITY_MISMATCH' },
    'identity precedes dimension');

  t.match(evaluate(goodBinding, 768),
    { state: 'INCOMPATIBLE', reason: 'VECTOR_DIMENSION_MISMATCH', vector_dimension: 384 }, 'table differs');
  t.match(evaluate(edited((b) => { b.vector_dimension = 512; })),
    { state: 'INCOMPATIBLE', reason: 'VECTOR_DIMENSION_MISMATCH', vector_dimension: 512 }, 'binding differs');
  t.match(evaluate(null, 8), { state: 'INCOMPATIBLE', reason: 'VECTOR_DIMENSION_MISMATCH', vector_dimension: 8 },
    'dimension precedes a missing binding');
  t.match(evaluate(goodBinding, 768, null), { state: 'INCOMPATIBLE', reason: 'VECTOR_DIMENSION_MISMATCH' },
    'dimension precedes a failed check');

  t.strictSame(evaluate(null), {
    state: 'UNPROVEN', reason: 'BINDING_INVALID', store_key: null, vector_dimension: 384, binding: null,
    runtime_fingerprint_matches_bound: false,
  }, 'missing');
  t.match(evaluate('{not json'), { state: 'UNPROVEN', reason: 'BINDING_INVALID', binding: null }, 'not JSON');
  t.match(evaluate('null'), { state: 'UNPROVEN', reason: 'BINDING_INVALID' }, 'JSON null');
  for (const key of ['profile_id', 'store_key', 'vector_dimension', 'semantic_identity', 'runtime_fingerprint']) {
    const missing = edited((b) => { delete b[key]; });
    t.match(evaluate(missing), {
      state: 'UNPROVEN', reason: 'BINDING_INVALID', binding: JSON.parse(missing),
      runtime_fingerprint_matches_bound: false,
    }, `without ${key}`);
  }
  t.match(evaluate(edited((b) => { b.vector_dimension = '384'; })), { state: 'UNPROVEN', reason: 'BINDING_INVALID' },
    'dimension as a string');
  t.match(evaluate(null, 384, null), { reason: 'BINDING_INVALID' }, 'binding precedes provider');

  t.match(evaluate(goodBinding, 384, null), {
    state: 'UNPROVEN', reason: 'PROVIDER_UNAVAILABLE', store_key: 'local-hash-384',
    runtime_fingerprint_matches_bound: false,
  });

  for (const change of [
    { digest: 'ff'.repeat(32) }, { ollama_version: '0.22.1' }, { effective_context_window: 2048 },
    { native_dimension: 768 }, { model: 'local-hash-384b' },
  ]) {
    t.match(evaluate(goodBinding, 384, { ...provenance, ...change }),
      { state: 'UNPROVEN', reason: 'RUNTIME_PROVENANCE_CHANGED', runtime_fingerprint_matches_bound: false },
      JSON.stringify(change));
  }
  t.match(evaluate(edited((b) => { b.runtime_fingerprint = '00'.repeat(32); })),
    { state: 'UNPROVEN', reason: 'RUNTIME_PROVENANCE_CHANGED' }, 'stored fingerprint differs');
  for (const change of [{ size_bytes: 1 }, { capabilities: ['embedding', 'completion'] }, { truncate_policy: 'X' }]) {
    t.match(evaluate(goodBinding, 384, { ...provenance, ...change }), { state: 'COMPATIBLE' },
      `${Object.keys(change)[0]} is not fingerprinted`);
  }
});

/** An independent implementation of FNV-1a-32 over UTF-8 bytes. */
function referenceFnv(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) hash = Number((BigInt((hash ^ byte) >>> 0) * 16777619n) % 4294967296n);
  return hash >>> 0;
}

/** local-hash-384 written from the steps of CONTRACT.md §14.3. */
function referenceEmbedding(text: string): number[] {
  const s = searchText(text);
  const tokens = s.match(/[\p{L}\p{N}\p{M}\p{Co}]+/gu) ?? s.split(' ').filter((piece) => piece !== '');
  const v = new Array<number>(384).fill(0);
  const add = (f: string, w: number) => {
    v[referenceFnv(f) % 384]! += (referenceFnv(`~${f}`) % 2 === 0 ? 1 : -1) * w;
  };
  for (const w of tokens) {
    add(`w:${w}`, 1);
    const cps = [...` ${w} `];
    for (const n of [3, 4]) for (let i = 0; i + n <= cps.length; i++) add(`g:${cps.slice(i, i + n).join('')}`, 0.5);
  }
  if (!v.some((x) => x !== 0)) v[referenceFnv(s) % 384] = 1;
  const norm = Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));
  return v.map((x) => x / norm);
}

const norm = (v: Float32Array) => Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));

t.test('fnv1a32 is FNV-1a-32 over UTF-8', async (t) => {
  t.equal(fnv1a32(''), 2166136261);
  t.equal(fnv1a32('a'), 0xe40c292c);
  t.equal(fnv1a32('foobar'), 0xbf9cf968);
  for (const text of ['é', 'أحمد', '🙂', 'w:node']) t.equal(fnv1a32(text), referenceFnv(text), text);
});

t.test('local-hash-384 vectors: 384 finite values, unit length, deterministic, equal to the §14.3 steps', async (t) => {
  for (const text of [
    'The build uses Node 20', 'Straße', 'أَحْمَد', 'x', '!!!', 'a-b c_d 42', 'node node node', '   ',
  ]) {
    const v = localHashEmbedding(text);
    t.ok(v instanceof Float32Array && v.length === 384, `${text}: 384 floats`);
    t.ok(v.every(Number.isFinite), `${text}: finite`);
    t.ok(Math.abs(norm(v) - 1) < 1e-5, `${text}: unit length`);
    t.strictSame(localHashEmbedding(text), v, `${text}: deterministic`);
    const expected = referenceEmbedding(text);
    t.ok(expected.every((x, i) => Math.abs(x - v[i]!) < 1e-6), `${text}: matches the reference steps`);
  }
  const whitespace = localHashEmbedding('   ');
  t.equal(whitespace[2166136261 % 384], 1, 'no pieces at all: 1 at FNV(s) mod 384');
  t.equal(whitespace.filter((x) => x !== 0).length, 1);
  t.ok(localHashEmbedding('!!!').filter((x) => x !== 0).length > 1,
    'no letter runs: the whitespace pieces are the tokens');
});

t.test('strings that fold alike embed alike; different words do not', async (t) => {
  t.strictSame(localHashEmbedding('Straße'), localHashEmbedding('STRASSE'));
  t.strictSame(localHashEmbedding('أحمد'), localHashEmbedding('احمد'), 'alef with hamza');
  t.strictSame(localHashEmbedding('مدرسة'), localHashEmbedding('مدرسه'), 'teh marbuta');
  t.strictSame(localHashEmbedding('  Node\t20 '), localHashEmbedding('node 20'), 'collapsed and folded');
  t.notSame(localHashEmbedding('node 20'), localHashEmbedding('node 22'));
});

t.test('the provider: constant status check, no prefixes, batches equal single calls', async (t) => {
  t.match(profile, { profileId: 'local-hash-384', outputDimension: 384, documentPrefix: '', queryPrefix: '' });
  t.strictSame(await provider.statusCheck(), provenance);
  const texts = ['one fact', 'another fact'];
  const batch = await provider.embedDocuments(texts);
  t.equal(batch.length, 2);
  t.strictSame(batch[0], await provider.embedQuery('one fact'));
  t.strictSame(batch[1], localHashEmbedding('another fact'));
});

t.test('the remembered answer follows a provenance object that changes in place; a frozen one is reused as it is',
  async (t) => {
  const frozen = evaluate(goodBinding);
  t.equal(evaluate(goodBinding), frozen, 'the built-in provider\'s frozen provenance: the same answer object');
  const live = { ...provenance, capabilities: [...provenance.capabilities] } as RuntimeProvenance & { digest: string };
  t.match(evaluate(goodBinding, 384, null), { state: 'UNPROVEN' },
    'another answer in between, so the next one is remembered with the unfrozen object');
  t.match(evaluate(goodBinding, 384, live), { state: 'COMPATIBLE' }, 'an equal, unfrozen provenance');
  live.digest = 'f'.repeat(64);
  t.match(evaluate(goodBinding, 384, live), { state: 'UNPROVEN', reason: 'RUNTIME_PROVENANCE_CHANGED' },
    'the same object, changed: evaluated again');
  freezeCanonical(live);
  t.match(evaluate(goodBinding, 384, live), { state: 'UNPROVEN', reason: 'RUNTIME_PROVENANCE_CHANGED' },
    'frozen after its answer was kept: still that answer');
  const thawed = {
    ...provenance, capabilities: [...provenance.capabilities],
  } as RuntimeProvenance & { digest: string };
  t.match(evaluate(goodBinding, 384, null), { state: 'UNPROVEN', reason: 'PROVIDER_UNAVAILABLE' });
  t.match(evaluate(goodBinding, 384, thawed), { state: 'COMPATIBLE' }, 'an unfrozen provenance, kept with its answer');
  thawed.digest = 'e'.repeat(64);
  freezeCanonical(thawed);
  t.match(evaluate(goodBinding, 384, thawed), { state: 'UNPROVEN', reason: 'RUNTIME_PROVENANCE_CHANGED' },
    'changed, then frozen: evaluated again, not served as frozen');
  t.match(evaluate(goodBinding, 384, null), { state: 'UNPROVEN', reason: 'PROVIDER_UNAVAILABLE' });
  t.match(evaluate(goodBinding, 384, null), { state: 'UNPROVEN', reason: 'PROVIDER_UNAVAILABLE' },
    'no provenance twice');
  t.match(evaluate(goodBinding, 128, null), { state: 'INCOMPATIBLE', reason: 'VECTOR_DIMENSION_MISMATCH' },
    'no provenance, another table dimension');
  t.match(evaluate(edited((b) => { b.vector_dimension = 128; }), 384, null),
    { state: 'INCOMPATIBLE', reason: 'VECTOR_DIMENSION_MISMATCH' }, 'no provenance, another binding');
});
