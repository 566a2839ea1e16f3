import t from 'tap';
import { AdapterError } from '../../src/core/adapter-error.js';
import { createContextBinding, createHostBinding, type ContextBinding } from '../../src/gateway/bindings.js';
import { MemoryGateway } from '../../src/gateway/memory-gateway.js';
import { TOOL_NAMES, type ToolName } from '../../schema/enums.js';
import { IDENTITY_CLAIM_KEYS, TRUST_CLAIM_KEYS } from '../../schema/reserved-keys.js';

// CONTRACT.md §4.5, §4.6, §6.3, §9.1, §9.2, §11 stage B, with a fake adapter that records what it receives.

type Json = Record<string, any>;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SECRET = `sk-${'a1B2c3D4e5F6g7H8i9J0k1L2'}`;
const hostBinding = createHostBinding('codex');
const fullBinding = createContextBinding({ projectId: 'p1', workflowId: 'w1', agentId: 'a1' })!;

/** A fake adapter answering an envelope built from the request (with a forged host binding), or `fail`'s error. */
function setup(contextBinding: ContextBinding | null = fullBinding, fail?: () => unknown) {
  const calls: { operation: ToolName; request: Json }[] = [];
  const adapter = {
    execute: async (operation: ToolName, request: Readonly<Record<string, unknown>>) => {
      calls.push({ operation, request: request as Json });
      if (fail) throw fail();
      return { status: 'OK', scope: { scope: request.scope }, results: [],
        audit: { request_id: request.request_id, operation, host_binding: 'forged' } };
    },
  };
  return { calls, gateway: new MemoryGateway({ adapter, hostBinding, contextBinding, transport: 'stdio' }) };
}

const failure = async (promise: Promise<unknown>): Promise<AdapterError> => {
  const error = await promise.then(() => null, (e: unknown) => e);
  if (!(error instanceof AdapterError)) throw new Error(`expected an AdapterError, got ${String(error)}`);
  return error;
};

t.test('identity claims are HOST_IDENTITY_CLAIM_DENIED, even with the real values, before anything else', async (t) => {
  const real: Json = {
    bound_agent_id: 'a1', bound_host_id: 'codex', bound_project_id: 'p1', bound_workflow_id: 'w1',
    context_binding: { ...fullBinding },
    context_binding_source: 'explicit-launcher', gateway_instance_id: hostBinding.gateway_instance_id, host_id: 'codex',
    host_identity: { ...hostBinding },
    runtime_agent_id: 'a1', session_context: null, transport_identity: 'stdio', transport_kind: 'stdio',
  };
  t.strictSame(Object.keys(real).sort(), [...IDENTITY_CLAIM_KEYS].sort(), 'every §9.1 key');
  const { calls, gateway } = setup();
  for (const operation of TOOL_NAMES) {
    for (const key of IDENTITY_CLAIM_KEYS) {
      await t.rejects(gateway.handle(operation, { scope: 'GLOBAL_USER', [key]: real[key] }),
        { code: 'HOST_IDENTITY_CLAIM_DENIED', message: new RegExp(key) }, `${operation} ${key}`);
    }
  }
  await t.rejects(gateway.handle('memory_store', { scope: 'PROJECT', project_id: 'other', host_id: 'codex',
    authority_role: 'x', provenance: {} }), { code: 'HOST_IDENTITY_CLAIM_DENIED' }, 'step 3 first');
  t.equal(calls.length, 0, 'the adapter is never reached');
});

t.test('top-level trust claims are WRITE_AUTHORIZATION_DENIED for every operation', async (t) => {
  const { calls, gateway } = setup();
  for (const operation of TOOL_NAMES) {
    for (const key of TRUST_CLAIM_KEYS) {
      await t.rejects(gateway.handle(operation, { scope: 'GLOBAL_USER', [key]: null }),
        { code: 'WRITE_AUTHORIZATION_DENIED', message: 'the request cannot claim trusted or derived authority' },
        `${operation} ${key}`);
    }
  }
  await t.rejects(gateway.handle('memory_search', { scope: 'PROJECT', project_id: 'other', owner_authorized: true }),
    { code: 'WRITE_AUTHORIZATION_DENIED' }, 'step 4 before injection');
  t.equal(calls.length, 0);
});

