import { PUBLIC_CONTRACT_REVISION } from './constants.js';
import {
  AUTHORITY_ROLES, FRESHNESS_KINDS, INTENT_CLASSES, LIFECYCLE_STATES, MEMORY_TYPES, RETRIEVAL_MODES,
  RETRIEVAL_MODE_KINDS, SCOPES, UPDATE_MODES, VERIFIED_BY, WRITE_PROFILES, type ToolName,
} from './enums.js';
import { TOOL_DEFINITIONS, TOOLS, type DefinitionName } from './tool-schemas.js';

// The offline tool reference (CONTRACT.md §3.6), generated from the same schemas the server serves.
// `factlane --help-tools` prints it and docs/TOOLS.md is it, so the two cannot drift apart.

const EXAMPLES: Record<ToolName, unknown> = {
  memory_search: { scope: 'PROJECT', project_id: 'my-app', query: 'how do I run the tests',
    intent_class: 'CURRENT_PROJECT_STATE' },
  memory_get: { scope: 'PROJECT', project_id: 'my-app', memory_id: '3f2c9a4e-5b6d-4c7e-8f90-1a2b3c4d5e6f' },
  memory_store: {
    scope: 'PROJECT', project_id: 'my-app', fact: 'The test command is npm test.', memory_type: 'PROJECT_LEARNED_FACT',
    source_provenance: { source_class: 'repository_file', source_ref: 'package.json', source_hash: 'a'.repeat(64),
      review_ref: 'agent-session-1', extraction_method: 'read_file' },
    freshness_policy: { kind: 'ttl', ttl_seconds: 2592000 }, idempotency_key: 'store-test-command-1',
  },
  memory_update: { scope: 'PROJECT', project_id: 'my-app', memory_id: '3f2c9a4e-5b6d-4c7e-8f90-1a2b3c4d5e6f',
    expected_revision: 1, expected_record_id: '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a', mode: 'REVERIFY',
    idempotency_key: 'verify-test-command-1', verification: {
      last_verified_at: '2026-11-30T08:00:00Z', source_timestamp: '2026-11-30T08:00:00Z',
    } },
  memory_status: { scope: 'PROJECT', project_id: 'my-app' },
};

interface PropertySchema {
  type?: string | string[]; enum?: string[]; default?: unknown; minimum?: number; maximum?: number; maxItems?: number;
  description?: string; $ref?: string; anyOf?: { $ref?: string }[];
}

function typeOf(schema: PropertySchema): string {
  const target = schema.$ref ?? schema.anyOf?.find((s) => s.$ref)?.$ref;
  if (target) return `object (${target.split('/').at(-1)})${schema.anyOf ? ' or null' : ''}`;
  const type = Array.isArray(schema.type) ? schema.type.join(' or ') : schema.type ?? 'any';
  return type === 'array' ? 'array of strings' : type;
}

function fieldLines(definition: DefinitionName): string[] {
  const schema = JSON.parse(JSON.stringify(TOOL_DEFINITIONS[definition])) as {
    properties: Record<string, PropertySchema>; required?: string[];
  };
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, property]) => {
    const facts = [typeOf(property), required.has(name) ? 'required' : 'optional'];
    if (property.enum) facts.push(`one of: ${property.enum.join(', ')}`);
    if (property.default !== undefined) facts.push(`default: ${JSON.stringify(property.default)}`);
    if (property.minimum !== undefined && property.maximum !== undefined)
      facts.push(`range: ${property.minimum}..${property.maximum}`);
    else if (property.minimum !== undefined) facts.push(`at least ${property.minimum}`);
    else if (property.maximum !== undefined) facts.push(`at most ${property.maximum}`);
    if (property.maxItems !== undefined) facts.push(`at most ${property.maxItems} items`);
    return `- \`${name}\`: ${facts.join('; ')}. ${property.description ?? ''}`.trimEnd();
  });
}

