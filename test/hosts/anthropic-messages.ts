// The Anthropic Messages side of the model stand-in, as Claude Code uses it: `POST /v1/messages?beta=true`
// with `stream: true`, answered by SSE events message_start, content_block_start/delta/stop, message_delta,
// message_stop. The host sends its MCP tools as `mcp__<server>__<tool>`; a `tool_use` block with that name runs
// the call, and the host sends the result back as a `tool_result` block of the next user message.
import type { ServerResponse } from 'node:http';
import { sendEvents, sendJson, type Turns } from './stand-in-wire.js';

/** The prefix of FactLane's tools in Claude Code's tool list. */
export const CLAUDE_TOOL_PREFIX = 'mcp__factlane__';

type Block = Record<string, unknown>;
interface Message { readonly role?: string; readonly content?: unknown }

/** One tool_result block a host sent back: its tool_use id, text and error flag. */
export interface ToolResultBlock {
  readonly toolUseId: string;
  readonly text: string;
  readonly isError: boolean;
}

function blocksOf(message: Message): Block[] {
  return Array.isArray(message.content) ? (message.content as Block[]) : [];
}

/** The tool_use blocks of the assistant turns of a Messages request body, in order. */
export function toolUsesOf(body: unknown): Block[] {
  const messages = ((body as { messages?: Message[] })?.messages) ?? [];
  return messages.filter((m) => m.role === 'assistant').flatMap(blocksOf).filter((b) => b.type === 'tool_use');
}

/** The tool_result blocks of the user turns of a Messages request body, in order, with their text joined. */
export function toolResultsOf(body: unknown): ToolResultBlock[] {
  const messages = ((body as { messages?: Message[] })?.messages) ?? [];
  return messages.filter((m) => m.role === 'user').flatMap(blocksOf).filter(
    (b) => b.type === 'tool_result',
  ).map((b) => ({
    toolUseId: String(b.tool_use_id),
    text: typeof b.content === 'string' ? b.content
      : (b.content as Block[]).filter((c) => c.type === 'text').map((c) => String(c.text)).join(''),
    isError: b.is_error === true,
  }));
}

function toolNamesOf(body: unknown): string[] {
  return (((body as { tools?: Block[] })?.tools) ?? []).map((tool) => String(tool.name));
}

/** FactLane's five tools as Claude Code names them (CONTRACT.md: the tool names are fixed). */
export const CLAUDE_FACTLANE_TOOLS = ['memory_get', 'memory_search', 'memory_status', 'memory_store', 'memory_update']
  .map((tool) => `${CLAUDE_TOOL_PREFIX}${tool}`);

/** The text the stand-in ends with when FactLane's tools never loaded, so the test fails on it clearly. */
export const TOOLS_NEVER_LOADED = 'FactLane tools were not offered after ToolSearch.';

/**
 * The next block of the main conversation (a request that offers tools; a side request such as a title offers
 * none and gets a short text). Claude Code defers MCP tools, listing their names, or the server as "still
 * connecting", in a system message, so the first turn is a ToolSearch that selects FactLane's five tools (it
 * waits for a connecting server); then the script's next call, counted by the FactLane tool_use blocks already in
 * the conversation; then the final text.
 */
function nextBlock(body: unknown, turns: Turns): Block {
  const names = toolNamesOf(body);
  if (names.length === 0) return { type: 'text', text: 'OK' };
  const uses = toolUsesOf(body);
  const step = uses.filter((use) => String(use.name).startsWith(CLAUDE_TOOL_PREFIX)).length;
  const id = `toolu_stand_in_${uses.length}`;
  const call = turns.script[step];
  if (call === undefined) return { type: 'text', text: turns.finalText };
  if (names.includes(`${CLAUDE_TOOL_PREFIX}${call.tool}`)) {
    return { type: 'tool_use', id, name: `${CLAUDE_TOOL_PREFIX}${call.tool}`, input: call.arguments };
  }
  if (uses.some((use) => use.name === 'ToolSearch') || !names.includes('ToolSearch')) {
    return { type: 'text', text: TOOLS_NEVER_LOADED };
  }
  const query = `select:${CLAUDE_FACTLANE_TOOLS.join(',')}`;
  return { type: 'tool_use', id, name: 'ToolSearch', input: { query, max_results: CLAUDE_FACTLANE_TOOLS.length } };
}

/** Answers one Messages request with `nextBlock` (streamed when the request asks for it). */
export function answerMessages(body: unknown, turns: Turns, res: ServerResponse): void {
  const request = (body ?? {}) as { model?: string; stream?: boolean };
  const block = nextBlock(body, turns);
  const id = `msg_stand_in_${toolUsesOf(body).length}`;
  const stopReason = block.type === 'tool_use' ? 'tool_use' : 'end_turn';
  const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const message = {
    id, type: 'message', role: 'assistant', model: request.model ?? 'claude-stand-in', stop_sequence: null,
  };
  if (request.stream !== true) {
    sendJson(res, 200, { ...message, content: [block], stop_reason: stopReason, usage });
    return;
  }
  const start = block.type === 'tool_use' ? { ...block, input: {} } : { type: 'text', text: '' };
  const delta = block.type === 'tool_use'
    ? { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } : {
      type: 'text_delta', text: block.text,
    };
  sendEvents(res, [
    ['message_start', { type: 'message_start', message: {
      ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 },
    } }],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: start }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['message_delta', {
      type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 5 },
    }],
    ['message_stop', { type: 'message_stop' }],
  ]);
}

/** Answers `POST /v1/messages/count_tokens` with a rough count (a quarter of the body's length). */
export function answerCountTokens(body: unknown, res: ServerResponse): void {
  sendJson(res, 200, { input_tokens: Math.max(1, Math.ceil(JSON.stringify(body ?? {}).length / 4)) });
}
