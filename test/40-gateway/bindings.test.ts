import t from 'tap';
import { createContextBinding, createHostBinding } from '../../src/gateway/bindings.js';

// CONTRACT.md §4.5, §4.6, §10 (INVALID_HOST_BINDING, INVALID_CONTEXT_BINDING), §9.4 (launcher labels).

const SECRET = `sk-${'a1B2c3D4e5F6g7H8i9J0k1L2'}`;

t.test('a host binding: the labels, stdio, and a fresh 32-hex instance id', async (t) => {
  const binding = createHostBinding('codex');
  t.strictSame(Object.keys(binding).sort(), ['binding_source', 'gateway_instance_id', 'host_id', 'transport']);
  t.match(binding, { host_id: 'codex', transport: 'stdio', binding_source: 'explicit-launcher' });
  t.match(binding.gateway_instance_id, /^[0-9a-f]{32}$/);
  t.ok(Object.isFrozen(binding), 'immutable');
  t.not(createHostBinding('codex').gateway_instance_id, binding.gateway_instance_id, 'one instance id per binding');
  t.match(createHostBinding('claude.code:2', 'ide-config_1'),
    { host_id: 'claude.code:2', binding_source: 'ide-config_1' });
  t.equal(createHostBinding('h'.repeat(128)).host_id.length, 128);
});

t.test('host labels that are not labels are INVALID_HOST_BINDING; secret-like ones RAW_OR_SENSITIVE_CONTENT',
  async (t) => {
  for (const bad of ['org/codex', '', '-codex', '.codex', 'co dex', 'h'.repeat(129), 'cödex']) {
    t.throws(() => createHostBinding(bad), { code: 'INVALID_HOST_BINDING', message: /--host-id/ }, JSON.stringify(bad));
    t.throws(() => createHostBinding('codex', bad), { code: 'INVALID_HOST_BINDING', message: /--binding-source/ },
      `source ${JSON.stringify(bad)}`);
  }
  t.throws(() => createHostBinding(SECRET), { code: 'RAW_OR_SENSITIVE_CONTENT' });
  t.throws(() => createHostBinding('codex', SECRET), { code: 'RAW_OR_SENSITIVE_CONTENT' });
  t.throws(() => createHostBinding(`token=${'x'.repeat(12)}`), { code: 'RAW_OR_SENSITIVE_CONTENT' },
    'secret check before the label format');
  const error = t.throws(() => createHostBinding(SECRET)) as Error;
  t.notMatch(error.message, /sk-/, 'the secret is not echoed');
});

t.test('no bound id: no context binding', async (t) => {
  t.equal(createContextBinding({}), null);
  t.equal(createContextBinding({ bindingSource: 'codex-config' }), null);
});

t.test('bound ids with their sources; per-id sources default to the binding source', async (t) => {
  t.strictSame(createContextBinding({ projectId: 'p1' }),
    { binding_source: 'explicit-launcher', project_id: 'p1', project_id_source: 'explicit-launcher' });
  const full = createContextBinding({ bindingSource: 'codex-config', projectId: 'org/p1', workflowId: 'release',
    agentId: 'agent:1', agentIdSource: 'env' });
  t.strictSame(full, {
    binding_source: 'codex-config', project_id: 'org/p1', project_id_source: 'codex-config',
    workflow_id: 'release', workflow_id_source: 'codex-config', agent_id: 'agent:1', agent_id_source: 'env',
  });
  t.ok(Object.isFrozen(full), 'immutable');
  t.strictSame(createContextBinding({ agentId: 'a1' }), { binding_source: 'explicit-launcher', agent_id: 'a1',
    agent_id_source: 'explicit-launcher' }, 'agent alone needs no project');
  t.strictSame(Object.keys(createContextBinding({ projectId: 'p1', projectIdSource: 'cli' })!).sort(),
    ['binding_source', 'project_id', 'project_id_source']);
});

t.test('invalid context bindings', async (t) => {
  const invalid: [object, RegExp][] = [
    [{ workflowId: 'w1' }, /--workflow-id needs --project-id/],
    [{ workflowId: 'w1', agentId: 'a1' }, /--workflow-id needs --project-id/],
    [{ projectIdSource: 'cli' }, /--project-id-source needs --project-id/],
    [{ projectId: 'p1', workflowIdSource: 'cli' }, /--workflow-id-source needs --workflow-id/],
    [{ agentIdSource: 'cli' }, /--agent-id-source needs --agent-id/],
    [{ projectId: 'bad id' }, /--project-id/],
    [{ projectId: '' }, /--project-id/],
    [{ projectId: 'p1', workflowId: 'w'.repeat(129) }, /--workflow-id/],
    [{ agentId: '/agent' }, /--agent-id/],
    [{ projectId: 'p1', projectIdSource: 'a/b' }, /--project-id-source/],
    [{ projectId: 'p1', bindingSource: 'a/b' }, /--context-binding-source/],
  ];
  for (const [input, message] of invalid) t.throws(() => createContextBinding(input),
    { code: 'INVALID_CONTEXT_BINDING', message }, JSON.stringify(input));
  for (const input of [{ projectId: SECRET }, { projectId: 'p1', agentId: `password=${'y'.repeat(12)}` },
    { projectId: 'p1', projectIdSource: SECRET }, { projectId: 'p1', bindingSource: SECRET }]) {
    t.throws(() => createContextBinding(input), { code: 'RAW_OR_SENSITIVE_CONTENT' },
      JSON.stringify(Object.keys(input)));
  }
});
