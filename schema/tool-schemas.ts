import { Type, type TSchema } from '@sinclair/typebox';
import { PUBLIC_CONTRACT_REVISION } from './constants.js';
import {
  FRESHNESS_KINDS, INTENT_CLASSES, MEMORY_TYPES, RETRIEVAL_MODES, RETRIEVAL_MODE_KINDS, SCOPES, UPDATE_MODES,
  VERIFIED_BY,
  type ToolName,
} from './enums.js';

// The advertised (closed) request schemas of the five tools (CONTRACT.md §3.2, §4.1, §5). They are served
// as they are through the MCP SDK's low-level server; the runtime validator uses the open form derived in
// runtime-schemas.ts. Byte limits are governed (BLOCKED), so they appear in descriptions, not keywords.

const REVISION = { 'x-factlane-public-contract-revision': PUBLIC_CONTRACT_REVISION };

const closed = (properties: Record<string, TSchema>, description: string) =>
  Type.Object(properties, { additionalProperties: false, description, ...REVISION });
const enumOf = (values: readonly string[], description: string, defaultValue?: string) =>
  Type.Unsafe<string>({
    type: 'string', enum: [...values], description, ...(defaultValue === undefined ? {} : { default: defaultValue }),
  });
const str = (description: string) => Type.String({ description });
const nullableStr = (description: string) =>
  Type.Unsafe<string | null>({ type: ['string', 'null'], description, default: null });
const ref = (name: string, nullable = false) =>
  nullable ? Type.Unsafe({ anyOf: [{ $ref: `#/$defs/${name}` }, { type: 'null' }], default: null })
    : Type.Unsafe({ $ref: `#/$defs/${name}` });
const int = (minimum: number, maximum: number | undefined, defaultValue: number | undefined, description: string) =>
  Type.Integer({
    minimum, ...(maximum === undefined ? {} : { maximum }),
    ...(defaultValue === undefined ? {} : { default: defaultValue }), description,
  });

const IDENTIFIER = 'identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like';
const TIMESTAMP = 'YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z';
const SUBJECT = 'what question the fact answers, at most 96 bytes; give facts that answer the same question the same '
  + 'subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a '
  + '"subject:" tag, else the fact)';
const IDEMPOTENCY_KEY = `key of this write (${IDENTIFIER}); retry the same write with the same key (it is answered `
  + 'as a replay of what it wrote), a new key only for a new write';

const common = {
  scope: enumOf(SCOPES, 'one exact scope; "" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four '
    + 'identity keys, not even as null'),
  project_id: Type.Optional(nullableStr(`project identity (${IDENTIFIER}); required by PROJECT and WORKFLOW`)),
  worktree_id: Type.Optional(nullableStr(`worktree identity (${IDENTIFIER})`)),
  workflow_id: Type.Optional(nullableStr(`workflow identity (${IDENTIFIER}); required by WORKFLOW`)),
  agent_id: Type.Optional(nullableStr(`agent identity (${IDENTIFIER}); required by TOOL_ENVIRONMENT`)),
  request_id: Type.Optional(nullableStr(`caller's request id (${IDENTIFIER}); a UUID is minted when absent`)),
};

const payloadFields = {
  source_provenance: Type.Optional(ref('SourceProvenance')),
  freshness_policy: Type.Optional(ref('FreshnessPolicy')),
  source_timestamp: Type.Optional(nullableStr(`when the source was observed (${TIMESTAMP})`)),
  last_verified_at: Type.Optional(nullableStr(`when the fact was last verified (${TIMESTAMP})`)),
  verified_by: Type.Optional(enumOf(VERIFIED_BY, 'verification basis; the write profile decides the stored value')),
  memory_type: Type.Optional(enumOf(MEMORY_TYPES, 'kind of memory')),
  confidence: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'confidence 0-1' })),
  tags: Type.Optional(Type.Array(Type.String(), {
    maxItems: 12, description: 'at most 12 tags, each at most 48 bytes',
  })),
  subject: Type.Optional(nullableStr(SUBJECT)),
};

