import t, { type Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AdapterError } from '../../src/core/adapter-error.js';
import { EMBEDDING_PROFILES, type EmbeddingProfile } from '../../src/embedding/embedding-profiles.js';
import { OllamaProvider } from '../../src/embedding/ollama-provider.js';
import {
  FakeOllama, fakeDigest, fakeVector, modelInfoFor, refusedUrl, type Endpoint, type FakeOllamaState,
} from '../helpers/fake-ollama.js';
import { FACTLANE_BIN, launchSandbox } from '../helpers/mcp.js';
import { diskState, rawRecord, type Json } from '../helpers/writes.js';

// The Ollama provider (CONTRACT.md §14.1, §14.2, §14.4) against a loopback server speaking Ollama's API,
// and the built launcher with an Ollama profile (§14.5 binding at creation, §14.6 states, §15
// provider_status, §16.2 startup).

const NOMIC = EMBEDDING_PROFILES['nomic-768']!;
const OLLAMA_PROFILES = ['nomic-768', 'nomic-512', 'nomic-256', 'minilm-384',
  'embeddinggemma-300m-768'].map((id) => EMBEDDING_PROFILES[id]!);

/** A fake Ollama for `profile`, closed at teardown. */
async function fakeFor(t: Test, profile: EmbeddingProfile = NOMIC,
  patch: Partial<FakeOllamaState> = {}): Promise<FakeOllama> {
  const fake = await FakeOllama.start(profile, patch);
  t.teardown(() => fake.close());
  return fake;
}

/** Asserts that `run` rejects with the governed `code`; returns the error. */
async function failsWith(t: Test, run: () => Promise<unknown>, code: string,
  name: string): Promise<AdapterError | undefined> {
  const error = await run().then(() => undefined, (e: unknown) => e);
  if (!(error instanceof AdapterError)) {
    t.fail(`${name}: expected AdapterError ${code}, got ${error === undefined ? 'success' : String(error)}`);
    return undefined;
  }
  t.equal(error.code, code, `${name}: ${code} (${error.message})`);
  return error;
}

const embedBodies = (fake: FakeOllama) => fake.received('/api/embed').map((r) => r.body as Json);

t.test('a good status check yields the provenance fields of §14.4, for every Ollama profile', async (t) => {
  for (const profile of OLLAMA_PROFILES) {
    const fake = await fakeFor(t, profile);
    const provider = new OllamaProvider(profile, `${fake.url}/`);
    const provenance = await provider.statusCheck();
    t.strictSame(provenance, {
      local_only: true, provider_kind: 'OLLAMA_LOCAL', model: profile.model,
      digest: fakeDigest(`fake-${profile.model}`), ollama_version: '0.23.0',
      semantic_family: profile.semanticFamily, size_bytes: 274302450, native_dimension: profile.sourceDimension,
      output_dimension: profile.outputDimension,
      capabilities: ['embedding'], document_prefix: profile.documentPrefix, query_prefix: profile.queryPrefix,
      distance_metric: 'cosine',
      effective_context_window: profile.minimumContextWindow, truncate_policy: 'FAIL_CLOSED_PROVIDER_REJECTION',
    }, `${profile.profileId}: provenance`);
    t.strictSame(fake.received().map((r) => [r.method, r.path]), [['GET', '/api/version'], ['GET', '/api/tags'],
      ['POST', '/api/show']], `${profile.profileId}: the three status requests`);
    t.strictSame(fake.received('/api/show')[0]!.body, { model: profile.model },
      `${profile.profileId}: /api/show names the model`);
  }
});

t.test('embedding requests: model, prefixed input (prefix exactly once), truncate false, dimensions; ' +
  'vectors checked and returned', async (t) => {
  for (const profile of OLLAMA_PROFILES) {
    const fake = await fakeFor(t, profile);
    const provider = new OllamaProvider(profile, fake.url);
    const docs = ['The build uses Node 20', 'يستخدم البناء نود ٢٠'];
    const vectors = await provider.embedDocuments(docs);
    const query = await provider.embedQuery('which node version');
    t.strictSame(embedBodies(fake), [
      { model: profile.model, input: docs.map((d) => profile.documentPrefix + d), truncate: false,
        dimensions: profile.outputDimension },
      { model: profile.model, input: [`${profile.queryPrefix}which node version`], truncate: false,
        dimensions: profile.outputDimension },
    ], `${profile.profileId}: request bodies`);
    t.equal(vectors.length, 2);
    for (const v of [...vectors, query]) t.ok(v instanceof Float32Array && v.length === profile.outputDimension,
      `${profile.profileId}: Float32Array of ${profile.outputDimension}`);
    t.strictSame(vectors[1], Float32Array.from(fakeVector(profile.documentPrefix + docs[1], profile.outputDimension)),
      `${profile.profileId}: the answered vector, in input order`);
    t.strictSame(query,
      Float32Array.from(fakeVector(`${profile.queryPrefix}which node version`, profile.outputDimension)));
  }
  // A text that already starts with the prefix still gets it once more: the provider never inspects or strips it.
  const fake = await fakeFor(t);
  await new OllamaProvider(NOMIC, fake.url).embedDocuments(['search_document: literal']);
  t.strictSame(embedBodies(fake)[0]!.input, ['search_document: search_document: literal'],
    'the prefix is applied exactly once, unconditionally');
});

