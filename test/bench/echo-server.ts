// A bare MCP SDK server with one `echo` tool over stdio: the baseline the server bench compares
// FactLane's memory_status round trip against (same SDK, same transport, no FactLane work).
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const server = new Server({ name: 'echo', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{ name: 'echo', description: 'echoes its request',
    inputSchema: { type: 'object', properties: { request: { type: 'object' } } } }],
}));
server.setRequestHandler(CallToolRequestSchema, async (call) => {
  const text = JSON.stringify(call.params.arguments ?? {});
  return { content: [{ type: 'text', text }], structuredContent: call.params.arguments ?? {} };
});
await server.connect(new StdioServerTransport());
process.stdin.on('end', () => process.exit(0));
