import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { REPO_ROOT } from '../helpers/storage.js';

// The real processes the load and kills parts drive: built `factlane` servers over stdio through the SDK client,
// and the operator CLIs, every one tracked by a ChildRegistry so a part never leaves a child behind.

export const FACTLANE_BIN = join(REPO_ROOT, 'dist/bin/factlane.js');
export const ADMIN_BIN = join(REPO_ROOT, 'dist/bin/factlane-admin.js');
export const MIGRATE_BIN = join(REPO_ROOT, 'dist/bin/factlane-migrate.js');
/** Bytes of a child's stderr kept for a failure message (the tail). */
const STDERR_TAIL_BYTES = 4000;
/** A tool call that takes longer than this is a failure of the call, not a slow answer. */
const CALL_TIMEOUT_MS = 60_000;

/** How a child process ended. */
export type Exit = { code: number | null; signal: NodeJS.Signals | null };

/** A public record of an envelope: the fields the parts track. */
export interface PublicRecord {
  readonly record_id: string;
  readonly memory_id: string;
  readonly revision: number;
  readonly lifecycle_state: string;
  readonly fact: string;
}

/** A memory_* envelope as the parts read it. */
export interface Envelope {
  readonly status: string;
  readonly error_code?: string;
  readonly idempotent_replay?: boolean;
  readonly degradation?: string | null;
  readonly results: readonly PublicRecord[];
}

/** One call's outcome: the envelope, or why there is none (tool error, closed connection, timeout), and its time. */
export interface CallOutcome {
  readonly envelope: Envelope | null;
  readonly failure: string | null;
  readonly ms: number;
}

/** `STATUS`, `BLOCKED:CODE` or `DEGRADED:REASON` of an outcome, or `FAILED` when the call gave no envelope. */
export function outcomeLabel(outcome: CallOutcome): string {
  const envelope = outcome.envelope;
  if (envelope === null) return 'FAILED';
  const detail = envelope.error_code ?? envelope.degradation ?? null;
  return detail ? `${envelope.status}:${detail}` : envelope.status;
}

/** Every child a part started; killAll() SIGKILLs those still running (also when the qualify process exits). */
export class ChildRegistry {
  readonly #children = new Set<ChildProcess>();
  readonly #onExit = () => this.killAll();

  constructor() {
    process.once('exit', this.#onExit);
  }

  track(child: ChildProcess): void {
    this.#children.add(child);
    child.once('exit', () => this.#children.delete(child));
  }

  /** SIGKILLs every tracked child still running; returns how many there were. */
  killAll(): number {
    let killed = 0;
    for (const child of this.#children) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        killed += 1;
      }
    }
    this.#children.clear();
    return killed;
  }

  dispose(): number {
    process.removeListener('exit', this.#onExit);
    return this.killAll();
  }
}

/** What a server is launched with. */
export interface ServerOptions {
  readonly dbPath: string;
  readonly hostId: string;
  readonly writeProfile: 'read-only' | 'delegated-candidate' | 'owner-current' | 'repo-verifier' | 'automated-verifier';
  readonly projectId?: string;
}

/** A built `factlane` server on one database, driven by an SDK client over stdio; its child is exposed to kill it. */
export class ServedProcess {
  readonly client: Client;
  readonly child: ChildProcess;
  readonly exited: Promise<Exit>;
  readonly #stderr: { tail: string };

  private constructor(client: Client, child: ChildProcess, stderr: { tail: string }) {
    this.client = client;
    this.child = child;
    this.#stderr = stderr;
    this.exited = child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve({ code: child.exitCode, signal: child.signalCode })
      : new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Starts the launcher and completes the MCP initialize handshake. */
  static async start(registry: ChildRegistry, options: ServerOptions): Promise<ServedProcess> {
    const args =
      [FACTLANE_BIN, '--db', options.dbPath, '--host-id', options.hostId, '--write-profile', options.writeProfile];
    if (options.projectId !== undefined) args.push('--project-id', options.projectId);
    const transport = new StdioClientTransport({ command: process.execPath, args, stderr: 'pipe' });
    const stderr = { tail: '' };
    transport.stderr!.on(
      'data', (chunk: Buffer) => { stderr.tail = (stderr.tail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES); },
    );
    const client = new Client({ name: 'factlane-qualify', version: '0.0.0' });
    // The transport spawns the child inside connect(); it is tracked as soon as it exists.
    const connecting = client.connect(transport);
    const child = (transport as unknown as { _process?: ChildProcess })._process;
    if (child === undefined) throw new Error('the SDK stdio transport did not expose its child process');
    registry.track(child);
    await connecting;
    return new ServedProcess(client, child, stderr);
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The tail of the server's stderr (for a failure message only; it may name paths, so never a figure). */
  stderrTail(): string {
    return this.#stderr.tail;
  }

  /** Calls a tool with `{ request }`; never throws: a tool error or a lost connection is a failure of the call. */
  async call(name: string, request: Record<string, unknown>): Promise<CallOutcome> {
    const started = performance.now();
    try {
      const result = (await this.client.callTool(
        { name, arguments: { request } }, undefined, { timeout: CALL_TIMEOUT_MS },
      )) as CallToolResult;
      const ms = performance.now() - started;
      if (result.isError) return { envelope: null, failure: 'isError', ms };
      return { envelope: result.structuredContent as unknown as Envelope, failure: null, ms };
    } catch (error) {
      return {
        envelope: null,
        failure: /closed/i.test((error as Error).message) ? 'closed' : (error as Error).message.slice(0, 200),
        ms: performance.now() - started,
      };
    }
  }

  /** SIGKILLs the server; true when it was still running. */
  kill(): boolean {
    if (!this.alive) return false;
    return this.child.kill('SIGKILL');
  }

  /** Closes the client (stdin EOF; the server should exit 0 on its own) and resolves with the exit. */
  async close(): Promise<Exit> {
    await this.client.close().catch(() => undefined);
    return this.exited;
  }
}

/** How an operator command ended, and whether the part killed it. */
export interface CommandRun {
  readonly exit: Exit;
  /** True when the part sent SIGKILL while the command was still running. */
  readonly killed: boolean;
  readonly ms: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `node bin args…` to completion, or SIGKILLs it after `killAfterMs` if it is still running then. Output is
 * kept whole (operator commands print little).
 */
export function runCommand(
  registry: ChildRegistry, bin: string, args: readonly string[], killAfterMs?: number,
): Promise<CommandRun> {
  const started = performance.now();
  const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  registry.track(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => { stdout += chunk.toString('utf8'); });
  child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8'); });
  let killed = false;
  const timer = killAfterMs === undefined ? undefined : setTimeout(() => {
    if (child.exitCode === null && child.signalCode === null) killed = child.kill('SIGKILL');
  }, killAfterMs);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (timer !== undefined) clearTimeout(timer);
      resolve({
        exit: { code, signal }, killed: killed && signal === 'SIGKILL', ms: performance.now() - started, stdout, stderr,
      });
    });
  });
}
