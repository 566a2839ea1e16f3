import t from 'tap';
import { createHash } from 'node:crypto';
import { scopeDigest, validateScope } from '../../src/adapter/request-scope.js';

// CONTRACT.md §4.1, §4.2, §9.4, §11 steps 10-12: the scope enum, identity rules and identity formats.

const SECRET = `sk-${'a1B2c3D4e5F6g7H8i9J0k1L2'}`; // sk- + 24 letters and digits
const SORTED_SCOPES = 'CROSS_PROJECT_WORKFLOW, GLOBAL_USER, PROJECT, TOOL_ENVIRONMENT, WORKFLOW';
const IDENTITY_KEYS = ['project_id', 'worktree_id', 'workflow_id', 'agent_id'] as const;

t.test('scope empty or missing is UNKNOWN_SCOPE; an unknown value is INVALID_ENUM listing the sorted choices',
  async (t) => {
  t.throws(() => validateScope({ scope: '' }), { code: 'UNKNOWN_SCOPE' });
  t.throws(() => validateScope({}), { code: 'UNKNOWN_SCOPE' });
  t.throws(() => validateScope({ scope: 'TEAM' }),
    { code: 'INVALID_ENUM', message: `scope must be one of: ${SORTED_SCOPES}` });
  t.throws(() => validateScope({ scope: 'project' }), { code: 'INVALID_ENUM' }, 'enum values are case-sensitive');
  t.throws(() => validateScope({ scope: 7 }), { code: 'INVALID_ENUM' });
  const error = t.throws(() => validateScope({ scope: 'TEAM' })) as Error;
  t.notMatch(error.message, /TEAM/, 'the submitted value is not echoed');
});

t.test('GLOBAL_USER forbids project, worktree and workflow ids; agent_id is allowed', async (t) => {
  for (const key of ['project_id', 'worktree_id', 'workflow_id'] as const) {
    t.throws(() => validateScope({ scope: 'GLOBAL_USER', [key]: 'x1' }),
      { code: 'CROSS_SCOPE_DENIED', message: new RegExp(key) }, key);
    t.same(validateScope({ scope: 'GLOBAL_USER', [key]: null }).scope, 'GLOBAL_USER', `${key}: null is absent`);
    t.same(validateScope({ scope: 'GLOBAL_USER', [key]: '' })[key], null, `${key}: "" is absent`);
  }
  t.same(validateScope({ scope: 'GLOBAL_USER', agent_id: 'codex' }),
    { scope: 'GLOBAL_USER', project_id: null, worktree_id: null, workflow_id: null, agent_id: 'codex' });
});

t.test('PROJECT requires project_id and forbids workflow_id', async (t) => {
  for (const missing of [{}, { project_id: null }, { project_id: '' }]) {
    t.throws(() => validateScope({ scope: 'PROJECT', ...missing }), { code: 'UNKNOWN_PROJECT_ID' },
      JSON.stringify(missing));
  }
  t.throws(() => validateScope({ scope: 'PROJECT', project_id: 'p1', workflow_id: 'w1' }),
    { code: 'CROSS_SCOPE_DENIED', message: /workflow_id/ });
  t.same(validateScope({ scope: 'PROJECT', project_id: 'p1', worktree_id: 'main', agent_id: 'codex', workflow_id: '' }),
    { scope: 'PROJECT', project_id: 'p1', worktree_id: 'main', workflow_id: null, agent_id: 'codex' });
});

t.test('WORKFLOW requires project_id and workflow_id; the message names both', async (t) => {
  for (const request of [{}, { project_id: 'p1' }, { workflow_id: 'w1' }, { project_id: 'p1', workflow_id: '' },
    { project_id: null, workflow_id: 'w1' }]) {
    t.throws(() => validateScope({ scope: 'WORKFLOW', ...request }),
      { code: 'UNKNOWN_PROJECT_ID', message: /project_id.*workflow_id/ }, JSON.stringify(request));
  }
  t.same(validateScope({
    scope: 'WORKFLOW', project_id: 'p1', workflow_id: 'release', worktree_id: 'wt', agent_id: 'a',
  }), { scope: 'WORKFLOW', project_id: 'p1', worktree_id: 'wt', workflow_id: 'release', agent_id: 'a' });
});

t.test('TOOL_ENVIRONMENT requires agent_id and allows every other identity', async (t) => {
  for (const missing of [{}, { agent_id: null }, { agent_id: '' }]) {
    t.throws(() => validateScope({ scope: 'TOOL_ENVIRONMENT', project_id: 'p1', ...missing }),
      { code: 'UNKNOWN_AGENT' }, JSON.stringify(missing));
  }
  t.same(validateScope({
    scope: 'TOOL_ENVIRONMENT', agent_id: 'codex', project_id: 'p1', worktree_id: 'wt', workflow_id: 'w',
  }), { scope: 'TOOL_ENVIRONMENT', project_id: 'p1', worktree_id: 'wt', workflow_id: 'w', agent_id: 'codex' });
});

