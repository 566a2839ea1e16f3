import t from 'tap';
import { applyRequestPolicy, describeKeys } from '../../src/adapter/request-policy.js';
import {
  INTENT_CLASSES, MEMORY_TYPES, TOOL_NAMES, WRITE_PROFILES, type ToolName, type WriteProfile,
} from '../../schema/enums.js';
import { RETIRED_KEYS, TRUST_CLAIM_KEYS } from '../../schema/reserved-keys.js';

// CONTRACT.md §11 steps 7-14 (adapter policy), §4.4, §8.2, §9.2, §9.3.

type Request = Record<string, unknown>;
const HASH = 'ab'.repeat(32);
const provenance = (extra: Request = {}): Request => ({
  source_class: 'repo', source_ref: 'README.md', source_hash: HASH, review_ref: 'pr-1', extraction_method: 'manual',
  ...extra,
});

/** A minimal valid request of each operation in GLOBAL_USER; `extra` overrides or adds keys. */
function minimal(operation: ToolName, extra: Request = {}): Request {
  const base: Record<ToolName, Request> = {
    memory_search: { query: 'node version', intent_class: 'USER_PREFERENCE_OR_DURABLE_FACT' },
    memory_get: { memory_id: '0b6f3b9e-4d0e-4a43-9d3c-6f1a2b3c4d5e' },
    memory_store: {
      fact: 'the build uses node 20', memory_type: 'USER_FACT', source_provenance: provenance(),
      freshness_policy: { kind: 'never' }, idempotency_key: 'k-1',
    },
    memory_update: {
      memory_id: '0b6f3b9e-4d0e-4a43-9d3c-6f1a2b3c4d5e', expected_revision: 1, mode: 'REVERIFY', idempotency_key: 'k-2',
    },
    memory_status: {},
  };
  return { scope: 'GLOBAL_USER', ...base[operation], ...extra };
}
const cpw = (operation: ToolName, extra: Request = {}) =>
  minimal(operation, { scope: 'CROSS_PROJECT_WORKFLOW', ...extra });
const policy = (operation: ToolName, request: Request, profile: WriteProfile = 'owner-current') =>
  applyRequestPolicy(operation, request, profile);

t.test('minimal requests pass and return the normalised scope', async (t) => {
  for (const operation of TOOL_NAMES) {
    const outcome = policy(operation, minimal(operation, { agent_id: '' }));
    t.same(outcome.scope,
      { scope: 'GLOBAL_USER', project_id: null, worktree_id: null, workflow_id: null, agent_id: null }, operation);
    t.equal(outcome.authorization === null, operation !== 'memory_store' && operation !== 'memory_update',
      `${operation} authorization`);
  }
});

t.test('describeKeys names at most 8 keys, each cut to 64 characters, secret-like ones redacted', async (t) => {
  t.equal(describeKeys(['a', 'b']), 'a, b');
  t.equal(describeKeys(['k'.repeat(100)]), 'k'.repeat(64));
  t.equal(describeKeys([`sk-${'A1'.repeat(12)}`, 'plain']), '[redacted], plain');
  t.equal(describeKeys(Array.from({ length: 11 }, (_, i) => `x${i}`)), 'x0, x1, x2, x3, x4, x5, x6, x7 (and 3 more)');
  t.equal(describeKeys(['line1\nline2', 'tab\there', 'ls\u2028ps\u2029', 'bidi\u202eevil', 'nul\u0000', 'ok é']),
    'line1\\u000aline2, tab\\u0009here, ls\\u2028ps\\u2029, bidi\\u202eevil, nul\\u0000, ok é',
    'control, separator and bidi characters escaped, other text as it is');
  // A cut through a surrogate pair left half of it, a lone surrogate, at the end of the message.
  t.equal(describeKeys([`${'k'.repeat(63)}😀tail`]), 'k'.repeat(63), 'a pair at the cut goes whole');
  t.equal(describeKeys([`${'k'.repeat(62)}😀tail`]), `${'k'.repeat(62)}😀`, 'a pair before the cut stays');
  t.equal(describeKeys(['lone\ud800high', 'lone\udc00low']), 'lone\\ud800high, lone\\udc00low',
    'a lone surrogate sent in a key is escaped');
});

