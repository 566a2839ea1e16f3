// A scripted stand-in for a model API, on 127.0.0.1 with an ephemeral port, that drives a real host (Claude Code,
// Codex) through a script of FactLane tool calls. It speaks two wire protocols: the Anthropic Messages API
// (`POST /v1/messages`, streaming SSE) and the OpenAI Responses API (`POST /v1/responses`, streaming SSE). Each
// conversation turn is answered with the next call of the script, counted from the calls already in the
// conversation the host sends back, so side requests and retries never advance it; after the last call it answers
// with a final text message. Every request is recorded (method, path, parsed body). The stand-in is also the
// hosts' HTTP(S) proxy: a request for any other host is recorded in `foreign` and refused, so a test can prove
// that nothing left the machine.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { answerMessages, answerCountTokens } from './anthropic-messages.js';
import { answerResponses } from './openai-responses.js';
import { sendJson, type Turns } from './stand-in-wire.js';

export type { ScriptedCall, Turns } from './stand-in-wire.js';

/** One request the stand-in received. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  /** The parsed JSON body, else undefined. */
  readonly body: unknown;
}

/** The stand-in's options, frozen at start. */
export type ModelStandInOptions = Turns;

export class ModelStandIn {
  readonly #server: Server;
  readonly #turns: Turns;
  readonly #sockets = new Set<Socket>();
  /** Every request for the stand-in's own address, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  /** Every proxied request or CONNECT for another host (`host:port` or absolute URL), refused. */
  readonly foreign: string[] = [];

  private constructor(server: Server, turns: Turns) {
    this.#server = server;
    this.#turns = turns;
  }

  /** Starts the stand-in on 127.0.0.1 with an ephemeral port. */
  static async start(options: ModelStandInOptions): Promise<ModelStandIn> {
    const server = createServer();
    const turns = Object.freeze({ script: [...options.script], finalText: options.finalText });
    const standIn = new ModelStandIn(server, turns);
    server.on('request', (req, res) => void standIn.#handle(req, res));
    server.on('connect', (req: IncomingMessage, socket: Socket) => {
      standIn.foreign.push(req.url ?? '');
      socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
    });
    server.on('connection', (socket) => {
      standIn.#sockets.add(socket);
      socket.once('close', () => standIn.#sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return standIn;
  }

  /** `http://127.0.0.1:PORT`, without a trailing slash. */
  get origin(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** The recorded requests of one method and path (query string ignored). */
  requestsTo(method: string, path: string): RecordedRequest[] {
    return this.requests.filter((request) => request.method === method && request.path.split('?')[0] === path);
  }

  /** Closes the port and every open connection. */
  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? '/';
    if (!url.startsWith('/')) {
      this.foreign.push(url);
      res.writeHead(403, { 'content-length': '0' }).end();
      return;
    }
    const text = await readBody(req);
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = text;
    }
    const method = req.method ?? 'GET';
    this.requests.push({ method, path: url, body });
    const path = url.split('?')[0];
    if (method === 'POST' && path === '/v1/messages') return answerMessages(body, this.#turns, res);
    if (method === 'POST' && path === '/v1/messages/count_tokens') return answerCountTokens(body, res);
    if (method === 'POST' && path === '/v1/responses') return answerResponses(body, this.#turns, res);
    if (method === 'GET' && path === '/v1/models') return sendJson(res, 200, { object: 'list', data: [], models: [] });
    if (method === 'HEAD' || method === 'GET') return sendJson(res, 200, {});
    sendJson(
      res, 404, { error: { type: 'not_found_error', message: `the stand-in does not serve ${method} ${path}` } },
    );
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
