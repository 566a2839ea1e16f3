import { AdapterError } from '../core/adapter-error.js';
import { BoundedMap } from '../core/bounded-map.js';
import { canonicalJson } from '../core/canonical-json.js';
import { sha256Hex } from '../core/hashing.js';
import { isIdentifierFormat, isSecretLike } from '../core/identifiers.js';
import { SCOPES, type Scope } from '@factlane/schema';

/** The five-key scope tuple (CONTRACT.md §2.1), absent identities as null. */
export interface ScopeTuple {
  readonly scope: Scope;
  readonly project_id: string | null;
  readonly worktree_id: string | null;
  readonly workflow_id: string | null;
  readonly agent_id: string | null;
}

const IDENTITY_KEYS = ['project_id', 'worktree_id', 'workflow_id', 'agent_id'] as const;
type IdentityKey = (typeof IDENTITY_KEYS)[number];

const absent = (value: unknown) => value === undefined || value === null || value === '';
const sortedChoices = (values: readonly string[]) => [...values].sort().join(', ');

/** Throws INVALID_ENUM naming `field` and its sorted choices when `value` is not one of `values`. */
export function requireEnum<T extends string>(field: string, value: unknown, values: readonly T[]): T {
  if (typeof value === 'string' && (values as readonly string[]).includes(value)) return value as T;
  throw new AdapterError('INVALID_ENUM', `${field} must be one of: ${sortedChoices(values)}`);
}

/**
 * Checks an identifier-valued field (CONTRACT.md §4.1, §9.4): a secret-like value is
 * RAW_OR_SENSITIVE_CONTENT (checked first), any other non-identifier INVALID_ENVELOPE.
 */
export function requireIdentifier(field: string, value: unknown): string {
  if (typeof value === 'string' && isSecretLike(value))
    throw new AdapterError('RAW_OR_SENSITIVE_CONTENT', `${field} looks like a secret; remove it`);
  if (typeof value !== 'string' || !isIdentifierFormat(value)) {
    throw new AdapterError('INVALID_ENVELOPE',
      `${field} must be an identifier: 1-128 characters of letters, digits and . _ : / -, starting with a letter or `
        + `digit`);
  }
  return value;
}

/**
 * Validates the scope of a request (CONTRACT.md §11 steps 10-12): the enum, the CROSS_PROJECT_WORKFLOW
 * key-presence rule, the §4.2 identity rules and each present identity's format. Returns the normalised tuple.
 */
export function validateScope(request: Readonly<Record<string, unknown>>): ScopeTuple {
  const scopeValue = request.scope;
  if (scopeValue === undefined || scopeValue === null || scopeValue === '')
    throw new AdapterError('UNKNOWN_SCOPE', `scope is required; one of: ${sortedChoices(SCOPES)}`);
  const scope = requireEnum('scope', scopeValue, SCOPES);
  if (scope === 'CROSS_PROJECT_WORKFLOW') {
    const present = IDENTITY_KEYS.filter((key) => Object.hasOwn(request, key));
    if (present.length > 0)
      throw new AdapterError('CROSS_SCOPE_DENIED',
        `CROSS_PROJECT_WORKFLOW takes no identity keys; remove ${present.join(', ')}`);
  }
  const has = (key: IdentityKey) => !absent(request[key]);
  const forbid = (keys: readonly IdentityKey[]) => {
    const found = keys.filter(has);
    if (found.length > 0)
      throw new AdapterError('CROSS_SCOPE_DENIED', `${scope} scope does not take ${found.join(', ')}`);
  };
  if (scope === 'GLOBAL_USER') forbid(['project_id', 'worktree_id', 'workflow_id']);
  if (scope === 'PROJECT') {
    if (!has('project_id')) throw new AdapterError('UNKNOWN_PROJECT_ID', 'PROJECT scope requires project_id');
    forbid(['workflow_id']);
  }
  if (scope === 'WORKFLOW' && (!has('project_id') || !has('workflow_id'))) {
    throw new AdapterError('UNKNOWN_PROJECT_ID', 'WORKFLOW scope requires project_id and workflow_id');
  }
  if (scope === 'TOOL_ENVIRONMENT' && !has('agent_id'))
    throw new AdapterError('UNKNOWN_AGENT', 'TOOL_ENVIRONMENT scope requires agent_id');
  const identity = (key: IdentityKey) => (has(key) ? requireIdentifier(key, request[key]) : null);
  return Object.freeze({
    scope, project_id: identity('project_id'), worktree_id: identity('worktree_id'),
    workflow_id: identity('workflow_id'), agent_id: identity('agent_id'),
  });
}

/** scope_digest: SHA-256 of the canonical JSON of the five-key scope object; stored as `scope_key`. */
export function scopeDigest(tuple: ScopeTuple): string {
  const text = canonicalJson({
    scope: tuple.scope, project_id: tuple.project_id, worktree_id: tuple.worktree_id, workflow_id: tuple.workflow_id,
    agent_id: tuple.agent_id,
  });
  let digest = SCOPE_DIGESTS.get(text);
  if (digest === undefined) {
    digest = sha256Hex(text);
    SCOPE_DIGESTS.set(text, digest);
  }
  return digest;
}

// Every request hashes its scope, and a server sees few scopes: digests by scope text (decision 0010).
const SCOPE_DIGESTS = new BoundedMap<string, string>(256);