t.test('an unknown top-level key is INVALID_ENVELOPE naming it; retired keys are unknown keys', async (t) => {
  for (const operation of TOOL_NAMES) {
    t.throws(() => policy(operation, minimal(operation, { bogus_key: 1 })),
      { code: 'INVALID_ENVELOPE', message: /bogus_key/ }, operation);
    for (const key of RETIRED_KEYS) t.throws(() => policy(operation, minimal(operation, { [key]: true })),
      { code: 'INVALID_ENVELOPE', message: new RegExp(key) }, `${operation} ${key}`);
  }
  t.throws(() => policy('memory_search', minimal('memory_search', { fact: 'x' })),
    { code: 'INVALID_ENVELOPE', message: /fact/ }, 'a store field on search');
  t.throws(() => policy('memory_status', minimal('memory_status', { memory_id: 'x' })),
    { code: 'INVALID_ENVELOPE', message: /memory_id/ });
  t.throws(() => policy('memory_store', minimal('memory_store', { provenance: provenance() })),
    { code: 'INVALID_ENVELOPE', message: /provenance/ });
  const many = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`extra_${i}_${'z'.repeat(80)}`, 1]));
  const secretKey = `token=${'Q'.repeat(16)}`;
  const error = t.throws(() => policy('memory_status', minimal('memory_status', { [secretKey]: 1, ...many })),
    { code: 'INVALID_ENVELOPE' }) as Error;
  t.match(error.message, /\[redacted\]/, 'secret-like key redacted');
  t.notMatch(error.message, /QQQQ/, 'the secret-like key is not echoed');
  t.match(error.message, /\(and 3 more\)/, 'at most 8 named');
  t.notMatch(error.message, /z{65}/, 'names cut to 64 characters');
});

t.test('a trust claim nested at any depth is WRITE_AUTHORIZATION_DENIED', async (t) => {
  for (const key of TRUST_CLAIM_KEYS) {
    const places: [ToolName, Request][] = [
      ['memory_store', minimal('memory_store', { source_provenance: provenance({ [key]: 'x' }) })],
      ['memory_store', minimal('memory_store', { freshness_policy: { kind: 'never', [key]: true } })],
      ['memory_store',
        minimal('memory_store', { source_provenance: provenance({ source_ref: { deeper: { [key]: 1 } } }) })],
      ['memory_update', minimal('memory_update', { verification: { [key]: 'OWNER' } })],
      ['memory_update', minimal('memory_update', { verification: { source_provenance: provenance({ [key]: null }) } })],
      ['memory_update',
        minimal('memory_update', { mode: 'REPLACE', replacement: { freshness_policy: { kind: 'never', [key]: 1 } } })],
      ['memory_update', minimal('memory_update', { verification: { tags: [{ [key]: 1 }] } })],
      ['memory_search', minimal('memory_search', { query: { [key]: 1 } })],
    ];
    for (const [operation, request] of places) {
      // read-only: the trust claim must win over the profile's refusal, which comes later.
      t.throws(() => policy(operation, request, 'read-only'),
        { code: 'WRITE_AUTHORIZATION_DENIED', message: 'the request cannot claim trusted or derived authority' },
        `${key} in ${operation}`);
    }
  }
});

t.test('unknown nested keys are INVALID_ENVELOPE naming the payload', async (t) => {
  const cases: [ToolName, Request, RegExp][] = [
    ['memory_store', { source_provenance: provenance({ bogus: 1 }) }, /^source_provenance does not accept: bogus$/],
    ['memory_store', { freshness_policy: { kind: 'never', bogus: 1 } }, /^freshness_policy does not accept: bogus$/],
    ['memory_update', { verification: { bogus: 1 } }, /^verification does not accept: bogus$/],
    ['memory_update', { verification: { fact: 'x' } }, /^verification does not accept: fact$/],
    ['memory_update', { mode: 'REPLACE', replacement: { bogus: 1 } }, /^replacement does not accept: bogus$/],
    ['memory_update', { verification: { source_provenance: provenance({ bogus: 1 }) } },
      /^verification\.source_provenance does not accept: bogus$/],
    ['memory_update', { mode: 'REPLACE', replacement: { freshness_policy: { kind: 'ttl', bogus: 1 } } },
      /^replacement\.freshness_policy does not accept: bogus$/],
  ];
  for (const [operation, extra, message] of cases) t.throws(() => policy(operation, minimal(operation, extra)),
    { code: 'INVALID_ENVELOPE', message }, String(message));
  t.doesNotThrow(() => policy('memory_update',
    minimal('memory_update', { mode: 'REPLACE', replacement: { fact: 'y', source_provenance: provenance() } })));
});

