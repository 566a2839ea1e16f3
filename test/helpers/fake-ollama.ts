// A loopback HTTP server that speaks the part of Ollama's API FactLane uses (CONTRACT.md §14.4), started
// by a test on 127.0.0.1 with an ephemeral port: GET /api/version, GET /api/tags, POST /api/show and
// POST /api/embed. Every answer is well-formed for the profile it serves until a test breaks it with a
// knob (`set`), a raw body or an `error` member per endpoint, a delay, a hook on each request, or by
// closing the port. It records every request (method, path, parsed body) and how many requests per path
// were open at once, so a test can prove truncate:false, dimensions, the prefixes applied once, that no
// request was sent, or that two provider calls overlapped.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import type { EmbeddingProfile } from '../../src/embedding/embedding-profiles.js';
import { localHashEmbedding } from '../../src/embedding/local-hash-provider.js';

export type Endpoint = '/api/version' | '/api/tags' | '/api/show' | '/api/embed';
export const ENDPOINTS: readonly Endpoint[] = ['/api/version', '/api/tags', '/api/show', '/api/embed'];

/** 64 lower-case hex digits derived from `seed`: a well-formed model digest. */
export function fakeDigest(seed: string): string {
  return createHash('sha256').update(seed).digest('hex');
}

/** What the fake answers; every field can be changed by `set` between or during requests. */
export interface FakeOllamaState {
  /** The `version` member of /api/version (any JSON value; undefined leaves the member out). */
  version: unknown;
  /** The `name` of the served model in /api/tags. */
  modelName: string;
  /** The `digest` of the served model in /api/tags (any JSON value; undefined leaves it out). */
  digest: unknown;
  /** The `size` of the served model in /api/tags. */
  size: unknown;
  /** `details.family` of the served model (undefined leaves it out). */
  family: unknown;
  /** Replaces the whole `models` member of /api/tags when set (e.g. `{}`, `[]`, or undefined to drop it). */
  models?: unknown;
  /** Other models listed before the served one. */
  otherModels: Record<string, unknown>[];
  /** The `model_info` of /api/show. */
  modelInfo: Record<string, unknown>;
  /** The `capabilities` of /api/show (undefined leaves it out). */
  capabilities: unknown;
  /** Raw non-JSON (or any) text answered instead of the JSON body, per endpoint. */
  rawBody: Partial<Record<Endpoint, string>>;
  /** An `error` member answered (HTTP 500) instead of the body, per endpoint. */
  errorMember: Partial<Record<Endpoint, unknown>>;
  /** Milliseconds to wait before answering, per endpoint. */
  delayMs: Partial<Record<Endpoint, number>>;
  /** Embed answers: vectors added to (or removed from) the one-per-input answer. */
  embedCountDelta: number;
  /** Embed answers: the vector length; null = the requested `dimensions`. */
  embedDimension: number | null;
  /** Embed answers: replaces the first component of the first vector with +Infinity (JSON `1e999`). */
  embedInfinite: boolean;
  /** Embed answers: all-zero vectors. */
  embedZero: boolean;
  /** Embed answers: every vector multiplied by this factor (1 = unit length). */
  embedScale: number;
  /**
   * Embed answers: an `error` member when any input is longer than this many characters (Ollama with truncate:false).
   */
  embedMaxInputChars: number | null;
}

/** One request the fake received. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  /** The parsed JSON body (POST), else undefined. */
  readonly body: unknown;
}

/** The `model_info` keys Ollama reports for a model of `family` (plus a few unrelated ones). */
export function modelInfoFor(family: string, embeddingLength: number, contextLength: number): Record<string, unknown> {
  return {
    'general.architecture': family, 'general.parameter_count': 136727040, 'general.file_type': 1,
    [`${family}.attention.head_count`]: 12, [`${family}.block_count`]: 12,
    [`${family}.context_length`]: contextLength, [`${family}.embedding_length`]: embeddingLength,
    [`${family}.feed_forward_length`]: 3072, 'tokenizer.ggml.model': 'bert',
  };
}

