// The OpenAI Responses side of the model stand-in, as Codex uses it: `POST /v1/responses` with `stream: true`,
// answered by SSE events response.created, response.output_item.added/done and response.completed. Codex sends
// an MCP server's tools as one tool of `type: "namespace"` named `mcp__<server>`; a `function_call` output item
// with the tool's bare `name` and that `namespace` runs the call, and the host sends the result back as a
// `function_call_output` input item of the next request.
import type { ServerResponse } from 'node:http';
import { sendEvents, sendJson, type Turns } from './stand-in-wire.js';

/** The namespace of FactLane's tools in Codex's tool list. */
export const CODEX_TOOL_NAMESPACE = 'mcp__factlane';

type Item = Record<string, unknown>;

/** One function_call_output item a host sent back: its call id and output text. */
export interface FunctionCallOutput {
  readonly callId: string;
  readonly text: string;
}

function inputOf(body: unknown): Item[] {
  const input = (body as { input?: unknown })?.input;
  return Array.isArray(input) ? (input as Item[]) : [];
}

/** The function_call items of a Responses request body's input, in order. */
export function functionCallsOf(body: unknown): Item[] {
  return inputOf(body).filter((item) => item.type === 'function_call');
}

/** The function_call_output items of a Responses request body's input, in order, with their text joined. */
export function functionCallOutputsOf(body: unknown): FunctionCallOutput[] {
  return inputOf(body).filter((item) => item.type === 'function_call_output').map((item) => ({
    callId: String(item.call_id),
    text: typeof item.output === 'string' ? item.output
      : Array.isArray(item.output) ? (item.output as Item[]).map((part) => String(part.text ?? '')).join('')
        : JSON.stringify(item.output),
  }));
}

/** The tools of a request body that belong to FactLane: the namespace tool, or any tool named under it. */
export function factLaneToolsOf(body: unknown): Item[] {
  const tools = ((body as { tools?: Item[] })?.tools) ?? [];
  return tools.filter((tool) => String(tool.name ?? '').startsWith(CODEX_TOOL_NAMESPACE));
}

/** Answers one Responses request: the script's next tool call, else the final text, as one streamed response. */
export function answerResponses(body: unknown, turns: Turns, res: ServerResponse): void {
  const step = functionCallsOf(body).length;
  const offers = factLaneToolsOf(body).length > 0;
  const call = offers ? turns.script[step] : undefined;
  const responseId = `resp_stand_in_${step}`;
  const item: Item = call
    ? {
      type: 'function_call', id: `fc_stand_in_${step}`, call_id: `call_stand_in_${step}`, name: call.tool,
      namespace: CODEX_TOOL_NAMESPACE, arguments: JSON.stringify(call.arguments), status: 'completed',
    }
    : {
      type: 'message', id: `msg_stand_in_${step}`, role: 'assistant', status: 'completed',
      content: [{ type: 'output_text', text: offers ? turns.finalText : 'OK', annotations: [] }],
    };
  const usage = {
    input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15,
  };
  const response = { id: responseId, object: 'response', status: 'in_progress', output: [] as Item[] };
  const done = { ...response, status: 'completed', output: [item], usage };
  if ((body as { stream?: boolean })?.stream === false) {
    sendJson(res, 200, done);
    return;
  }
  sendEvents(res, [
    ['response.created', { type: 'response.created', response }],
    ['response.output_item.added', {
      type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress' },
    }],
    ['response.output_item.done', { type: 'response.output_item.done', output_index: 0, item }],
    ['response.completed', { type: 'response.completed', response: done }],
  ]);
}
