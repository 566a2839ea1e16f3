import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// A raw newline-delimited JSON-RPC peer of the built `factlane` launcher, for the fuzz and wire parts: it frames
// stdout itself, so every line the server writes is checked (a line that is not one JSON-RPC message is counted),
// answers are matched to requests by id, and the child's RSS can be sampled while it runs.

/** The built launcher (`npm run build`). */
export const FACTLANE_BIN = fileURLToPath(new URL('../../dist/bin/factlane.js', import.meta.url));

/** The MCP protocol revision the peer announces. */
const PROTOCOL_VERSION = '2025-06-18';

/** How a server process ended. */
export interface PeerExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** One JSON-RPC response as read from stdout. */
export interface RpcResponse {
  readonly id: number | string | null;
  readonly result?: Record<string, unknown>;
  readonly error?: { code: number; message: string };
}

const LIVE_PEERS = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of LIVE_PEERS) child.kill('SIGKILL');
});

function isFrame(value: unknown): boolean {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const message = value as Record<string, unknown>;
  if (message.jsonrpc !== '2.0') return false;
  if (typeof message.method === 'string') return true;
  return 'id' in message && ('result' in message || 'error' in message);
}

/** A launched server and the raw JSON-RPC channel to it. */
export class StdioPeer {
  readonly child: ChildProcess;
  readonly exited: Promise<PeerExit>;
  /** Lines on stdout that are not one JSON-RPC message. */
  nonFrameLines = 0;
  /** JSON-RPC frames read from stdout. */
  frames = 0;
  /** Responses whose id matched no pending request (answers to requests sent raw are kept here too). */
  readonly unmatched: RpcResponse[] = [];
  #exit: PeerExit | null = null;
  #buffer = '';
  #nextId = 1;
  readonly #pending = new Map<number, (response: RpcResponse) => void>();
  #stderrTail = '';

  private constructor(args: readonly string[]) {
    this.child = spawn(process.execPath, [FACTLANE_BIN, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    LIVE_PEERS.add(this.child);
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => {
      LIVE_PEERS.delete(this.child);
      this.#exit = { code, signal };
      resolve(this.#exit);
    }));
    this.child.stdin!.on('error', () => undefined);
    this.child.stdout!.setEncoding('utf8');
    this.child.stdout!.on('data', (chunk: string) => this.#onData(chunk));
    this.child.stderr!.setEncoding('utf8');
    this.child.stderr!.on('data', (chunk: string) => { this.#stderrTail = (this.#stderrTail + chunk).slice(-4000); });
  }

  /** Starts `factlane args…` (no initialize yet). */
  static spawn(args: readonly string[]): StdioPeer {
    return new StdioPeer(args);
  }

  /** Starts the server and runs the initialize handshake. */
  static async start(args: readonly string[], timeoutMs = 30_000): Promise<StdioPeer> {
    const peer = new StdioPeer(args);
    await peer.initialize(timeoutMs);
    return peer;
  }

  /** The process's exit, or null while it runs. */
  get exit(): PeerExit | null {
    return this.#exit;
  }

  /** The last 4000 characters of standard error (for a failure message; never put into figures). */
  get stderrTail(): string {
    return this.#stderrTail;
  }

  #onData(chunk: string): void {
    this.#buffer += chunk;
    let index = this.#buffer.indexOf('\n');
    while (index >= 0) {
      const line = this.#buffer.slice(0, index);
      this.#buffer = this.#buffer.slice(index + 1);
      this.#onLine(line);
      index = this.#buffer.indexOf('\n');
    }
  }

  #onLine(line: string): void {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      this.nonFrameLines += 1;
      return;
    }
    if (!isFrame(message)) {
      this.nonFrameLines += 1;
      return;
    }
    this.frames += 1;
    const response = message as RpcResponse & { method?: string };
    if (typeof response.method === 'string') return;
    const resolve = typeof response.id === 'number' ? this.#pending.get(response.id) : undefined;
    if (resolve === undefined) {
      this.unmatched.push(response);
      return;
    }
    this.#pending.delete(response.id as number);
    resolve(response);
  }

  /** Bytes left on stdout after the last newline (a frame cut short). */
  get partialLine(): string {
    return this.#buffer;
  }

  /** Writes raw bytes to stdin; resolves once they are handed to the pipe, or when the process has ended. */
  writeRaw(data: string | Buffer): Promise<void> {
    if (this.#exit !== null) return Promise.resolve();
    return new Promise((resolve) => {
      if (this.child.stdin!.write(data)) resolve();
      else {
        this.child.stdin!.once('drain', () => resolve());
        void this.exited.then(() => resolve());
      }
    });
  }

  /** Sends one request and resolves with its response, or with null after `timeoutMs` or when the process ends. */
  request(
    method: string, params: Record<string, unknown> | undefined, timeoutMs = 30_000,
  ): Promise<RpcResponse | null> {
    const id = this.#nextId++;
    const frame = `${JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) })}\n`;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        resolve(null);
      }, timeoutMs);
      const done = (response: RpcResponse | null) => {
        clearTimeout(timer);
        resolve(response);
      };
      this.#pending.set(id, done);
      void this.exited.then(() => {
        if (this.#pending.delete(id)) done(null);
      });
      if (this.#exit === null) this.child.stdin!.write(frame);
    });
  }

  /** Sends a notification (no answer expected). */
  notify(method: string, params?: Record<string, unknown>): void {
    if (this.#exit !== null) return;
    this.child.stdin!.write(
      `${JSON.stringify({ jsonrpc: '2.0', method, ...(params === undefined ? {} : { params }) })}\n`,
    );
  }

  /** The MCP handshake; throws when the server does not answer. */
  async initialize(timeoutMs = 30_000): Promise<void> {
    const answer = await this.request(
      'initialize',
      { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'factlane-qualify', version: '0' } },
      timeoutMs,
    );
    if (answer?.result === undefined) throw new Error(
      `initialize failed (exit ${JSON.stringify(this.#exit)}): ${this.#stderrTail.split('\n')[0] ?? ''}`,
    );
    this.notify('notifications/initialized');
  }

  /** tools/call with `args` as the arguments object; null when unanswered. */
  callTool(name: string, args: unknown, timeoutMs = 30_000): Promise<RpcResponse | null> {
    return this.request('tools/call', { name, arguments: args }, timeoutMs);
  }

  /** The child's resident set size in MB (VmRSS), or 0 once it has exited. */
  rssMb(): number {
    try {
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.child.pid}/status`, 'utf8'));
      return match ? Math.round(Number(match[1]) / 1024) : 0;
    } catch {
      return 0;
    }
  }

  /** Stops reading stdout (the pipe fills, the server's writes block). */
  pauseReading(): void {
    this.child.stdout!.pause();
  }

  resumeReading(): void {
    this.child.stdout!.resume();
  }

  /** Closes stdin and waits up to `timeoutMs` for the exit; SIGKILLs it after that. Returns the exit. */
  async close(timeoutMs = 10_000): Promise<PeerExit & { timedOut: boolean }> {
    this.child.stdin!.end();
    const timeout = new Promise<null>((resolve) => setTimeout(() => resolve(null), timeoutMs).unref());
    const exit = await Promise.race([this.exited, timeout]);
    if (exit !== null) return { ...exit, timedOut: false };
    this.child.kill('SIGKILL');
    return { ...(await this.exited), timedOut: true };
  }

  /** SIGKILLs the process if it still runs. */
  async kill(): Promise<void> {
    if (this.#exit === null) this.child.kill('SIGKILL');
    await this.exited;
  }
}
