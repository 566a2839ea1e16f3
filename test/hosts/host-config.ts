// How a host test configures and runs a real host: FactLane's entry exactly as docs/hosts.md tells a user
// (`configureHost`, which runs `factlane setup`), the model provider pointed at the stand-in (test-only), and a
// scrubbed environment with a
// temp HOME, the host's config dir under it, telemetry and auto-update off, and every proxy variable pointed at
// the stand-in so a request for any other host is refused and recorded instead of leaving the machine.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse, stringify } from 'smol-toml';
import { FACTLANE_BIN } from '../helpers/mcp.js';
import type { HostInstall } from './host-install.js';

export type HostName = 'claude-code' | 'codex';

/** Where a host lives for one test and how FactLane is launched for it. */
export interface HostSetup {
  readonly home: string;
  readonly db: string;
  readonly writeProfile: string;
}

const HOST_TIMEOUT_MS = 120_000;

/** Codex's config dir under a temp home: `$HOME/.codex`, its default. */
export const codexHome = (home: string) => join(home, '.codex');

/** The launcher argv docs/hosts.md gives a user for `host` (after the command). */
export function factLaneArgs(host: HostName, setup: HostSetup): string[] {
  return ['--db', setup.db, '--host-id', host, '--write-profile', setup.writeProfile];
}

/**
 * The environment a host runs in: nothing inherited but PATH (with this Node first, for the `#!/usr/bin/env node`
 * of FactLane and the launchers), HOME and the config dir at the temp home, a dummy key (and for Claude Code the
 * API base URL at the stand-in: even `claude mcp list` calls the API), telemetry and auto-update off, and every
 * proxy variable at `proxy`, the stand-in's origin (loopback itself is exempt).
 */
export function hostEnv(host: HostName | 'inspector', home: string, proxy: string): Record<string, string> {
  const proxies = Object.fromEntries(['HTTPS_PROXY', 'HTTP_PROXY', 'ALL_PROXY']
    .flatMap((name) => [[name, proxy], [name.toLowerCase(), proxy]]));
  const common = {
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: home, LANG: 'C.UTF-8', TERM: 'dumb',
    ...proxies, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost',
  };
  const own: Record<string, string> = host === 'claude-code'
    ? {
      ANTHROPIC_BASE_URL: proxy, ANTHROPIC_API_KEY: 'stand-in-key', DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1',
    }
    : host === 'codex' ? { CODEX_HOME: codexHome(home), STAND_IN_API_KEY: 'stand-in-key' } : {};
  return { ...common, ...own };
}

function readToml(path: string): Record<string, unknown> {
  return existsSync(path) ? (parse(readFileSync(path, 'utf8')) as Record<string, unknown>) : {};
}

/** Merges `patch` (one level deep per table) into the TOML file at `path`, through smol-toml. */
function mergeToml(path: string, patch: Record<string, unknown>): void {
  const config = readToml(path);
  for (const [key, value] of Object.entries(patch)) {
    const old = config[key];
    const both = typeof value === 'object' && !Array.isArray(value) && typeof old === 'object' && !Array.isArray(old);
    config[key] = both ? { ...(old as object), ...(value as object) } : value;
  }
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, stringify(config));
}

/**
 * Configures FactLane in `host` the way docs/hosts.md tells a user: `factlane setup <host> --db DB --write-profile P`,
 * which writes `[mcp_servers.factlane]` into `$CODEX_HOME/config.toml`, or runs `claude mcp add --scope user
 * factlane -- …` with the installed `claude` first on the PATH. Throws when setup does not exit 0.
 */
export function configureHost(install: HostInstall, host: HostName, setup: HostSetup): void {
  const env = hostEnv(host, setup.home, 'http://127.0.0.1:9');
  env.PATH = `${join(install.prefix, 'node_modules/.bin')}:${env.PATH}`;
  const configured = spawnSync(process.execPath, [
    FACTLANE_BIN, 'setup', host, '--db', setup.db, '--write-profile', setup.writeProfile,
  ], { env, encoding: 'utf8', timeout: HOST_TIMEOUT_MS });
  if (configured.status !== 0) {
    const why = configured.error?.message ?? `${configured.stderr}${configured.stdout}`;
    throw new Error(`factlane setup ${host} exited ${configured.status}: ${why}`);
  }
}

/**
 * Points Codex's model at the stand-in (test-only, not user configuration): a `stand-in` provider speaking the
 * Responses API, and off switches for the update check, analytics and the plugin sync that otherwise reach
 * github.com and chatgpt.com.
 */
export function pointCodexAtStandIn(home: string, origin: string): void {
  mergeToml(join(codexHome(home), 'config.toml'), {
    model: 'stand-in', model_provider: 'stand-in', check_for_update_on_startup: false,
    model_providers: {
      'stand-in': { name: 'stand-in', base_url: `${origin}/v1`, wire_api: 'responses', env_key: 'STAND_IN_API_KEY' },
    },
    analytics: { enabled: false },
    features: { plugins: false },
  });
}

/**
 * Pre-approves FactLane's tools in `host`, so a non-interactive run calls them without a blanket bypass: Codex
 * gets `default_tools_approval_mode = "approve"` on `[mcp_servers.factlane]` (without it `codex exec` answers each
 * call "MCP tool call requires approval, but approval policy is never"); Claude Code gets the permission rule
 * `mcp__factlane` in `~/.claude/settings.json` (without it `claude -p` answers "Claude requested permissions to use
 * …"). FactLane's write profile, not the host's approval, decides what a call may write.
 */
export function approveFactLaneTools(host: HostName, home: string): void {
  if (host === 'codex') {
    const path = join(codexHome(home), 'config.toml');
    const config = readToml(path) as { mcp_servers?: { factlane?: Record<string, unknown> } };
    if (config.mcp_servers?.factlane === undefined) throw new Error('configure the factlane entry first');
    config.mcp_servers.factlane.default_tools_approval_mode = 'approve';
    writeFileSync(path, stringify(config));
    return;
  }
  const path = join(home, '.claude', 'settings.json');
  const settings = existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>) : {};
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify({ ...settings, permissions: { allow: ['mcp__factlane'] } }, null, 2)}\n`);
}

/** What a host process did. */
export interface HostRun {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a host command to its end (killed after two minutes), stdin closed, in `cwd`. */
export function runHost(
  command: string, args: readonly string[], cwd: string, env: Record<string, string>,
): Promise<HostRun> {
  const [file, argv] = command.endsWith('.js') ? [process.execPath, [command, ...args]] : [command, [...args]];
  const child = spawn(file, argv, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk; });
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk; });
  const timer = setTimeout(() => child.kill('SIGKILL'), HOST_TIMEOUT_MS);
  return new Promise((resolve) => child.once('close', (status, signal) => {
    clearTimeout(timer);
    resolve({ status, signal, stdout, stderr });
  }));
}