/**
 * The well-formed answers for `profile`: version 0.23.0, the model pulled with its family, dimension and minimum
 * context.
 */
export function goodState(profile: EmbeddingProfile): FakeOllamaState {
  return {
    version: '0.23.0', modelName: profile.model, digest: fakeDigest(`fake-${profile.model}`), size: 274302450,
    family: profile.semanticFamily,
    otherModels: [{
      name: 'llama3.2:latest', model: 'llama3.2:latest', digest: fakeDigest('llama'), size: 2019393189,
      details: { format: 'gguf', family: 'llama' },
    }],
    modelInfo: modelInfoFor(profile.semanticFamily, profile.sourceDimension, profile.minimumContextWindow ?? 512),
    capabilities: ['embedding'], rawBody: {}, errorMember: {}, delayMs: {},
    embedCountDelta: 0, embedDimension: null, embedInfinite: false, embedZero: false, embedScale: 1,
    embedMaxInputChars: null,
  };
}

/** A deterministic unit vector of `dimension` for `text` (local-hash features at that dimension). */
export function fakeVector(text: string, dimension: number): number[] {
  return Array.from(localHashEmbedding(text, dimension));
}

const numberText = (x: number) => (Number.isFinite(x) ? String(x) : x > 0 ? '1e999' : '-1e999');

export class FakeOllama {
  readonly profile: EmbeddingProfile;
  state: FakeOllamaState;
  readonly requests: RecordedRequest[] = [];
  /** Called when a request arrives (after it is recorded, before any delay); may change `state`. */
  onRequest: ((request: RecordedRequest) => void) | null = null;
  readonly #inFlight = new Map<string, number>();
  readonly #maxInFlight = new Map<string, number>();
  #server: Server | null = null;
  #port = 0;

  private constructor(profile: EmbeddingProfile) {
    this.profile = profile;
    this.state = goodState(profile);
  }

  /** Starts a fake serving `profile` on 127.0.0.1, ephemeral port. */
  static async start(profile: EmbeddingProfile, patch: Partial<FakeOllamaState> = {}): Promise<FakeOllama> {
    const fake = new FakeOllama(profile);
    fake.set(patch);
    await fake.listen(0);
    return fake;
  }

  /** The base URL for `--ollama-url` / OllamaProvider. */
  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  get port(): number {
    return this.#port;
  }

  /** Changes the answers (shallow merge). */
  set(patch: Partial<FakeOllamaState>): void {
    this.state = { ...this.state, ...patch };
  }

  /** Back to the well-formed answers; the request log is kept. */
  reset(): void {
    this.state = goodState(this.profile);
    this.onRequest = null;
  }

  /** Requests received on `path` (all when omitted). */
  received(path?: Endpoint): RecordedRequest[] {
    return path === undefined ? [...this.requests] : this.requests.filter((r) => r.path === path);
  }

  /** The largest number of requests on `path` that were open at the same time. */
  maxConcurrent(path: Endpoint): number {
    return this.#maxInFlight.get(path) ?? 0;
  }

  /** Forgets the request log and concurrency counts. */
  clearLog(): void {
    this.requests.length = 0;
    this.#maxInFlight.clear();
  }

