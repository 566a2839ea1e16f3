import t, { type Test } from 'tap';
import { join } from 'node:path';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { insertRecordUnchecked } from '../../src/storage/record-repository.js';
import { localHashEmbedding } from '../../src/embedding/local-hash-provider.js';
import { call, connectClient, sortedJson, textOf, UUID_V4 } from '../helpers/mcp.js';
import { candidateRow } from '../helpers/storage.js';
import { currentRequest, reverifyRequest, storeRequest } from '../helpers/writes.js';

const GLOBAL = { scope: 'GLOBAL_USER' };
const SEARCH = { scope: 'GLOBAL_USER', query: 'which node version', intent_class: 'USER_PREFERENCE_OR_DURABLE_FACT' };
const SECRET = `sk-${'Qzxv'.repeat(6)}`;

/** An isError result: one text item, no structuredContent; returns its text. */
function schemaError(t: Test, result: CallToolResult, pointer: string): string {
  t.equal(result.isError, true, `isError for ${pointer}`);
  t.equal(result.structuredContent, undefined, 'no envelope');
  const text = textOf(result);
  t.match(text, /^memory_[a-z]+: invalid arguments: /, 'names the tool');
  t.ok(text.includes(pointer), `names ${pointer}: ${text}`);
  return text;
}

/** A governed result: not isError, canonical JSON text equal to structuredContent; returns the envelope. */
function envelopeOf(t: Test, result: CallToolResult): Record<string, any> {
  t.notOk(result.isError, 'not isError');
  const text = textOf(result);
  const parsed = JSON.parse(text);
  t.same(result.structuredContent, parsed, 'structuredContent equals the text');
  t.equal(text, sortedJson(parsed), 'text is canonical JSON');
  return parsed;
}

function blocked(t: Test, result: CallToolResult, code: string): Record<string, any> {
  const envelope = envelopeOf(t, result);
  t.same(Object.keys(envelope).sort(), ['audit', 'degradation', 'error_code', 'message', 'results', 'status']);
  t.match(envelope, { status: 'BLOCKED', error_code: code, results: [], degradation: null });
  return envelope;
}

t.test('schema violations are isError and name the pointer, never the value', async (t) => {
  const { client } = await connectClient(t, join(t.testdir(), 'x.sqlite3'));
  schemaError(t, await call(client, 'memory_status', {}), '/request');
  schemaError(t, await call(client, 'memory_status', { request: 5 }), '/request');
  schemaError(t, await call(client, 'memory_status', { request: ['GLOBAL_USER'] }), '/request');
  schemaError(t, await call(client, 'memory_status', { request: null }), '/request');
  const notJson = schemaError(t, await call(client, 'memory_status', { request: '{scope: QQ_NOT_JSON' }), '/request');
  t.notMatch(notJson, 'QQ_NOT_JSON');
  schemaError(t, await call(client, 'memory_status', { request: '"GLOBAL_USER"' }), '/request');
  schemaError(t, await call(client, 'memory_status', { request: '[1]' }), '/request');
  schemaError(t, await call(client, 'memory_status', { request: JSON.stringify(JSON.stringify(GLOBAL)) }), '/request');
  schemaError(t, await call(client, 'memory_status', { request: '{"scope":5}' }), '/request/scope');
  schemaError(t, await call(client, 'memory_status', { request: {} }), '/request/scope');
  t.match(
    schemaError(t, await call(client, 'memory_status', { request: { request_id: 'r1' } }), '/request/scope'),
    /memory_status.*is required/,
  );
  t.notMatch(
    schemaError(t, await call(client, 'memory_status', { request: { scope: 987654321 } }), '/request/scope'),
    '987654321',
  );
  t.notMatch(schemaError(
    t, await call(client, 'memory_status', { request: { ...GLOBAL, request_id: 7777777 } }), '/request/request_id',
  ), '7777777');
  t.notMatch(schemaError(
    t, await call(client, 'memory_status', { request: { ...GLOBAL, project_id: ['QQ_ARRAY'] } }), '/request/project_id',
  ), 'QQ_ARRAY');
  const missing =
    schemaError(t, await call(client, 'memory_search', { request: { scope: 'GLOBAL_USER' } }), '/request/query');
  t.ok(missing.includes('/request/intent_class'), 'every missing key is named');
  for (const topK of [9, 0, 987654]) {
    const text =
      schemaError(t, await call(client, 'memory_search', { request: { ...SEARCH, top_k: topK } }), '/request/top_k');
    t.notMatch(text, 'which node version', 'the query is not echoed');
    if (topK === 987654) t.notMatch(text, '987654');
  }
  schemaError(t, await call(client, 'memory_search', { request: { ...SEARCH, top_k: true } }), '/request/top_k');
  schemaError(
    t, await call(client, 'memory_search', { request: { ...SEARCH, max_bytes: 8001 } }), '/request/max_bytes',
  );
  schemaError(
    t, await call(client, 'memory_search', { request: { ...SEARCH, max_tokens: 1601 } }), '/request/max_tokens',
  );
  schemaError(
    t, await call(client, 'memory_search', { request: { ...SEARCH, max_memories: 2.5 } }), '/request/max_memories',
  );
  const update = {
    scope: 'GLOBAL_USER', memory_id: '3f2c9a4e-5b6d-4c7e-8f90-1a2b3c4d5e6f', mode: 'REVERIFY', idempotency_key: 'k1',
  };
  schemaError(
    t, await call(client, 'memory_update', { request: { ...update, expected_revision: 0 } }),
    '/request/expected_revision',
  );
  schemaError(
    t, await call(client, 'memory_update', { request: { ...update, expected_revision: 1, verification: 'QQ_STR' } }),
    '/request/verification',
  );
  schemaError(
    t, await call(client, 'memory_store', { request: { scope: 'GLOBAL_USER', tags: Array(13).fill('t') } }),
    '/request/tags',
  );
});