t.test('bound context: missing is injected, equal is accepted, anything else conflicts, for all five operations',
  async (t) => {
  const governed: [string, Json, Json][] = [
    ['PROJECT', { project_id: 'p1' }, { project_id: 'other' }],
    ['WORKFLOW', { project_id: 'p1', workflow_id: 'w1' }, { workflow_id: 'other' }],
    ['WORKFLOW', { project_id: 'p1', workflow_id: 'w1' }, { project_id: 'other' }],
    ['TOOL_ENVIRONMENT', { agent_id: 'a1' }, { agent_id: 'other' }],
  ];
  for (const operation of TOOL_NAMES) {
    for (const [scope, bound, conflict] of governed) {
      const { calls, gateway } = setup();
      const key = Object.keys(conflict)[0]!;
      for (const value of [conflict[key], null, '', 'P1']) {
        await t.rejects(gateway.handle(operation, { scope, [key]: value }), { code: 'BOUND_CONTEXT_IDENTITY_MISMATCH',
          message: new RegExp(key) }, `${operation} ${scope} ${key}=${JSON.stringify(value)}`);
      }
      t.equal(calls.length, 0, 'no conflicting request reaches the adapter');
      await gateway.handle(operation, { scope });
      t.match(calls[0]!.request, { scope, ...bound }, `${operation} ${scope}: injected`);
      await gateway.handle(operation, { scope, ...bound });
      t.match(calls[1]!.request, { scope, ...bound }, `${operation} ${scope}: equal accepted`);
    }
  }
});

t.test('GLOBAL_USER and CROSS_PROJECT_WORKFLOW inherit nothing; ungoverned keys pass through', async (t) => {
  const { calls, gateway } = setup();
  for (const operation of TOOL_NAMES) {
    for (const scope of ['GLOBAL_USER', 'CROSS_PROJECT_WORKFLOW']) {
      await gateway.handle(operation, { scope, request_id: 'r1' });
      t.strictSame(calls.at(-1)!.request, { scope, request_id: 'r1' }, `${operation} ${scope}: nothing injected`);
    }
  }
  await gateway.handle('memory_search', { scope: 'CROSS_PROJECT_WORKFLOW', project_id: 'elsewhere' });
  t.equal(calls.at(-1)!.request.project_id, 'elsewhere', 'left for the adapter to refuse');
  await gateway.handle('memory_search', { scope: 'PROJECT', agent_id: 'caller-agent' });
  t.strictSame(calls.at(-1)!.request, { scope: 'PROJECT', agent_id: 'caller-agent', project_id: 'p1',
    request_id: calls.at(-1)!.request.request_id }, 'PROJECT keeps a caller agent_id; workflow_id not injected');
  await gateway.handle('memory_search', { scope: 'TOOL_ENVIRONMENT' });
  t.notOk('project_id' in calls.at(-1)!.request, 'TOOL_ENVIRONMENT gets only agent_id');

  const projectOnly = setup(createContextBinding({ projectId: 'p1' }));
  await projectOnly.gateway.handle('memory_get', { scope: 'WORKFLOW', workflow_id: 'w9' });
  t.match(projectOnly.calls[0]!.request, { project_id: 'p1', workflow_id: 'w9' },
    'a project-only binding leaves the caller workflow_id');
  const unbound = setup(null);
  await unbound.gateway.handle('memory_get', { scope: 'PROJECT', project_id: 'anything' });
  t.equal(unbound.calls[0]!.request.project_id, 'anything', 'no binding: nothing governed');
});

t.test('a scope named like an inherited property is passed on untouched for the adapter to refuse', async (t) => {
  const { calls, gateway } = setup();
  for (const operation of TOOL_NAMES) {
    for (const scope of ['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf']) {
      await gateway.handle(operation, { scope, request_id: 'r1' });
      t.strictSame(calls.at(-1)!.request, { scope, request_id: 'r1' }, `${operation} ${scope}: nothing injected`);
    }
  }
});

t.test("the caller's request is never modified; the adapter gets a deep copy", async (t) => {
  const { calls, gateway } = setup();
  const request = { scope: 'WORKFLOW', source_provenance: { source_ref: 'a', nested: { deep: [1, 2] } }, tags: ['x'] };
  const before = structuredClone(request);
  await gateway.handle('memory_store', request);
  t.strictSame(request, before, 'no injected ids, no minted request_id');
  const received = calls[0]!.request;
  t.not(received, request);
  t.not(received.source_provenance, request.source_provenance, 'nested objects copied');
  t.not(received.tags, request.tags);
  await t.rejects(gateway.handle('memory_update', { ...request, provenance: {} }), {
    code: 'INVALID_ENVELOPE', message: /provenance is not a field/,
  });
  t.strictSame(request, before, 'unchanged after a refusal too');
});

