import { AdapterError } from '../core/adapter-error.js';
import { isJsonObject } from '../core/canonical-json.js';
import { utf8Bytes } from '../core/text.js';
import type { EmbeddingProfile } from './embedding-profiles.js';
import type { EmbeddingProvider, RuntimeProvenance } from './embedding-provider.js';

// The Ollama provider of CONTRACT.md §14.4: loopback HTTP only, every answer checked, failing closed.
const REQUEST_TIMEOUT_MS = 120_000;
const MINIMUM_OLLAMA = [0, 22, 1] as const;
const MAX_DOCUMENT_BYTES = 2000;
const MAX_QUERY_BYTES = 512;
const NORM_TOLERANCE = 0.001;
const SEMVER = /^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/;

const unavailable = (message: string, cause?: unknown) => new AdapterError('EMBEDDING_UNAVAILABLE', message, { cause });
const drift = (message: string) => new AdapterError('SCHEMA_MISMATCH', message);
// Ollama's `error` words a user can act on, each told as a fixed sentence (refusal).
const NOT_PULLED = /not found, try pulling|model ["'][^"']*["'] not found/i;
const NOT_LOADED = new RegExp('error loading model|unable to load model|runner process has terminated|'
  + 'llama-server process|model runner has unexpectedly stopped|out-of-memory|no longer running', 'i');
const TOO_LONG = /context length|input length/i;

/** True when semver `version` is at least 0.22.1; its pre-releases are lower. */
function ollamaVersionSupported(version: string): boolean | null {
  const m = SEMVER.exec(version);
  if (!m) return null;
  const parts = [Number(m[1]), Number(m[2]), Number(m[3])];
  for (let i = 0; i < 3; i += 1) if (parts[i] !== MINIMUM_OLLAMA[i]) return parts[i]! > MINIMUM_OLLAMA[i]!;
  return m[4] === undefined;
}

/** The single value of the entries of `info` whose key ends with `suffix`, or undefined when none or several differ. */
function singleValue(info: Record<string, unknown>, suffix: string): unknown {
  const values = [...new Set(Object.entries(info).filter(([key]) => key.endsWith(suffix)).map(([, value]) => value))];
  return values.length === 1 ? values[0] : undefined;
}

/** Serves one Ollama profile at a loopback base URL (validated by the launcher). */
export class OllamaProvider implements EmbeddingProvider {
  readonly profile: EmbeddingProfile;
  readonly #baseUrl: string;
  #lastObservedDigest: string | null = null;

  readonly #timeoutMs: number;

  /** `timeoutMs` bounds each request, its body included (120 s). */
  constructor(profile: EmbeddingProfile, baseUrl: string, timeoutMs = REQUEST_TIMEOUT_MS) {
    this.profile = profile;
    this.#baseUrl = baseUrl.replace(/\/$/, '');
    this.#timeoutMs = timeoutMs;
  }

  /**
   * One JSON request. Connection failure, timeout (the body's too), a redirect or an `error` member →
   * EMBEDDING_UNAVAILABLE; non-JSON → SCHEMA_MISMATCH.
   */
  async #request(path: string, body?: unknown): Promise<Record<string, unknown>> {
    let status: number;
    let redirected: boolean;
    let text: string;
    try {
      // Node's fetch ignores proxy environment variables, as loopback calls must.
      const response = await fetch(`${this.#baseUrl}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: body === undefined ? undefined : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.#timeoutMs),
        // A redirect could send facts and queries off the loopback address: never followed, refused below. Not
        // `redirect: 'error'`: with it, a garbage collection in Node 20 drops the timeout, and a body that stalls
        // after the headers hangs the call.
        redirect: 'manual',
      });
      // The body is part of the answer: a connection dropped or timed out while it is read is a connection failure.
      status = response.status;
      redirected = status >= 300 && status < 400;
      if (redirected) await response.body?.cancel();
      text = redirected ? '' : await response.text();
    } catch (error) {
      const timedOut = error instanceof Error && error.name === 'TimeoutError';
      throw unavailable(timedOut ? `Ollama did not answer ${path} within ${this.#timeoutMs / 1000} s`
        : `Ollama did not answer ${path}; is it running on the --ollama-url address?`, error);
    }
    if (redirected) throw unavailable(`Ollama answered ${path} with a redirect, which is not followed`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw drift(`Ollama answered ${path} with HTTP ${status} and something that is not JSON; is --ollama-url `
        + 'the address of Ollama itself?');
    }
    if (isJsonObject(parsed) && parsed.error !== undefined)
      throw unavailable(this.#refusal(path, status, parsed.error));
    if (!isJsonObject(parsed)) throw drift(`Ollama answered ${path} with an unexpected shape`);
    return parsed;
  }

  /**
   * What an `error` member means, as a fixed sentence. Ollama's own words never go on (CONTRACT.md §6.3: they can
   * hold the paths of its model files and the text it was sent); the refusals a user can act on are recognised.
   */
  #refusal(path: string, status: number, error: unknown): string {
    const words = typeof error === 'string' ? error : '';
    const model = this.profile.model;
    if (NOT_PULLED.test(words)) return `Ollama has no model ${model}; run: ollama pull ${model}`;
    if (NOT_LOADED.test(words)) {
      return `Ollama could not load ${model} (its own log says why: often memory, or a damaged download that `
        + `ollama pull ${model} repairs)`;
    }
    if (TOO_LONG.test(words)) return `Ollama refused an input as longer than the context of ${model}`;
    return `Ollama refused ${path} (HTTP ${status})`;
  }