t.test('a JSON string request is parsed once; extra arguments are ignored; null identity is absent', async (t) => {
  const { client } = await connectClient(t, join(t.testdir(), 'x.sqlite3'));
  const fromString = envelopeOf(
    t, await call(client, 'memory_status', { request: JSON.stringify({ ...GLOBAL, request_id: 'as-string' }) }),
  );
  t.match(fromString, { status: 'OK', audit: { request_id: 'as-string', operation: 'memory_status' } });
  const extra = envelopeOf(t, await call(client, 'memory_status', { request: GLOBAL, other: 'ignored' }));
  t.equal(extra.status, 'OK');
  const nulls =
    envelopeOf(t, await call(client, 'memory_status', { request: { ...GLOBAL, project_id: null, request_id: null } }));
  t.equal(nulls.status, 'OK', 'null project_id counts as absent in GLOBAL_USER');
  t.match(nulls.audit.request_id, UUID_V4, 'null request_id gets a minted id');
});

t.test('governed failures are BLOCKED envelopes, not isError', async (t) => {
  const { client, hostBinding } = await connectClient(t, join(t.testdir(), 'x.sqlite3'));
  const badEnum = blocked(
    t, await call(client, 'memory_status', { request: { scope: 'NOPE', request_id: 'req-1' } }), 'INVALID_ENUM',
  );
  t.same(
    badEnum.audit, { host_binding: hostBinding, raw_content_logged: false, request_id: 'req-1', retryable: false },
    'exact audit, no context_binding',
  );
  t.match(badEnum.message, /GLOBAL_USER/, 'names the choices');
  t.notMatch(JSON.stringify(badEnum), 'NOPE', 'not the submitted value');

  const bound = await connectClient(t, join(t.testdir(), 'bound.sqlite3'), { context: { projectId: 'p1' } });
  for (const scope of ['toString', '__proto__', 'constructor']) {
    const inherited = blocked(t, await call(bound.client, 'memory_status', { request: { scope } }), 'INVALID_ENUM');
    t.strictSame(inherited.audit.context_binding, bound.contextBinding, `${scope}: bound launcher, still governed`);
  }
  t.strictSame(bound.logger.lines, [], 'no fault logged');

  const unknownKey = blocked(
    t, await call(client, 'memory_status', { request: { ...GLOBAL, colour_zq: 'QQ_VALUE_ZQ' } }), 'INVALID_ENVELOPE',
  );
  t.match(unknownKey.message, 'colour_zq', 'names the unknown key');
  t.notMatch(JSON.stringify(unknownKey), 'QQ_VALUE_ZQ', 'never its value');
  t.match(unknownKey.audit.request_id, UUID_V4, 'minted id echoed when none was sent');

  const secretKey =
    blocked(t, await call(client, 'memory_status', { request: { ...GLOBAL, [SECRET]: 1 } }), 'INVALID_ENVELOPE');
  t.match(secretKey.message, '[redacted]', 'a secret-like unknown key is redacted');
  t.notMatch(JSON.stringify(secretKey), SECRET);
  blocked(
    t, await call(client, 'memory_status', { request: { ...GLOBAL, host_id: 'test-host' } }),
    'HOST_IDENTITY_CLAIM_DENIED',
  );
  blocked(
    t, await call(client, 'memory_status', { request: { ...GLOBAL, authority_role: 'OWNER_CURRENT' } }),
    'WRITE_AUTHORIZATION_DENIED',
  );
  blocked(t, await call(client, 'memory_status', { request: { scope: '' } }), 'UNKNOWN_SCOPE');
  blocked(t, await call(client, 'memory_status', { request: { scope: 'PROJECT' } }), 'UNKNOWN_PROJECT_ID');
  blocked(t, await call(client, 'memory_status', { request: { ...GLOBAL, project_id: 'p1' } }), 'CROSS_SCOPE_DENIED');
});