/** [name, state patch, expected code, effective context window when the check passes]. */
type Row = [string, Partial<FakeOllamaState>, string | null, number?];
const info = (extra: Record<string, unknown>, drop: string[] = []) => {
  const base: Record<string, unknown> = { ...modelInfoFor('nomic-bert', 768, 2048), ...extra };
  for (const key of drop) delete base[key];
  return base;
};

const STATUS_ROWS: Row[] = [
  // GET /api/version: semver (SCHEMA_MISMATCH), ≥ 0.22.1 with its pre-releases lower (EMBEDDING_UNAVAILABLE).
  ['version "latest"', { version: 'latest' }, 'SCHEMA_MISMATCH'],
  ['version "0.22" (two parts)', { version: '0.22' }, 'SCHEMA_MISMATCH'],
  ['version "0.22.1.4" (four parts)', { version: '0.22.1.4' }, 'SCHEMA_MISMATCH'],
  ['version missing', { version: undefined }, 'SCHEMA_MISMATCH'],
  ['version a number', { version: 22 }, 'SCHEMA_MISMATCH'],
  ['version 0.22.0', { version: '0.22.0' }, 'EMBEDDING_UNAVAILABLE'],
  ['version 0.9.6', { version: '0.9.6' }, 'EMBEDDING_UNAVAILABLE'],
  ['version 0.22.1-rc1 (pre-release of the floor)', { version: '0.22.1-rc1' }, 'EMBEDDING_UNAVAILABLE'],
  ['version 0.22.1', { version: '0.22.1' }, null, 2048],
  ['version 0.22.2-rc0 (pre-release above the floor)', { version: '0.22.2-rc0' }, null, 2048],
  ['version 0.22.1+build.7', { version: '0.22.1+build.7' }, null, 2048],
  ['version 1.0.0', { version: '1.0.0' }, null, 2048],
  // GET /api/tags: a models list (SCHEMA_MISMATCH); the named entry (EMBEDDING_UNAVAILABLE);
  // digest and family (SCHEMA_MISMATCH).
  ['models missing', { models: undefined }, 'SCHEMA_MISMATCH'],
  ['models an object', { models: { 'nomic-embed-text:latest': {} } }, 'SCHEMA_MISMATCH'],
  ['models empty', { models: [] }, 'EMBEDDING_UNAVAILABLE'],
  ['model not pulled (another tag)', { modelName: 'nomic-embed-text:v1.5' }, 'EMBEDDING_UNAVAILABLE'],
  ['model not pulled (name without tag)', { modelName: 'nomic-embed-text' }, 'EMBEDDING_UNAVAILABLE'],
  ['digest upper-case', { digest: fakeDigest('x').toUpperCase() }, 'SCHEMA_MISMATCH'],
  ['digest with sha256: prefix', { digest: `sha256:${fakeDigest('x')}` }, 'SCHEMA_MISMATCH'],
  ['digest 63 hex', { digest: fakeDigest('x').slice(1) }, 'SCHEMA_MISMATCH'],
  ['digest 65 hex', { digest: `${fakeDigest('x')}0` }, 'SCHEMA_MISMATCH'],
  ['digest missing', { digest: undefined }, 'SCHEMA_MISMATCH'],
  ['digest a number', { digest: 12 }, 'SCHEMA_MISMATCH'],
  ['family bert', { family: 'bert' }, 'SCHEMA_MISMATCH'],
  ['family missing', { family: undefined }, 'SCHEMA_MISMATCH'],
  // POST /api/show: embedding length (SCHEMA_MISMATCH), capability (EMBEDDING_UNAVAILABLE),
  // context window (SCHEMA_MISMATCH).
  ['embedding_length 512', { modelInfo: info({ 'nomic-bert.embedding_length': 512 }) }, 'SCHEMA_MISMATCH'],
  ['embedding_length a string', { modelInfo: info({ 'nomic-bert.embedding_length': '768' }) }, 'SCHEMA_MISMATCH'],
  ['embedding_length missing', { modelInfo: info({}, ['nomic-bert.embedding_length']) }, 'SCHEMA_MISMATCH'],
  ['embedding_length keys disagree', { modelInfo: info({ 'clip.embedding_length': 512 }) }, 'SCHEMA_MISMATCH'],
  ['embedding_length keys agree', { modelInfo: info({ 'clip.embedding_length': 768 }) }, null, 2048],
  ['model_info missing', { modelInfo: undefined as unknown as Record<string, unknown> }, 'SCHEMA_MISMATCH'],
  ['capabilities without embedding', { capabilities: ['completion'] }, 'EMBEDDING_UNAVAILABLE'],
  ['capabilities empty', { capabilities: [] }, 'EMBEDDING_UNAVAILABLE'],
  ['capabilities missing', { capabilities: undefined }, 'EMBEDDING_UNAVAILABLE'],
  ['capabilities with more', { capabilities: ['completion', 'embedding'] }, null, 2048],
  ['context 2047 (below the minimum)', { modelInfo: info({ 'nomic-bert.context_length': 2047 }) }, 'SCHEMA_MISMATCH'],
  ['context 512', { modelInfo: info({ 'nomic-bert.context_length': 512 }) }, 'SCHEMA_MISMATCH'],
  ['context 2048 (the minimum)', { modelInfo: info({ 'nomic-bert.context_length': 2048 }) }, null, 2048],
  ['no context key at all', { modelInfo: info({}, ['nomic-bert.context_length']) }, 'SCHEMA_MISMATCH'],
  ['family context key wins over another .context_length',
    { modelInfo: info({ 'nomic-bert.context_length': 8192, 'clip.context_length': 77 }) }, null, 8192],
  ['family context key too small although another is large',
    { modelInfo: info({ 'nomic-bert.context_length': 1024, 'clip.context_length': 8192 }) }, 'SCHEMA_MISMATCH'],
  ['else the single .context_length value',
    { modelInfo: info({ 'bert.context_length': 4096 }, ['nomic-bert.context_length']) }, null, 4096],
  ['else the single .max_position_embeddings value',
    { modelInfo: info({ 'nomic-bert.max_position_embeddings': 8192 }, ['nomic-bert.context_length']) }, null, 8192],
  ['max_position_embeddings too small', { modelInfo: info({ 'nomic-bert.max_position_embeddings': 512 },
    ['nomic-bert.context_length']) }, 'SCHEMA_MISMATCH'],
];