t.test('CROSS_PROJECT_WORKFLOW refuses the identity keys themselves: null and "" count as present', async (t) => {
  for (const key of IDENTITY_KEYS) {
    for (const value of ['x1', null, '']) {
      t.throws(() => validateScope({ scope: 'CROSS_PROJECT_WORKFLOW', [key]: value }),
        { code: 'CROSS_SCOPE_DENIED', message: new RegExp(key) }, `${key}: ${JSON.stringify(value)}`);
    }
  }
  t.same(validateScope({ scope: 'CROSS_PROJECT_WORKFLOW' }),
    { scope: 'CROSS_PROJECT_WORKFLOW', project_id: null, worktree_id: null, workflow_id: null, agent_id: null });
});

t.test('a secret-like identity is RAW_OR_SENSITIVE_CONTENT, checked before the identifier format', async (t) => {
  for (const key of IDENTITY_KEYS) {
    const request = { scope: 'TOOL_ENVIRONMENT', agent_id: 'codex', [key]: SECRET };
    const error = t.throws(() => validateScope(request), { code: 'RAW_OR_SENSITIVE_CONTENT', message: new RegExp(key) },
      key) as Error;
    t.notMatch(error.message, /sk-/, 'the secret is not echoed');
  }
  // Not an identifier (space, '=') and secret-like: the secret check wins.
  t.throws(() => validateScope({ scope: 'PROJECT', project_id: `password = ${'x'.repeat(12)}` }),
    { code: 'RAW_OR_SENSITIVE_CONTENT' });
  t.throws(() => validateScope({ scope: 'GLOBAL_USER', agent_id: `ghp_${'A'.repeat(20)}` }),
    { code: 'RAW_OR_SENSITIVE_CONTENT' });
});

t.test('sk- with fewer than 20 characters is a plain identifier', async (t) => {
  t.equal(validateScope({ scope: 'GLOBAL_USER', agent_id: `sk-${'a'.repeat(19)}` }).agent_id, `sk-${'a'.repeat(19)}`);
});

t.test('an identity that is not an identifier is INVALID_ENVELOPE', async (t) => {
  for (const bad of ['has space', '-leading-dash', '.dot', 'a'.repeat(129), 'ünïcode', 'semi;colon', 42, true,
    { id: 'x' }]) {
    t.throws(() => validateScope({ scope: 'PROJECT', project_id: bad }),
      { code: 'INVALID_ENVELOPE', message: /project_id/ }, JSON.stringify(bad));
  }
  t.throws(() => validateScope({ scope: 'PROJECT', project_id: 'p1', agent_id: 'a b' }),
    { code: 'INVALID_ENVELOPE', message: /agent_id/ });
  for (const good of ['a', 'A'.repeat(128), 'org/repo', 'p1:main', 'x_y.z-1', '9']) {
    t.equal(validateScope({ scope: 'PROJECT', project_id: good }).project_id, good, good.slice(0, 20));
  }
});

t.test('scopeDigest is the SHA-256 of the canonical five-key tuple, stable, and differs per tuple', async (t) => {
  const project = validateScope({ scope: 'PROJECT', project_id: 'p1' });
  const expected = createHash('sha256')
    .update('{"agent_id":null,"project_id":"p1","scope":"PROJECT","workflow_id":null,"worktree_id":null}')
    .digest('hex');
  t.equal(scopeDigest(project), expected);
  t.equal(scopeDigest(validateScope({ scope: 'PROJECT', project_id: 'p1', agent_id: '', worktree_id: null })), expected,
    '"" and null normalise to the same tuple');
  const digests = new Set([
    expected,
    scopeDigest(validateScope({ scope: 'PROJECT', project_id: 'p2' })),
    scopeDigest(validateScope({ scope: 'PROJECT', project_id: 'p1', agent_id: 'codex' })),
    scopeDigest(validateScope({ scope: 'PROJECT', project_id: 'p1', worktree_id: 'codex' })),
    scopeDigest(validateScope({ scope: 'GLOBAL_USER' })),
    scopeDigest(validateScope({ scope: 'CROSS_PROJECT_WORKFLOW' })),
    scopeDigest(validateScope({ scope: 'TOOL_ENVIRONMENT', agent_id: 'p1' })),
  ]);
  t.equal(digests.size, 7, 'seven different tuples, seven digests');
  for (const digest of digests) t.match(digest, /^[0-9a-f]{64}$/);
});

t.test('remembered scope digests stay right past the memo bound and after eviction', async (t) => {
  const direct = (projectId: string) => createHash('sha256')
    .update(`{"agent_id":null,"project_id":"${projectId}","scope":"PROJECT","workflow_id":null,"worktree_id":null}`)
    .digest('hex');
  const wrong: string[] = [];
  for (let round = 0; round < 2; round += 1) {
    for (let i = 0; i < 600; i += 1) {
      const id = `p-${i}`;
      if (scopeDigest(validateScope({ scope: 'PROJECT', project_id: id })) !== direct(id)) wrong.push(`${round}:${id}`);
    }
  }
  t.same(wrong, [], '1200 digests of 600 scopes, each asked twice, all equal to a direct hash');
});
