import { AdapterError } from '../core/adapter-error.js';
import {
  evaluateCompatibility, runtimeFingerprint, type EmbeddingCompatibility,
} from '../embedding/embedding-binding.js';
import type { EmbeddingProvider, RuntimeProvenance } from '../embedding/embedding-provider.js';
import type { SQLiteVecEngine } from '../storage/sqlite-vec-engine.js';

/** The engine and provider a compatibility check reads. */
export interface CompatibilityDeps {
  readonly engine: SQLiteVecEngine;
  readonly provider: EmbeddingProvider;
}

/** A fresh status check and the compatibility state it yields (CONTRACT.md §14.6). */
export interface CompatibilityObservation {
  readonly provenance: RuntimeProvenance | null;
  /** The governed error of a failed status check, or null. */
  readonly providerError: AdapterError | null;
  readonly compatibility: EmbeddingCompatibility;
}

/**
 * Runs a fresh provider status check and evaluates compatibility against the stored binding and the
 * vector table. A governed status-check failure is reported, not thrown; anything else is thrown.
 */
export async function observeCompatibility(deps: CompatibilityDeps): Promise<CompatibilityObservation> {
  let provenance: RuntimeProvenance | null = null;
  let providerError: AdapterError | null = null;
  try {
    provenance = await deps.provider.statusCheck();
  } catch (error) {
    if (!(error instanceof AdapterError)) throw error;
    providerError = error;
  }
  const compatibility = evaluateCompatibility({
    profile: deps.provider.profile, bindingText: deps.engine.storedBinding,
    tableDimension: deps.engine.findings.vectorDimension, provenance,
  });
  return { provenance, providerError, compatibility };
}

/**
 * The compatibility step of SEMANTIC/HYBRID search, store and update: PROFILE_MISMATCH unless COMPATIBLE.
 * Returns the runtime fingerprint to compare after embedding and the observed model digest.
 */
export async function requireCompatible(deps: CompatibilityDeps): Promise<{ fingerprint: string; digest: string }> {
  const { provenance, compatibility } = await observeCompatibility(deps);
  if (compatibility.state !== 'COMPATIBLE' || provenance === null) {
    throw new AdapterError('PROFILE_MISMATCH',
      `the embedding profile is ${compatibility.state} (${compatibility.reason}) with this database; semantic search `
        + `and writes need a compatible profile (see memory_status)`);
  }
  return { fingerprint: runtimeFingerprint(provenance), digest: provenance.digest };
}

/**
 * Runs one embedding call outside any transaction, then checks the runtime again: a fingerprint that
 * changed in between discards the result with PROFILE_MISMATCH (CONTRACT.md §14.6).
 */
export async function embedUnderRuntime<T>(
  deps: CompatibilityDeps, fingerprintBefore: string, embed: () => Promise<T>,
): Promise<T> {
  const result = await embed();
  if ((await requireCompatible(deps)).fingerprint !== fingerprintBefore) {
    throw new AdapterError('PROFILE_MISMATCH', 'the embedding runtime changed during the request, so its result was '
      + 'discarded; send the request again once memory_status reports embedding_compatibility COMPATIBLE');
  }
  return result;
}
