import { STORAGE_CONTRACT_VERSION, WRITE_PROFILE_SPECS, type WriteProfile } from '@factlane/schema';
import { freezeCanonical } from '../core/canonical-json.js';
import type { EmbeddingProvider, RuntimeProvenance } from '../embedding/embedding-provider.js';
import type { SQLiteVecEngine } from '../storage/sqlite-vec-engine.js';
import {
  capacityKnown, readCapacity, type CapacityReading, type ScopeCounter, type ScopeReading,
} from '../storage/status-repository.js';
import type { ScopeTuple } from './request-scope.js';
import { observeCompatibility } from './runtime-compatibility.js';

/** The token measurement profile (CONTRACT.md §15): always measured with the bundled o200k_base. */
export const TOKEN_MEASUREMENT = freezeCanonical({
  available: true, profile: 'PORTABLE_MEASUREMENT_PROFILE', encoding: 'o200k_base',
  codex_exact_equivalence: 'UNVERIFIED',
});

/** `backend_status.capacity` (OPERATIONS.md §2): KNOWN only when every reading it needs succeeded. */
export function capacityBlock(reading: CapacityReading): Record<string, unknown> {
  const known = capacityKnown(reading);
  const times = (a: number | null, b: number | null) => (a === null || b === null ? null : a * b);
  return {
    observation: known ? 'KNOWN' : 'UNKNOWN',
    page_size_bytes: reading.pageSizeBytes, page_count: reading.pageCount, freelist_count: reading.freelistCount,
    database_allocated_bytes: times(reading.pageSizeBytes, reading.pageCount),
    freelist_bytes: times(reading.pageSizeBytes, reading.freelistCount),
    database_file_bytes: reading.databaseFileBytes, wal_file_bytes: reading.walFileBytes,
    shm_file_bytes: reading.shmFileBytes,
    filesystem_free_bytes: reading.filesystemFreeBytes, pressure_threshold_bytes: null,
    pressure_evaluation: 'REQUIRES_BOUNDED_OPERATION_REQUIREMENT',
    mutation_preflight: known ? 'REQUIRES_BOUNDED_OPERATION_REQUIREMENT' : 'BLOCKED_UNKNOWN_CAPACITY',
    next_action: known ? 'COMPARE_FILESYSTEM_FREE_BYTES_TO_BOUNDED_OPERATION_REQUIREMENT'
      : 'RESTORE_CAPACITY_OBSERVABILITY_BEFORE_MEMORY_MUTATION',
  };
}

/**
 * The launch profile as `backend_status.profile` reports it; frozen and kept while provider and digest stay the same.
 */
function profileBlock(provider: EmbeddingProvider, provenance: RuntimeProvenance | null): Record<string, unknown> {
  const p = provider.profile;
  const digest = provenance?.digest ?? provider.lastObservedDigest ?? p.referenceDigest;
  if (lastProfile?.provider === provider && lastProfile.digest === digest) return lastProfile.block;
  const block = freezeCanonical({
    profile_id: p.profileId, provider_kind: p.providerKind, base_model_identity: p.model,
    model_digest: digest, source_dimension: p.sourceDimension, output_dimension: p.outputDimension,
    normalization_policy: p.normalizationPolicy, distance_metric: p.distanceMetric,
    projection_version: p.projectionVersion,
    document_prefix: p.documentPrefix, query_prefix: p.queryPrefix, semantic_family: p.semanticFamily,
    compatibility_revision: p.compatibilityRevision, minimum_context_window: p.minimumContextWindow,
  });
  lastProfile = { provider, digest, block };
  return block;
}
let lastProfile: { provider: EmbeddingProvider; digest: string; block: Record<string, unknown> } | undefined;

/** `backend_status.storage`: fixed for an open engine, so frozen and kept per engine. */
function storageBlock(engine: SQLiteVecEngine): Record<string, unknown> {
  if (lastStorage?.engine === engine) return lastStorage.block;
  const block = freezeCanonical({
    contract_version: STORAGE_CONTRACT_VERSION, schema_version: engine.findings.schemaVersion,
    sqlite_version: engine.runtime.sqliteVersion,
    sqlite_vec_version: engine.runtime.sqliteVecVersion, journal_mode: 'wal', synchronous: 'FULL',
  });
  lastStorage = { engine, block };
  return block;
}
let lastStorage: { engine: SQLiteVecEngine; block: Record<string, unknown> } | undefined;

/**
 * `provider_status` of an available provider; a provider that answers with the same frozen provenance gets the same
 * frozen block.
 */
function availableProviderBlock(provenance: RuntimeProvenance): Record<string, unknown> {
  if (lastProvider?.provenance === provenance) return lastProvider.block;
  const block = { available: true, ...provenance };
  if (!Object.isFrozen(provenance)) return block;
  lastProvider = { provenance, block: freezeCanonical(block) };
  return lastProvider.block;
}
let lastProvider: { provenance: RuntimeProvenance; block: Record<string, unknown> } | undefined;

/**
 * `backend_status.counts` and `.retention` of a reading; frozen and kept with the reading, which ScopeCounter serves
 * again while the database is unchanged.
 */
