// MCP test helpers: a real SDK Client wired to createFactLaneServer over the in-memory transport (the
// production stack of src/cli/factlane-launch.ts on a temp database), result readers, and the built launcher.
import { spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MemoryAdapter } from '../../src/adapter/memory-adapter.js';
import type { Logger } from '../../src/core/logger.js';
import { PACKAGE_VERSION } from '../../src/core/package-info.js';
import { SYSTEM_CLOCK, formatTimestamp } from '../../src/core/time.js';
import { freshBindingJson } from '../../src/embedding/embedding-binding.js';
import { EMBEDDING_PROFILES } from '../../src/embedding/embedding-profiles.js';
import { LocalHashProvider } from '../../src/embedding/local-hash-provider.js';
import { createContextBinding, createHostBinding, type ContextBindingInput } from '../../src/gateway/bindings.js';
import { MemoryGateway } from '../../src/gateway/memory-gateway.js';
import { createFactLaneServer, type FactLaneServerOptions } from '../../src/server/factlane-server.js';
import { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import type { WriteProfile } from '../../schema/enums.js';
import { REPO_ROOT } from './storage.js';

export const LOCAL_HASH = EMBEDDING_PROFILES['local-hash-384']!;
export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Opens (creating) an engine bound to local-hash-384, exactly as the launcher does. */
export async function openLocalHashEngine(dbPath: string): Promise<SQLiteVecEngine> {
  const provider = new LocalHashProvider();
  return SQLiteVecEngine.open({
    dbPath,
    newDatabaseBinding: async () => ({ vectorDimension: LOCAL_HASH.outputDimension, bindingJson: freshBindingJson(
      LOCAL_HASH, await provider.statusCheck(), formatTimestamp(SYSTEM_CLOCK()),
    ) }),
  });
}

/** A logger that keeps its lines for assertions. */
export function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines, info: (m) => lines.push(`info: ${m}`), warn: (m) => lines.push(`warn: ${m}`),
    error: (m) => lines.push(`error: ${m}`),
  };
}

interface Teardown { teardown(fn: () => unknown): void }

export interface ConnectOptions {
  readonly hostId?: string;
  readonly writeProfile?: WriteProfile;
  readonly context?: ContextBindingInput;
  /** Replaces the gateway (fault injection); the engine is still opened. */
  readonly gateway?: FactLaneServerOptions['gateway'];
}

/** A connected MCP client on a fresh engine in `dbPath`; everything closes at teardown. */
export async function connectClient(t: Teardown, dbPath: string, options: ConnectOptions = {}) {
  const engine = await openLocalHashEngine(dbPath);
  const hostBinding = createHostBinding(options.hostId ?? 'test-host');
  const contextBinding = options.context ? createContextBinding(options.context) : null;
  const adapter = new MemoryAdapter({
    engine, provider: new LocalHashProvider(), writeProfile: options.writeProfile ?? 'read-only',
    hostId: options.hostId ?? 'test-host',
  });
  const gateway = options.gateway ?? new MemoryGateway({ adapter, hostBinding, contextBinding, transport: 'stdio' });
  const logger = recordingLogger();
  const server = createFactLaneServer({ gateway, version: PACKAGE_VERSION, logger });
  const client = new Client({ name: 'factlane-test', version: '0.0.0' });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  await client.connect(clientTransport);
  t.teardown(async () => {
    await client.close();
    await server.close();
    await engine.close();
  });
  return { client, engine, logger, hostBinding, contextBinding };
}

/** Calls a tool with `arguments` as given and returns the raw MCP result. */
export async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** The single text item of a result. */
export function textOf(result: CallToolResult): string {
  if (result.content.length !== 1 || result.content[0]!.type !== 'text')
    throw new Error(`expected one text item, got ${JSON.stringify(result.content)}`);
  return (result.content[0] as { text: string }).text;
}

/**
 * JSON with object keys sorted by UTF-16 code units at every depth, no whitespace (CONTRACT.md §2.2), written
 * independently of src.
 */
export function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${keys.map((k) => `${JSON.stringify(k)}:${sortedJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export const FACTLANE_BIN = join(REPO_ROOT, 'dist/bin/factlane.js');

/** A private HOME, XDG_DATA_HOME and working directory under `root`, to prove what a launch creates. */
export function launchSandbox(root: string) {
  const dirs = { home: join(root, 'home'), xdg: join(root, 'xdg'), cwd: join(root, 'cwd') };
  for (const dir of Object.values(dirs)) mkdirSync(dir);
  const env = { HOME: dirs.home, XDG_DATA_HOME: dirs.xdg };
  /** Every path under `root`, relative and sorted. */
  const tree = (): string[] =>
    (readdirSync(root, { recursive: true }) as string[]).map((p) => relative(root, join(root, p))).sort();
  /** Runs the built launcher to completion in the sandbox (environment replaced, PATH kept). */
  const run = (args: readonly string[], extraEnv: Record<string, string> = {}): SpawnSyncReturns<string> =>
    spawnSync(process.execPath, [FACTLANE_BIN, ...args], {
      encoding: 'utf8', cwd: dirs.cwd, env: { PATH: process.env.PATH ?? '', ...env, ...extraEnv }, input: '',
      timeout: 60_000,
    });
  return { root, ...dirs, env, tree, run };
}

/** How a launched server process ended. */
export type Exit = { code: number | null; signal: NodeJS.Signals | null };

/**
 * Starts the built launcher with `args` through the SDK stdio client. Exposes the child process (the SDK
 * keeps it private) to observe its exit and every kill() the client sends; closes the client at teardown.
 */
export async function startLauncher(
  t: Teardown, args: readonly string[], clientName = 'factlane-test', env: Record<string, string> = {},
) {
  const transport = new StdioClientTransport({
    command: process.execPath, args: [FACTLANE_BIN, ...args], stderr: 'pipe',
    env: { ...getDefaultEnvironment(), ...env },
  });
  let stderr = '';
  transport.stderr!.on('data', (chunk) => { stderr += chunk; });
  const client = new Client({ name: clientName, version: '0.0.0' });
  await client.connect(transport);
  const child = (transport as unknown as { _process: ChildProcess })._process;
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const kills: unknown[] = [];
  const kill = child.kill.bind(child);
  child.kill = (signal?: NodeJS.Signals | number) => { kills.push(signal); return kill(signal); };
  t.teardown(() => client.close());
  return { client, child, exited, kills, stderr: () => stderr };
}