t.test('each status-check row fails closed with its contract code', async (t) => {
  const fake = await fakeFor(t);
  const provider = new OllamaProvider(NOMIC, fake.url);
  for (const [name, patch, code, context] of STATUS_ROWS) {
    fake.reset();
    fake.set(patch);
    if (code === null) {
      const provenance = await provider.statusCheck().catch((e: unknown) => e);
      t.match(provenance, { model: NOMIC.model, effective_context_window: context }, `${name}: passes`);
    } else {
      await failsWith(t, () => provider.statusCheck(), code, name);
    }
  }
});

t.test('an error member, a non-JSON body and a refused connection, on every status endpoint', async (t) => {
  const fake = await fakeFor(t);
  const provider = new OllamaProvider(NOMIC, fake.url);
  for (const endpoint of ['/api/version', '/api/tags', '/api/show'] as Endpoint[]) {
    fake.reset();
    fake.set({ errorMember: { [endpoint]: 'something went wrong' } });
    const refusal = await failsWith(t, () => provider.statusCheck(), 'EMBEDDING_UNAVAILABLE',
      `${endpoint}: error member`);
    t.equal(refusal?.message, `Ollama refused ${endpoint} (HTTP 500)`, `${endpoint}: a fixed sentence`);
    for (const raw of ['<html><body>502 Bad Gateway</body></html>', '', '{"version":', 'ok']) {
      fake.reset();
      fake.set({ rawBody: { [endpoint]: raw } });
      const error = await failsWith(t, () => provider.statusCheck(), 'SCHEMA_MISMATCH',
        `${endpoint}: non-JSON body ${JSON.stringify(raw)}`);
      t.match(error?.message, `answered ${endpoint} with HTTP 200 and something that is not JSON`);
    }
    fake.reset();
    fake.set({ rawBody: { [endpoint]: '[1,2,3]' } });
    await failsWith(t, () => provider.statusCheck(), 'SCHEMA_MISMATCH', `${endpoint}: JSON that is not an object`);
  }
  const refused = new OllamaProvider(NOMIC, await refusedUrl());
  await failsWith(t, () => refused.statusCheck(), 'EMBEDDING_UNAVAILABLE', 'connection refused');
  fake.reset();
  await fake.close();
  await failsWith(t, () => provider.statusCheck(), 'EMBEDDING_UNAVAILABLE', 'the server stopped after a good check');
  await failsWith(t, () => provider.embedQuery('anything'), 'EMBEDDING_UNAVAILABLE',
    'embed against the stopped server');
});

t.test('an error member is told as a fixed sentence: what a user can act on is recognised, Ollama\'s words never '
  + 'go on; a wrong address names its HTTP status', async (t) => {
  const fake = await fakeFor(t);
  const provider = new OllamaProvider(NOMIC, fake.url);
  const model = NOMIC.model;
  const path = `/usr/share/ollama/.ollama/models/blobs/sha256-${'a'.repeat(64)}`;
  const rows: [string, unknown, string][] = [
    ['not pulled', `model "${model}" not found, try pulling it first`,
      `Ollama has no model ${model}; run: ollama pull ${model}`],
    ['not loaded', `llama runner process has terminated: error loading model: ${path}`,
      `Ollama could not load ${model} (its own log says why: often memory, or a damaged download that ollama pull `
      + `${model} repairs)`],
    ...['llama-server process has terminated: exit status 2', 'llama-server reported out-of-memory during startup: x',
      'model runner has unexpectedly stopped, this may be due to resource limitations',
      'llama-server process no longer running: -1'].map((words): [string, unknown, string] => [
      `not loaded (${words.slice(0, 24)})`, words,
      `Ollama could not load ${model} (its own log says why: often memory, or a damaged download that ollama pull `
        + `${model} repairs)`]),
    ['too long', 'the input length exceeds the context length', `Ollama refused an input as longer than the context `
      + `of ${model}`],
    ['quoting its input', 'cannot embed "search_document: the deploy key lives in the vault"',
      'Ollama refused /api/embed (HTTP 500)'],
    ['control characters', '\u0001'.repeat(400), 'Ollama refused /api/embed (HTTP 500)'],
    ['an object', { message: `unable to load model: ${path}` }, 'Ollama refused /api/embed (HTTP 500)'],
  ];
  for (const [name, member, message] of rows) {
    fake.reset();
    fake.set({ errorMember: { '/api/embed': member } });
    const error = await failsWith(t, () => provider.embedQuery('a query'), 'EMBEDDING_UNAVAILABLE', name);
    t.equal(error?.message, message, `${name}: ${message}`);
  }
  // A member nested past any stack's depth, answered with 200: still a governed refusal, not an internal error.
  fake.reset();
  fake.set({ rawBody: { '/api/embed': `{"error":${'['.repeat(100_000)}${']'.repeat(100_000)}}` } });
  const nested = await failsWith(t, () => provider.embedQuery('a query'), 'EMBEDDING_UNAVAILABLE', 'deeply nested');
  t.equal(nested?.message, 'Ollama refused /api/embed (HTTP 200)');
  fake.reset();
  const wrongPath = new OllamaProvider(NOMIC, `${fake.url}/v1`);
  const notFound = await failsWith(t, () => wrongPath.statusCheck(), 'SCHEMA_MISMATCH', 'an address with a path');
  t.match(notFound?.message, 'answered /api/version with HTTP 404 and something that is not JSON; is --ollama-url');
});

