// Install-as-users-install helpers (decision 0025): npm with the test runner's environment removed (tap's
// NODE_OPTIONS loaders and the outer npm's npm_* variables would leak into the install and its native builds),
// a registry reachability probe that turns "no registry" into a clear skip, and `npm pack` of the built tree.
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { REPO_ROOT } from './storage.js';

/**
 * The environment of a user's shell: this process's, less tap's and npm's own, with node on the PATH. The user's
 * `npm_config_nodedir` stays: the README gives it as the offline way to build better-sqlite3 (no header download).
 */
export function userEnv(extraPath: readonly string[] = []): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(npm_(?!config_nodedir$)|NODE_OPTIONS$|NODE_V8_COVERAGE$|TAP|_TAPJS)/i.test(key)) env[key] = value;
  }
  env.PATH = [...extraPath, dirname(process.execPath), process.env.PATH ?? ''].join(':');
  return env;
}

/**
 * A fresh folder outside the checkout, removed at teardown: a user installs outside any project, and under the
 * checkout node would resolve `factlane/...` to the checkout itself (a package's self-reference wins).
 */
export function userDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'factlane-install-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs npm (the one beside this node) with `args` in `cwd`; never throws. */
export function npm(args: readonly string[], cwd: string, timeoutMs = 60_000): SpawnSyncReturns<string> {
  return spawnSync(
    'npm', args, { cwd, env: userEnv(), encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
  );
}

/** Why the registry cannot be used here (a skip reason), or false when `npm ping` answers. */
export function registryUnreachable(): string | false {
  const ping = npm(['ping'], REPO_ROOT, 30_000);
  if (ping.status === 0) return false;
  const why = ping.error?.message ?? ping.stderr.trim().split('\n').slice(-1)[0] ?? `exit ${ping.status}`;
  return `the npm registry is unreachable (npm ping: ${why}); the install test needs it for dependencies`;
}

export interface PackedTarball {
  readonly path: string; readonly files: readonly string[]; readonly bundled: readonly string[];
}

/**
 * `npm pack` of the product (or of a workspace with `-w NAME`) into `dest`, from the tree `npm run build` left:
 * --ignore-scripts, so that packing does not rebuild dist/ under the other test files running beside this one.
 */
export function pack(dest: string, workspace?: string): PackedTarball {
  const args =
    ['pack', '--ignore-scripts', '--json', '--pack-destination', dest, ...(workspace ? ['-w', workspace] : [])];
  const result = npm(args, REPO_ROOT, 120_000);
  if (result.status !== 0) throw new Error(`npm ${args.join(' ')} failed: ${result.stderr}`);
  const [entry] = JSON.parse(result.stdout) as { filename: string; files: { path: string }[]; bundled: string[] }[];
  return { path: join(dest, entry!.filename), files: entry!.files.map((file) => file.path), bundled: entry!.bundled };
}
