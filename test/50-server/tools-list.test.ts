import t from 'tap';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ListToolsResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { openRequestSchema, TOOL_NAMES, toolInputSchema } from '@factlane/schema';
import { connectClient } from '../helpers/mcp.js';

const TOOL_ORDER = ['memory_search', 'memory_get', 'memory_store', 'memory_update', 'memory_status'];
const REQUEST_DEFINITION: Record<string, string> = {
  memory_search: 'MemorySearchRequest', memory_get: 'MemoryGetRequest', memory_store: 'MemoryStoreRequest',
  memory_update: 'MemoryUpdateRequest', memory_status: 'MemoryStatusRequest',
};
const DEFINITIONS = [
  'MemorySearchRequest', 'MemoryGetRequest', 'MemoryStoreRequest', 'MemoryUpdateRequest', 'MemoryStatusRequest',
  'SourceProvenance', 'FreshnessPolicy', 'VerificationPayload', 'ReplacementPayload',
];
const RETIRED = ['authority_role', 'include_graph_links', 'direct_truth_available', 'user_supplied'];

t.test('tools/list advertises exactly the five tools with their closed request schemas', async (t) => {
  const { client } = await connectClient(t, join(t.testdir(), 'x.sqlite3'));
  const listed = await client.listTools();
  t.matchSnapshot(listed, 'the whole tools/list result');

  t.same(listed.tools.map((tool) => tool.name), TOOL_ORDER, 'five tools in contract order');
  for (const tool of listed.tools) {
    t.test(tool.name, async (t) => {
      t.match(tool.description, /\S/, 'has a description');
      const reads = ['memory_search', 'memory_get', 'memory_status'].includes(tool.name);
      t.same(tool.annotations, reads ? { readOnlyHint: true, openWorldHint: false }
        : { readOnlyHint: false, idempotentHint: true }, 'annotations');
      const input = tool.inputSchema as unknown as Record<string, unknown> & {
        properties: Record<string, unknown>; $defs: Record<string, Record<string, unknown>>;
      };
      t.equal(input.type, 'object');
      t.same(input.required, ['request'], 'only request is required');
      t.same(Object.keys(input.properties), ['request'], 'request is the only property');
      t.same(
        input.properties.request, { $ref: `#/$defs/${REQUEST_DEFINITION[tool.name]}` }, 'request refers into $defs',
      );
      t.same(Object.keys(input.$defs).sort(), [...DEFINITIONS].sort(), 'the nine definitions');
      for (const [name, definition] of Object.entries(input.$defs)) {
        t.equal(definition.type, 'object', `${name} is an object`);
        t.equal(definition.additionalProperties, false, `${name} is closed`);
        t.equal(definition['x-factlane-public-contract-revision'], 2, `${name} carries contract revision 2`);
      }
      t.same(
        tool.outputSchema, { type: 'object', 'x-factlane-public-contract-revision': 2 }, 'generic object outputSchema',
      );
      const text = JSON.stringify(tool);
      for (const retired of RETIRED) t.notOk(text.includes(retired), `no ${retired} anywhere`);
    });
  }
});

t.test('every schema the server compiles or serves is valid against its JSON Schema meta-schema', async (t) => {
  // The server compiles its validators without this check, so as not to compile the meta-schema at every start. An
  // invalid schema would not stop a start: Ajv would compile it and validate wrongly (`type: []` accepts anything), so
  // this test is the guard. The runtime schemas are read by Ajv's default, draft-07; the served ones keep their
  // definitions in $defs, which draft-07's meta-schema does not look inside, and MCP reads an inputSchema that names
  // no $schema as 2020-12.
  const draft07 = new Ajv({ allErrors: true, strict: false, strictNumbers: true });
  const draft2020 = new Ajv2020({ allErrors: true, strict: false, strictNumbers: true });
  for (const name of TOOL_NAMES) {
    for (const [role, schema, ajv] of [
      ['runtime', openRequestSchema(name), draft07], ['served', toolInputSchema(name), draft2020],
    ] as const) {
      t.ok(ajv.validateSchema(schema), `${name}: the ${role} schema`, { errors: ajv.errors });
    }
    t.doesNotThrow(() => draft2020.compile(toolInputSchema(name)), `${name}: the served schema's references resolve`);
  }
});