t.test('the first failing policy step decides', async (t) => {
  const nestedClaim = provenance({ authority_role: 'OWNER_CURRENT', bogus: 1 });
  t.throws(() => policy('memory_store', minimal('memory_store', { bogus_top: 1, source_provenance: nestedClaim })),
    { code: 'INVALID_ENVELOPE' }, '7 before 8');
  t.throws(() => policy('memory_store', minimal('memory_store', { source_provenance: nestedClaim })),
    { code: 'WRITE_AUTHORIZATION_DENIED' }, '8 before 9');
  t.throws(() => policy('memory_store',
    minimal('memory_store', { scope: '', source_provenance: provenance({ bogus: 1 }) })),
    { code: 'INVALID_ENVELOPE' }, '9 before 10');
  t.throws(() => policy('memory_store', minimal('memory_store', { scope: '' }), 'read-only'), { code: 'UNKNOWN_SCOPE' },
    '10 before 14');
  t.throws(() => policy('memory_store', cpw('memory_store', { project_id: 'p1' }), 'read-only'),
    { code: 'CROSS_SCOPE_DENIED' }, '11 before 13');
  t.throws(() => policy('memory_store', minimal('memory_store', { scope: 'PROJECT' }), 'read-only'),
    { code: 'UNKNOWN_PROJECT_ID' }, '12 before 14');
  t.throws(() => policy('memory_store', cpw('memory_store'), 'read-only'), { code: 'SCOPE_TYPE_MISMATCH' },
    '13 before 14');
});

t.test('CROSS_PROJECT_WORKFLOW search: the intent and mode matrix', async (t) => {
  const allowed = new Set([
    'WORKFLOW_RULE/CURRENT', 'WORKFLOW_RULE/REVIEW_HISTORY', 'HISTORICAL_QUESTION/REVIEW_HISTORY',
  ]);
  for (const intent of INTENT_CLASSES) {
    for (const mode of [undefined, 'CURRENT', 'REVIEW_HISTORY']) {
      const request = cpw('memory_search', { intent_class: intent, ...(mode ? { retrieval_mode: mode } : {}) });
      const name = `${intent}/${mode ?? '(default)'}`;
      if (intent === 'GENERAL_TASK_NO_MEMORY_REQUIRED' || allowed.has(`${intent}/${mode ?? 'CURRENT'}`))
        t.doesNotThrow(() => policy('memory_search', request, 'read-only'), name);
      else t.throws(() => policy('memory_search', request, 'read-only'), { code: 'SCOPE_INTENT_MISMATCH', message:
        'in CROSS_PROJECT_WORKFLOW, intent_class must be WORKFLOW_RULE (retrieval_mode CURRENT or REVIEW_HISTORY), '
          + 'HISTORICAL_QUESTION with retrieval_mode REVIEW_HISTORY, or GENERAL_TASK_NO_MEMORY_REQUIRED' }, name);
    }
  }
  t.throws(() => policy('memory_search',
    cpw('memory_search', { intent_class: 'NOT_AN_INTENT', retrieval_mode: 'REVIEW_HISTORY' })),
    { code: 'SCOPE_INTENT_MISMATCH' }, 'unknown intent');
  t.throws(() => policy('memory_search',
    cpw('memory_search', { intent_class: 'WORKFLOW_RULE', retrieval_mode: 'LATEST' })),
    { code: 'SCOPE_INTENT_MISMATCH' }, 'unknown mode');
  t.doesNotThrow(() => policy('memory_search', minimal('memory_search', { intent_class: 'NOT_AN_INTENT' })),
    'other scopes leave the intent to the handler');
});