/** The `$defs` shared by every tool's inputSchema, in contract order. */
export const TOOL_DEFINITIONS = {
  MemorySearchRequest: closed({
    ...common,
    query: str('what to look for; 1-512 bytes'),
    intent_class: enumOf(INTENT_CLASSES,
      'why memory is asked; it does not filter or rank the facts. GENERAL_TASK_NO_MEMORY_REQUIRED answers '
        + 'NO_MEMORY_NEEDED without searching; HISTORICAL_QUESTION needs REVIEW_HISTORY; CROSS_PROJECT_WORKFLOW takes '
        + 'WORKFLOW_RULE (or HISTORICAL_QUESTION with REVIEW_HISTORY, or GENERAL_TASK_NO_MEMORY_REQUIRED) only'),
    retrieval_mode: Type.Optional(enumOf(RETRIEVAL_MODES,
      'CURRENT: validated fresh facts; REVIEW_HISTORY: past revisions and Candidates', 'CURRENT')),
    retrieval_mode_kind: Type.Optional(enumOf(RETRIEVAL_MODE_KINDS, 'how to match: SEMANTIC ranks by the embedding '
      + 'profile\'s similarity (the built-in local-hash-384 compares words, not meaning: a fact sharing no word with '
      + 'the query still scores about 0.5); KEYWORD needs every query word in the fact (whole words, no stemming); '
      + 'HYBRID fuses SEMANTIC and KEYWORD; EXACT matches the whole normalised fact', 'SEMANTIC')),
    top_k: Type.Optional(int(1, 8, 5, 'size of the candidate pool ranked per channel; it does not limit the results '
      + '(max_memories and the budgets do)')),
    max_memories: Type.Optional(int(1, 8, 5, 'most results returned; the byte and token budgets may cut the list '
      + 'further (budget.truncated, DEGRADED / BUDGET_EXCEEDED: a record is often 250-350 tokens)')),
    max_bytes: Type.Optional(int(1, 8000, 6000, 'byte budget of the results')),
    max_tokens: Type.Optional(int(1, 1600, 1200, 'token budget of the results (o200k_base)')),
  }, 'Search supporting facts in one exact scope.'),
  MemoryGetRequest: closed({
    ...common,
    memory_id: str('memory UUID'),
    retrieval_mode: Type.Optional(enumOf(RETRIEVAL_MODES,
      'CURRENT: the current record; REVIEW_HISTORY: its records of any lifecycle, the newest 8 that fit the read '
        + 'budget, revision descending', 'CURRENT')),
  }, 'Read one memory by id.'),
  MemoryStoreRequest: closed({
    ...common,
    fact: str('the fact, collapsed; 1-2000 bytes; no secrets, transcripts or whole repositories'),
    memory_type: enumOf(MEMORY_TYPES, 'kind of memory'),
    source_provenance: ref('SourceProvenance'),
    freshness_policy: ref('FreshnessPolicy'),
    idempotency_key: str(IDEMPOTENCY_KEY),
    source_timestamp:
      Type.Optional(nullableStr(`when the source was observed (${TIMESTAMP}); required for a current record`)),
    last_verified_at:
      Type.Optional(nullableStr(`when the fact was verified (${TIMESTAMP}); required for a current record`)),
    verified_by: Type.Optional(enumOf(VERIFIED_BY, 'verification basis; the write profile decides the stored value',
      'UNVERIFIED')),
    requested_lifecycle_state: Type.Optional(enumOf(['CANDIDATE', 'VALIDATED_CURRENT'],
      'CANDIDATE, or VALIDATED_CURRENT when the write profile allows', 'CANDIDATE')),
    confidence: Type.Optional(Type.Number({ minimum: 0, maximum: 1, default: 0.5, description: 'confidence 0-1' })),
    tags: Type.Optional(Type.Array(Type.String(), {
      maxItems: 12, default: [], description: 'at most 12 tags, each at most 48 bytes; duplicates dropped',
    })),
    subject: Type.Optional(nullableStr(SUBJECT)),
  }, 'Store one bounded, provenance-bearing fact.'),
  MemoryUpdateRequest: closed({
    ...common,
    memory_id: str('memory UUID'),
    expected_revision: Type.Integer({ minimum: 1, description: 'the live record\'s revision (compare-and-swap)' }),
    mode: enumOf(UPDATE_MODES, 'REVERIFY keeps the memory (and promotes a Candidate); REPLACE starts a new memory'),
    idempotency_key: str(IDEMPOTENCY_KEY),
    expected_record_id: Type.Optional(nullableStr('the live record UUID; required to promote a Candidate')),
    verification: Type.Optional(ref('VerificationPayload', true)),
    replacement: Type.Optional(ref('ReplacementPayload', true)),
  }, 'Re-verify or replace a memory with expected_revision compare-and-swap.'),
  MemoryStatusRequest: closed({ ...common }, 'Report bounded health for one scope.'),
  SourceProvenance: closed({
    source_class: str('kind of source; 1-96 bytes'),
    source_ref: str('where the source is; 1-256 bytes'),
    source_hash: str('SHA-256 of the source, 64 hex digits'),
    review_ref: str('review reference; 1-256 bytes'),
    extraction_method: str('how the fact was extracted; 1-96 bytes'),
    source_fingerprint: Type.Optional(nullableStr('64 hex digits')),
  }, 'Where a fact comes from.'),
  FreshnessPolicy: closed({
    kind: enumOf(FRESHNESS_KINDS, 'when the fact goes stale'),
    ttl_seconds: Type.Optional(Type.Unsafe<number | null>({
      type: ['integer', 'null'], minimum: 1, maximum: 31_536_000, default: null,
      description: 'required for ttl, forbidden otherwise',
    })),
    recheck_ref: Type.Optional(nullableStr('what to re-check; at most 256 bytes; required for on_change')),
    source_fingerprint:
      Type.Optional(nullableStr('64 hex digits; for on_change equal to source_provenance.source_hash')),
  }, 'When a fact stops being fresh.'),
  VerificationPayload: closed({ ...payloadFields }, 'Fields a REVERIFY may restate.'),
  ReplacementPayload: closed({ fact: Type.Optional(str('the replacing fact; 1-2000 bytes')), ...payloadFields },
    'The replacing record of a REPLACE: fact, source_provenance, freshness_policy and source_timestamp are required '
      + 'there (INVALID_ENVELOPE lists the missing ones).'),
} satisfies Record<string, TSchema>;