t.test('request_id: valid echoed, invalid or secret-like nulled and nowhere in the response', async (t) => {
  const { client } = await connectClient(t, join(t.testdir(), 'x.sqlite3'));
  const ok = envelopeOf(t, await call(client, 'memory_status', { request: { ...GLOBAL, request_id: 'req-ok.1:a/b' } }));
  t.equal(ok.audit.request_id, 'req-ok.1:a/b');
  for (const [requestId, code] of [['has space', 'INVALID_ENVELOPE'], [SECRET, 'RAW_OR_SENSITIVE_CONTENT']] as const) {
    const result = await call(client, 'memory_status', { request: { ...GLOBAL, request_id: requestId } });
    const envelope = blocked(t, result, code);
    t.equal(envelope.audit.request_id, null, `${code}: request_id null`);
    t.notOk(JSON.stringify(result).includes(requestId), `${code}: rejected value appears nowhere`);
  }
  const leaky = await call(client, 'memory_status', { request: { scope: 'NOPE', request_id: SECRET } });
  t.equal(blocked(t, leaky, 'INVALID_ENUM').audit.request_id, null, 'a secret request_id is nulled on any BLOCKED');
  t.notOk(JSON.stringify(leaky).includes(SECRET));
});

t.test('a bound context is stamped into BLOCKED and OK envelopes', async (t) => {
  const { client, contextBinding } =
    await connectClient(t, join(t.testdir(), 'x.sqlite3'), { context: { projectId: 'p1' } });
  const envelope = blocked(
    t, await call(client, 'memory_status', { request: { scope: 'PROJECT', project_id: 'p2' } }),
    'BOUND_CONTEXT_IDENTITY_MISMATCH',
  );
  t.same(Object.keys(envelope.audit).sort(), [
    'context_binding', 'host_binding', 'raw_content_logged', 'request_id', 'retryable',
  ]);
  t.same(envelope.audit.context_binding, {
    binding_source: 'explicit-launcher', project_id: 'p1', project_id_source: 'explicit-launcher',
  });
  t.same(envelope.audit.context_binding, contextBinding);
  const ok = envelopeOf(t, await call(client, 'memory_status', { request: { scope: 'PROJECT' } }));
  t.match(
    ok, { status: 'OK', scope: { scope: 'PROJECT', project_id: 'p1' }, audit: { context_binding: contextBinding } },
  );
});

t.test('a secret-like value millions of characters long is RAW_OR_SENSITIVE_CONTENT, not an internal error',
  async (t) => {
    // An open `{20,}` over such a run overflowed the regular expression engine's stack (about 5.6M characters here).
    const { client } = await connectClient(t, join(t.testdir(), 'x.sqlite3'));
    const run = 'a'.repeat(8_000_000);
    for (const prefix of ['sk-', 'ghp_', 'Bearer ', 'AIza', 'token=', 'password: ']) {
      const request = { ...GLOBAL, request_id: prefix + run };
      const envelope = blocked(t, await call(client, 'memory_status', { request }), 'RAW_OR_SENSITIVE_CONTENT');
      t.equal(envelope.audit.request_id, null, `${prefix}…: refused and not echoed`);
    }
    const error = await client.callTool({ name: `sk-${run}`, arguments: { request: GLOBAL } }).then(
      () => null, (e: unknown) => e,
    );
    t.equal((error as McpError).message, 'MCP error -32602: unknown tool: [redacted]', 'a long secret-like tool name');
  });

