import { canonicalDigest } from '../core/hashing.js';
import { canonicalJson, freezeCanonical, isFrozenCanonical } from '../core/canonical-json.js';
import { semanticIdentity, type EmbeddingProfile } from './embedding-profiles.js';
import type { RuntimeProvenance } from './embedding-provider.js';

/** The runtime fingerprint (CONTRACT.md §14.5): hash of the provider facts that change vectors. */
export function runtimeFingerprint(provenance: RuntimeProvenance): string {
  // Every compatibility check asks for it, usually with the same provenance: remember the last answer.
  const key = JSON.stringify(provenance);
  if (lastFingerprint?.key === key) return lastFingerprint.fingerprint;
  const fingerprint = canonicalDigest({
    provider_kind: provenance.provider_kind, model: provenance.model, model_digest: provenance.digest,
    ollama_version: provenance.ollama_version, semantic_family: provenance.semantic_family,
    native_dimension: provenance.native_dimension, output_dimension: provenance.output_dimension,
    effective_context_window: provenance.effective_context_window,
  });
  lastFingerprint = { key, fingerprint };
  return fingerprint;
}
let lastFingerprint: { key: string; fingerprint: string } | undefined;

/** The binding written into a new database, as canonical JSON (CONTRACT.md §14.5). */
export function freshBindingJson(profile: EmbeddingProfile, provenance: RuntimeProvenance, boundAt: string): string {
  return canonicalJson({
    metadata_revision: 2, profile_id: profile.profileId, store_key: profile.profileId,
    semantic_identity: semanticIdentity(profile), vector_dimension: profile.outputDimension,
    compatibility_proof: { basis: 'FRESH_EMPTY_RUNTIME_BINDING', bound_at: boundAt },
    runtime_provenance: provenance, runtime_fingerprint: runtimeFingerprint(provenance),
  });
}

/** The compatibility state (CONTRACT.md §14.6) as `memory_status` reports it. */
export interface EmbeddingCompatibility {
  readonly state: 'COMPATIBLE' | 'UNPROVEN' | 'INCOMPATIBLE';
  readonly reason: 'SEMANTIC_IDENTITY_MISMATCH' | 'VECTOR_DIMENSION_MISMATCH' | 'BINDING_INVALID'
    | 'PROVIDER_UNAVAILABLE' | 'RUNTIME_PROVENANCE_CHANGED' | 'BOUND_RUNTIME_MATCH';
  readonly store_key: string | null;
  readonly vector_dimension: number | null;
  readonly binding: unknown;
  readonly runtime_fingerprint_matches_bound: boolean;
}

interface ParsedBinding {
  profile_id: string; store_key: string; vector_dimension: number; semantic_identity: Record<string, unknown>;
  runtime_fingerprint: string;
}

function parseBinding(text: string | null): { raw: unknown; binding: ParsedBinding | null } {
  if (text === null) return { raw: null, binding: null };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { raw: null, binding: null };
  }
  const b = raw as Partial<ParsedBinding> | null;
  const wellFormed = b !== null && typeof b === 'object' && typeof b.profile_id === 'string' &&
    typeof b.store_key === 'string' &&
    Number.isInteger(b.vector_dimension) && typeof b.semantic_identity === 'object' && b.semantic_identity !== null &&
    typeof b.runtime_fingerprint === 'string';
  return { raw, binding: wellFormed ? (b as ParsedBinding) : null };
}

/**
 * Evaluates the compatibility of the launch profile with the stored binding and vector table; the
 * first matching row of CONTRACT.md §14.6 decides. `provenance` is the last status check, or null when
 * it failed.
 */
export function evaluateCompatibility(input: {
  profile: EmbeddingProfile; bindingText: string | null; tableDimension: number | null;
  provenance: RuntimeProvenance | null;
}): EmbeddingCompatibility {
  // A pure function of its inputs, evaluated on every status, search and write: the last answer is
  // kept (frozen with its canonical text, since envelopes carry it) and reused while the inputs are unchanged:
  // the very same inputs (a provenance that was deep-frozen when the answer was kept, as the built-in provider
  // returns), else equal ones.
  const last = lastCompatibility;
  if (last !== undefined && last.profile === input.profile && last.tableDimension === input.tableDimension
    && last.bindingText === input.bindingText
    && (input.provenance === null ? last.provenance === null
      : last.provenance === input.provenance && last.provenanceFrozen)) {
    return last.result;
  }
  const key = `${input.profile.profileId}\u0000${input.tableDimension}\u0000${input.bindingText}\u0000`
    + `${JSON.stringify(input.provenance)}`;
  if (last?.key === key && last.profile === input.profile) return last.result;
  const result = freezeCanonical(computeCompatibility(input));
  lastCompatibility = {
    key, profile: input.profile, tableDimension: input.tableDimension, bindingText: input.bindingText,
    provenance: input.provenance, provenanceFrozen: isFrozenCanonical(input.provenance), result,
  };
  return result;
}
let lastCompatibility: {
  key: string; profile: EmbeddingProfile; tableDimension: number | null; bindingText: string | null;
  provenance: RuntimeProvenance | null; provenanceFrozen: boolean; result: EmbeddingCompatibility;
} | undefined;

function computeCompatibility(input: Parameters<typeof evaluateCompatibility>[0]): EmbeddingCompatibility {
  const { raw, binding } = parseBinding(input.bindingText);
  const fingerprintMatches = binding !== null && input.provenance !== null
    && runtimeFingerprint(input.provenance) === binding.runtime_fingerprint;
  const result = (
    state: EmbeddingCompatibility['state'], reason: EmbeddingCompatibility['reason'],
  ): EmbeddingCompatibility => ({
    state, reason, store_key: binding?.store_key ?? null,
    vector_dimension: binding?.vector_dimension ?? input.tableDimension,
    binding: raw, runtime_fingerprint_matches_bound: fingerprintMatches,
  });
  if (binding && canonicalJson(binding.semantic_identity) !== canonicalJson(semanticIdentity(input.profile)))
    return result('INCOMPATIBLE', 'SEMANTIC_IDENTITY_MISMATCH');
  if (input.tableDimension !== input.profile.outputDimension
    || (binding && binding.vector_dimension !== input.profile.outputDimension)) {
    return result('INCOMPATIBLE', 'VECTOR_DIMENSION_MISMATCH');
  }
  if (!binding) return result('UNPROVEN', 'BINDING_INVALID');
  if (!input.provenance) return result('UNPROVEN', 'PROVIDER_UNAVAILABLE');
  if (!fingerprintMatches) return result('UNPROVEN', 'RUNTIME_PROVENANCE_CHANGED');
  return result('COMPATIBLE', 'BOUND_RUNTIME_MATCH');
}