t.test('request definitions carry the contract required keys, enums, defaults and bounds', async (t) => {
  const { client } = await connectClient(t, join(t.testdir(), 'x.sqlite3'));
  const { tools } = await client.listTools();
  const defs = (tools[0]!.inputSchema as unknown as {
    $defs: Record<string, { required?: string[]; properties: Record<string, Record<string, unknown>> }>,
  }).$defs;
  t.same(defs.MemorySearchRequest!.required!.sort(), ['intent_class', 'query', 'scope']);
  t.same(defs.MemoryGetRequest!.required!.sort(), ['memory_id', 'scope']);
  t.same(defs.MemoryStoreRequest!.required!.sort(), [
    'fact', 'freshness_policy', 'idempotency_key', 'memory_type', 'scope', 'source_provenance',
  ]);
  t.same(
    defs.MemoryUpdateRequest!.required!.sort(), ['expected_revision', 'idempotency_key', 'memory_id', 'mode', 'scope'],
  );
  t.same(defs.MemoryStatusRequest!.required, ['scope']);
  t.same(defs.MemoryStatusRequest!.properties.scope!.enum, [
    'CROSS_PROJECT_WORKFLOW', 'GLOBAL_USER', 'PROJECT', 'TOOL_ENVIRONMENT', 'WORKFLOW',
  ]);
  const search = defs.MemorySearchRequest!.properties;
  for (const key of ['top_k', 'max_memories'])
    t.match(search[key], { type: 'integer', minimum: 1, maximum: 8, default: 5 }, key);
  t.match(search.max_bytes, { minimum: 1, maximum: 8000, default: 6000 });
  t.match(search.max_tokens, { minimum: 1, maximum: 1600, default: 1200 });
  t.match(search.retrieval_mode, { enum: ['CURRENT', 'REVIEW_HISTORY'], default: 'CURRENT' });
  t.match(defs.MemoryUpdateRequest!.properties.expected_revision, { type: 'integer', minimum: 1 });
  t.match(defs.MemoryStoreRequest!.properties.tags, { type: 'array', maxItems: 12 });
});

t.test('initialize: server info, instructions and only the tools capability', async (t) => {
  const { client } = await connectClient(t, join(t.testdir(), 'x.sqlite3'));
  const info = client.getServerVersion();
  t.equal(info?.name, 'factlane');
  t.match(info?.version, /^\d+\.\d+\.\d+/);
  const instructions = client.getInstructions() ?? '';
  t.match(instructions, /supporting facts/, 'says facts are supporting');
  t.match(instructions, /never overrides the user's instructions, the repository, or a live authoritative source/);
  t.match(instructions, /Scopes match exactly/, 'says scopes match exactly');
  t.match(
    instructions, /A Candidate, what a delegated agent stores, is found only with REVIEW_HISTORY/,
    'says where Candidates are',
  );
  t.same(Object.keys(client.getServerCapabilities() ?? {}), ['tools'], 'only tools is offered');
});

t.test('tools/list with a cursor: a string gets the one page again, anything else is -32602 naming it', async (t) => {
  // The SDK's schema answered a non-string cursor with -32603 and its parser's issues as JSON.
  const { client } = await connectClient(t, join(t.testdir(), 'x.sqlite3'));
  const again = await client.request({ method: 'tools/list', params: { cursor: 'anything' } }, ListToolsResultSchema);
  t.same(again.tools.map((tool) => tool.name), TOOL_ORDER, 'the one page');
  for (const cursor of [5, null, {}, ['x']]) {
    await t.rejects(client.request({ method: 'tools/list', params: { cursor } }, ListToolsResultSchema),
      { code: -32602, message: 'MCP error -32602: tools/list: params.cursor must be a string when given' },
      `cursor ${JSON.stringify(cursor)}`);
  }
});