t.test('an unknown tool is a JSON-RPC -32602 error', async (t) => {
  const { client } = await connectClient(t, join(t.testdir(), 'x.sqlite3'));
  const error = await client.callTool({ name: 'memory_delete', arguments: { request: GLOBAL } }).then(
    () => null, (e: unknown) => e,
  );
  t.type(error, McpError);
  t.equal((error as McpError).code, -32602);
  t.equal((error as McpError).message, 'MCP error -32602: unknown tool: memory_delete', 'the code said once');
});

t.test('tools/call without a string name is -32602; arguments that are no object are a call without '
  + 'request', async (t) => {
  const { client } = await connectClient(t, join(t.testdir(), 'x.sqlite3'));
  const raw =
    (params: Record<string, unknown>) => client.request({ method: 'tools/call', params }, CallToolResultSchema)
    .then((result) => ({ result, error: null }), (error: unknown) => ({ result: null, error: error as McpError }));
  for (const params of [{ arguments: { request: GLOBAL } }, { name: 5 }, { name: null }, { name: ['memory_status'] }]) {
    const { error } = await raw(params);
    t.equal(error?.code, -32602, `-32602 for ${JSON.stringify(params)}`);
    t.equal(error?.message, 'MCP error -32602: tools/call needs params.name, a string', 'a short fixed message');
  }
  for (const args of ['x', null, [], 5, [GLOBAL], GLOBAL, {}]) {
    const { result } = await raw({ name: 'memory_status', arguments: args });
    t.equal(schemaError(t, result as CallToolResult, '/request'),
      'memory_status: invalid arguments: /request is required: put the tool\'s fields inside arguments.request '
        + '({"request": {...}})',
      `isError for arguments ${JSON.stringify(args)}: the fields go inside request`);
  }
  for (const request of [null, 5, [GLOBAL], '"x"']) {
    const { result } = await raw({ name: 'memory_status', arguments: { request } });
    t.equal(
      schemaError(t, result as CallToolResult, '/request'),
      'memory_status: invalid arguments: /request must be an object',
      `isError for request ${JSON.stringify(request)}`);
  }
  const unprintable = await raw({ name: 'memory_x\nforged log line\u202e', arguments: { request: GLOBAL } });
  t.equal(unprintable.error?.message, 'MCP error -32602: unknown tool: memory_x\\u000aforged log line\\u202e',
    'unprintable characters of a tool name are escaped');
  const split = await raw({ name: `${'m'.repeat(63)}😀`, arguments: { request: GLOBAL } });
  t.equal(split.error?.message, `MCP error -32602: unknown tool: ${'m'.repeat(63)}`,
    'a name cut at 64 units never ends in half a surrogate pair');
  const secret = await raw({ name: SECRET, arguments: { request: GLOBAL } });
  t.equal(
    secret.error?.message, 'MCP error -32602: unknown tool: [redacted]', 'a secret-like tool name is not repeated',
  );
});

t.test('an unexpected fault is a generic isError; details go to the log only, without request content', async (t) => {
  const fault = new TypeError('QQ_FAULT_DETAIL at /srv/secret/path.sqlite3');
  const { client, logger } =
    await connectClient(t, join(t.testdir(), 'x.sqlite3'), { gateway: { handle: async () => { throw fault; } } });
  const result = await call(client, 'memory_search', { request: { ...SEARCH, request_id: 'QQ-REQUEST-MARK' } });
  t.equal(result.isError, true);
  t.equal(result.structuredContent, undefined);
  const text = textOf(result);
  t.match(text, /^memory_search: internal error/);
  for (const leak of ['QQ_FAULT_DETAIL', '/srv/secret', 'TypeError', 'at ', 'QQ-REQUEST-MARK', '.ts', '.js'])
    t.notOk(text.includes(leak), `no ${leak} in the result`);
  const logged = logger.lines.join('\n');
  t.match(logged, 'QQ_FAULT_DETAIL', 'the fault is logged');
  t.match(logged, /\n\s+at /, 'with its stack');
  t.notMatch(logged, 'QQ-REQUEST-MARK', 'without request content');
});

