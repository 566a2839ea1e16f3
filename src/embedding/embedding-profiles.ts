import { sha256Hex } from '../core/hashing.js';

/** One embedding profile of CONTRACT.md §14.2. */
export interface EmbeddingProfile {
  readonly profileId: string;
  readonly providerKind: 'BUILTIN_LOCAL_HASH' | 'OLLAMA_LOCAL';
  readonly model: string;
  readonly outputDimension: number;
  readonly sourceDimension: number;
  readonly documentPrefix: string;
  readonly queryPrefix: string;
  readonly semanticFamily: string;
  readonly minimumContextWindow: number | null;
  readonly normalizationPolicy: string;
  readonly projectionVersion: string;
  readonly referenceDigest: string;
  readonly distanceMetric: 'cosine';
  readonly compatibilityRevision: 1;
}

/** The profile every launch uses unless `--profile` says otherwise. */
export const DEFAULT_PROFILE_ID = 'local-hash-384';

const OLLAMA = {
  providerKind: 'OLLAMA_LOCAL', normalizationPolicy: 'OLLAMA_API_NORMALIZED_AFTER_DIMENSION_PROJECTION',
  projectionVersion: 'ollama-dimensions-v1', distanceMetric: 'cosine', compatibilityRevision: 1,
} as const;
const NOMIC = {
  ...OLLAMA, model: 'nomic-embed-text:latest', sourceDimension: 768, documentPrefix: 'search_document: ',
  queryPrefix: 'search_query: ', semanticFamily: 'nomic-bert', minimumContextWindow: 2048,
  referenceDigest: '0a109f422b47e3a30ba2b10eca18548e944e8a23073ee3f3e947efcf3c45e59f',
} as const;

/** The built-in profiles, keyed by id. `local-hash-384`'s digest is the hash of `factlane-local-hash-384-v1`. */
export const EMBEDDING_PROFILES: Readonly<Record<string, EmbeddingProfile>> = Object.freeze({
  'local-hash-384': {
    profileId: 'local-hash-384', providerKind: 'BUILTIN_LOCAL_HASH', model: 'local-hash-384', outputDimension: 384,
    sourceDimension: 384,
    documentPrefix: '', queryPrefix: '', semanticFamily: 'lexical-hash', minimumContextWindow: null,
    normalizationPolicy: 'L2_UNIT_FEATURE_HASH', projectionVersion: 'local-hash-v1',
    referenceDigest: sha256Hex('factlane-local-hash-384-v1'), distanceMetric: 'cosine', compatibilityRevision: 1,
  },
  'embeddinggemma-300m-768': { ...OLLAMA, profileId: 'embeddinggemma-300m-768', model: 'embeddinggemma:300m',
    outputDimension: 768, sourceDimension: 768, documentPrefix: 'title: none | text: ',
    queryPrefix: 'task: search result | query: ', semanticFamily: 'gemma3', minimumContextWindow: 2048,
    referenceDigest: '85462619ee721b466c5927d109d4cb765861907d5417b9109caebc4e614679f1' },
  'nomic-768': { ...NOMIC, profileId: 'nomic-768', outputDimension: 768 },
  'nomic-512': { ...NOMIC, profileId: 'nomic-512', outputDimension: 512 },
  'nomic-256': { ...NOMIC, profileId: 'nomic-256', outputDimension: 256 },
  'minilm-384': { ...OLLAMA, profileId: 'minilm-384', model: 'all-minilm:l6-v2', outputDimension: 384,
    sourceDimension: 384, documentPrefix: '', queryPrefix: '', semanticFamily: 'bert', minimumContextWindow: 512,
    referenceDigest: '1b226e2802dbb772b5fc32a58f103ca1804ef7501331012de126ab22f67475ef' },
});

/** The semantic identity of a profile (CONTRACT.md §14.5): no profile id, digest or context window. */
export function semanticIdentity(profile: EmbeddingProfile): Record<string, unknown> {
  return {
    base_model_identity: profile.model, semantic_family: profile.semanticFamily,
    source_dimension: profile.sourceDimension,
    output_dimension: profile.outputDimension, document_prefix: profile.documentPrefix,
    query_prefix: profile.queryPrefix,
    normalization_policy: profile.normalizationPolicy, distance_metric: profile.distanceMetric,
    projection_version: profile.projectionVersion, compatibility_revision: profile.compatibilityRevision,
  };
}
