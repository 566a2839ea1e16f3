import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { AdapterError } from '../core/adapter-error.js';
import { ENTRY_NAME, claudeUserEntry, entryState, type EntryState, type ServerEntry } from './host-config-entries.js';
import { backupConfigFile, readConfigFile } from './host-config-files.js';

/** How long one `claude mcp` command may take before setup gives up on it. */
const CLAUDE_COMMAND_TIMEOUT_MS = 60_000;

/** What Claude Code setup needs: the entry, the flags, the environment, the time of the backup, an output line. */
export interface ClaudeSetupOptions {
  readonly entry: ServerEntry;
  readonly force: boolean;
  readonly env: NodeJS.ProcessEnv;
  readonly now: Date;
  readonly say: (line: string) => void;
}

/** Claude Code's own config file: `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`. */
export function claudeConfigPath(env: NodeJS.ProcessEnv): string {
  return join(env.CLAUDE_CONFIG_DIR ? resolve(env.CLAUDE_CONFIG_DIR) : homedir(), '.claude.json');
}

/** The argv of `claude` that adds the entry at user scope (every project of this user sees it). */
export function claudeAddArgs(entry: ServerEntry): string[] {
  return ['mcp', 'add', '--scope', 'user', ENTRY_NAME, '--', entry.command, ...entry.args];
}

/**
 * The argv of `claude` that puts the entry back after `--force` removed a different one: `mcp add-json` with the old
 * entry's keys and the new `command` and `args`, so the keys the user added (`env`, a timeout) stay, as the Codex and
 * Hermes entries keep theirs (docs/hosts.md). An old entry that is not an object is replaced by a plain add.
 */
export function claudeReplaceArgs(entry: ServerEntry, previous: unknown): string[] {
  if (typeof previous !== 'object' || previous === null || Array.isArray(previous)) return claudeAddArgs(entry);
  // An old http or sse entry's url and headers mean nothing to a stdio server.
  const { url: _url, headers: _headers, ...kept } = previous as Record<string, unknown>;
  return claudeAddJsonArgs({ ...kept, type: 'stdio', command: entry.command, args: [...entry.args] });
}

/** The argv of `claude mcp add-json` that writes `entry` (any keys) as the user-scope entry. */
function claudeAddJsonArgs(entry: unknown): string[] {
  return ['mcp', 'add-json', '--scope', 'user', ENTRY_NAME, JSON.stringify(entry)];
}

/** `argv` as one POSIX shell line, each word single-quoted unless it is plainly safe. */
export function shellLine(argv: readonly string[]): string {
  const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;
  return argv.map((word) => (/^[A-Za-z0-9_\/.:=@%+,-]+$/.test(word) ? word : quote(word))).join(' ');
}

/** The shell lines that configure Claude Code by hand: a remove first when a different entry is there. */
function commandLines(entry: ServerEntry, state: EntryState): string[] {
  const remove = state === 'different' ? [shellLine(['claude', 'mcp', 'remove', '--scope', 'user', ENTRY_NAME])] : [];
  return [...remove, shellLine(['claude', ...claudeAddArgs(entry)])];
}

/** The path of `.claude.json` and how its user-scope entry compares with `entry`. */
export function claudeEntryState(entry: ServerEntry, env: NodeJS.ProcessEnv): { path: string; state: EntryState } {
  const file = readConfigFile(claudeConfigPath(env));
  return { path: file.path, state: entryState(claudeUserEntry(file.text, file.path), entry) };
}

/** What `--print` shows for Claude Code: the command lines for the entry `.claude.json` holds now. */
export function claudeCommandLines(entry: ServerEntry, env: NodeJS.ProcessEnv): string[] {
  return commandLines(entry, claudeEntryState(entry, env).state);
}

/** The absolute path of the first executable `name` on `env.PATH`, or null. */
export function findOnPath(name: string, env: NodeJS.ProcessEnv): string | null {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // Not here; try the next directory.
    }
  }
  return null;
}

