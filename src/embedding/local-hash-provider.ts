import { freezeCanonical } from '../core/canonical-json.js';
import { TOKEN_RUN, searchText } from '../core/text.js';
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

const SPACE = 0x20;

/** [start, end) UTF-16 ranges of the tokens of `s`: its token runs, else its space-separated pieces. */
function tokenRanges(s: string): [number, number][] {
  const ranges: [number, number][] = [];
  for (const match of s.matchAll(TOKEN_RUN)) ranges.push([match.index, match.index + match[0].length]);
  if (ranges.length > 0) return ranges;
  let from = 0;
  for (const piece of s.split(' ')) {
    if (piece !== '') ranges.push([from, from + piece.length]);
    from += piece.length + 1;
  }
  return ranges;
}

/**
 * Embeds `text` with the local-hash-384 algorithm (CONTRACT.md §14.3): lexical feature hashing of
 * search_text tokens and their code-point 3- and 4-grams of ` token `, signed, L2-normalised to a unit
 * vector. For speed the text is UTF-8 encoded once and every feature is hashed over byte ranges in place
 * (the padding spaces as single 0x20 bytes), which gives exactly the hashes of the literal feature
 * strings `w:…`, `g:…` and `~…`.
 */
export function localHashEmbedding(text: string, dimension = 384): Float32Array {
  const s = searchText(text);
  const bytes = encoder.encode(s);
  // UTF-16 index -> UTF-8 byte offset, so token ranges from the regex map onto `bytes`.
  const byteAt = new Int32Array(s.length + 1);
  for (let i = 0, offset = 0; i <= s.length; ) {
    byteAt[i] = offset;
    if (i === s.length) break;
    const codePoint = s.codePointAt(i)!;
    const units = codePoint > 0xffff ? 2 : 1;
    if (units === 2) byteAt[i + 1] = offset;
    offset += codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4;
    i += units;
  }
  const vector = new Float64Array(dimension);
  // Element e of the padded token: 0 and n + 1 are the spaces, 1..n its code points at starts[e - 1].
  const starts: number[] = [];
  for (const [from16, to16] of tokenRanges(s)) {
    const from = byteAt[from16]!;
    const to = byteAt[to16]!;
    starts.length = 0;
    for (let b = from; b < to; b += 1) if ((bytes[b]! & 0xc0) !== 0x80) starts.push(b);
    const n = starts.length;
    starts.push(to);
    let index = WORD;
    let sign = SIGNED_WORD;
    for (let b = from; b < to; b += 1) {
      index = Math.imul(index ^ bytes[b]!, FNV_PRIME) >>> 0;
      sign = Math.imul(sign ^ bytes[b]!, FNV_PRIME) >>> 0;
    }
    vector[index % dimension]! += (sign & 1) === 0 ? 1 : -1;
    // The 4-gram starting at k extends the 3-gram starting at k by one element, so one pass hashes both.
    // Weights are multiples of 0.5, so the float sums are exact whatever the order of features.
    for (let k = 0; k + 3 <= n + 2; k += 1) {
      index = GRAM;
      sign = SIGNED_GRAM;
      const last = Math.min(k + 3, n + 1);
      for (let e = k; e <= last; e += 1) {
        if (e === 0 || e === n + 1) {
          index = Math.imul(index ^ SPACE, FNV_PRIME) >>> 0;
          sign = Math.imul(sign ^ SPACE, FNV_PRIME) >>> 0;
        } else {
          for (let b = starts[e - 1]!, end = starts[e]!; b < end; b += 1) {
            index = Math.imul(index ^ bytes[b]!, FNV_PRIME) >>> 0;
            sign = Math.imul(sign ^ bytes[b]!, FNV_PRIME) >>> 0;
          }
        }
        if (e >= k + 2) vector[index % dimension]! += (sign & 1) === 0 ? 0.5 : -0.5;
      }
    }
  }
  let sumSquares = 0;
  for (let i = 0; i < dimension; i += 1) sumSquares += vector[i]! * vector[i]!;
  let norm = Math.sqrt(sumSquares);
  if (norm === 0) {
    vector[fnv1a32(s) % dimension] = 1;
    norm = 1;
  }
  const unit = new Float32Array(dimension);
  for (let i = 0; i < dimension; i += 1) unit[i] = vector[i]! / norm;
  return unit;
}

/** The built-in, offline, lexical provider. Its status check always succeeds with constant provenance. */
export class LocalHashProvider implements EmbeddingProvider {
  readonly profile: EmbeddingProfile = EMBEDDING_PROFILES['local-hash-384']!;
  readonly lastObservedDigest: string = LOCAL_HASH_DIGEST;
  // Constant, so one deep-frozen answer serves every check (and its canonical text is written once).
  readonly #provenance: RuntimeProvenance = freezeCanonical({
    local_only: true, provider_kind: this.profile.providerKind, model: this.profile.model, digest: LOCAL_HASH_DIGEST,
    ollama_version: null, semantic_family: this.profile.semanticFamily, size_bytes: null,
    native_dimension: this.profile.sourceDimension, output_dimension: this.profile.outputDimension,
    capabilities: ['embedding'], document_prefix: '', query_prefix: '', distance_metric: 'cosine',
    effective_context_window: null, truncate_policy: 'NOT_APPLICABLE',
  });

  async statusCheck(): Promise<RuntimeProvenance> {
    return this.#provenance;
  }

  async embedDocuments(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map((text) => localHashEmbedding(text, this.profile.outputDimension));
  }

  async embedQuery(text: string): Promise<Float32Array> {
    return localHashEmbedding(text, this.profile.outputDimension);
  }
}
