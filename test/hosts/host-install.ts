// Installs the pinned real hosts (Claude Code, Codex, the MCP Inspector) from the npm registry into one cache
// folder under the system temp dir, outside the project, keyed by the pinned versions: the first host test of a
// run installs, the others reuse it. npm's allow-scripts policy skips Claude Code's postinstall, so the install
// runs its `install.cjs` itself, as a user does once. When the registry cannot be reached the install fails, the
// failure is remembered for a few minutes (so the other files skip at once), and the tests skip with the reason.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** The pinned packages, exact versions (decision 0024). */
export const HOST_PACKAGES = Object.freeze({
  claude: { name: '@anthropic-ai/claude-code', version: '2.1.332' },
  codex: { name: '@openai/codex', version: '0.171.0' },
  inspector: { name: '@modelcontextprotocol/inspector', version: '2.12.0' },
});

const INSTALL_TIMEOUT_MS = 5 * 60_000;
/** One retry, soon: without a registry the run should learn it in seconds, not minutes (the caller's env wins). */
const NPM_FETCH_DEFAULTS = {
  npm_config_fetch_retries: '1', npm_config_fetch_retry_mintimeout: '2000', npm_config_fetch_retry_maxtimeout: '10000',
  npm_config_fetch_timeout: '60000',
};
/** How long a failed install is remembered: the rest of one run, not the next one. */
const FAILURE_MEMORY_MS = 10 * 60_000;

/** The installed hosts: the cache folder and each host's entry point. */
export interface HostInstall {
  readonly prefix: string;
  /** Claude Code's native binary (placed by install.cjs). */
  readonly claude: string;
  /** Codex's launcher (a Node script that runs the native binary). */
  readonly codex: string;
  /** The Inspector's launcher (a Node script; `--cli` selects the CLI client). */
  readonly inspector: string;
}

export type InstallOutcome =
  | { readonly ok: true; readonly install: HostInstall }
  | { readonly ok: false; readonly reason: string };

const specs = () => Object.values(HOST_PACKAGES).map((p) => `${p.name}@${p.version}`);

/** The cache folder of the pinned versions: `$TMPDIR/factlane-hosts-<hash of the versions>`. */
export function hostCacheDir(): string {
  const key = createHash('sha256').update(specs().join('\n')).digest('hex').slice(0, 16);
  return join(tmpdir(), `factlane-hosts-${key}`);
}

function entryPoints(prefix: string): HostInstall {
  const modules = join(prefix, 'node_modules');
  return Object.freeze({
    prefix,
    claude: join(modules, '@anthropic-ai/claude-code/bin/claude.exe'),
    codex: join(modules, '@openai/codex/bin/codex.js'),
    inspector: join(modules, '@modelcontextprotocol/inspector/clients/launcher/build/index.js'),
  });
}

/** Where to install and with which extra environment for npm (a test points the registry elsewhere). */
export interface InstallOptions {
  readonly cacheDir?: string;
  readonly env?: Record<string, string>;
}

function run(command: string, args: readonly string[], cwd: string, env: Record<string, string>): string | null {
  const result = spawnSync(command, args, {
    cwd, encoding: 'utf8', timeout: INSTALL_TIMEOUT_MS,
    // `npm run --silent` exports loglevel=silent, which would leave a failed install without its reason.
    env: { ...NPM_FETCH_DEFAULTS, ...process.env, npm_config_loglevel: 'error', ...env },
  });
  if (result.status === 0) return null;
  const lines = `${result.stderr ?? ''}${result.stdout ?? ''}`.trim().split('\n')
    .filter((line) => !/EBADENGINE/.test(line));
  const telling = lines.filter((line) => /npm error (code|.*request to)/.test(line));
  const output = (telling.length > 0 ? telling : lines.slice(-3)).join(' | ') || '(no output)';
  const how = result.error ? `failed (${result.error.message})` : `exited ${result.status}`;
  return `${[command, ...args].join(' ')} ${how}: ${output}`;
}

/** Installs into a fresh folder beside the cache folder, then renames it into place (whole or not at all). */
function installFresh(cacheDir: string, env: Record<string, string>): string | null {
  const staging = `${cacheDir}.staging-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  const npmArgs = ['install', '--prefix', staging, '--no-audit', '--no-fund', '--ignore-scripts', ...specs()];
  const failed = run('npm', npmArgs, staging, env)
    ?? run(process.execPath, [join(staging, 'node_modules/@anthropic-ai/claude-code/install.cjs')], staging, env);
  if (failed !== null) {
    rmSync(staging, { recursive: true, force: true });
    return failed;
  }
  writeFileSync(join(staging, 'installed.json'), `${JSON.stringify(specs())}\n`);
  try {
    renameSync(staging, cacheDir);
  } catch {
    rmSync(staging, { recursive: true, force: true }); // another run installed it first: use that one
  }
  return null;
}

/**
 * Returns the installed pinned hosts, installing them first when the cache folder (default `hostCacheDir()`)
 * lacks them. Never throws: a failed install (no registry, a broken package) comes back as `{ ok: false, reason }`
 * for the test to skip with, and is remembered beside the cache folder for ten minutes.
 */
export function installHosts(options: InstallOptions = {}): InstallOutcome {
  const cacheDir = options.cacheDir ?? hostCacheDir();
  const failureFile = `${cacheDir}.failed`;
  const installed = () => existsSync(join(cacheDir, 'installed.json'));
  if (!installed() && existsSync(failureFile) && Date.now() - statSync(failureFile).mtimeMs < FAILURE_MEMORY_MS) {
    return { ok: false, reason: readFileSync(failureFile, 'utf8').trim() };
  }
  if (!installed()) {
    mkdirSync(dirname(cacheDir), { recursive: true });
    const failed = installFresh(cacheDir, options.env ?? {});
    if (failed !== null && !installed()) {
      const reason = `the pinned hosts could not be installed from the npm registry: ${failed}`;
      writeFileSync(failureFile, `${reason}\n`);
      return { ok: false, reason };
    }
  }
  rmSync(failureFile, { force: true });
  const install = entryPoints(cacheDir);
  const missing = [install.claude, install.codex, install.inspector].filter((path) => !existsSync(path));
  if (missing.length > 0) {
    return { ok: false, reason: `the host install at ${cacheDir} lacks ${missing.join(', ')}; delete it to reinstall` };
  }
  return { ok: true, install };
}