t.test('a stored column that is not JSON: its SyntaxError is logged without the text it quotes', async (t) => {
  let fault: unknown;
  try {
    JSON.parse('["QQS", oops]');
  } catch (error) {
    fault = error;
  }
  const { client, logger } =
    await connectClient(t, join(t.testdir(), 'x.sqlite3'), { gateway: { handle: async () => { throw fault; } } });
  const result =
    await call(client, 'memory_get', { request: { ...GLOBAL, memory_id: '00000000-0000-4000-8000-000000000000' } });
  t.equal(result.isError, true);
  const logged = logger.lines.join('\n');
  t.match(logged, /unexpected fault in memory_get: SyntaxError \(its message is withheld/, 'the fault is logged');
  t.match(logged, /\n\s+at /, 'with its stack');
  t.notMatch(logged, 'QQS', 'without the stored text');
});

t.test('memory_status OK reports the exact-scope counts and the launcher', async (t) => {
  const { client, engine, hostBinding } =
    await connectClient(t, join(t.testdir(), 'x.sqlite3'), { writeProfile: 'owner-current' });
  const rows = [
    candidateRow(), candidateRow(),
    candidateRow({ lifecycle_state: 'VALIDATED_CURRENT', authority_role: 'OWNER_CURRENT' }),
    candidateRow({ agent_id: 'a1' }),
    candidateRow(
      { scope: 'PROJECT', project_id: 'p1', lifecycle_state: 'VALIDATED_CURRENT', authority_role: 'PROJECT_CURRENT' },
    ),
  ];
  for (const row of rows) {
    const record = { ...row, embedding_profile_id: 'local-hash-384', embedding_output_dimension: 384 };
    await engine.write(
      (trx) => insertRecordUnchecked(trx, record, { searchText: row.fact, embedding: localHashEmbedding(row.fact) }),
    );
  }
  const counts = async (request: Record<string, unknown>) =>
    envelopeOf(t, await call(client, 'memory_status', { request })).backend_status.counts;
  const global = envelopeOf(t, await call(client, 'memory_status', { request: { ...GLOBAL, request_id: 'status-1' } }));
  t.match(global, {
    status: 'OK', memory_needed: false, results: [], contradictions: [], degradation: null,
    scope: { scope: 'GLOBAL_USER', project_id: null, worktree_id: null, workflow_id: null, agent_id: null },
    budget: { requested_top_k: null, returned: 0, serialized_bytes: 0, serialized_tokens: 0, truncated: false },
    audit: {
      request_id: 'status-1', operation: 'memory_status', public_contract_revision: 2, backend: 'sqlite_vec',
      external_llm_calls: 0, raw_content_logged: false, host_binding: hostBinding,
    },
    launcher: { write_profile: 'owner-current', max_lifecycle: 'VALIDATED_CURRENT' },
    provider_status: { available: true },
    token_measurement: { available: true, encoding: 'o200k_base' },
  });
  t.notOk('context_binding' in global.audit, 'no context_binding without a bound context');
  t.same(global.backend_status.counts, {
    CANDIDATE: 2, VALIDATED_CURRENT: 1, SUPERSEDED: 0, STALE: 0, QUARANTINED: 0, HISTORICAL: 0,
  });
  t.equal(global.backend_status.embedding_compatibility.state, 'COMPATIBLE');
  t.match(await counts({ ...GLOBAL, agent_id: 'a1' }), { CANDIDATE: 1, VALIDATED_CURRENT: 0 }, 'agent_id is part of '
    + 'the exact scope');
  t.match(await counts({ scope: 'PROJECT', project_id: 'p1' }), { CANDIDATE: 0, VALIDATED_CURRENT: 1 });
  t.match(await counts({ scope: 'PROJECT', project_id: 'p2' }), { CANDIDATE: 0, VALIDATED_CURRENT: 0 });
  t.notMatch(JSON.stringify(global), 'x.sqlite3', 'no database path reported');
});

t.test('a number JSON cannot hold as a double is a schema violation, not an internal error', async (t) => {
  const { client } = await connectClient(t, join(t.testdir(), 'x.sqlite3'));
  // Sent as a JSON string request, parsed once by the server: 1e400 becomes Infinity, which Ajv took for an integer.
  const update =
    `{"scope":"GLOBAL_USER","memory_id":"${'1'.repeat(8)}-1111-4111-8111-${'1'.repeat(12)}","mode":"REVERIFY",`
    + '"expected_revision":1e400,"idempotency_key":"k1","verification":{}}';
  const text = schemaError(t, await call(client, 'memory_update', { request: update }), '/request/expected_revision');
  t.match(text, /must be integer/);
  schemaError(
    t, await call(client, 'memory_search', { request: `{"scope":"GLOBAL_USER","query":"x","max_memories":-1e999}` }),
    '/request/max_memories',
  );
});

t.test('a number JSON cannot hold as a double, nested in a payload, is governed (CONTRACT.md §3.5, difference 21)',
  async (t) => {
  const { client } = await connectClient(t, join(t.testdir(), 'x.sqlite3'), { writeProfile: 'owner-current' });
  const store = (fields: string) => call(client, 'memory_store', {
    request: JSON.stringify(storeRequest()).replace(/}$/, `,${fields}}`),
  });
  const ttl = blocked(t, await store('"freshness_policy":{"kind":"ttl","ttl_seconds":1e400}'), 'INVALID_ENVELOPE');
  t.match(ttl.message, /freshness_policy\.ttl_seconds must be an integer/);
  const unknown = blocked(t, await store('"freshness_policy":{"kind":"never","junk":-1e999}'), 'INVALID_ENVELOPE');
  t.match(unknown.message, /junk/);
  const current = envelopeOf(t, await call(client, 'memory_store', { request: currentRequest() })).results[0];
  const update = { ...reverifyRequest(current), verification: { confidence: 0.5 } };
  const confidence = blocked(t, await call(client, 'memory_update', {
    request: JSON.stringify(update).replace('"confidence":0.5', '"confidence":1e400'),
  }), 'INVALID_ENVELOPE');
  t.match(confidence.message, /confidence/);
  t.equal(envelopeOf(t, await call(client, 'memory_get', { request: { ...GLOBAL, memory_id: current.memory_id } }))
    .results[0].revision, current.revision, 'nothing stored was altered');
});