t.test('a connection dropped in the middle of the body is EMBEDDING_UNAVAILABLE, not a body that is not JSON',
  async (t) => {
  // 200, a Content-Length, half a JSON body, then the socket dropped: a runner that crashed while answering.
  const cutting = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': '5000' });
      res.write('{"model":"nomic-embed-text:latest","embeddings":[[0.1,');
      setTimeout(() => req.socket.destroy(), 20);
    });
  });
  await new Promise<void>((resolve) => cutting.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => {
    cutting.closeAllConnections();
    cutting.close(() => resolve());
  }));
  const provider = new OllamaProvider(NOMIC, `http://127.0.0.1:${(cutting.address() as AddressInfo).port}`);
  await failsWith(t, () => provider.embedDocuments(['The build uses esbuild']), 'EMBEDDING_UNAVAILABLE', 'embed');
  await failsWith(t, () => provider.embedQuery('esbuild'), 'EMBEDDING_UNAVAILABLE', 'query');
  await failsWith(t, () => provider.statusCheck(), 'EMBEDDING_UNAVAILABLE', 'status check');
});

t.test('a body that stalls after the headers times out: EMBEDDING_UNAVAILABLE at the request timeout', async (t) => {
  // Headers and half a body, then nothing: an Ollama runner that hangs mid-answer. With fetch's `redirect: 'error'`,
  // a garbage collection in Node 20 dropped the timeout, and the call hung until the socket closed.
  const stalling = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': '5000' });
      res.write('{"model":"nomic-embed-text:latest","embeddings":[[0.1,');
    });
  });
  await new Promise<void>((resolve) => stalling.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => {
    stalling.closeAllConnections();
    stalling.close(() => resolve());
  }));
  const provider = new OllamaProvider(NOMIC, `http://127.0.0.1:${(stalling.address() as AddressInfo).port}`, 2_000);
  const hung = new Promise<string>((resolve) => { setTimeout(() => resolve('hung'), 15_000).unref(); });
  // What a server's own work does meanwhile: collect garbage (the hang needed a collection before the timeout).
  setFlagsFromString('--expose-gc');
  const collect = runInNewContext('gc') as () => void;
  const collecting = setInterval(collect, 100);
  const call = provider.embedQuery('esbuild').then(() => 'resolved', (e: unknown) => e);
  const outcome = await Promise.race([call, hung]);
  clearInterval(collecting);
  t.ok(outcome instanceof AdapterError, `a governed error, not ${String(outcome)}`);
  t.match(outcome, { code: 'EMBEDDING_UNAVAILABLE', message: /did not answer \/api\/embed within 2 s/ });
});

