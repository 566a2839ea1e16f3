// `factlane setup` test helpers: a sandbox of temp homes (HOME, CODEX_HOME, HERMES_HOME, XDG_DATA_HOME and an
// own PATH), the built launcher run as `factlane setup ...`, a fake `claude` that records its argv, and a check
// that a written entry really starts FactLane over stdio.
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join, relative } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { FACTLANE_BIN } from './mcp.js';

/** The command every written entry must name: the built launcher's real path. */
export const LAUNCHER = realpathSync(FACTLANE_BIN);

/** Temp homes under `root`; `run` executes `factlane setup ARGS` in them with the environment replaced. */
export function setupSandbox(root: string) {
  const dirs = {
    home: join(root, 'home'), xdg: join(root, 'xdg'), codexHome: join(root, 'codex-home'),
    hermesHome: join(root, 'hermes-home'), bin: join(root, 'bin'), cwd: join(root, 'cwd'),
  };
  for (const dir of [dirs.home, dirs.xdg, dirs.bin, dirs.cwd]) mkdirSync(dir);
  const env: Record<string, string> = {
    HOME: dirs.home, XDG_DATA_HOME: dirs.xdg, CODEX_HOME: dirs.codexHome, HERMES_HOME: dirs.hermesHome, PATH: dirs.bin,
  };
  /** Runs `factlane setup ARGS`; an `extraEnv` value of undefined removes that variable. */
  const run =
    (args: readonly string[], extraEnv: Record<string, string | undefined> = {}): SpawnSyncReturns<string> => {
    const merged =
      Object.fromEntries(Object.entries({ ...env, ...extraEnv }).filter(([, value]) => value !== undefined));
    return spawnSync(process.execPath, [FACTLANE_BIN, 'setup', ...args], {
      encoding: 'utf8', cwd: dirs.cwd, env: merged as Record<string, string>, input: '', timeout: 60_000,
    });
  };
  /** Every path under `root` and its content (directories as `/`), to prove a run changed nothing. */
  const snapshot = (): Record<string, string> =>
    Object.fromEntries((readdirSync(root, { recursive: true }) as string[]).sort().map((p) => {
    const path = join(root, p);
    return [
      relative(root, path),
      lstatSync(path).isFile() ? readFileSync(path, 'latin1') : `<${lstatSync(path).mode.toString(8)}>`,
    ];
  }));
  return {
    root, ...dirs, env, run, snapshot,
    codexConfig: join(dirs.codexHome, 'config.toml'), hermesConfig: join(dirs.hermesHome, 'config.yaml'),
    claudeConfig: join(dirs.home, '.claude.json'), defaultDb: join(dirs.xdg, 'factlane', 'factlane.sqlite3'),
  };
}

/** The files beside `path` whose names start with `<name>.factlane-backup-`. */
export function backupsOf(path: string): string[] {
  const prefix = `${path.split('/').at(-1)}.factlane-backup-`;
  return readdirSync(dirname(path)).filter((name) => name.startsWith(prefix)).map((name) => join(dirname(path), name));
}