t.test('the copy takes any depth and keeps a __proto__ key as an ordinary key', async (t) => {
  const { calls, gateway } = setup();
  let deep: unknown = 'bottom';
  for (let level = 0; level < 20_000; level += 1) deep = [deep];
  const request = JSON.parse('{"scope":"GLOBAL_USER","junk":{"__proto__":{"polluted":1}}}');
  request.deep = deep;
  await gateway.handle('memory_status', request);
  const received = calls[0]!.request as Record<string, any>;
  t.not(received.deep, deep, 'copied, not shared, 20,000 levels down');
  t.ok(Object.hasOwn(received.junk, '__proto__'), '__proto__ is an own key of the copy');
  t.equal(Object.getPrototypeOf(received.junk), Object.prototype, 'and not the prototype');
  t.equal(({} as Record<string, unknown>).polluted, undefined);
});

t.test('provenance is refused on store and update only', async (t) => {
  const { calls, gateway } = setup();
  for (const operation of ['memory_store', 'memory_update'] as const) {
    await t.rejects(gateway.handle(operation, { scope: 'GLOBAL_USER', provenance: { source_ref: 'x' } }),
      { code: 'INVALID_ENVELOPE', message: /source_provenance/ }, operation);
    await t.rejects(gateway.handle(operation, { scope: 'GLOBAL_USER', provenance: null }), { code: 'INVALID_ENVELOPE' },
      `${operation} null`);
  }
  await t.rejects(gateway.handle('memory_store', { scope: 'PROJECT', project_id: 'other', provenance: {} }),
    { code: 'BOUND_CONTEXT_IDENTITY_MISMATCH' }, 'step 5 before 6');
  t.equal(calls.length, 0);
  await gateway.handle('memory_search', { scope: 'GLOBAL_USER', provenance: 'x' });
  t.equal(calls[0]!.request.provenance, 'x', 'search: left to the adapter');
});

t.test('unknown operations, non-object requests and other transports', async (t) => {
  const { calls, gateway } = setup();
  for (const operation of ['memory_delete', 'MEMORY_SEARCH', '', 'toString', '__proto__']) {
    await t.rejects(gateway.handle(operation, { scope: 'GLOBAL_USER' }), { code: 'INVALID_OPERATION' },
      JSON.stringify(operation));
  }
  await t.rejects(gateway.handle('memory_delete', null), { code: 'INVALID_OPERATION' }, 'operation checked first');
  for (const request of [null, undefined, [], [{ scope: 'GLOBAL_USER' }], '{"scope":"GLOBAL_USER"}', 42, true]) {
    await t.rejects(gateway.handle('memory_status', request), { code: 'INVALID_ENVELOPE' },
      JSON.stringify(request) ?? 'undefined');
  }
  t.equal(calls.length, 0);
  const adapter = { execute: async () => ({}) };
  for (const transport of ['sse', 'http', 'STDIO', '']) {
    t.throws(() => new MemoryGateway({ adapter, hostBinding, contextBinding: null, transport }),
      { code: 'HOST_TRANSPORT_IDENTITY_MISMATCH' }, transport);
  }
  t.equal(new MemoryGateway({ adapter, hostBinding, contextBinding: null, transport: 'stdio' }).hostBinding,
    hostBinding);
});

t.test('the envelope carries the real host binding and, when bound, the context binding', async (t) => {
  const bound = await setup().gateway.handle('memory_status', { scope: 'GLOBAL_USER', request_id: 'req-1' }) as Json;
  t.strictSame(bound.audit, { request_id: 'req-1', operation: 'memory_status', host_binding: { ...hostBinding },
    context_binding: { ...fullBinding } });
  t.strictSame(bound.scope, { scope: 'GLOBAL_USER' }, 'the rest of the envelope is kept');
  const unbound = await setup(null).gateway.handle('memory_status',
    { scope: 'GLOBAL_USER', request_id: 'req-2' }) as Json;
  t.strictSame(unbound.audit, { request_id: 'req-2', operation: 'memory_status', host_binding: { ...hostBinding } });
  t.notOk('context_binding' in unbound.audit, 'absent when not bound');
  const forging = new MemoryGateway({ adapter: { execute: async () => ({ status: 'OK', audit: { request_id: 'r',
    context_binding: 'forged' } }) }, hostBinding, contextBinding: null, transport: 'stdio' });
  const forged = await forging.handle('memory_status', { scope: 'GLOBAL_USER' }) as Json;
  t.notOk('context_binding' in forged.audit, 'an adapter-set context_binding never survives when nothing is bound');
  const minted = await setup().gateway.handle('memory_status', { scope: 'GLOBAL_USER', request_id: null }) as Json;
  t.match(minted.audit.request_id, UUID_V4, 'a minted v4 UUID reaches the adapter when none was sent');
});