t.test('embed response checks: count and dimension SCHEMA_MISMATCH, non-finite or zero EMBEDDING_UNAVAILABLE, ' +
  'norm SCHEMA_MISMATCH', async (t) => {
  const fake = await fakeFor(t);
  const provider = new OllamaProvider(NOMIC, fake.url);
  const rows: [string, Partial<FakeOllamaState>, string | null][] = [
    ['one vector too many', { embedCountDelta: 1 }, 'SCHEMA_MISMATCH'],
    ['one vector too few', { embedCountDelta: -1 }, 'SCHEMA_MISMATCH'],
    ['dimension 767', { embedDimension: 767 }, 'SCHEMA_MISMATCH'],
    ['dimension 769', { embedDimension: 769 }, 'SCHEMA_MISMATCH'],
    ['dimension 384', { embedDimension: 384 }, 'SCHEMA_MISMATCH'],
    ['an infinite component', { embedInfinite: true }, 'EMBEDDING_UNAVAILABLE'],
    ['a zero vector', { embedZero: true }, 'EMBEDDING_UNAVAILABLE'],
    ['norm 1.01', { embedScale: 1.01 }, 'SCHEMA_MISMATCH'],
    ['norm 0.5', { embedScale: 0.5 }, 'SCHEMA_MISMATCH'],
    ['norm 0.998', { embedScale: 0.998 }, 'SCHEMA_MISMATCH'],
    ['norm 1.0009 (within 0.001)', { embedScale: 1.0009 }, null],
    ['norm 0.9991 (within 0.001)', { embedScale: 0.9991 }, null],
    ['an error member', { errorMember: { '/api/embed': 'model runner has unexpectedly stopped' } },
      'EMBEDDING_UNAVAILABLE'],
    ['a non-JSON body', { rawBody: { '/api/embed': 'Internal Server Error' } }, 'SCHEMA_MISMATCH'],
    ['embeddings missing', { rawBody: { '/api/embed': '{"model":"nomic-embed-text:latest"}' } }, 'SCHEMA_MISMATCH'],
    ['a vector holding a string',
      { rawBody: { '/api/embed': `{"embeddings":[[${new Array(767).fill('0').join(',')},"1"]]}` } }, 'SCHEMA_MISMATCH'],
  ];
  for (const [name, patch, code] of rows) {
    for (const [call, run] of [['documents', () => provider.embedDocuments(['first fact', 'second fact'])],
      ['query', () => provider.embedQuery('a query')]] as const) {
      fake.reset();
      fake.set(patch);
      if (code === null) {
        const vectors = await run();
        t.ok(vectors, `${name} (${call}): accepted`);
      } else {
        await failsWith(t, run, code, `${name} (${call})`);
      }
    }
  }
  // nomic-256 asks for 256 dimensions; a server that ignores `dimensions` answers 768: SCHEMA_MISMATCH.
  const small = await fakeFor(t, EMBEDDING_PROFILES['nomic-256']!, { embedDimension: 768 });
  await failsWith(t, () => new OllamaProvider(EMBEDDING_PROFILES['nomic-256']!, small.url).embedQuery('q'),
    'SCHEMA_MISMATCH', 'nomic-256 answered with 768 numbers');
  t.equal((embedBodies(small)[0] as Json).dimensions, 256, 'nomic-256 asked for 256 dimensions');
});

t.test('redirects are not followed: a loopback answer cannot send provider requests to another host', async (t) => {
  // The target listens on 127.0.0.1 but is addressed as `localhost`, a host --ollama-url refuses (§14.4);
  // it stands for any non-loopback address a redirect could name.
  const target = await fakeFor(t);
  const redirector = createServer((req, res) => {
    res.writeHead(307, { location: `http://localhost:${target.port}${req.url ?? '/'}` });
    res.end();
  });
  await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() =>
    new Promise<void>((resolve) => { redirector.closeAllConnections(); redirector.close(() => resolve()); }));
  const provider = new OllamaProvider(NOMIC, `http://127.0.0.1:${(redirector.address() as AddressInfo).port}`);
  for (const [name, run] of [['status check', () => provider.statusCheck()],
    ['embedQuery', () => provider.embedQuery('the deploy key rotates monthly')]] as const) {
    const error = await failsWith(t, run, 'EMBEDDING_UNAVAILABLE', `${name}: a redirect fails closed`);
    t.match(error?.message, /answered \/api\/\w+ with a redirect, which is not followed/);
  }
  t.strictSame(target.received().map((r) => r.path), [],
    'the redirect target received no request (no fact or query text followed the redirect)');
});

t.test('a provider rejection is never retried with truncation', async (t) => {
  const fake = await fakeFor(t, NOMIC, { embedMaxInputChars: 100 });
  const provider = new OllamaProvider(NOMIC, fake.url);
  const long = `${'the deployment pipeline runs '.repeat(20)}`.trim();
  await failsWith(t, () => provider.embedDocuments([long]), 'EMBEDDING_UNAVAILABLE',
    'Ollama refuses an input over its context');
  t.strictSame(embedBodies(fake), [{ model: NOMIC.model, input: [`search_document: ${long}`], truncate: false,
    dimensions: 768 }], 'exactly one request, truncate false, the whole input');
});

t.test('input limits: empty → INVALID_ENVELOPE, over 2000 (document) or 512 (query) UTF-8 bytes → ' +
  'INVALID_ENVELOPE, no request sent', async (t) => {
  const fake = await fakeFor(t);
  const provider = new OllamaProvider(NOMIC, fake.url);
  const refusedWithoutRequest = async (run: () => Promise<unknown>, name: string) => {
    fake.clearLog();
    await failsWith(t, run, 'INVALID_ENVELOPE', name);
    t.strictSame(fake.received(), [], `${name}: no request sent`);
  };
  await refusedWithoutRequest(() => provider.embedQuery(''), 'empty query');
  await refusedWithoutRequest(() => provider.embedDocuments(['']), 'empty document');
  await refusedWithoutRequest(() => provider.embedDocuments(['a fact', '']), 'one empty document in a batch');
  await refusedWithoutRequest(() => provider.embedDocuments(['a'.repeat(2001)]), 'document of 2001 ASCII bytes');
  await refusedWithoutRequest(() => provider.embedDocuments(['ب'.repeat(1001)]),
    'document of 1001 Arabic letters (2002 bytes)');
  await refusedWithoutRequest(() => provider.embedDocuments(['short', `${'€'.repeat(667)}`]),
    'a 2001-byte document in a batch');
  await refusedWithoutRequest(() => provider.embedQuery('q'.repeat(513)), 'query of 513 bytes');
  await refusedWithoutRequest(() => provider.embedQuery('ب'.repeat(257)), 'query of 257 Arabic letters (514 bytes)');

  fake.clearLog();
  const exact = ['a'.repeat(2000), 'ب'.repeat(1000), 'q'.repeat(513)];
  t.equal((await provider.embedDocuments(exact)).length, 3,
    'documents of exactly 2000 bytes (and a 513-byte document) pass');
  t.equal((await provider.embedQuery('q'.repeat(512))).length, 768, 'a query of exactly 512 bytes passes');
  t.equal((await provider.embedQuery('ب'.repeat(256))).length, 768, 'a query of 256 Arabic letters (512 bytes) passes');
  t.strictSame(embedBodies(fake).map((b) => (b.input as string[]).map((s) => Buffer.byteLength(s))),
    [[2017, 2017, 530], [526], [526]], 'the limits apply to the text, the prefix comes on top');
});