t.test('CROSS_PROJECT_WORKFLOW store: type, source fingerprint and freshness rules', async (t) => {
  for (const type of MEMORY_TYPES) {
    const request = cpw('memory_store', { memory_type: type });
    if (type === 'WORKFLOW_RULE' || type === 'DECISION_RATIONALE')
      t.doesNotThrow(() => policy('memory_store', request), type);
    else t.throws(() => policy('memory_store', request), { code: 'SCOPE_TYPE_MISMATCH' }, type);
  }
  t.throws(() => policy('memory_store', cpw('memory_store', { memory_type: 'NOT_A_TYPE' })),
    { code: 'SCOPE_TYPE_MISMATCH' });
  const rule = (extra: Request) => cpw('memory_store', { memory_type: 'WORKFLOW_RULE', ...extra });
  t.throws(() => policy('memory_store', rule({ source_provenance: provenance({ source_fingerprint: HASH }) })),
    { code: 'SCOPE_FRESHNESS_MISMATCH' });
  t.throws(() => policy('memory_store',
    cpw('memory_store', { source_provenance: provenance({ source_fingerprint: HASH }) })),
    { code: 'SCOPE_TYPE_MISMATCH' }, 'type first');
  t.doesNotThrow(() => policy('memory_store', rule({ source_provenance: provenance({ source_fingerprint: null }) })),
    'null fingerprint is absent');
  t.throws(() => policy('memory_store', rule({ freshness_policy: { kind: 'manual' } })), { code: 'INVALID_FRESHNESS' },
    'manual without recheck_ref and fingerprint');
  t.throws(() => policy('memory_store', rule({ freshness_policy: { kind: 'manual', recheck_ref: '  ' } })),
    { code: 'INVALID_FRESHNESS' }, 'blank recheck_ref');
  t.doesNotThrow(() => policy('memory_store',
    rule({ freshness_policy: { kind: 'manual', recheck_ref: 'docs/RULES.md' } })));
  t.doesNotThrow(() => policy('memory_store',
    rule({ freshness_policy: { kind: 'manual', source_fingerprint: 'cd'.repeat(32) } })));
  t.throws(() => policy('memory_store',
    rule({ freshness_policy: { kind: 'on_change', recheck_ref: 'r', source_fingerprint: HASH } })),
    { code: 'INVALID_FRESHNESS' }, 'on_change following the project source');
  t.throws(() => policy('memory_store',
    rule({ freshness_policy: { kind: 'on_change', recheck_ref: 'r', source_fingerprint: HASH.toUpperCase() } })),
    { code: 'INVALID_FRESHNESS' }, 'hex compared case-insensitively');
  t.doesNotThrow(() => policy('memory_store',
    rule({ freshness_policy: { kind: 'on_change', recheck_ref: ' ', source_fingerprint: HASH } })),
    'blank recheck_ref: the general on_change rule decides later');
  t.doesNotThrow(() => policy('memory_update', cpw('memory_update', { verification: { memory_type: 'USER_FACT' } })),
    'update: checked after lookup, not by policy');
});