const NESTED: readonly DefinitionName[] = [
  'SourceProvenance', 'FreshnessPolicy', 'VerificationPayload', 'ReplacementPayload',
];

/** The reference of one tool: description, fields, nested objects it uses, and a minimal example. */
export function toolReference(name: ToolName): string {
  const tool = TOOLS.find((t) => t.name === name)!;
  const lines = [
    `## ${name}`, '', tool.description, '', 'Fields of `request`:', '', ...fieldLines(tool.requestDefinition), '',
    'Minimal example:', '', '```json', JSON.stringify({ request: EXAMPLES[name] }), '```', '',
  ];
  return lines.join('\n');
}

/**
 * The whole offline reference: contract revision, scope rules, the CROSS_PROJECT_WORKFLOW matrix, enums, every tool.
 */
export function fullToolReference(): string {
  const enumLine = (label: string, values: readonly string[]) => `- \`${label}\`: ${values.join(', ')}`;
  return [
    `# FactLane tools (public contract revision ${PUBLIC_CONTRACT_REVISION})`, '',
    'Five MCP tools over stdio. Each takes one argument, `request`, a JSON object. Facts support decisions; they never '
      + 'override the user\'s instructions, the repository or a live authoritative source.',
    '',
    '## Scope rules', '',
    '| Scope | Requires | Forbids | Allowed extras |', '| --- | --- | --- | --- |',
    '| GLOBAL_USER | - | project_id, worktree_id, workflow_id | agent_id |',
    '| PROJECT | project_id | workflow_id | worktree_id, agent_id |',
    '| WORKFLOW | project_id, workflow_id | - | worktree_id, agent_id |',
    '| TOOL_ENVIRONMENT | agent_id | - | all |',
    '| CROSS_PROJECT_WORKFLOW | - | the keys project_id, worktree_id, workflow_id, agent_id (even null or "") | - |',
    '',
    'Every read and write matches the whole scope tuple exactly; there is no inheritance or fan-out. Launcher-bound '
      + 'ids are inserted for PROJECT (project_id), WORKFLOW (project_id, workflow_id) and TOOL_ENVIRONMENT '
      + '(agent_id); a different value is refused.',
    '',
    '## CROSS_PROJECT_WORKFLOW matrix', '',
    '- search: intent WORKFLOW_RULE with CURRENT or REVIEW_HISTORY, HISTORICAL_QUESTION with REVIEW_HISTORY, or '
      + 'GENERAL_TASK_NO_MEMORY_REQUIRED; anything else is SCOPE_INTENT_MISMATCH',
    '- store, update: memory_type WORKFLOW_RULE or DECISION_RATIONALE (SCOPE_TYPE_MISMATCH); no '
      + 'source_provenance.source_fingerprint (SCOPE_FRESHNESS_MISMATCH); manual freshness needs recheck_ref or '
      + 'source_fingerprint, and on_change may not follow the source hash (INVALID_FRESHNESS)',
    '',
    '## Enumerations', '',
    enumLine('scope', SCOPES), enumLine('memory_type', MEMORY_TYPES), enumLine('intent_class', INTENT_CLASSES),
    enumLine('retrieval_mode', RETRIEVAL_MODES), enumLine('retrieval_mode_kind', RETRIEVAL_MODE_KINDS),
    enumLine('mode', UPDATE_MODES),
    enumLine('freshness kind', FRESHNESS_KINDS), enumLine('verified_by', VERIFIED_BY),
    enumLine('lifecycle_state', LIFECYCLE_STATES),
    enumLine('authority_role', AUTHORITY_ROLES), enumLine('write profile', WRITE_PROFILES), '',
    ...TOOLS.map((tool) => toolReference(tool.name)),
    '## Nested objects', '',
    ...NESTED.flatMap((name) => [
      `### ${name}`, '', TOOL_DEFINITIONS[name].description ?? '', '', ...fieldLines(name), '',
    ]),
  ].join('\n');
}
