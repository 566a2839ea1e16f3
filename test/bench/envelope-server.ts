// A bare MCP SDK server whose one tool answers every call with the same governed envelope, given as its
// canonical JSON in FACTLANE_BENCH_ENVELOPE: the floor of a memory_status round trip, since it moves the
// envelope the contract requires (text and structuredContent, CONTRACT.md §3.4, §15) and does no work.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const text = process.env.FACTLANE_BENCH_ENVELOPE;
if (text === undefined) throw new Error('FACTLANE_BENCH_ENVELOPE is not set');
const envelope = JSON.parse(text) as Record<string, unknown>;
const server = new Server({ name: 'envelope', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{ name: 'envelope', description: 'answers with a fixed envelope',
    inputSchema: { type: 'object', properties: { request: { type: 'object' } } } }],
}));
server.setRequestHandler(CallToolRequestSchema,
  async () => ({ content: [{ type: 'text', text }], structuredContent: envelope }));
await server.connect(new StdioServerTransport());
process.stdin.on('end', () => process.exit(0));