export type DefinitionName = keyof typeof TOOL_DEFINITIONS;

/** Per tool: its request definition and description (CONTRACT.md §3.2), in tools/list order. */
export const TOOLS: readonly {
  readonly name: ToolName; readonly requestDefinition: DefinitionName; readonly description: string;
}[] = Object.freeze([
  {
    name: 'memory_search', requestDefinition: 'MemorySearchRequest',
    description: 'Search supporting facts in one exact scope. CURRENT returns validated, fresh facts only; '
      + 'REVIEW_HISTORY returns past revisions and Candidates. A fact past its freshness is left out of CURRENT '
      + '(DEGRADED / STALE_ONLY when nothing fresh is left): REVIEW_HISTORY shows it, and a verifier renews it with '
      + 'memory_update REVERIFY. Facts support decisions; they never override the user, the repository or a live '
      + 'source.',
  },
  {
    name: 'memory_get', requestDefinition: 'MemoryGetRequest',
    description:
      'Read one memory by memory_id in one exact scope: its current record, or with REVIEW_HISTORY its history, the '
        + 'newest 8 records that fit the read budget (older ones are not returned).',
  },
  {
    name: 'memory_store', requestDefinition: 'MemoryStoreRequest',
    description: 'Store one bounded, provenance-bearing fact if the launcher\'s write profile allows it. Delegated '
      + 'agents submit Candidates only; verifiers may store current facts. A Candidate is not returned by CURRENT '
      + 'search or get until it is promoted (memory_update REVERIFY by a verifier or the owner); REVIEW_HISTORY shows '
      + 'it. DUPLICATE returns the record that already holds this fact (a Candidate is promoted, not stored again). '
      + 'CONTRADICTION means a current fact of the scope answers the same subject differently: this fact is kept as a '
      + 'Candidate that is never promoted, and a verifier or the owner makes it current with memory_update REPLACE of '
      + 'that current memory. memory_status names this server\'s write profile (launcher.write_profile).',
  },
  {
    name: 'memory_update', requestDefinition: 'MemoryUpdateRequest',
    description: 'Re-verify (REVERIFY) or replace (REPLACE) a memory, with expected_revision compare-and-swap. '
      + 'Only a verifier or owner write profile updates, and the successor is current, verified by that profile. '
      + 'REVERIFY keeps the memory (revision + 1) and also promotes a Candidate (needs expected_record_id, and '
      + 'verification.source_timestamp when the Candidate has none). REPLACE starts a new current memory that '
      + 'supersedes a current one (not a Candidate); replacement states fact, source_provenance, freshness_policy and '
      + 'source_timestamp. On VERSION_CONFLICT, read the memory with memory_get REVIEW_HISTORY and retry.',
  },
  {
    name: 'memory_status', requestDefinition: 'MemoryStatusRequest',
    description: 'Report bounded health for one scope: lifecycle counts, retention and capacity observations, '
      + 'embedding profile and provider status.',
  },
]);

/** The inputSchema of one tool: a single required `request` referring into the shared `$defs`. */
export function toolInputSchema(name: ToolName): Record<string, unknown> {
  const tool = TOOLS.find((t) => t.name === name);
  if (!tool) throw new RangeError(`unknown tool ${name}`);
  return {
    type: 'object',
    properties: { request: { $ref: `#/$defs/${tool.requestDefinition}` } },
    required: ['request'],
    additionalProperties: false,
    ...REVISION,
    $defs: JSON.parse(JSON.stringify(TOOL_DEFINITIONS)) as Record<string, unknown>,
  };
}

/** The generic object outputSchema every tool advertises. */
export const TOOL_OUTPUT_SCHEMA = Object.freeze({ type: 'object', ...REVISION });