/**
 * Configures Claude Code. With `claude` on the PATH: reads the user-scope entry from `.claude.json`; the same entry
 * is "already configured" and changes nothing; a different one is TARGET_EXISTS without `force` (with `claude` on
 * the PATH or not), else it is removed with `claude mcp remove --scope user` first; the file is backed up,
 * `claude mcp add --scope user` runs (after a remove, `add-json` keeping the old entry's other keys:
 * claudeReplaceArgs), and the file is read again to check the entry is there (VERIFY_FAILED
 * otherwise, or when a `claude` command fails). Without `claude` on the PATH: prints the command(s) to run and
 * changes nothing. Returns exit code 0.
 */
export function setupClaudeCode(options: ClaudeSetupOptions): number {
  const { entry, force, env, say } = options;
  const file = readConfigFile(claudeConfigPath(env));
  const previous = claudeUserEntry(file.text, file.path);
  const state = entryState(previous, entry);
  if (state === 'same') {
    say(
      `factlane setup: claude-code is already configured (user entry ${ENTRY_NAME} in ${file.path}); nothing changed`,
    );
    return 0;
  }
  // A different entry needs --force whether or not claude is on the PATH: the commands printed below would remove it.
  if (state === 'different' && !force) {
    throw new AdapterError('TARGET_EXISTS', `${file.path} already has a different user-scope MCP server ` +
      `${ENTRY_NAME}; left as it was: rerun with --force to replace it`);
  }
  const claude = findOnPath('claude', env);
  if (claude === null) {
    say('factlane setup: claude is not on the PATH, so nothing was changed; to configure Claude Code, run:');
    for (const line of commandLines(entry, state)) say(`  ${line}`);
    return 0;
  }
  const backup = file.text === null ? null : backupConfigFile(file, options.now);
  const kept = backup === null ? '' : `; the previous file is kept as ${backup}`;
  if (state === 'different') runClaude(claude, ['mcp', 'remove', '--scope', 'user', ENTRY_NAME], env, kept);
  const add = state === 'different' ? claudeReplaceArgs(entry, previous) : claudeAddArgs(entry);
  try {
    runClaude(claude, add, env, kept);
  } catch (error) {
    if (state !== 'different') throw error;
    // The old entry was removed and the new one could not be added: put the old one back, as it was.
    const restore = claudeAddJsonArgs(previous);
    try {
      runClaude(claude, restore, env, kept);
    } catch {
      // Not the command itself: the entry's env may hold tokens, which the terminal and its logs should not show.
      throw new AdapterError('VERIFY_FAILED', `${(error as Error).message}; the previous entry could not be put back: `
        + `restore it with claude mcp add-json --scope user ${ENTRY_NAME} '<its JSON>', taken from the kept `
        + `file${kept}`);
    }
    throw new AdapterError('VERIFY_FAILED', `${(error as Error).message}; the previous entry was put back`);
  }
  const after = readConfigFile(file.path);
  if (entryState(claudeUserEntry(after.text, after.path), entry) !== 'same') {
    throw new AdapterError('VERIFY_FAILED', `claude mcp ${add[1]} succeeded but ${after.path} has no matching user `
      + `entry ${ENTRY_NAME}; check with claude mcp get ${ENTRY_NAME}${kept}`);
  }
  const done = state === 'different' ? 'entry replaced' : 'configured';
  const where = `user entry ${ENTRY_NAME} in ${file.path}`;
  say(`factlane setup: claude-code ${done} through claude mcp ${add[1]} --scope user (${where})${kept}`);
  return 0;
}

function runClaude(claude: string, args: readonly string[], env: NodeJS.ProcessEnv, kept: string): void {
  const result = spawnSync(claude, args, {
    env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: CLAUDE_COMMAND_TIMEOUT_MS,
  });
  if (result.status === 0) return;
  const lines = `${result.stderr ?? ''}\n${result.stdout ?? ''}`.split('\n').map((line) => line.trim());
  const said = lines.find((line) => line !== '') ?? '';
  const how = result.error
    ? `could not run (${(result.error as NodeJS.ErrnoException).code ?? result.error.message})`
    : `exited with ${result.status ?? result.signal}`;
  const detail = said === '' ? '' : `: ${said.slice(0, 200)}`;
  throw new AdapterError('VERIFY_FAILED', `claude ${args.slice(0, 2).join(' ')} ${how}${detail}${kept}`);
}
