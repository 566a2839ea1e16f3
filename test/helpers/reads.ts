// Read-path test helpers: a per-test local-hash-384 database with MemoryAdapters (owner-current writer,
// delegated-candidate writer, reader) on one engine and a movable clock; complete fixture rows in any
// lifecycle written with insertRecordUnchecked (exact scope_key, canonical JSON columns, content hash and
// contradiction key as the adapter derives them); and vectors at a chosen cosine distance from a query's
// local-hash-384 embedding, so SEMANTIC scores are known in advance.
import type { Test } from 'tap';
import { createHash, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { sql } from 'kysely';
import { UNCODED_SCOPE_MAX_RECORDS } from '@factlane/schema';
import { contradictionKey, nativeContentHash } from '../../src/adapter/derived-identities.js';
import { MemoryAdapter } from '../../src/adapter/memory-adapter.js';
import { scopeDigest, type ScopeTuple } from '../../src/adapter/request-scope.js';
import { AdapterError } from '../../src/core/adapter-error.js';
import { canonicalJson } from '../../src/core/canonical-json.js';
import { foldKey, searchText } from '../../src/core/text.js';
import { LocalHashProvider, localHashEmbedding } from '../../src/embedding/local-hash-provider.js';
import { insertRecordUnchecked, type NewRecordRow } from '../../src/storage/record-repository.js';
import type { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import type { WriteProfile } from '../../schema/enums.js';
import { LOCAL_HASH, openLocalHashEngine } from './mcp.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = Record<string, any>;

/** The fixed "now" of read tests; the bench clock starts here and can be moved. */
export const READ_NOW = '2026-11-30T10:00:00Z';

/** 64 lower-case hex digits derived from `seed`. */
export function hex64(seed: string): string {
  return createHash('sha256').update(seed).digest('hex');
}

/** A five-key scope tuple. */
export function scopeTuple(scope: string, ids: Partial<Omit<ScopeTuple, 'scope'>> = {}): ScopeTuple {
  return {
    scope: scope as ScopeTuple['scope'], project_id: ids.project_id ?? null, worktree_id: ids.worktree_id ?? null,
    workflow_id: ids.workflow_id ?? null, agent_id: ids.agent_id ?? null,
  };
}

/** The request fields of a scope tuple (absent identities left out). */
export function scopeRequest(tuple: ScopeTuple): Json {
  return Object.fromEntries(Object.entries(tuple).filter(([, value]) => value !== null));
}

/** A movable clock: `now()` is the Date the adapters see, `set` moves it. */
export interface MovableClock {
  (): Date;
  set(iso: string | number): void;
  advance(ms: number): void;
}

export function movableClock(start: string = READ_NOW): MovableClock {
  let current = Date.parse(start);
  const clock = (() => new Date(current)) as MovableClock;
  clock.set = (value) => { current = typeof value === 'number' ? value : Date.parse(value); };
  clock.advance = (ms) => { current += ms; };
  return clock;
}

/** A database in the test's folder and adapters of any profile on its one engine, sharing one clock. */
export interface ReadBench {
  readonly dbPath: string;
  readonly engine: SQLiteVecEngine;
  readonly clock: MovableClock;
  /** owner-current: stores VALIDATED_CURRENT facts and updates. */
  readonly owner: MemoryAdapter;
  /** delegated-candidate: stores Candidates. */
  readonly delegate: MemoryAdapter;
  adapter(writeProfile: WriteProfile, options?: { clock?: () => Date; provider?: LocalHashProvider }): MemoryAdapter;
}

export async function openReadBench(t: Test, name = 'reads.sqlite3'): Promise<ReadBench> {
  const dbPath = join(t.testdir(), name);
  const engine = await openLocalHashEngine(dbPath);
  t.teardown(() => engine.close());
  const clock = movableClock();
  const adapter: ReadBench['adapter'] = (writeProfile, options = {}) =>
    new MemoryAdapter({
      engine, provider: options.provider ?? new LocalHashProvider(), writeProfile, hostId: 'h',
      clock: options.clock ?? clock,
    });
  return { dbPath, engine, clock, owner: adapter('owner-current'), delegate: adapter('delegated-candidate'), adapter };
}

export async function search(adapter: MemoryAdapter, request: Json): Promise<Json> {
  return (await adapter.execute('memory_search', request)) as Json;
}

export async function get(adapter: MemoryAdapter, request: Json): Promise<Json> {
  return (await adapter.execute('memory_get', request)) as Json;
}

/** Asserts that `run` is refused with the governed `code` (message matching, if given). */
export async function refusedWith(
  t: Test, run: () => Promise<unknown>, code: string, message?: RegExp, name = code,
): Promise<void> {
  const error = await run().then(() => undefined, (e: unknown) => e);
  if (!(error instanceof AdapterError)) {
    t.fail(`${name}: expected AdapterError ${code}, got ${error === undefined ? 'success' : String(error)}`);
    return;
  }
  t.equal(error.code, code, `${name} (${error.message})`);
  if (message) t.match(error.message, message, `${name}: message`);
}

/** A complete, valid source_provenance (five required keys). */
export function provenance(overrides: Json = {}): Json {
  return {
    source_class: 'repo_file', source_ref: 'README.md', source_hash: hex64('readme'), review_ref: 'review/1',
    extraction_method: 'manual_read', ...overrides
  };
}

/** A current memory_store request (owner-current): never-expiring, verified just before READ_NOW. */
export function currentStore(scope: ScopeTuple, fact: string, overrides: Json = {}): Json {
  return {
    ...scopeRequest(scope), fact, memory_type: 'PROJECT_LEARNED_FACT', source_provenance: provenance(),
    freshness_policy: { kind: 'never' },
    idempotency_key: `store-${randomUUID()}`, requested_lifecycle_state: 'VALIDATED_CURRENT',
    source_timestamp: '2026-11-01T00:00:00Z',
    last_verified_at: '2026-11-30T09:00:00Z', ...overrides,
  };
}

/** A Candidate memory_store request (delegated-candidate). */
export function candidateStore(scope: ScopeTuple, fact: string, overrides: Json = {}): Json {
  return {
    ...scopeRequest(scope), fact, memory_type: 'PROJECT_LEARNED_FACT', source_provenance: provenance(),
    freshness_policy: { kind: 'never' },
    idempotency_key: `cand-${randomUUID()}`, ...overrides,
  };
}

/** The stored JSON of a full provenance (six keys). */
function storedProvenance(source: Partial<Record<'source_class' | 'source_ref' | 'source_hash', string>>): string {
  return canonicalJson({ ...provenance(), source_fingerprint: null, ...source });
}

export interface FixtureOptions {
  readonly lifecycle?: 'CANDIDATE' | 'VALIDATED_CURRENT' | 'SUPERSEDED' | 'QUARANTINED' | 'HISTORICAL';
  readonly source?: Partial<Record<'source_class' | 'source_ref' | 'source_hash', string>>;
  readonly createdAt?: string;
  readonly memoryId?: string;
  readonly revision?: number;
  readonly parentRecordId?: string | null;
  readonly freshness?: Json;
  readonly verifiedBy?: string;
  readonly lastVerifiedAt?: string | null;
  readonly contradictionState?: 'NONE' | 'UNRESOLVED' | 'RESOLVED' | 'QUARANTINED';
  readonly recordId?: string;
}

/** A complete record row as the adapter would write it (any lifecycle), in `scope`. */
export function fixtureRow(scope: ScopeTuple, fact: string, options: FixtureOptions = {}): NewRecordRow {
  const lifecycle = options.lifecycle ?? 'VALIDATED_CURRENT';
  const current = lifecycle === 'VALIDATED_CURRENT';
  const role = {
    GLOBAL_USER: 'OWNER_CURRENT', PROJECT: 'PROJECT_CURRENT', WORKFLOW: 'WORKFLOW_CURRENT',
    CROSS_PROJECT_WORKFLOW: 'WORKFLOW_CURRENT', TOOL_ENVIRONMENT: 'TOOL_ENV_CURRENT',
  }[scope.scope];
  return {
    record_id: options.recordId ?? randomUUID(), memory_id: options.memoryId ?? randomUUID(),
    revision: options.revision ?? 1, parent_record_id: options.parentRecordId ?? null,
    scope: scope.scope, project_id: scope.project_id, worktree_id: scope.worktree_id, workflow_id: scope.workflow_id,
    agent_id: scope.agent_id,
    scope_key: scopeDigest(scope), memory_type: 'PROJECT_LEARNED_FACT', fact,
    source_provenance: storedProvenance(options.source ?? {}),
    source_timestamp: '2026-11-01T00:00:00Z', created_at: options.createdAt ?? '2026-11-29T00:00:00Z',
    last_verified_at: options.lastVerifiedAt === undefined
      ? (lifecycle === 'CANDIDATE' ? null : '2026-11-29T00:00:00Z') : options.lastVerifiedAt,
    verified_by: options.verifiedBy ?? (lifecycle === 'CANDIDATE' ? 'UNVERIFIED' : 'OWNER'),
    authority_role: current || lifecycle === 'SUPERSEDED' ? role : lifecycle === 'HISTORICAL' ? role : 'UNRESOLVED',
    contribution_origin: canonicalJson({ contributor_class: 'OWNER', contributor_ref: 'fixture' }),
    freshness_policy: canonicalJson(
      { kind: 'never', recheck_ref: null, source_fingerprint: null, ttl_seconds: null, ...options.freshness },
    ),
    supersedes: '[]',
    contradiction_key: contradictionKey('PROJECT_LEARNED_FACT', scope, [...foldKey(fact)].slice(0, 96).join('')),
    contradiction_state: options.contradictionState ?? 'NONE', confidence: 0.5, tags: '[]', lifecycle_state: lifecycle,
    native_content_hash: nativeContentHash(scope, fact), payload_fingerprint: hex64(`payload-${randomUUID()}`),
    idempotency_key: `fixture-${randomUUID()}`,
    embedding_profile_id: LOCAL_HASH.profileId, embedding_model_digest: LOCAL_HASH.referenceDigest,
    embedding_output_dimension: LOCAL_HASH.outputDimension,
  };
}

/**
 * Writes fixture rows with their FTS rows (search_text(fact)) and vectors (the given one, else the
 * fact's local-hash-384 embedding) in one gated transaction. `vector: null` deletes the vector row, as
 * compaction leaves a HISTORICAL record. Returns the rows.
 */
export async function insertFixtures(
  engine: SQLiteVecEngine, fixtures: readonly { row: NewRecordRow; vector?: Float32Array | null }[],
): Promise<NewRecordRow[]> {
  await engine.write(async (trx) => {
    for (const { row, vector } of fixtures) {
      const rowId = await insertRecordUnchecked(
        trx, row, { searchText: searchText(row.fact), embedding: vector ?? localHashEmbedding(row.fact) },
      );
      if (vector === null) await sql`DELETE FROM fact_vec WHERE rowid = ${rowId}`.execute(trx);
    }
  });
  return fixtures.map((fixture) => fixture.row);
}

/**
 * Fills `scope` with `records` Candidates (`padding candidate N of the scope`, written as insertFixtures writes); by
 * default one past UNCODED_SCOPE_MAX_RECORDS, enough to code the scope on their own (schema 3). Candidates have no
 * eligible forms of their own.
 */
export async function padScope(
  engine: SQLiteVecEngine, scope: ScopeTuple, records = UNCODED_SCOPE_MAX_RECORDS + 1,
): Promise<void> {
  await insertFixtures(engine, Array.from({ length: records }, (_, i) => ({
    row: fixtureRow(scope, `padding candidate ${i} of the scope`, { lifecycle: 'CANDIDATE' }),
  })));
}

/** A deterministic pseudo-random generator (mulberry32). */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296 - 0.5;
  };
}

