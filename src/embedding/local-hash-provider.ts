import { searchText, tokenRuns } from '../core/text.js';
import { EMBEDDING_PROFILES, type EmbeddingProfile } from './embedding-profiles.js';
import type { EmbeddingProvider, RuntimeProvenance } from './embedding-provider.js';

const FNV_OFFSET = 2166136261;
const FNV_PRIME = 16777619;
const encoder = new TextEncoder();

/** FNV-1a-32 of the UTF-8 bytes of `text`. */
export function fnv1a32(text: string): number {
  return fnvBytes(FNV_OFFSET, encoder.encode(text), 0, -1);
}

/** Continues an FNV-1a-32 state over `bytes[from..to)` (to = -1: to the end). */
function fnvBytes(state: number, bytes: ArrayLike<number>, from: number, to: number): number {
  let hash = state;
  const end = to < 0 ? bytes.length : to;
  for (let i = from; i < end; i += 1) hash = Math.imul(hash ^ bytes[i]!, FNV_PRIME) >>> 0;
  return hash;
}

// FNV states after the feature prefixes, so a feature's hash continues from them without building strings.
const WORD = fnvBytes(FNV_OFFSET, encoder.encode('w:'), 0, -1);
const SIGNED_WORD = fnvBytes(FNV_OFFSET, encoder.encode('~w:'), 0, -1);
const GRAM = fnvBytes(FNV_OFFSET, encoder.encode('g:'), 0, -1);
const SIGNED_GRAM = fnvBytes(FNV_OFFSET, encoder.encode('~g:'), 0, -1);

/** The model digest of local-hash-384: the hash of the ASCII text `factlane-local-hash-384-v1`. */
export const LOCAL_HASH_DIGEST = EMBEDDING_PROFILES['local-hash-384']!.referenceDigest;

/**
 * Embeds `text` with the local-hash-384 algorithm (CONTRACT.md §14.3): lexical feature hashing of
 * search_text tokens and their code-point 3- and 4-grams, signed, L2-normalised to a unit vector.
 * Features are hashed over the UTF-8 bytes of ` token ` in place (offsets per code point) rather than
 * as concatenated strings; the result is the same as hashing `w:token`, `g:gram`, `~…` literally.
 */
export function localHashEmbedding(text: string, dimension = 384): Float32Array {
  const s = searchText(text);
  const runs = tokenRuns(s);
  const tokens = runs.length > 0 ? runs : s.split(' ').filter(Boolean);
  const vector = new Float64Array(dimension);
  const add = (indexState: number, signState: number, bytes: Uint8Array, from: number, to: number, weight: number) => {
    // One pass over the feature's bytes feeds both hashes (index and sign).
    let index = indexState;
    let sign = signState;
    for (let i = from; i < to; i += 1) {
      index = Math.imul(index ^ bytes[i]!, FNV_PRIME) >>> 0;
      sign = Math.imul(sign ^ bytes[i]!, FNV_PRIME) >>> 0;
    }
    vector[index % dimension]! += ((sign & 1) === 0 ? 1 : -1) * weight;
  };
  for (const token of tokens) {
    const bytes = encoder.encode(` ${token} `);
    // Byte offset where each code point starts, plus the end.
    const starts: number[] = [];
    for (let i = 0; i < bytes.length; i += 1) if ((bytes[i]! & 0xc0) !== 0x80) starts.push(i);
    starts.push(bytes.length);
    const codePoints = starts.length - 1;
    add(WORD, SIGNED_WORD, bytes, 1, bytes.length - 1, 1.0);
    for (const size of [3, 4]) {
      for (let i = 0; i + size <= codePoints; i += 1) add(GRAM, SIGNED_GRAM, bytes, starts[i]!, starts[i + size]!, 0.5);
    }
  }
  let sumSquares = 0;
  for (let i = 0; i < dimension; i += 1) sumSquares += vector[i]! * vector[i]!;
  let norm = Math.sqrt(sumSquares);
  if (norm === 0) {
    vector[fnv1a32(s) % dimension] = 1;
    norm = 1;
  }
  return Float32Array.from(vector, (x) => x / norm);
}

/** The built-in, offline, lexical provider. Its status check always succeeds with constant provenance. */
export class LocalHashProvider implements EmbeddingProvider {
  readonly profile: EmbeddingProfile = EMBEDDING_PROFILES['local-hash-384']!;
  readonly lastObservedDigest: string = LOCAL_HASH_DIGEST;

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
