// The wire pieces the model stand-in's protocols share: the script types, a JSON answer and a whole SSE stream.
import type { ServerResponse } from 'node:http';

/** One call of a script: an MCP tool of the `factlane` server and its arguments. */
export interface ScriptedCall {
  readonly tool: string;
  readonly arguments: Record<string, unknown>;
}

/** What a protocol answers from: the script of tool calls and the final text after it. */
export interface Turns {
  readonly script: readonly ScriptedCall[];
  readonly finalText: string;
}

/** Sends one JSON answer. */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

/** Sends a whole SSE stream of `[event, data]` pairs at once, then ends the answer. */
export function sendEvents(res: ServerResponse, events: readonly (readonly [string, unknown])[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'close' });
  res.end(events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join(''));
}