/**
 * A unit vector whose cosine distance to the unit vector `q` is `distance` (0-2): cos θ·q + sin θ·w with
 * w a seeded direction orthogonal to q. Distinct seeds give distinct vectors at the same distance.
 */
export function vectorAtDistance(q: Float32Array, distance: number, seed: number): Float32Array {
  const random = seeded(seed * 7919 + 17);
  const w = Float64Array.from(q, () => random());
  const dot = w.reduce((sum, value, i) => sum + value * q[i]!, 0);
  for (let i = 0; i < w.length; i += 1) w[i]! -= dot * q[i]!;
  const norm = Math.hypot(...w);
  const cos = 1 - distance;
  const sin = Math.sqrt(Math.max(0, 1 - cos * cos));
  return Float32Array.from(q, (value, i) => cos * value + sin * (w[i]! / norm));
}

/** The local-hash-384 query embedding of `query` (no prefix). */
export function queryVector(query: string): Float32Array {
  return localHashEmbedding(query);
}

/** facts of the results, in order. */
export const factsOf = (envelope: Json): string[] => envelope.results.map((r: Json) => r.fact);
/** (fact, score, rank) of the results, in order. */
export const rankedOf = (envelope: Json): [string, number, number][] =>
  envelope.results.map((r: Json) => [r.fact, r.relevance_score, r.retrieval_rank]);
