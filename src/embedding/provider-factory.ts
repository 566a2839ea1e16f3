import { EMBEDDING_PROFILES } from './embedding-profiles.js';
import type { EmbeddingProvider } from './embedding-provider.js';
import { LocalHashProvider } from './local-hash-provider.js';
import { OllamaProvider } from './ollama-provider.js';

/**
 * The provider serving `profileId` (a key of EMBEDDING_PROFILES): the built-in local-hash-384, or the
 * Ollama provider at `ollamaUrl` for the Ollama profiles. Throws RangeError for an unknown profile id
 * (launchers validate it first).
 */
export function createProvider(profileId: string, ollamaUrl: string): EmbeddingProvider {
  const profile = EMBEDDING_PROFILES[profileId];
  if (!profile) throw new RangeError(`unknown embedding profile ${profileId}`);
  if (profile.providerKind === 'BUILTIN_LOCAL_HASH') return new LocalHashProvider();
  return new OllamaProvider(profile, ollamaUrl);
}