t.test('stamping never mutates the adapter\'s envelope, and no envelope can alter the bindings of another',
  async (t) => {
  // The adapter builds a fresh envelope per call; the gateway copies only what it changes (the top level
  // and audit) instead of cloning the whole envelope, which cost about a fifth of a memory_status call.
  // The binding objects are copied once and deep-frozen, so every envelope can share them.
  const shared = { status: 'OK', results: [{ fact: 'a' }], audit: { request_id: 'r' } };
  const gateway = new MemoryGateway(
    { adapter: { execute: async () => shared }, hostBinding, contextBinding: fullBinding, transport: 'stdio' });
  const first = await gateway.handle('memory_status', { scope: 'GLOBAL_USER' }) as Json;
  t.not(first, shared, 'a new top-level object');
  t.not(first.audit, shared.audit, 'a new audit object');
  t.throws(() => { first.audit.host_binding.host_id = 'forged'; }, TypeError, 'the host binding is frozen');
  t.throws(() => { first.audit.context_binding.project_id = 'forged'; }, TypeError, 'the context binding is frozen');
  t.not(first.audit.host_binding, hostBinding, 'a copy of the launcher binding, not the binding itself');
  t.strictSame(shared, { status: 'OK', results: [{ fact: 'a' }], audit: { request_id: 'r' } },
    "the adapter's object is untouched");
  const second = await gateway.handle('memory_status', { scope: 'GLOBAL_USER' }) as Json;
  t.equal(second.audit.host_binding.host_id, 'codex');
  t.equal(second.audit.context_binding.project_id, 'p1');
  t.equal(hostBinding.host_id, 'codex');
});

t.test('a governed failure carries the BLOCKED audit: request_id echoed, null or minted; retryable per code',
  async (t) => {
  const blocked = setup(fullBinding, () => new AdapterError('VERSION_CONFLICT', 'stale revision'));
  const echoed = await failure(blocked.gateway.handle('memory_update', { scope: 'GLOBAL_USER', request_id: 'req-7' }));
  t.equal(echoed.code, 'VERSION_CONFLICT');
  t.equal(echoed.message, 'stale revision');
  t.strictSame(echoed.audit, { host_binding: { ...hostBinding }, context_binding: { ...fullBinding },
    raw_content_logged: false, request_id: 'req-7', retryable: false });

  for (const bad of ['bad id!', SECRET, '', 12]) {
    const error = await failure(blocked.gateway.handle('memory_update', { scope: 'GLOBAL_USER', request_id: bad }));
    t.equal(error.audit!.request_id, null, `${JSON.stringify(bad)} is not echoed`);
    t.notOk(JSON.stringify(error.audit).includes('sk-'), 'the secret appears nowhere in the audit');
  }
  const minted = await failure(blocked.gateway.handle('memory_get', { scope: 'GLOBAL_USER' }));
  t.match(minted.audit!.request_id, UUID_V4);
  t.equal(minted.audit!.request_id, blocked.calls.at(-1)!.request.request_id, 'the id the adapter saw');
  const early = await failure(setup().gateway.handle('memory_get', { scope: 'GLOBAL_USER', host_id: 'codex' }));
  t.match(early.audit!.request_id, UUID_V4, 'gateway refusals mint one too');
  t.match((await failure(setup().gateway.handle('memory_get', 'not an object'))).audit!.request_id, UUID_V4,
    'also for a non-object request');
  t.equal((await failure(setup().gateway.handle('memory_get',
    { scope: 'GLOBAL_USER', host_id: 'x', request_id: 'ok-1' }))).audit!.request_id, 'ok-1');
  const unbound = await failure(setup(null,
    () => new AdapterError('NOT_FOUND', 'no such memory')).gateway.handle('memory_get', { scope: 'GLOBAL_USER' }));
  t.notOk('context_binding' in unbound.audit!, 'no context binding when unbound');

  for (const [code, retryable] of [['BACKEND_BUSY', true], ['BACKEND_UNAVAILABLE', true], ['TIMEOUT', true],
    ['BACKEND_CORRUPT', false], ['PROFILE_MISMATCH', false]] as const) {
    const error = await failure(
      setup(null, () => new AdapterError(code, 'x')).gateway.handle('memory_search', { scope: 'GLOBAL_USER' }));
    t.equal(error.code, code);
    t.equal(error.audit!.retryable, retryable, `${code} retryable ${retryable}`);
  }
});

t.test('an unexpected fault passes through unchanged, without an audit', async (t) => {
  const fault = new TypeError('handler bug');
  const { gateway } = setup(fullBinding, () => fault);
  const error = await gateway.handle('memory_search', { scope: 'GLOBAL_USER' }).then(() => null, (e: unknown) => e);
  t.equal(error, fault, 'the same object');
  t.notOk(error instanceof AdapterError);
});
