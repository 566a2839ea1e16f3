import { searchText, tokenRuns } from '../core/text.js';
import { EMBEDDING_PROFILES, type EmbeddingProfile } from './embedding-profiles.js';
import type { EmbeddingProvider, RuntimeProvenance } from './embedding-provider.js';

const FNV_OFFSET = 2166136261;
const FNV_PRIME = 16777619;
const encoder = new TextEncoder();

/** FNV-1a-32 of the UTF-8 bytes of `text`. */
export function fnv1a32(text: string): number {
  let hash = FNV_OFFSET;
  for (const byte of encoder.encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, FNV_PRIME) >>> 0;
  }
  return hash >>> 0;
}

/** The model digest of local-hash-384: the hash of the ASCII text `factlane-local-hash-384-v1`. */
export const LOCAL_HASH_DIGEST = EMBEDDING_PROFILES['local-hash-384']!.referenceDigest;

/**
 * Embeds `text` with the local-hash-384 algorithm (CONTRACT.md §14.3): lexical feature hashing of
 * search_text tokens and their code-point 3- and 4-grams, signed, L2-normalised to a unit vector.
 */
export function localHashEmbedding(text: string, dimension = 384): Float32Array {
  const s = searchText(text);
  const runs = tokenRuns(s);
  const tokens = runs.length > 0 ? runs : s.split(' ').filter(Boolean);
  const vector = new Float64Array(dimension);
  const add = (feature: string, weight: number) => {
    const sign = (fnv1a32(`~${feature}`) & 1) === 0 ? 1 : -1;
    vector[fnv1a32(feature) % dimension]! += sign * weight;
  };
  for (const token of tokens) {
    add(`w:${token}`, 1.0);
    const padded = [...` ${token} `];
    for (const size of [3, 4]) {
      for (let i = 0; i + size <= padded.length; i += 1) add(`g:${padded.slice(i, i + size).join('')}`, 0.5);
    }
  }
  let norm = Math.hypot(...vector);
  if (norm === 0) {
    vector[fnv1a32(s) % dimension] = 1;
    norm = 1;
  }
  return Float32Array.from(vector, (x) => x / norm);
}

/** The built-in, offline, lexical provider. Its status check always succeeds with constant provenance. */
export class LocalHashProvider implements EmbeddingProvider {
  readonly profile: EmbeddingProfile = EMBEDDING_PROFILES['local-hash-384']!;

  async statusCheck(): Promise<RuntimeProvenance> {
    return {
      local_only: true, provider_kind: this.profile.providerKind, model: this.profile.model, digest: LOCAL_HASH_DIGEST,
      ollama_version: null, semantic_family: this.profile.semanticFamily, size_bytes: null,
      native_dimension: this.profile.sourceDimension, output_dimension: this.profile.outputDimension,
      capabilities: ['embedding'], document_prefix: '', query_prefix: '', distance_metric: 'cosine',
      effective_context_window: null, truncate_policy: 'NOT_APPLICABLE',
    };
  }

  async embedDocuments(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map((text) => localHashEmbedding(text, this.profile.outputDimension));
  }

  async embedQuery(text: string): Promise<Float32Array> {
    return localHashEmbedding(text, this.profile.outputDimension);
  }
}