function scopeBlocks(reading: ScopeReading): { counts: Record<string, unknown>; retention: Record<string, unknown> } {
  let blocks = SCOPE_BLOCKS.get(reading);
  if (blocks === undefined) {
    const { counts, retention } = reading;
    blocks = freezeCanonical({
      counts: { ...counts, STALE: 0 },
      retention: {
        policy_version: 1, trigger: 'CAPACITY_PRESSURE_NOT_SESSION_COUNT', automatic_housekeeping: false,
        eligible_lifecycle_states: ['SUPERSEDED'], current_authority_reclaim: false,
        duplicate_reclaim: 'NOT_APPLICABLE_IN_CURRENT_SCHEMA', expired_reclaim: 'NOT_APPLICABLE_IN_CURRENT_SCHEMA',
        superseded_total: counts.SUPERSEDED, compaction_ready: retention.compactionReady,
        compaction_blocked_partial: retention.compactionBlockedPartial,
        historical_total: counts.HISTORICAL, validated_current_total: counts.VALIDATED_CURRENT,
      },
    });
    SCOPE_BLOCKS.set(reading, blocks);
  }
  return blocks;
}
const SCOPE_BLOCKS = new WeakMap<ScopeReading, {
  counts: Record<string, unknown>; retention: Record<string, unknown>;
}>();

/**
 * capacityBlock, frozen and kept while every reading stays the same (free space and file sizes rarely change between
 * calls).
 */
export function rememberedCapacityBlock(reading: CapacityReading): Record<string, unknown> {
  const last = lastCapacity;
  if (last !== undefined && CAPACITY_FIELDS.every((field) => last.reading[field] === reading[field])) return last.block;
  lastCapacity = { reading, block: freezeCanonical(capacityBlock(reading)) };
  return lastCapacity.block;
}
const CAPACITY_FIELDS = [
  'pageSizeBytes', 'pageCount', 'freelistCount', 'databaseFileBytes', 'walFileBytes', 'shmFileBytes',
  'filesystemFreeBytes',
] as const;
let lastCapacity: { reading: CapacityReading; block: Record<string, unknown> } | undefined;

interface BackendParts {
  readonly storage: Record<string, unknown>;
  readonly profile: Record<string, unknown>;
  readonly compatibility: unknown;
  readonly counts: Record<string, unknown>;
  readonly retention: Record<string, unknown>;
  readonly capacity: Record<string, unknown>;
}

/** `backend_status`, frozen and kept while each of its parts is the same (frozen) object as last time. */
function backendStatusBlock(parts: BackendParts): Record<string, unknown> {
  const last = lastBackend;
  if (last !== undefined && BACKEND_PARTS.every((part) => last.parts[part] === parts[part])) return last.block;
  const block = {
    available: true, backend: 'sqlite_vec', storage: parts.storage, profile: parts.profile,
    embedding_compatibility: parts.compatibility, counts: parts.counts, retention: parts.retention,
    capacity: parts.capacity,
  };
  // Only a block made of frozen parts can be frozen and kept; a compatibility answer that is not frozen is used once.
  if (!Object.isFrozen(parts.compatibility)) return block;
  lastBackend = { parts, block: freezeCanonical(block) };
  return lastBackend.block;
}
const BACKEND_PARTS = ['storage', 'profile', 'compatibility', 'counts', 'retention', 'capacity'] as const;
let lastBackend: { parts: BackendParts; block: Record<string, unknown> } | undefined;

/** `launcher` per write profile (CONTRACT.md §15), frozen. */
const LAUNCHER_BLOCKS = Object.fromEntries(Object.entries(WRITE_PROFILE_SPECS).map(([writeProfile, spec]) => [
  writeProfile,
  freezeCanonical({
    write_profile: writeProfile, permitted_operations: [...spec.operations], max_lifecycle: spec.maxLifecycle,
  }),
])) as unknown as Readonly<Record<WriteProfile, Record<string, unknown>>>;

/**
 * Observes one exact scope for `memory_status` (CONTRACT.md §15, OPERATIONS.md §2), read-only: a fresh
 * provider status check, compatibility, lifecycle and retention counts, capacity. Never migrates,
 * compacts or rebinds. Returns the envelope fields beyond the common ones.
 */
export async function observeStatus(
  input: {
    engine: SQLiteVecEngine; counter: ScopeCounter; provider: EmbeddingProvider; writeProfile: WriteProfile;
    scope: ScopeTuple;
  },
): Promise<Record<string, unknown>> {
  const { engine, provider, scope } = input;
  const { provenance, providerError, compatibility } = await observeCompatibility({ engine, provider });
  const providerStatus = providerError === null
    ? availableProviderBlock(provenance!)
    : { available: false, error_code: providerError.code, message: providerError.message };
  const reading = await engine.read((db) => input.counter.count(db, scope));
  const capacity = readCapacity(reading.pages, engine.path);
  const { counts, retention } = scopeBlocks(reading);
  return {
    backend_status: backendStatusBlock({
      storage: storageBlock(engine), profile: profileBlock(provider, provenance), compatibility, counts, retention,
      capacity: rememberedCapacityBlock(capacity),
    }),
    provider_status: providerStatus,
    token_measurement: TOKEN_MEASUREMENT,
    launcher: LAUNCHER_BLOCKS[input.writeProfile],
  };
}