// A stand-in for Claude Code's `claude mcp add|remove|get --scope user`: it appends its argv as one JSON line to
// $FAKE_CLAUDE_LOG and keeps the user-scope entries in ~/.claude.json the way claude 2.1 does (add-json too).
// FAKE_CLAUDE_MODE=fail makes every command fail as claude does (stderr line, exit 1), =fail-add only the first
// `mcp add` or `mcp add-json` of the run (so the add-json that puts an old entry back works), =fail-adds every add;
// =noop makes add report success but write nothing.
const FAKE_CLAUDE = `
const fs = require('node:fs');
const path = require('node:path');
const argv = process.argv.slice(2);
const isAdd = (args) => args[1] === 'add' || args[1] === 'add-json';
const earlier = fs.existsSync(process.env.FAKE_CLAUDE_LOG)
  ? fs.readFileSync(process.env.FAKE_CLAUDE_LOG, 'utf8').split('\\n').filter(Boolean).map((line) => JSON.parse(line)) : [];
fs.appendFileSync(process.env.FAKE_CLAUDE_LOG, JSON.stringify(argv) + '\\n');
const firstAdd = isAdd(argv) && !earlier.some(isAdd);
const mode = process.env.FAKE_CLAUDE_MODE;
if (mode === 'fail' || (mode === 'fail-add' && firstAdd) || (mode === 'fail-adds' && isAdd(argv))) {
  process.stderr.write('Error: the fake claude was told to fail\\n'); process.exit(1);
}
const file = path.join(process.env.CLAUDE_CONFIG_DIR || process.env.HOME, '.claude.json');
const config = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
const servers = config.mcpServers || (config.mcpServers = {});
const save = () => fs.writeFileSync(file, JSON.stringify(config, null, 2), { mode: 0o600 });
const dash = argv.indexOf('--');
const words = dash < 0 ? argv : argv.slice(0, dash);
if (words[0] !== 'mcp' || words[2] !== '--scope' || words[3] !== 'user') { process.stderr.write('unexpected argv\\n'); process.exit(2); }
const name = words[4];
if (words[1] === 'add') {
  if (servers[name]) { process.stderr.write('MCP server ' + name + ' already exists in user config\\n'); process.exit(1); }
  if (process.env.FAKE_CLAUDE_MODE !== 'noop') { servers[name] = { type: 'stdio', command: argv[dash + 1], args: argv.slice(dash + 2), env: {} }; save(); }
  process.stdout.write('Added stdio MCP server ' + name + ' to user config\\n');
} else if (words[1] === 'add-json') {
  if (servers[name]) { process.stderr.write('MCP server ' + name + ' already exists in user config\\n'); process.exit(1); }
  servers[name] = JSON.parse(words[5]); save();
  process.stdout.write('Added stdio MCP server ' + name + ' to user config\\n');
} else if (words[1] === 'remove') {
  if (!servers[name]) { process.stderr.write('No MCP server named "' + name + '" in user scope\\n'); process.exit(1); }
  delete servers[name]; save();
  process.stdout.write('Removed MCP server ' + name + ' from user config\\n');
} else { process.stderr.write('unexpected command\\n'); process.exit(2); }
`;

/** Puts the fake `claude` in `bin`; returns a reader of the argv of every call so far. */
export function installFakeClaude(bin: string, log: string): () => string[][] {
  // The nearest package.json decides the module kind of an extensionless script: make it CommonJS.
  writeFileSync(join(bin, 'package.json'), '{"type":"commonjs"}\n');
  writeFileSync(join(bin, 'claude'), `#!${process.execPath}\n${FAKE_CLAUDE}`);
  chmodSync(join(bin, 'claude'), 0o755);
  writeFileSync(log, '');
  return () =>
    readFileSync(log, 'utf8').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as string[]);
}

/**
 * Runs a written entry exactly as a host would (its command with its args, stdio as the MCP pipe): lists the tools,
 * calls memory_status, closes stdin. Resolves the tool names, the status result, how the server exited and every
 * kill() the client had to send. The environment has HOME and a PATH for node (the launcher is `#!/usr/bin/env node`).
 */
export async function launchEntry(entry: { command: string; args: string[] }, home: string) {
  const env = { HOME: home, PATH: [dirname(process.execPath), '/usr/bin', '/bin'].join(delimiter) };
  const transport = new StdioClientTransport({ command: entry.command, args: entry.args, env, stderr: 'pipe' });
  let stderr = '';
  transport.stderr!.on('data', (chunk) => { stderr += chunk; });
  const client = new Client({ name: 'factlane-setup-test', version: '0.0.0' });
  await client.connect(transport);
  const child = (transport as unknown as { _process: ChildProcess })._process;
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once(
    'exit', (code, signal) => resolve({ code, signal }),
  ));
  const kills: unknown[] = [];
  const kill = child.kill.bind(child);
  child.kill = (signal?: NodeJS.Signals | number) => { kills.push(signal); return kill(signal); };
  try {
    const { tools } = await client.listTools();
    const request = { scope: 'GLOBAL_USER', request_id: 'setup-1' };
    const status = (await client.callTool({ name: 'memory_status', arguments: { request } })) as CallToolResult;
    await client.close();
    return {
      tools: tools.map((tool) => tool.name), status: status.structuredContent, exit: await exited, kills, stderr,
    };
  } finally {
    await client.close();
  }
}
