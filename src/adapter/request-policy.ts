import { AdapterError } from '../core/adapter-error.js';
import { isJsonObject, MAX_REQUEST_DEPTH, nestsDeeperThan } from '../core/canonical-json.js';
import { isSecretLike } from '../core/identifiers.js';
import { cutText, escapeUnprintable } from '../core/text.js';
import {
  TOOL_DEFINITIONS, TOOLS, TRUST_CLAIM_KEYS, WRITE_PROFILE_SPECS, type ToolName, type WriteProfile,
} from '@factlane/schema';
import { checkCrossProjectWrite } from '../storage/record-invariants.js';
import { validateScope, type ScopeTuple } from './request-scope.js';

type Json = Readonly<Record<string, unknown>>;

const keysOf = (definition: keyof typeof TOOL_DEFINITIONS) =>
  new Set(Object.keys(TOOL_DEFINITIONS[definition].properties));
const KNOWN_TOP_LEVEL = new Map(TOOLS.map((tool) => [tool.name, keysOf(tool.requestDefinition)]));
const NESTED = {
  source_provenance: keysOf('SourceProvenance'),
  freshness_policy: keysOf('FreshnessPolicy'),
  verification: keysOf('VerificationPayload'),
  replacement: keysOf('ReplacementPayload'),
};
const TRUST_CLAIMS = new Set<string>(TRUST_CLAIM_KEYS);
const MAX_NAMED_KEYS = 8;
const MAX_KEY_CHARS = 64;


/**
 * Names unknown keys safely (CONTRACT.md §6.3): at most 8, each cut to 64 characters, secret-like ones redacted,
 * unprintable characters escaped (`\u000a`).
 */
export function describeKeys(keys: readonly string[]): string {
  const shown = keys.slice(0, MAX_NAMED_KEYS)
    .map((key) => (isSecretLike(key) ? '[redacted]' : escapeUnprintable(cutText(key, MAX_KEY_CHARS))));
  return keys.length > MAX_NAMED_KEYS ? `${shown.join(', ')} (and ${keys.length - MAX_NAMED_KEYS} more)`
    : shown.join(', ');
}

function unknownKeys(object: Json, known: ReadonlySet<string>): string[] {
  return Object.keys(object).filter((key) => !known.has(key));
}

/** True when a key of §9.2 appears at any depth; walked without recursion, as a request may nest thousands deep. */
function containsTrustClaim(value: unknown): boolean {
  const stack = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item !== 'object' || item === null) continue;
    if (!Array.isArray(item) && Object.keys(item).some((key) => TRUST_CLAIMS.has(key))) return true;
    for (const child of Object.values(item)) stack.push(child);
  }
  return false;
}

/** The nested payloads of a request and the known keys of each, including those inside verification/replacement. */
function nestedPayloads(request: Json): [string, Json, ReadonlySet<string>][] {
  const found: [string, Json, ReadonlySet<string>][] = [];
  const visit = (path: string, object: Json) => {
    for (const name of ['source_provenance', 'freshness_policy'] as const) {
      if (isJsonObject(object[name])) found.push([`${path}${name}`, object[name] as Json, NESTED[name]]);
    }
  };
  visit('', request);
  for (const name of ['verification', 'replacement'] as const) {
    if (isJsonObject(request[name])) {
      found.push([name, request[name] as Json, NESTED[name]]);
      visit(`${name}.`, request[name] as Json);
    }
  }
  return found;
}

const CPW_SEARCH_ALLOWED = new Set([
  'WORKFLOW_RULE/CURRENT', 'WORKFLOW_RULE/REVIEW_HISTORY', 'HISTORICAL_QUESTION/REVIEW_HISTORY',
]);

/** What authorization decided for a write (CONTRACT.md §8.2). */
export interface WriteAuthorization {
  /** The `verified_by` to store or inject: UNVERIFIED for a Candidate, else the profile's basis. */
  readonly verifiedBy: string;
}

/**
 * §8.2 authorization of store and update; runs before any idempotency lookup, so a key minted by a more
 * privileged launcher is never a bearer token. Throws WRITE_AUTHORIZATION_DENIED.
 */