t.test('a request nested thousands of levels deep is BLOCKED by the first §11 step that fails; the server goes on',
  async (t) => {
    const { client } = await connectClient(t, join(t.testdir(), 'x.sqlite3'), { context: { projectId: 'p1' } });
    const nest = (bottom: unknown) => {
      let deep = bottom;
      for (let level = 0; level < 4000; level += 1) deep = [deep];
      return deep;
    };
    const expectBlocked = async (name: string, request: object, code: string, message: RegExp) => {
      const envelope = blocked(t, await call(client, name, { request }), code);
      t.match(envelope.message, message, `${name}: ${String(message)}`);
    };
    // Step 5, bound context, and step 7, unknown keys, see only the top level: they decide before any walk.
    await expectBlocked('memory_status', { scope: 'PROJECT', project_id: 'p2', junk: nest(1) },
      'BOUND_CONTEXT_IDENTITY_MISMATCH', /project_id differs from the launcher-bound value/);
    const unknown = /does not accept: junk/;
    await expectBlocked('memory_status', { scope: 'GLOBAL_USER', junk: nest(1) }, 'INVALID_ENVELOPE', unknown);
    await expectBlocked('memory_search', { ...SEARCH, junk: nest(1) }, 'INVALID_ENVELOPE', unknown);
    // Step 8, a trust claim at any depth, is walked without recursion.
    const provenance = storeRequest().source_provenance;
    const claim = storeRequest({ source_provenance: { ...provenance, note: nest({ trusted_actor: true }) } });
    await expectBlocked('memory_store', claim, 'WRITE_AUTHORIZATION_DENIED', /cannot claim trusted or derived/);
    // Steps 10-14 do not walk values either: scope, then authorization (this client is read-only) decide.
    const deep = storeRequest({ source_provenance: { ...provenance, source_ref: nest('bottom') } });
    await expectBlocked('memory_store', { ...deep, scope: 'NOPE' }, 'INVALID_ENUM', /scope/);
    await expectBlocked('memory_store', deep, 'WRITE_AUTHORIZATION_DENIED', /does not allow memory_store/);
    // Past every step of §11, a value too deep to walk is refused before a handler walks it.
    const owner = (await connectClient(t, join(t.testdir(), 'y.sqlite3'), { writeProfile: 'owner-current' })).client;
    const refused = blocked(t, await call(owner, 'memory_store', { request: deep }), 'INVALID_ENVELOPE');
    t.match(refused.message, /nests deeper than 32 levels/, 'the depth guard, last');
    t.notOk((await call(client, 'memory_status', { request: GLOBAL })).isError, 'the next call is served');
  });
