import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';

/** The MCP protocol revision the session offers at initialize. */
const PROTOCOL_VERSION = '2025-06-18';
const CALL_TIMEOUT_MS = 30_000;

interface Pending {
  resolve(result: Record<string, unknown>): void;
  reject(error: Error): void;
}

/**
 * One MCP session with a launched `factlane` over real stdio: newline-delimited JSON-RPC 2.0, as a host speaks
 * it. It is the demo's client; it reads only answers to its own requests and keeps the server's stderr.
 */
export class StdioSession {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #pending = new Map<number, Pending>();
  readonly #stderr: string[] = [];
  readonly #exited: Promise<number | null>;
  readonly #timeoutMs: number;
  #nextId = 1;
  /** Set once the server process exited or could not be started: every call after it fails with it. */
  #ended: Error | undefined;

  private constructor(child: ChildProcessWithoutNullStreams, timeoutMs: number) {
    this.#child = child;
    this.#timeoutMs = timeoutMs;
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => this.#stderr.push(chunk));
    createInterface({ input: child.stdout }).on('line', (line) => this.#answer(line));
    this.#exited = new Promise((resolve) => child.on('exit', (code) => {
      this.#end(new Error(`factlane exited (${code}): ${this.stderr}`));
      resolve(code);
    }));
    // A write to a server that is gone fails with EPIPE: the exit above says what happened, not an unhandled error.
    child.stdin.on('error', () => {});
    child.on('error', (error) => this.#end(new Error(`factlane could not be run: ${error.message}`)));
  }

  #end(error: Error): void {
    this.#ended ??= error;
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }

  /** Launches `node LAUNCHER ...args` and completes the MCP initialize handshake; each answer may take `timeoutMs`. */
  static async open(launcher: string, args: readonly string[], timeoutMs = CALL_TIMEOUT_MS): Promise<StdioSession> {
    const child = spawn(process.execPath, [launcher, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    const session = new StdioSession(child, timeoutMs);
    try {
      await session.#request('initialize', {
        protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'factlane-demo', version: '1' },
      });
    } catch (error) {
      // A server that never answered must not keep the demo alive through its pipes.
      child.kill('SIGKILL');
      throw error;
    }
    session.#send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return session;
  }

  get stderr(): string {
    return this.#stderr.join('');
  }

  /** Calls one tool with `{ request }` and returns the envelope (the result's structured content). */
  async callTool(name: string, request: Record<string, unknown>): Promise<Record<string, unknown>> {
    const result = await this.#request('tools/call', { name, arguments: { request } });
    return result.structuredContent as Record<string, unknown>;
  }

  /** Closes stdin, which shuts the server down cleanly; resolves to its exit code. */
  async close(): Promise<number | null> {
    this.#child.stdin.end();
    return this.#exited;
  }

  #request(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      if (this.#ended) {
        reject(this.#ended);
        return;
      }
      const timeout = () => {
        this.#pending.delete(id);
        reject(new Error(`no answer to ${method} in ${this.#timeoutMs} ms`));
      };
      const timer = setTimeout(timeout, this.#timeoutMs);
      const settle = (fn: () => void) => { clearTimeout(timer); fn(); };
      this.#pending.set(id, {
        resolve: (result) => settle(() => resolve(result)), reject: (error) => settle(() => reject(error)),
      });
      this.#send({ jsonrpc: '2.0', id, method, params });
    });
  }

  #send(message: Record<string, unknown>): void {
    this.#child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  #answer(line: string): void {
    let message: { id?: unknown; result?: Record<string, unknown>; error?: { message?: string } };
    try {
      message = JSON.parse(line);
    } catch {
      return;
    }
    const pending = typeof message.id === 'number' ? this.#pending.get(message.id) : undefined;
    if (!pending) return;
    this.#pending.delete(message.id as number);
    if (message.error) pending.reject(new Error(`MCP error: ${message.error.message ?? 'unknown'}`));
    else pending.resolve(message.result ?? {});
  }
}
