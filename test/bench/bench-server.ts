import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

// Starting the servers a suite measures: the built `factlane` launcher and the bare SDK echo server.

const FACTLANE = fileURLToPath(new URL('../../bin/factlane.js', import.meta.url));
/** The bare SDK echo server the suites compare FactLane against. */
export const ECHO_SERVER = fileURLToPath(new URL('./echo-server.js', import.meta.url));
/** A bare SDK server answering every call with one fixed envelope (FACTLANE_BENCH_ENVELOPE). */
export const ENVELOPE_SERVER = fileURLToPath(new URL('./envelope-server.js', import.meta.url));

/**
 * The `node` arguments that start the built launcher with `launcherArgs`, after any extra Node.js flags
 * from `BENCH_SERVER_NODE_ARGS` (space-separated, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile
 * every FactLane server a suite spawns under load).
 */
export function factlaneArgs(...launcherArgs: string[]): string[] {
  const nodeFlags = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '');
  return [...nodeFlags, FACTLANE, ...launcherArgs];
}

/**
 * A client connected over stdio to `node args…` (server stderr ignored, `env` added to the SDK's default
 * environment), and the time to the initialize response.
 */
export async function connectBenchClient(name: string, args: string[],
  env: Record<string, string> = {}): Promise<{ client: Client; transport: StdioClientTransport; startupMs: number }> {
  const started = performance.now();
  const transport = new StdioClientTransport({ command: process.execPath, args, stderr: 'ignore', env });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  return { client, transport, startupMs: performance.now() - started };
}