t.test('§8.2 authorization per write profile', async (t) => {
  const store = (extra: Request = {}) => minimal('memory_store', extra);
  const current = (extra: Request = {}) => store({ requested_lifecycle_state: 'VALIDATED_CURRENT', ...extra });
  const verifiedBy = (operation: ToolName, request: Request, profile: WriteProfile) =>
    policy(operation, request, profile).authorization?.verifiedBy;
  // Each refusal names the profile, and the field to change when the profile allows the operation.
  const denied = (operation: ToolName, request: Request, profile: WriteProfile, name: string, fix = '') =>
    t.throws(() => policy(operation, request, profile),
      { code: 'WRITE_AUTHORIZATION_DENIED', message: new RegExp(`^the ${profile} write profile .*${fix}`) },
      `${profile}: ${name}`);

  for (const operation of ['memory_search', 'memory_get', 'memory_status'] as const) {
    for (const profile of WRITE_PROFILES) t.equal(policy(operation, minimal(operation), profile).authorization, null,
      `${profile} may ${operation}`);
  }
  t.throws(() => policy('memory_store', store(), 'read-only'), { code: 'WRITE_AUTHORIZATION_DENIED',
    message: new RegExp('^the read-only write profile does not allow memory_store; the server\'s write profile is set '
      + 'where the host launches it \\(--write-profile\\)$') },
    'a refused operation says where the profile is set');
  denied('memory_store', store(), 'read-only', 'Candidate');
  denied('memory_store', current(), 'read-only', 'current');
  denied('memory_update', minimal('memory_update'), 'read-only', 'update');

  t.equal(verifiedBy('memory_store', store(), 'delegated-candidate'), 'UNVERIFIED');
  t.equal(verifiedBy('memory_store', store({ verified_by: 'UNVERIFIED', requested_lifecycle_state: 'CANDIDATE' }),
    'delegated-candidate'), 'UNVERIFIED');
  t.equal(verifiedBy('memory_store', store({ verified_by: null, requested_lifecycle_state: null }),
    'delegated-candidate'), 'UNVERIFIED');
  denied('memory_store', store({ verified_by: 'OWNER' }), 'delegated-candidate', 'Candidate claiming OWNER');
  denied('memory_store', current(), 'delegated-candidate', 'VALIDATED_CURRENT',
    'may store Candidates only; leave out requested_lifecycle_state \\(a Candidate is the default\\) and verified_by$');
  denied('memory_store', current({ verified_by: 'UNVERIFIED' }), 'delegated-candidate',
    'VALIDATED_CURRENT as UNVERIFIED', 'leave out requested_lifecycle_state');
  denied('memory_store', store({ requested_lifecycle_state: 'SUPERSEDED' }), 'delegated-candidate',
    'SUPERSEDED (policy precedes the enum check)');
  denied('memory_update', minimal('memory_update'), 'delegated-candidate', 'update');

  const bases = {
    'owner-current': 'OWNER', 'repo-verifier': 'CURRENT_REPO_CHECK', 'automated-verifier': 'AUTOMATED_CHECK',
  } as const;
  for (const [profile, basis] of Object.entries(bases) as [WriteProfile, string][]) {
    const others = ['OWNER', 'CURRENT_REPO_CHECK', 'AUTOMATED_CHECK', 'UNVERIFIED'].filter((v) => v !== basis);
    t.equal(verifiedBy('memory_store', store(), profile), 'UNVERIFIED', `${profile}: Candidate stored UNVERIFIED`);
    denied('memory_store', store({ verified_by: basis }), profile, 'Candidate claiming its basis');
    t.equal(verifiedBy('memory_store', current(), profile), basis, `${profile}: current stored as ${basis}`);
    t.equal(verifiedBy('memory_store', current({ verified_by: basis }), profile), basis);
    for (const other of others) denied('memory_store', current({ verified_by: other }), profile,
      `current claiming ${other}`, `verifies as ${basis} only; leave out verified_by or send ${basis}$`);
    t.equal(verifiedBy('memory_store', store({ requested_lifecycle_state: 'SUPERSEDED' }), profile), basis,
      `${profile}: SUPERSEDED left to the enum check`);
    t.equal(verifiedBy('memory_update', minimal('memory_update'), profile), basis,
      `${profile}: update injects ${basis}`);
    t.equal(verifiedBy('memory_update', minimal('memory_update', { verification: { verified_by: basis } }), profile),
      basis);
    t.equal(verifiedBy('memory_update', minimal('memory_update', { verification: null }), profile), basis);
    for (const other of others) denied('memory_update',
      minimal('memory_update', { verification: { verified_by: other } }), profile, `update claiming ${other}`,
      `leave out verification.verified_by or send ${basis}$`);
    for (const other of others) denied('memory_update',
      minimal('memory_update', { mode: 'REPLACE', replacement: { fact: 'x', verified_by: other } }), profile,
      `replace claiming ${other}`, `leave out replacement.verified_by or send ${basis}$`);
    t.equal(verifiedBy('memory_update',
      minimal('memory_update', { mode: 'REPLACE', replacement: { fact: 'x', verified_by: basis } }), profile), basis);
  }
});