t.test('two concurrent embedQuery calls overlap their HTTP requests; the event loop keeps turning', async (t) => {
  const DELAY = 300;
  const fake = await fakeFor(t, NOMIC, { delayMs: { '/api/embed': DELAY } });
  const provider = new OllamaProvider(NOMIC, fake.url);
  let ticks = 0;
  const timer = setInterval(() => { ticks += 1; }, 10);
  const started = performance.now();
  const [a, b] = await Promise.all([provider.embedQuery('first query'), provider.embedQuery('second query')]);
  const elapsed = performance.now() - started;
  clearInterval(timer);
  t.equal(a.length + b.length, 1536);
  t.equal(fake.received('/api/embed').length, 2);
  t.equal(fake.maxConcurrent('/api/embed'), 2, 'both requests were open at the server at the same time');
  t.ok(ticks >= 5, `timers kept firing while the provider waited (${ticks} ticks of 10 ms)`);
  t.comment(
    `two concurrent calls against a ${DELAY} ms server took ${Math.round(elapsed)} ms (sequential would be ` +
      `≥ ${2 * DELAY} ms)`);
});

// ---------------------------------------------------------------------------------------------------
// End to end: the built launcher with --profile nomic-768 and --ollama-url of the fake.

type Exit = { code: number | null; signal: NodeJS.Signals | null };
const SCOPE = { scope: 'PROJECT', project_id: 'ollama-e2e' };
const SOURCE = { source_class: 'repo_file', source_ref: 'package.json', source_hash: fakeDigest('src'),
  review_ref: 'review/1', extraction_method: 'manual_read' };
const FACT = 'The release pipeline publishes container images to the internal registry every night';
const QUERY = 'where are container images published';

/** Starts the built launcher (nomic-768 at `url`, owner-current) on `dbPath` through the SDK stdio client. */
async function startLauncher(t: Test, dbPath: string, url: string, env: Record<string, string> = {}) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [FACTLANE_BIN, '--db', dbPath, '--host-id', 'e2e', '--profile', 'nomic-768', '--ollama-url', url,
      '--write-profile', 'owner-current'],
    env, stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr!.on('data', (chunk) => { stderr += chunk; });
  const client = new Client({ name: 'factlane-ollama-e2e', version: '0.0.0' });
  await client.connect(transport);
  const child = (transport as unknown as { _process: ChildProcess })._process;
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  t.teardown(() => client.close());
  const call = async (name: string, request: Json): Promise<Json> => {
    const result = (await client.callTool({ name, arguments: { request } })) as CallToolResult;
    if (result.isError) throw new Error(`${name} answered isError: ${JSON.stringify(result.content)}`);
    return result.structuredContent as Json;
  };
  const stop = async () => {
    await client.close();
    return exited;
  };
  return { client, call, stop, stderr: () => stderr };
}

type Launcher = Awaited<ReturnType<typeof startLauncher>>;
const nowText = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const status = (l: Launcher) => l.call('memory_status', SCOPE);
const search = (l: Launcher, kind: string, query = QUERY) =>
  l.call('memory_search', { ...SCOPE, query, intent_class: 'CURRENT_PROJECT_STATE', retrieval_mode_kind: kind });
const store = (l: Launcher, fact: string) => {
  const now = nowText();
  return l.call('memory_store', {
    ...SCOPE, fact, memory_type: 'PROJECT_LEARNED_FACT', source_provenance: SOURCE, freshness_policy: { kind: 'never' },
    idempotency_key: `e2e-${fact.length}-${Math.random().toString(36).slice(2)}`,
    requested_lifecycle_state: 'VALIDATED_CURRENT', source_timestamp: now, last_verified_at: now,
  });
};
const reverify = (l: Launcher, record: Json) => l.call('memory_update', {
  ...SCOPE, memory_id: record.memory_id, expected_revision: record.revision, mode: 'REVERIFY',
  idempotency_key: `e2e-reverify-${Math.random().toString(36).slice(2)}`,
  verification: { source_timestamp: nowText() },
});

/** Asserts the reads that must keep working whatever the provider does: memory_get, EXACT, KEYWORD. */
async function readsWork(t: Test, l: Launcher, record: Json, label: string) {
  const got = await l.call('memory_get', { ...SCOPE, memory_id: record.memory_id });
  t.match(got, { status: 'OK', results: [{ memory_id: record.memory_id, fact: FACT }] }, `${label}: memory_get works`);
  t.match(await search(l, 'EXACT', FACT), { status: 'OK', results: [{ fact: FACT }] }, `${label}: EXACT search works`);
  t.match(await search(l, 'KEYWORD', 'container registry'), { status: 'OK', results: [{ fact: FACT }] },
    `${label}: KEYWORD search works`);
}