function authorizeWrite(
  operation: 'memory_store' | 'memory_update', request: Json, profile: WriteProfile,
): WriteAuthorization {
  const spec = WRITE_PROFILE_SPECS[profile];
  const deny = (why: string) => new AdapterError('WRITE_AUTHORIZATION_DENIED', `the ${profile} write profile ${why}`);
  if (!spec.operations.includes(operation)) {
    throw deny(`does not allow ${operation}; the server's write profile is set where the host launches it `
      + '(--write-profile)');
  }
  if (operation === 'memory_store') {
    const requested = request.requested_lifecycle_state;
    if (requested === undefined || requested === null || requested === 'CANDIDATE') {
      if (request.verified_by !== undefined && request.verified_by !== null && request.verified_by !== 'UNVERIFIED') {
        // A caller that can store current facts most likely meant to: say how (a Candidate it stores instead stays out
        // of CURRENT search, and storing the same fact current later is a DUPLICATE of it).
        const current = spec.maxLifecycle === 'VALIDATED_CURRENT' ? ', or store the fact current: '
          + 'requested_lifecycle_state VALIDATED_CURRENT with source_timestamp and last_verified_at, and verified_by '
          + `absent or ${spec.basis}` : '';
        throw deny(`stores Candidates as UNVERIFIED; remove verified_by${current}`);
      }
      return { verifiedBy: 'UNVERIFIED' };
    }
    if (spec.maxLifecycle !== 'VALIDATED_CURRENT') {
      throw deny('may store Candidates only; leave out requested_lifecycle_state (a Candidate is the default) and '
        + 'verified_by');
    }
    if (request.verified_by !== undefined && request.verified_by !== null && request.verified_by !== spec.basis)
      throw deny(`verifies as ${spec.basis} only; leave out verified_by or send ${spec.basis}`);
    return { verifiedBy: spec.basis! };
  }
  if (spec.maxLifecycle !== 'VALIDATED_CURRENT') throw deny('may not update');
  // The basis is injected into whichever payload the mode carries; an explicit different value conflicts.
  for (const payload of [request.verification, request.replacement]) {
    const claimed = isJsonObject(payload) ? payload.verified_by : undefined;
    if (claimed !== undefined && claimed !== null && claimed !== spec.basis) {
      const field = payload === request.verification ? 'verification' : 'replacement';
      throw deny(`verifies as ${spec.basis} only; leave out ${field}.verified_by or send ${spec.basis}`);
    }
  }
  return { verifiedBy: spec.basis! };
}

/** The outcome of the policy stage: the validated scope tuple and, for writes, the authorization. */
export interface PolicyOutcome {
  readonly scope: ScopeTuple;
  readonly authorization: WriteAuthorization | null;
}

/**
 * The adapter policy stage (CONTRACT.md §11 steps 7-14): unknown top-level keys, nested trust claims,
 * unknown nested keys, scope, §4.2 identity rules, §4.4 rules for search and store, §8.2 authorization.
 * The first failing step decides.
 */
export function applyRequestPolicy(operation: ToolName, request: Json, profile: WriteProfile): PolicyOutcome {
  const unknown = unknownKeys(request, KNOWN_TOP_LEVEL.get(operation)!);
  if (unknown.length > 0)
    throw new AdapterError('INVALID_ENVELOPE', `${operation} does not accept: ${describeKeys(unknown)}`);
  if (containsTrustClaim(request))
    throw new AdapterError('WRITE_AUTHORIZATION_DENIED', 'the request cannot claim trusted or derived authority');
  for (const [name, payload, known] of nestedPayloads(request)) {
    const extra = unknownKeys(payload, known);
    if (extra.length > 0) throw new AdapterError('INVALID_ENVELOPE', `${name} does not accept: ${describeKeys(extra)}`);
  }
  const scope = validateScope(request);
  if (scope.scope === 'CROSS_PROJECT_WORKFLOW') {
    if (operation === 'memory_search') {
      const intent = request.intent_class;
      const mode = request.retrieval_mode ?? 'CURRENT';
      if (intent !== 'GENERAL_TASK_NO_MEMORY_REQUIRED'
        && !CPW_SEARCH_ALLOWED.has(`${String(intent)}/${String(mode)}`)) {
        throw new AdapterError('SCOPE_INTENT_MISMATCH',
          'in CROSS_PROJECT_WORKFLOW, intent_class must be WORKFLOW_RULE (retrieval_mode CURRENT or REVIEW_HISTORY), '
            + 'HISTORICAL_QUESTION with retrieval_mode REVIEW_HISTORY, or GENERAL_TASK_NO_MEMORY_REQUIRED');
      }
    }
    if (operation === 'memory_store')
      checkCrossProjectWrite({
        memory_type: request.memory_type, source_provenance: request.source_provenance,
        freshness_policy: request.freshness_policy,
      });
  }
  const authorization = operation === 'memory_store' || operation === 'memory_update'
    ? authorizeWrite(operation, request, profile)
    : null;
  // No field of the contract nests more than a few levels, and the handlers walk values recursively. The guard comes
  // last, after every step of §11 that sees a deep value safely, so those decide first.
  if (nestsDeeperThan(request, MAX_REQUEST_DEPTH))
    throw new AdapterError('INVALID_ENVELOPE', `the request nests deeper than ${MAX_REQUEST_DEPTH} levels`);
  return { scope, authorization };
}
