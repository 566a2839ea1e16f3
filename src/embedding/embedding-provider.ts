import type { EmbeddingProfile } from './embedding-profiles.js';

/** What a good status check reports (CONTRACT.md §14.4); `local-hash-384` reports constants. */
export interface RuntimeProvenance {
  readonly local_only: true;
  readonly provider_kind: string;
  readonly model: string;
  readonly digest: string;
  readonly ollama_version: string | null;
  readonly semantic_family: string;
  readonly size_bytes: number | null;
  readonly native_dimension: number;
  readonly output_dimension: number;
  readonly capabilities: readonly string[];
  readonly document_prefix: string;
  readonly query_prefix: string;
  readonly distance_metric: 'cosine';
  readonly effective_context_window: number | null;
  readonly truncate_policy: string;
}

/**
 * An embedding provider serves one profile (CONTRACT.md §14.1): a status check (runtime provenance or a
 * governed AdapterError), document embedding in batches and query embedding, unit-length vectors of the
 * profile's output dimension. Never called inside a storage transaction.
 */
export interface EmbeddingProvider {
  readonly profile: EmbeddingProfile;
  /** The model digest of the last good status check, or null before one succeeded. */
  readonly lastObservedDigest: string | null;
  statusCheck(): Promise<RuntimeProvenance>;
  embedDocuments(texts: readonly string[]): Promise<Float32Array[]>;
  embedQuery(text: string): Promise<Float32Array>;
}