/** Asserts that the semantic operations are BLOCKED with PROFILE_MISMATCH and nothing was written. */
async function semanticBlocked(t: Test, l: Launcher, dbPath: string, record: Json, label: string) {
  const before = diskState(dbPath);
  for (const kind of ['SEMANTIC', 'HYBRID']) {
    t.match(await search(l, kind), { status: 'BLOCKED', error_code: 'PROFILE_MISMATCH', results: [] },
      `${label}: ${kind} search → PROFILE_MISMATCH`);
  }
  t.match(await store(l, 'The nightly job also prunes images older than ninety days'),
    { status: 'BLOCKED', error_code: 'PROFILE_MISMATCH' }, `${label}: store → PROFILE_MISMATCH`);
  t.match(await reverify(l, record), { status: 'BLOCKED', error_code: 'PROFILE_MISMATCH' },
    `${label}: update → PROFILE_MISMATCH`);
  t.strictSame(diskState(dbPath), before, `${label}: nothing written`);
}

t.test('end to end: bound to nomic-768 at creation; outage after startup; runtime drift after restart', async (t) => {
  const fake = await fakeFor(t);
  const dbPath = join(t.testdir(), 'nomic.sqlite3');
  // Proxy variables must not divert loopback calls (§14.4): point them at a refused port.
  const proxy = await refusedUrl();
  const proxyEnv = { HTTP_PROXY: proxy, http_proxy: proxy, HTTPS_PROXY: proxy, https_proxy: proxy, ALL_PROXY: proxy,
    NO_PROXY: '', no_proxy: '' };
  const digest = fakeDigest('fake-nomic-embed-text:latest');

  let l = await startLauncher(t, dbPath, fake.url, proxyEnv);
  t.ok(existsSync(dbPath), 'the new database was created');
  const bound = await status(l);
  t.match(bound, {
    status: 'OK',
    provider_status: { available: true, local_only: true, provider_kind: 'OLLAMA_LOCAL',
      model: 'nomic-embed-text:latest', digest, ollama_version: '0.23.0', size_bytes: 274302450,
      effective_context_window: 2048, truncate_policy: 'FAIL_CLOSED_PROVIDER_REJECTION' },
    backend_status: {
      profile: { profile_id: 'nomic-768', model_digest: digest, output_dimension: 768 },
      embedding_compatibility: {
        state: 'COMPATIBLE', reason: 'BOUND_RUNTIME_MATCH', store_key: 'nomic-768', vector_dimension: 768,
        runtime_fingerprint_matches_bound: true,
        binding: { metadata_revision: 2, profile_id: 'nomic-768', vector_dimension: 768,
          compatibility_proof: { basis: 'FRESH_EMPTY_RUNTIME_BINDING' },
          runtime_provenance: { digest, ollama_version: '0.23.0' } },
      },
    },
  }, 'a new database is bound to nomic-768 with the fake runtime');

  fake.clearLog();
  const stored = await store(l, FACT);
  t.match(stored, { status: 'OK', results: [{ fact: FACT, lifecycle_state: 'VALIDATED_CURRENT' }] }, 'store works');
  const record = stored.results[0] as Json;
  t.strictSame(embedBodies(fake), [{ model: 'nomic-embed-text:latest', input: [`search_document: ${FACT}`],
    truncate: false, dimensions: 768 }], 'store: one embed request, document prefix once');
  t.equal(fake.received('/api/version').length, 2, 'store: a status check before and after the embedding');
  t.match(rawRecord(dbPath, record.record_id), { embedding_profile_id: 'nomic-768', embedding_model_digest: digest,
    embedding_output_dimension: 768 }, 'the record keeps the observed digest');

  fake.clearLog();
  const semantic = await search(l, 'SEMANTIC');
  t.match(semantic, { status: 'OK', results: [{ fact: FACT, retrieval_rank: 1 }], audit: { local_embedding_calls: 1 } },
    'SEMANTIC search works');
  t.strictSame(embedBodies(fake), [{ model: 'nomic-embed-text:latest', input: [`search_query: ${QUERY}`],
    truncate: false, dimensions: 768 }], 'search: query prefix once');
  t.match(await search(l, 'HYBRID'), { status: 'OK', results: [{ fact: FACT }] }, 'HYBRID search works');

  // Two searches at once: their provider calls overlap in the one server process.
  fake.clearLog();
  fake.set({ delayMs: { '/api/embed': 300 } });
  const started = performance.now();
  const both = await Promise.all([search(l, 'SEMANTIC'), search(l, 'SEMANTIC', 'nightly container images')]);
  const elapsed = performance.now() - started;
  fake.set({ delayMs: {} });
  t.strictSame(both.map((e) => e.status), ['OK', 'OK']);
  t.equal(fake.maxConcurrent('/api/embed'), 2,
    'two concurrent searches had their embed requests open at the same time');
  t.comment(`two concurrent SEMANTIC searches against a 300 ms embed took ${Math.round(elapsed)} ms`);

  // Outage after startup.
  await fake.close();
  const down = await status(l);
  t.match(down, {
    status: 'OK',
    provider_status: { available: false, error_code: 'EMBEDDING_UNAVAILABLE', message: String },
    backend_status: { embedding_compatibility: { state: 'UNPROVEN', reason: 'PROVIDER_UNAVAILABLE',
      store_key: 'nomic-768', runtime_fingerprint_matches_bound: false } },
  }, 'outage: memory_status keeps working and reports the provider unavailable');
  t.strictSame(Object.keys(down.provider_status).sort(), ['available', 'error_code', 'message'],
    'outage: provider_status is exactly {available, error_code, message}');
  t.equal(down.backend_status.profile.model_digest, fakeDigest(`fake-${EMBEDDING_PROFILES['nomic-768']!.model}`),
    'outage: the last observed digest, not the reference digest');
  await readsWork(t, l, record, 'outage');
  await semanticBlocked(t, l, dbPath, record, 'outage');

  // The provider comes back on the same address: COMPATIBLE again, without a restart.
  await fake.listen();
  t.match(await status(l), { provider_status: { available: true },
    backend_status: { embedding_compatibility: { state: 'COMPATIBLE', reason: 'BOUND_RUNTIME_MATCH' } } },
    'provider back: COMPATIBLE');
  t.match(await search(l, 'SEMANTIC'), { status: 'OK', results: [{ fact: FACT }] }, 'provider back: SEMANTIC works');
  t.same(await l.stop(), { code: 0, signal: null });

  // Another model digest (a re-pulled model) seen after a restart.
  const newDigest = fakeDigest('re-pulled');
  fake.set({ digest: newDigest });
  l = await startLauncher(t, dbPath, fake.url);
  t.match(await status(l), {
    status: 'OK',
    provider_status: { available: true, digest: newDigest },
    backend_status: { profile: { model_digest: newDigest }, embedding_compatibility: { state: 'UNPROVEN',
      reason: 'RUNTIME_PROVENANCE_CHANGED', runtime_fingerprint_matches_bound: false,
      binding: { runtime_provenance: { digest } } } },
  }, 'digest changed: UNPROVEN RUNTIME_PROVENANCE_CHANGED');
  await readsWork(t, l, record, 'digest changed');
  fake.clearLog();
  await semanticBlocked(t, l, dbPath, record, 'digest changed');
  t.strictSame(fake.received('/api/embed'), [], 'digest changed: no embedding was requested');

  // A newer Ollama version is a runtime change too; the bound runtime coming back clears it.
  fake.set({ digest, version: '0.24.0' });
  t.match(await status(l), { backend_status: { embedding_compatibility: { state: 'UNPROVEN',
    reason: 'RUNTIME_PROVENANCE_CHANGED' } } }, 'Ollama version changed: UNPROVEN');
  fake.set({ version: '0.23.0' });
  t.match(await status(l), { backend_status: { embedding_compatibility: { state: 'COMPATIBLE',
    reason: 'BOUND_RUNTIME_MATCH' } } }, 'the bound runtime is back: COMPATIBLE');
  t.match(await search(l, 'SEMANTIC'), { status: 'OK', results: [{ fact: FACT }] });
  t.same(await l.stop(), { code: 0, signal: null });
  t.equal(l.stderr(), '', 'nothing on stderr');
});