  /** The status check of CONTRACT.md §14.4: version, model presence and shape, dimensions, capability, context. */
  async statusCheck(): Promise<RuntimeProvenance> {
    const p = this.profile;
    const version = (await this.#request('/api/version')).version;
    const supported = typeof version === 'string' ? ollamaVersionSupported(version) : null;
    if (supported === null) throw drift('Ollama reported a version that is not semver');
    if (!supported) throw unavailable(`Ollama ${String(version)} is older than 0.22.1; upgrade Ollama`);
    const tags = await this.#request('/api/tags');
    if (!Array.isArray(tags.models)) throw drift('Ollama /api/tags has no models list');
    const entry = tags.models.find((model) => isJsonObject(model) && model.name === p.model) as Record<string, unknown>
      | undefined;
    if (!entry) throw unavailable(`the model ${p.model} is not pulled; run: ollama pull ${p.model}`);
    const details = isJsonObject(entry.details) ? entry.details : {};
    if (typeof entry.digest !== 'string' || !/^[0-9a-f]{64}$/.test(entry.digest))
      throw drift(`Ollama reported a malformed digest for ${p.model}`);
    if (details.family !== p.semanticFamily) throw drift(`${p.model} is not of the ${p.semanticFamily} family`);
    const show = await this.#request('/api/show', { model: p.model });
    const info = isJsonObject(show.model_info) ? show.model_info : {};
    if (singleValue(info, '.embedding_length') !== p.sourceDimension)
      throw drift(`${p.model} does not report embedding length ${p.sourceDimension}`);
    const capabilities = Array.isArray(show.capabilities)
      ? show.capabilities.filter((c): c is string => typeof c === 'string')
      : [];
    if (!capabilities.includes('embedding')) throw unavailable(`${p.model} has no embedding capability`);
    const context = info[`${p.semanticFamily}.context_length`] ?? singleValue(info, '.context_length')
      ?? singleValue(info, '.max_position_embeddings');
    if (typeof context !== 'number' || context < (p.minimumContextWindow ?? 0))
      throw drift(`${p.model} has a context window below ${p.minimumContextWindow}`);
    this.#lastObservedDigest = entry.digest;
    return {
      local_only: true, provider_kind: p.providerKind, model: p.model, digest: entry.digest,
      ollama_version: version as string,
      semantic_family: p.semanticFamily, size_bytes: typeof entry.size === 'number' ? entry.size : null,
      native_dimension: p.sourceDimension, output_dimension: p.outputDimension, capabilities,
      document_prefix: p.documentPrefix, query_prefix: p.queryPrefix, distance_metric: 'cosine',
      effective_context_window: context, truncate_policy: 'FAIL_CLOSED_PROVIDER_REJECTION',
    };
  }

  /** POST /api/embed with truncate false; every vector checked for count, dimension, finiteness and unit norm. */
  async #embed(texts: readonly string[], prefix: string, maxBytes: number): Promise<Float32Array[]> {
    for (const text of texts) {
      if (text.trim() === '') throw new AdapterError('INVALID_ENVELOPE', 'an embedding input is empty');
      if (utf8Bytes(text) > maxBytes)
        throw new AdapterError('INVALID_ENVELOPE',
          `an embedding input exceeds ${maxBytes} bytes; it is never truncated`);
    }
    const answer = await this.#request('/api/embed', {
      model: this.profile.model, input: texts.map((text) => prefix + text), truncate: false,
      dimensions: this.profile.outputDimension,
    });
    const vectors = answer.embeddings;
    if (!Array.isArray(vectors) || vectors.length !== texts.length)
      throw drift('Ollama returned a different number of embeddings than inputs');
    return vectors.map((vector) => {
      if (!Array.isArray(vector) || vector.length !== this.profile.outputDimension
        || !vector.every((x) => typeof x === 'number')) {
        throw drift(`Ollama returned an embedding that is not ${this.profile.outputDimension} numbers`);
      }
      const values = vector as number[];
      if (!values.every(Number.isFinite) || values.every((x) => x === 0))
        throw unavailable('Ollama returned a non-finite or zero embedding');
      if (Math.abs(Math.hypot(...values) - 1) > NORM_TOLERANCE)
        throw drift('Ollama returned an embedding that is not unit length');
      return Float32Array.from(values);
    });
  }

  /** The model digest of the last good status check, or null before one succeeded. */
  get lastObservedDigest(): string | null {
    return this.#lastObservedDigest;
  }

  embedDocuments(texts: readonly string[]): Promise<Float32Array[]> {
    return this.#embed(texts, this.profile.documentPrefix, MAX_DOCUMENT_BYTES);
  }

  async embedQuery(text: string): Promise<Float32Array> {
    return (await this.#embed([text], this.profile.queryPrefix, MAX_QUERY_BYTES))[0]!;
  }
}