  /** Listens on `port` (0 = ephemeral; the previous port to come back after `close`). */
  async listen(port: number = this.#port): Promise<void> {
    if (this.#server) throw new Error('the fake Ollama is already listening');
    const server = createServer((req, res) => void this.#handle(req, res));
    server.keepAliveTimeout = 1000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.#port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  /** Stops listening and drops every open connection: the port refuses connections until `listen` again. */
  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = null;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  get listening(): boolean {
    return this.#server !== null;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    if (text !== '') {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    const path = (req.url ?? '').split('?')[0]!;
    const request: RecordedRequest = { method: req.method ?? '', path, body };
    this.requests.push(request);
    const open = (this.#inFlight.get(path) ?? 0) + 1;
    this.#inFlight.set(path, open);
    this.#maxInFlight.set(path, Math.max(open, this.#maxInFlight.get(path) ?? 0));
    try {
      this.onRequest?.(request);
      const delay = this.state.delayMs[path as Endpoint] ?? 0;
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      const answer = this.#answer(request);
      res.writeHead(answer.status, {
        'content-type': answer.json ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8',
      });
      res.end(answer.text);
    } finally {
      this.#inFlight.set(path, (this.#inFlight.get(path) ?? 1) - 1);
    }
  }

  #answer(request: RecordedRequest): { status: number; text: string; json: boolean } {
    const s = this.state;
    const path = request.path as Endpoint;
    const json = (value: unknown, status = 200) => ({ status, text: JSON.stringify(value), json: true });
    const expected = { '/api/version': 'GET', '/api/tags': 'GET', '/api/show': 'POST', '/api/embed': 'POST' }[path];
    if (expected === undefined) return { status: 404, text: '404 page not found', json: false };
    if (request.method !== expected) return { status: 405, text: '405 method not allowed', json: false };
    if (s.rawBody[path] !== undefined) return { status: 200, text: s.rawBody[path]!, json: false };
    if (s.errorMember[path] !== undefined) return json({ error: s.errorMember[path] }, 500);
    const body = (request.body ?? {}) as Record<string, unknown>;
    switch (path) {
      case '/api/version':
        return json(s.version === undefined ? {} : { version: s.version });
      case '/api/tags': {
        if ('models' in s) return json(s.models === undefined ? {} : { models: s.models });
        const served: Record<string, unknown> = {
          name: s.modelName, model: s.modelName, modified_at: '2026-10-01T12:00:00.000000000Z', size: s.size,
          details: {
            parent_model: '', format: 'gguf', families: [s.family], parameter_size: '137M', quantization_level: 'F16',
            ...(s.family === undefined ? {} : { family: s.family })
          },
        };
        if (s.digest !== undefined) served.digest = s.digest;
        return json({ models: [...s.otherModels, served] });
      }
      case '/api/show':
        if (body.model !== s.modelName) return json({ error: `model '${String(body.model)}' not found` }, 404);
        return json({
          license: 'Apache License', modelfile: '# fake', parameters: 'num_ctx 8192', template: '{{ .Prompt }}',
          details: { format: 'gguf', family: s.family, parameter_size: '137M', quantization_level: 'F16' },
          model_info: s.modelInfo, ...(s.capabilities === undefined ? {} : { capabilities: s.capabilities }),
          modified_at: '2026-10-01T12:00:00.000000000Z',
        });
      case '/api/embed': {
        if (body.model !== s.modelName) return json({ error: `model '${String(body.model)}' not found` }, 404);
        const inputs = Array.isArray(body.input) ? (body.input as unknown[]).map(String) : [String(body.input)];
        if (s.embedMaxInputChars !== null && inputs.some((input) => input.length > s.embedMaxInputChars!)) {
          return json({ error: 'the input length exceeds the context length' }, 400);
        }
        const dimension =
          s.embedDimension ?? (typeof body.dimensions === 'number' ? body.dimensions : this.profile.sourceDimension);
        const count = Math.max(0, inputs.length + s.embedCountDelta);
        const vectors: number[][] = [];
        for (let i = 0; i < count; i += 1) {
          const base = s.embedZero ? new Array<number>(dimension).fill(0)
            : fakeVector(inputs[i % Math.max(1, inputs.length)] ?? 'extra', dimension);
          vectors.push(base.map((x) => x * s.embedScale));
        }
        if (s.embedInfinite && vectors[0]) vectors[0][0] = Number.POSITIVE_INFINITY;
        const text =
          `{"model":${JSON.stringify(s.modelName)},"embeddings":[` +
          `${vectors.map((v) => `[${v.map(numberText).join(',')}]`).join(',')}],"total_duration":1000,` +
          `"load_duration":10,"prompt_eval_count":${inputs.length}}`;
        return { status: 200, text, json: true };
      }
    }
  }
}

/** A loopback URL on which nothing listens (a port taken from the OS, then released). */
export async function refusedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