/** Runs the launcher on a new database to its exit, without blocking this process (the fake answers from it). */
function runLauncher(args: string[], cwd: string,
  env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [FACTLANE_BIN, ...args],
      { cwd, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => { stdout += c; });
    child.stderr.on('data', (c) => { stderr += c; });
    child.stdin.end();
    child.once('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

t.test('a new database is not created when the Ollama status check fails: exit 1, one line, no file', async (t) => {
  const fake = await fakeFor(t);
  const box = launchSandbox(t.testdir());
  const cases: [string, () => Promise<string>, string][] = [
    ['Ollama down', () => refusedUrl(), 'EMBEDDING_UNAVAILABLE'],
    ['model not pulled', async () => { fake.reset(); fake.set({ models: [] }); return fake.url; },
      'EMBEDDING_UNAVAILABLE'],
    ['Ollama too old', async () => { fake.reset(); fake.set({ version: '0.22.1-rc1' }); return fake.url; },
      'EMBEDDING_UNAVAILABLE'],
    ['wrong family', async () => { fake.reset(); fake.set({ family: 'bert' }); return fake.url; }, 'SCHEMA_MISMATCH'],
    ['wrong embedding length', async () => { fake.reset(); fake.set(
      { modelInfo: info({ 'nomic-bert.embedding_length': 1024 }) }); return fake.url; }, 'SCHEMA_MISMATCH'],
  ];
  const before = box.tree();
  for (const [label, url, code] of cases) {
    const dbPath = join(box.root, 'new', `${label.replace(/ /g, '-')}.sqlite3`);
    const run = await runLauncher(
      ['--db', dbPath, '--host-id', 'h', '--profile', 'nomic-768', '--ollama-url', await url()], box.cwd, box.env);
    t.equal(run.status, 1, `${label}: exit 1`);
    t.match(run.stderr, new RegExp(`^factlane: ${code}: \\S[^\\n]*\\n$`), `${label}: exactly one line naming ${code}`);
    t.equal(run.stdout, '', `${label}: no MCP output`);
    t.notOk(existsSync(dbPath), `${label}: no database file`);
  }
  t.same(box.tree(), before, 'nothing created anywhere in the sandbox');
});
