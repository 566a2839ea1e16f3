import t from 'tap';
import { join } from 'node:path';
import { MemoryAdapter } from '../../src/adapter/memory-adapter.js';
import { scopeDigest, validateScope } from '../../src/adapter/request-scope.js';
import { AdapterError } from '../../src/core/adapter-error.js';
import { freshBindingJson, runtimeFingerprint } from '../../src/embedding/embedding-binding.js';
import { LOCAL_HASH_DIGEST, LocalHashProvider } from '../../src/embedding/local-hash-provider.js';
import { capacityBlock, rememberedCapacityBlock } from '../../src/adapter/memory-status.js';
import { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import { insertRecordUnchecked } from '../../src/storage/record-repository.js';
import type { WriteProfile } from '../../schema/enums.js';
import { candidateRow, openEngine, SHIPPED_VERSION, storeRow, TEST_BINDING, RawDatabase } from '../helpers/storage.js';

// memory_status through MemoryAdapter (CONTRACT.md §5.5, §6.1, §15) on a fresh database per test.

type Json = Record<string, any>;
const BOUND_AT = '2026-01-01T00:00:00Z';

/** Opens a new database bound to local-hash-384 the way src/cli/factlane-launch.ts does. */
async function openBoundEngine(dbPath: string): Promise<SQLiteVecEngine> {
  const provider = new LocalHashProvider();
  return SQLiteVecEngine.open({
    dbPath,
    newDatabaseBinding: async () => ({
      vectorDimension: provider.profile.outputDimension,
      bindingJson: freshBindingJson(provider.profile, await provider.statusCheck(), BOUND_AT),
    }),
  });
}

function adapterFor(engine: SQLiteVecEngine, writeProfile: WriteProfile = 'read-only'): MemoryAdapter {
  return new MemoryAdapter({ engine, provider: new LocalHashProvider(), writeProfile, hostId: 'test-host' });
}

async function status(adapter: MemoryAdapter, request: Record<string, unknown>): Promise<Json> {
  return (await adapter.execute('memory_status', request)) as Json;
}

t.test('a fresh, correctly bound database: the full status envelope', async (t) => {
  const dir = t.testdir();
  const engine = await openBoundEngine(join(dir, 'status.sqlite3'));
  t.teardown(() => engine.close());
  const envelope = await status(adapterFor(engine),
    { scope: 'PROJECT', project_id: 'p1', agent_id: '', request_id: 'req-1' });
  const scope = { scope: 'PROJECT', project_id: 'p1', worktree_id: null, workflow_id: null, agent_id: null };

  t.same(Object.keys(envelope).sort(), [
    'audit', 'backend_status', 'budget', 'contradictions', 'degradation', 'launcher', 'memory_needed',
    'provider_status', 'results', 'scope', 'status', 'token_measurement',
  ]);
  t.equal(envelope.status, 'OK');
  t.equal(envelope.memory_needed, false);
  t.strictSame(envelope.scope, scope, '"" agent_id normalised to null');
  t.strictSame(envelope.results, []);
  t.strictSame(envelope.contradictions, []);
  t.strictSame(envelope.budget,
    { requested_top_k: null, returned: 0, serialized_bytes: 0, serialized_tokens: 0, truncated: false });
  t.equal(envelope.degradation, null);
  t.strictSame(envelope.audit, {
    request_id: 'req-1', operation: 'memory_status', public_contract_revision: 2,
    scope_digest: scopeDigest(validateScope(scope)),
    backend: 'sqlite_vec', external_llm_calls: 0, local_embedding_calls: 0, raw_content_logged: false,
  });

  const backend = envelope.backend_status;
  t.equal(backend.available, true);
  t.equal(backend.backend, 'sqlite_vec');
  t.match(backend.storage, {
    contract_version: 2, schema_version: SHIPPED_VERSION, sqlite_version: /^3\.\d+\.\d+$/, sqlite_vec_version: String,
    journal_mode: 'wal', synchronous: 'FULL',
  });
  t.strictSame(backend.counts,
    { CANDIDATE: 0, VALIDATED_CURRENT: 0, SUPERSEDED: 0, STALE: 0, QUARANTINED: 0, HISTORICAL: 0 });
  t.strictSame(backend.retention, {
    policy_version: 1, trigger: 'CAPACITY_PRESSURE_NOT_SESSION_COUNT', automatic_housekeeping: false,
    eligible_lifecycle_states: ['SUPERSEDED'], current_authority_reclaim: false,
    duplicate_reclaim: 'NOT_APPLICABLE_IN_CURRENT_SCHEMA', expired_reclaim: 'NOT_APPLICABLE_IN_CURRENT_SCHEMA',
    superseded_total: 0, compaction_ready: 0, compaction_blocked_partial: 0, historical_total: 0,
    validated_current_total: 0,
  });
  const capacity = backend.capacity;
  t.equal(capacity.observation, 'KNOWN');
  t.equal(capacity.database_allocated_bytes, capacity.page_size_bytes * capacity.page_count);
  t.equal(capacity.freelist_bytes, capacity.page_size_bytes * capacity.freelist_count);
  t.ok(capacity.database_file_bytes > 0 && capacity.filesystem_free_bytes > 0, 'file and free bytes measured');
  t.equal(capacity.pressure_threshold_bytes, null);
  t.equal(capacity.mutation_preflight, 'REQUIRES_BOUNDED_OPERATION_REQUIREMENT');
  const text = JSON.stringify(envelope);
  t.notOk(text.includes(dir), 'no absolute path in the envelope');
  t.notOk(text.includes('status.sqlite3'), 'no file name in the envelope');
  t.notMatch(text, /db_path/);

  t.match(backend.profile, {
    profile_id: 'local-hash-384', provider_kind: 'BUILTIN_LOCAL_HASH', base_model_identity: 'local-hash-384',
    model_digest: LOCAL_HASH_DIGEST, source_dimension: 384, output_dimension: 384,
    normalization_policy: 'L2_UNIT_FEATURE_HASH', projection_version: 'local-hash-v1', semantic_family: 'lexical-hash',
    distance_metric: 'cosine', compatibility_revision: 1, minimum_context_window: null,
  });
  const provenance = await new LocalHashProvider().statusCheck();
  t.strictSame(backend.embedding_compatibility, {
    state: 'COMPATIBLE', reason: 'BOUND_RUNTIME_MATCH', store_key: 'local-hash-384', vector_dimension: 384,
    binding: JSON.parse(engine.storedBinding!), runtime_fingerprint_matches_bound: true,
  });
  t.equal(backend.embedding_compatibility.binding.runtime_fingerprint, runtimeFingerprint(provenance));
  t.equal(backend.embedding_compatibility.binding.compatibility_proof.bound_at, BOUND_AT);

  t.strictSame(envelope.provider_status, {
    available: true, local_only: true, provider_kind: 'BUILTIN_LOCAL_HASH', model: 'local-hash-384',
    digest: LOCAL_HASH_DIGEST, ollama_version: null, semantic_family: 'lexical-hash', size_bytes: null,
    native_dimension: 384, output_dimension: 384, capabilities: ['embedding'], document_prefix: '', query_prefix: '',
    distance_metric: 'cosine', effective_context_window: null, truncate_policy: 'NOT_APPLICABLE',
  });
  t.strictSame(envelope.token_measurement, {
    available: true, profile: 'PORTABLE_MEASUREMENT_PROFILE', encoding: 'o200k_base',
    codex_exact_equivalence: 'UNVERIFIED',
  });
  t.strictSame(envelope.launcher, { write_profile: 'read-only', permitted_operations: [], max_lifecycle: null });
});

t.test('the launcher block follows the write profile', async (t) => {
  const engine = await openBoundEngine(join(t.testdir(), 'launcher.sqlite3'));
  t.teardown(() => engine.close());
  const expected: Record<WriteProfile, [string[], string | null]> = {
    'read-only': [[], null],
    'delegated-candidate': [['memory_store'], 'CANDIDATE'],
    'owner-current': [['memory_store', 'memory_update'], 'VALIDATED_CURRENT'],
    'repo-verifier': [['memory_store', 'memory_update'], 'VALIDATED_CURRENT'],
    'automated-verifier': [['memory_store', 'memory_update'], 'VALIDATED_CURRENT'],
  };
  for (const [profile, [operations, max]] of Object.entries(expected) as [WriteProfile, [string[], string | null]][]) {
    const envelope = await status(adapterFor(engine, profile), { scope: 'GLOBAL_USER' });
    t.strictSame(envelope.launcher, { write_profile: profile, permitted_operations: operations, max_lifecycle: max },
      profile);
  }
});

/** Whether two envelopes read the same capacity (file sizes and free bytes). */
const sameCapacity = (a: Json, b: Json) =>
  JSON.stringify(a.backend_status.capacity) === JSON.stringify(b.backend_status.capacity);

t.test('blocks that stay the same for a launch are frozen and shared between calls; an engine gets its own',
  async (t) => {
  const first = await openBoundEngine(join(t.testdir(), 'first.sqlite3'));
  t.teardown(() => first.close());
  const adapter = adapterFor(first, 'owner-current');
  const one = await status(adapter, { scope: 'GLOBAL_USER' });
  const two = await status(adapter, { scope: 'GLOBAL_USER' });
  for (const [name, pick] of [
    ['storage', (e: Json) => e.backend_status.storage], ['launcher', (e: Json) => e.launcher],
    ['provider_status', (e: Json) => e.provider_status],
  ] as const) {
    t.ok(Object.isFrozen(pick(one)), `${name} is frozen`);
    t.equal(pick(two), pick(one), `${name} is the same object on the next call`);
  }
  t.ok(Object.isFrozen(one.launcher.permitted_operations), 'deep-frozen');
  t.strictSame(one.provider_status, { available: true, ...(await new LocalHashProvider().statusCheck()) },
    'provider_status is the status check with available: true');
  t.equal(two.backend_status.counts, one.backend_status.counts, 'counts are kept while the database is unchanged');
  t.equal(two.backend_status.retention, one.backend_status.retention, 'and so is retention');
  // The block is kept only while no reading changed, and another process writing to the same filesystem moves its
  // free bytes between two calls (tap runs test files side by side): take calls until two read the same capacity.
  let [before, after] = [one, two];
  for (let i = 0; i < 50 && !sameCapacity(before, after); i += 1) {
    [before, after] = [after, await status(adapter, { scope: 'GLOBAL_USER' })];
  }
  t.strictSame(after.backend_status.capacity, before.backend_status.capacity, 'two calls read the same capacity');
  t.equal(after.backend_status, before.backend_status, 'so the whole backend_status block is the same object');
  const embedding = new Float32Array(384).fill(1 / Math.sqrt(384));
  await first.write((trx) => insertRecordUnchecked(trx, candidateRow({ embedding_output_dimension: 384 }),
    { searchText: 'a fact', embedding }));
  const three = await status(adapter, { scope: 'GLOBAL_USER' });
  t.not(three.backend_status.counts, one.backend_status.counts, 'a commit makes new counts');
  t.not(three.backend_status.capacity, one.backend_status.capacity, 'and new capacity readings');
  t.not(three.backend_status.capacity.wal_file_bytes, one.backend_status.capacity.wal_file_bytes,
    'the WAL grew and the status says so');
  t.equal(three.backend_status.counts.CANDIDATE, 1);
  t.equal(three.backend_status.retention.superseded_total, 0);

  const second = await openBoundEngine(join(t.testdir(), 'second.sqlite3'));
  t.teardown(() => second.close());
  const other = await status(adapterFor(second, 'owner-current'), { scope: 'GLOBAL_USER' });
  t.not(other.backend_status.storage, one.backend_status.storage, 'another engine gets its own storage block');
  t.strictSame(other.backend_status.storage, one.backend_status.storage, 'with the same values here');
});

t.test('counts and retention cover the exact scope only', async (t) => {
  const engine = await openEngine(join(t.testdir(), 'counts.sqlite3'));
  t.teardown(() => engine.close());
  const global = validateScope({ scope: 'GLOBAL_USER' });
  const project = validateScope({ scope: 'PROJECT', project_id: 'p1' });
  const projectAgent = validateScope({ scope: 'PROJECT', project_id: 'p1', agent_id: 'codex' });
  const row = (tuple: typeof global, lifecycle_state: string) =>
    candidateRow({ ...tuple, scope_key: scopeDigest(tuple), lifecycle_state });
  for (const r of [row(global, 'CANDIDATE'), row(global, 'CANDIDATE'), row(global, 'VALIDATED_CURRENT'),
    row(project, 'CANDIDATE'), row(project, 'SUPERSEDED'), row(project, 'SUPERSEDED'), row(project, 'HISTORICAL'),
    row(project, 'QUARANTINED'),
    row(projectAgent, 'VALIDATED_CURRENT')]) await storeRow(engine, r);
  const adapter = adapterFor(engine);

  const g = (await status(adapter, { scope: 'GLOBAL_USER' })).backend_status;
  t.strictSame(g.counts,
    { CANDIDATE: 2, VALIDATED_CURRENT: 1, SUPERSEDED: 0, QUARANTINED: 0, HISTORICAL: 0, STALE: 0 });
  t.match(g.retention, { superseded_total: 0, historical_total: 0, validated_current_total: 1, compaction_ready: 0 });

  const p = (await status(adapter, { scope: 'PROJECT', project_id: 'p1' })).backend_status;
  t.strictSame(p.counts, { CANDIDATE: 1, VALIDATED_CURRENT: 0, SUPERSEDED: 2, QUARANTINED: 1, HISTORICAL: 1, STALE: 0 },
    'the agent-bound PROJECT row is not counted');
  // storeRow writes FTS and a non-current vector: SUPERSEDED rows are compaction-ready; HISTORICAL still holds a
  // vector.
  t.match(p.retention, {
    superseded_total: 2, historical_total: 1, validated_current_total: 0, compaction_ready: 2,
    compaction_blocked_partial: 1,
  });

  // A SUPERSEDED record still holding an eligible form (a partial lifecycle move) is blocked, not ready, as
  // housekeep's selection sees it.
  const leftover = await storeRow(engine, row(project, 'SUPERSEDED'));
  const raw = new RawDatabase(engine.path);
  raw.function('factlane_contract_v2_writer', { deterministic: false }, () => 1);
  raw.prepare('INSERT INTO eligible_vectors (row_id, scope_key, shard, embedding) VALUES (?, ?, 0, ?)')
    .run(leftover, scopeDigest(project), Buffer.alloc(32));
  raw.close();
  const partial = (await status(adapter, { scope: 'PROJECT', project_id: 'p1' })).backend_status;
  t.match(partial.retention, { superseded_total: 3, compaction_ready: 2, compaction_blocked_partial: 2 });

  const pa = (await status(adapter, { scope: 'PROJECT', project_id: 'p1', agent_id: 'codex' })).backend_status;
  t.strictSame(pa.counts,
    { CANDIDATE: 0, VALIDATED_CURRENT: 1, SUPERSEDED: 0, QUARANTINED: 0, HISTORICAL: 0, STALE: 0 });
  const empty = (await status(adapter, { scope: 'PROJECT', project_id: 'p2' })).backend_status;
  t.equal(Object.values(empty.counts as Record<string, number>).reduce((a, b) => a + b, 0), 0,
    'another project sees nothing');
});

t.test('the 8-dimension test binding is INCOMPATIBLE with local-hash-384', async (t) => {
  const engine = await openEngine(join(t.testdir(), 'fake.sqlite3'));
  t.teardown(() => engine.close());
  const envelope = await status(adapterFor(engine), { scope: 'GLOBAL_USER' });
  t.strictSame(envelope.backend_status.embedding_compatibility, {
    state: 'INCOMPATIBLE', reason: 'VECTOR_DIMENSION_MISMATCH', store_key: null, vector_dimension: 8,
    binding: JSON.parse(TEST_BINDING.bindingJson), runtime_fingerprint_matches_bound: false,
  });
  t.equal(envelope.status, 'OK', 'memory_status keeps working');
});

t.test('request_id: echoed, minted, or refused', async (t) => {
  const engine = await openBoundEngine(join(t.testdir(), 'ids.sqlite3'));
  t.teardown(() => engine.close());
  const adapter = adapterFor(engine);
  t.equal((await status(adapter, { scope: 'GLOBAL_USER', request_id: 'org/req:1' })).audit.request_id, 'org/req:1');
  for (const request_id of [undefined, null]) {
    t.match((await status(adapter, { scope: 'GLOBAL_USER', request_id })).audit.request_id,
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, `minted for ${request_id}`);
  }
  await t.rejects(status(adapter, { scope: 'GLOBAL_USER', request_id: `sk-${'Z9'.repeat(12)}` }),
    { code: 'RAW_OR_SENSITIVE_CONTENT' });
  await t.rejects(status(adapter, { scope: 'GLOBAL_USER', request_id: `secret: ${'x'.repeat(12)}` }),
    { code: 'RAW_OR_SENSITIVE_CONTENT' }, 'secret check before format');
  for (const bad of ['bad id!', '', 'x'.repeat(129), 12]) {
    await t.rejects(status(adapter, { scope: 'GLOBAL_USER', request_id: bad }),
      { code: 'INVALID_ENVELOPE', message: /request_id/ }, JSON.stringify(bad));
  }
  await t.rejects(status(adapter, { scope: 'PROJECT', request_id: 'bad id!' }), { code: 'UNKNOWN_PROJECT_ID' },
    'policy precedes the request_id check');
});

t.test('a failing provider check: provider_status unavailable, compatibility UNPROVEN, status still answers',
  async (t) => {
  const engine = await openBoundEngine(join(t.testdir(), 'down.sqlite3'));
  t.teardown(() => engine.close());
  const down = Object.assign(new LocalHashProvider(), {
    statusCheck: async () => { throw new AdapterError('EMBEDDING_UNAVAILABLE', 'the provider did not answer'); },
  });
  const envelope = (await new MemoryAdapter({ engine, provider: down, writeProfile: 'read-only', hostId: 'h' })
    .execute('memory_status', { scope: 'GLOBAL_USER' })) as Json;
  t.strictSame(envelope.provider_status,
    { available: false, error_code: 'EMBEDDING_UNAVAILABLE', message: 'the provider did not answer' });
  t.match(envelope.backend_status.embedding_compatibility,
    { state: 'UNPROVEN', reason: 'PROVIDER_UNAVAILABLE', runtime_fingerprint_matches_bound: false });
  t.equal(envelope.backend_status.profile.model_digest, LOCAL_HASH_DIGEST,
    'reference digest when nothing was observed');
  const broken = Object.assign(new LocalHashProvider(), { statusCheck: async () => { throw new TypeError('bug'); } });
  await t.rejects(new MemoryAdapter({ engine, provider: broken, writeProfile: 'read-only', hostId: 'h' })
    .execute('memory_status', { scope: 'GLOBAL_USER' }), TypeError, 'an unexpected fault is not relabelled');
});

t.test('a remembered capacity block is served only for the very same readings', async (t) => {
  const base = {
    pageSizeBytes: 4096, pageCount: 30, freelistCount: 0, databaseFileBytes: 4096, walFileBytes: 123632,
    shmFileBytes: 32768, filesystemFreeBytes: 84_073_308_160,
  };
  const first = rememberedCapacityBlock(base);
  t.strictSame(first, capacityBlock(base));
  t.ok(Object.isFrozen(first));
  t.equal(rememberedCapacityBlock({ ...base }), first, 'equal readings: the same block');
  const changes: Record<string, number | null> = {
    pageSizeBytes: 8192, pageCount: 31, freelistCount: 1, databaseFileBytes: 8192, walFileBytes: 0,
    shmFileBytes: 65536, filesystemFreeBytes: 1,
  };
  for (const [field, value] of Object.entries(changes)) {
    const reading = { ...base, [field]: value };
    const block = rememberedCapacityBlock(reading);
    t.strictSame(block, capacityBlock(reading), `${field} changed: a block of the new readings`);
    t.strictSame(rememberedCapacityBlock(base), capacityBlock(base), 'and back: a block of the first readings');
  }
  const unknown = rememberedCapacityBlock({ ...base, filesystemFreeBytes: null });
  t.equal(unknown.observation, 'UNKNOWN', 'a failed reading is never hidden by a remembered one');
});
