import { AdapterError } from '../core/adapter-error.js';
import type { EmbeddingProfile } from './embedding-profiles.js';
import type { EmbeddingProvider, RuntimeProvenance } from './embedding-provider.js';

/**
 * The provider of a profile this build cannot reach (the Ollama profiles, until the Ollama provider
 * lands): every call fails with EMBEDDING_UNAVAILABLE, exactly as an unreachable Ollama would. So a new
 * database cannot be bound (startup fails, nothing created) while an existing one still starts with
 * compatibility UNPROVEN / PROVIDER_UNAVAILABLE (CONTRACT.md §14.6, §16.2).
 */
export class UnavailableProvider implements EmbeddingProvider {
  readonly profile: EmbeddingProfile;

  constructor(profile: EmbeddingProfile) {
    this.profile = profile;
  }

  #refuse(): AdapterError {
    return new AdapterError('EMBEDDING_UNAVAILABLE', `the ${this.profile.profileId} profile needs the Ollama provider, which is not in this build; use --profile local-hash-384`);
  }

  async statusCheck(): Promise<RuntimeProvenance> {
    throw this.#refuse();
  }

  async embedDocuments(): Promise<Float32Array[]> {
    throw this.#refuse();
  }

  async embedQuery(): Promise<Float32Array> {
    throw this.#refuse();
  }
}
