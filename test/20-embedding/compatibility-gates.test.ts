import t, { type Test } from 'tap';
import { join } from 'node:path';
import { MemoryAdapter } from '../../src/adapter/memory-adapter.js';
import { SYSTEM_CLOCK, formatTimestamp } from '../../src/core/time.js';
import { freshBindingJson } from '../../src/embedding/embedding-binding.js';
import { EMBEDDING_PROFILES, type EmbeddingProfile } from '../../src/embedding/embedding-profiles.js';
import type { EmbeddingProvider } from '../../src/embedding/embedding-provider.js';
import { LocalHashProvider } from '../../src/embedding/local-hash-provider.js';
import { OllamaProvider } from '../../src/embedding/ollama-provider.js';
import { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import { FakeOllama, fakeDigest } from '../helpers/fake-ollama.js';
import {
  currentRequest, diskState, fixedClock, openWriteBench, refused, replaceRequest, reverifyRequest, store, update,
  type Json, type WriteBench,
} from '../helpers/writes.js';

// CONTRACT.md §14.5-§14.6: a database bound to one profile, opened with another, is INCOMPATIBLE; then
// SEMANTIC/HYBRID search, store and update fail with PROFILE_MISMATCH and write nothing, while memory_get,
// EXACT, KEYWORD and memory_status keep working. A runtime fingerprint that changes between the status
// checks around an embedding discards the result with PROFILE_MISMATCH.

const NOMIC = EMBEDDING_PROFILES['nomic-768']!;
const FACT = 'The staging cluster pulls images from the mirror registry in Frankfurt';

async function fakeFor(t: Test, profile: EmbeddingProfile = NOMIC): Promise<FakeOllama> {
  const fake = await FakeOllama.start(profile);
  t.teardown(() => fake.close());
  return fake;
}

const adapterWith = (engine: SQLiteVecEngine, provider: EmbeddingProvider) =>
  new MemoryAdapter({ engine, provider, writeProfile: 'owner-current', hostId: 'host-a', clock: fixedClock() });

/** A new database bound to an Ollama profile through `provider`'s status check, as the launcher creates one. */
async function openOllamaBench(t: Test, provider: OllamaProvider): Promise<WriteBench> {
  const dbPath = join(t.testdir(), 'ollama.sqlite3');
  const profile = provider.profile;
  const engine = await SQLiteVecEngine.open({
    dbPath,
    newDatabaseBinding: async () => ({ vectorDimension: profile.outputDimension,
      bindingJson: freshBindingJson(profile, await provider.statusCheck(), formatTimestamp(SYSTEM_CLOCK())) }),
  });
  t.teardown(() => engine.close());
  return { dbPath, engine, adapter: () => adapterWith(engine, provider), state: () => diskState(dbPath) };
}

const searchRequest = (kind: string, query: string): Json =>
  ({ scope: 'GLOBAL_USER', query, intent_class: 'USER_PREFERENCE_OR_DURABLE_FACT', retrieval_mode_kind: kind });

/** The gates of a non-COMPATIBLE store, through `adapter`, for the stored `record`. */
async function gatesHold(t: Test, bench: WriteBench, adapter: MemoryAdapter, record: Json, label: string) {
  for (const kind of ['SEMANTIC', 'HYBRID']) {
    await refused(t, bench, () => adapter.execute('memory_search', searchRequest(kind, 'mirror registry')),
      'PROFILE_MISMATCH', /INCOMPATIBLE|UNPROVEN/, `${label}: ${kind} search`);
  }
  await refused(t, bench,
    () => store(adapter, currentRequest({ fact: 'The production cluster pulls images from the Dublin mirror' })),
    'PROFILE_MISMATCH', undefined, `${label}: store`);
  await refused(t, bench, () => store(adapter, currentRequest({ fact: '' })), 'PROFILE_MISMATCH', undefined,
    `${label}: store (compatibility precedes fact validation)`);
  await refused(t, bench, () => update(adapter, reverifyRequest(record)), 'PROFILE_MISMATCH', undefined,
    `${label}: update REVERIFY`);
  await refused(t, bench, () => update(adapter, replaceRequest(record)), 'PROFILE_MISMATCH', undefined,
    `${label}: update REPLACE`);

  const got = (await adapter.execute('memory_get', { scope: 'GLOBAL_USER', memory_id: record.memory_id })) as Json;
  t.match(got, { status: 'OK', results: [{ memory_id: record.memory_id, fact: FACT }] }, `${label}: memory_get works`);
  t.match(await adapter.execute('memory_search', searchRequest('EXACT', FACT)),
    { status: 'OK', results: [{ fact: FACT }] }, `${label}: EXACT works`);
  t.match(await adapter.execute('memory_search', searchRequest('KEYWORD', 'frankfurt mirror')),
    { status: 'OK', results: [{ fact: FACT }] }, `${label}: KEYWORD works`);
}

t.test('a local-hash-384 database opened with an Ollama profile is INCOMPATIBLE: semantic ops refused, reads work',
  async (t) => {
  const bench = await openWriteBench(t);
  const stored = await store(bench.adapter('owner-current'), currentRequest({ fact: FACT }));
  t.equal(stored.status, 'OK');
  const record = stored.results[0] as Json;

  for (const profileId of ['nomic-768', 'minilm-384']) {
    const profile = EMBEDDING_PROFILES[profileId]!;
    const fake = await fakeFor(t, profile);
    const adapter = adapterWith(bench.engine, new OllamaProvider(profile, fake.url));
    const observed = (await adapter.execute('memory_status', { scope: 'GLOBAL_USER' })) as Json;
    t.match(observed, {
      status: 'OK',
      provider_status: { available: true, model: profile.model, digest: fakeDigest(`fake-${profile.model}`) },
      backend_status: {
        profile: { profile_id: profileId, output_dimension: profile.outputDimension },
        embedding_compatibility: { state: 'INCOMPATIBLE', reason: 'SEMANTIC_IDENTITY_MISMATCH',
          store_key: 'local-hash-384', vector_dimension: 384, runtime_fingerprint_matches_bound: false,
          binding: { profile_id: 'local-hash-384' } },
        counts: { VALIDATED_CURRENT: 1 },
      },
    }, `${profileId}: memory_status works and reports INCOMPATIBLE`);
    await gatesHold(t, bench, adapter, record, profileId);
    t.strictSame(fake.received('/api/embed'), [], `${profileId}: no embedding was ever requested`);

    await fake.close();
    t.match(await adapter.execute('memory_status', { scope: 'GLOBAL_USER' }), {
      provider_status: { available: false, error_code: 'EMBEDDING_UNAVAILABLE' },
      backend_status: { embedding_compatibility: { state: 'INCOMPATIBLE', reason: 'SEMANTIC_IDENTITY_MISMATCH' } },
    }, `${profileId} down: identity still decides first`);
    await gatesHold(t, bench, adapter, record, `${profileId} down`);
  }

  // The bound profile still works on the same engine: nothing was changed by the refused requests.
  const local = bench.adapter('owner-current');
  t.match(await local.execute('memory_status', { scope: 'GLOBAL_USER' }),
    { backend_status: { embedding_compatibility: { state: 'COMPATIBLE' } } });
  t.match(await local.execute('memory_search', searchRequest('SEMANTIC', 'mirror registry frankfurt')),
    { status: 'OK', results: [{ fact: FACT }] }, 'local-hash-384: SEMANTIC works');
});

t.test('a nomic-768 database opened with local-hash-384 or nomic-512 is INCOMPATIBLE', async (t) => {
  const fake = await fakeFor(t);
  const nomic = new OllamaProvider(NOMIC, fake.url);
  const bench = await openOllamaBench(t, nomic);
  const stored = await store(bench.adapter('owner-current'), currentRequest({ fact: FACT }));
  t.equal(stored.status, 'OK', 'stored under nomic-768');
  const record = stored.results[0] as Json;

  const nomic512 = await fakeFor(t, EMBEDDING_PROFILES['nomic-512']!);
  const others: [string, EmbeddingProvider][] = [
    ['local-hash-384', new LocalHashProvider()],
    ['nomic-512 (same model, another output dimension)',
      new OllamaProvider(EMBEDDING_PROFILES['nomic-512']!, nomic512.url)],
  ];
  for (const [label, provider] of others) {
    const adapter = adapterWith(bench.engine, provider);
    t.match(await adapter.execute('memory_status', { scope: 'GLOBAL_USER' }), {
      status: 'OK', provider_status: { available: true },
      backend_status: { embedding_compatibility: { state: 'INCOMPATIBLE', reason: 'SEMANTIC_IDENTITY_MISMATCH',
        store_key: 'nomic-768', vector_dimension: 768 } },
    }, `${label}: INCOMPATIBLE`);
    await gatesHold(t, bench, adapter, record, label);
  }
  t.strictSame(nomic512.received('/api/embed'), [], 'nomic-512: no embedding was ever requested');
});

t.test('a runtime fingerprint change between the status checks around an embedding discards the result', async (t) => {
  const fake = await fakeFor(t);
  const bench = await openOllamaBench(t, new OllamaProvider(NOMIC, fake.url));
  const adapter = bench.adapter('owner-current');
  const first = await store(adapter, currentRequest({ fact: FACT }));
  t.equal(first.status, 'OK');
  let record = first.results[0] as Json;
  const boundDigest = fakeDigest(`fake-${NOMIC.model}`);

  /** While Ollama answers the embed request, `change` alters what the next status check sees. */
  const duringEmbed = (change: () => void) => {
    fake.reset();
    fake.clearLog();
    fake.onRequest = (request) => { if (request.path === '/api/embed') change(); };
  };
  const changes: [string, () => void, boolean][] = [
    ['model digest changes', () => fake.set({ digest: fakeDigest('re-pulled mid-request') }), true],
    ['Ollama version changes', () => fake.set({ version: '0.24.0' }), true],
    ['context window changes',
      () => fake.set({ modelInfo: { ...fake.state.modelInfo, 'nomic-bert.context_length': 8192 } }), true],
    ['Ollama stops answering', () => fake.set({ errorMember: { '/api/version': 'shutting down' } }), true],
    ['only size_bytes changes (not fingerprinted)', () => fake.set({ size: 1 }), false],
  ];
  for (const [label, change, discards] of changes) {
    const operations: [string, () => Promise<unknown>][] = [
      ['store', () => store(adapter,
        currentRequest({ fact: `The mirror registry in Frankfurt keeps images for ${label}` }))],
      ['update', () =>
        update(adapter, reverifyRequest(record, { verification: { source_timestamp: '2026-11-25T00:00:00Z' } }))],
      ['SEMANTIC search', () => adapter.execute('memory_search', searchRequest('SEMANTIC', 'mirror registry'))],
      ['HYBRID search', () => adapter.execute('memory_search', searchRequest('HYBRID', 'mirror registry'))],
    ];
    for (const [operation, run] of operations) {
      duringEmbed(change);
      if (discards) {
        await refused(t, bench, run, 'PROFILE_MISMATCH', undefined, `${label}: ${operation}`);
      } else {
        const envelope = (await run()) as Json;
        t.equal(envelope.status, 'OK', `${label}: ${operation} succeeds`);
        if (operation === 'update') record = envelope.results[0]; // envelope records are frozen: take the successor
      }
      t.equal(fake.received('/api/embed').length, 1, `${label}: ${operation}: one embed request`);
      t.equal(fake.received('/api/version').length, 2, `${label}: ${operation}: a status check before and after it`);
    }
  }
  fake.reset();
  t.match(await adapter.execute('memory_status', { scope: 'GLOBAL_USER' }), { provider_status: { digest: boundDigest },
    backend_status: { embedding_compatibility: { state: 'COMPATIBLE' } } }, 'the bound runtime again: COMPATIBLE');
});
