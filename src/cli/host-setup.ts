import { accessSync, constants, existsSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { AdapterError } from '../core/adapter-error.js';
import { resolveDatabasePath } from '../storage/database-path.js';
import { assertNotABackup } from '../storage/durable-files.js';
import { defaultDatabasePath, parseFlags, UsageError, runCommand } from './cli-support.js';
import {
  ENTRY_NAME, codexSnippet, hermesSnippet, planCodexEntry, planHermesEntry, type EntryPlan, type EntryState,
  type ServerEntry,
} from './host-config-entries.js';
import { backupConfigFile, readConfigFile, withConfigLock, writeConfigAtomically } from './host-config-files.js';
import { claudeCommandLines, claudeEntryState, setupClaudeCode } from './host-setup-claude.js';
import { isUsageFailure, parseLaunchOptions } from './launcher-options.js';

/** The hosts `factlane setup` configures; each name is also the `--host-id` it writes. */
export const SETUP_HOSTS = ['codex', 'claude-code', 'hermes'] as const;
export type SetupHost = (typeof SETUP_HOSTS)[number];

/** The text of `factlane setup --help`, also printed after a usage error. */
export const SETUP_USAGE = `usage: factlane setup codex|claude-code|hermes [--db PATH] [--write-profile P]
                      [--project-id ID] [--print] [--force]

Adds FactLane to the host's MCP servers, as the entry "${ENTRY_NAME}" launching this factlane with absolute paths:
  codex         $CODEX_HOME/config.toml (default ~/.codex/config.toml), table [mcp_servers.${ENTRY_NAME}]
  claude-code   claude mcp add --scope user (prints the command when claude is not on the PATH)
  hermes        $HERMES_HOME/config.yaml (default ~/.hermes/config.yaml), mcp_servers: ${ENTRY_NAME}:

  --db PATH           database file (default $XDG_DATA_HOME/factlane/factlane.sqlite3), written absolute
  --write-profile P   the launcher's --write-profile (default: left out, so read-only)
  --project-id ID     the launcher's --project-id (bound project)
  --print             print the entry (or the claude command) on stdout and change nothing
  --force             replace a different existing ${ENTRY_NAME} entry (the file is backed up first)

The same entry already there changes nothing. A file that is edited is backed up beside it first, as
<file>.factlane-backup-<UTC time>, and replaced atomically.

exit codes: 0 configured or nothing to do; 1 refused (different entry without --force, unreadable config,
claude failed); 2 usage error
`;

const FLAGS = {
  db: { type: 'string' }, 'write-profile': { type: 'string' }, 'project-id': { type: 'string' },
  print: { type: 'boolean' }, force: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
} as const;

/** A parsed `factlane setup` command line. */
export interface SetupRequest {
  readonly mode: 'setup' | 'help';
  readonly host?: SetupHost;
  /** The launcher args the entry runs with: `--db ABS --host-id HOST` and the optional flags. */
  readonly args?: readonly string[];
  readonly print: boolean;
  readonly force: boolean;
}

/**
 * Parses `factlane setup` argv (after `setup`) into the host and its entry. The launcher args are checked by the
 * launcher's own parser, so a setup never writes an entry that would not start. UsageError for an unknown host or
 * flag, a missing or extra host, or any launcher usage failure (a bad --write-profile or --project-id).
 */
export function parseSetupArgs(argv: readonly string[], env: NodeJS.ProcessEnv): SetupRequest {
  let parsed;
  try {
    parsed = parseFlags({ args: [...argv], options: FLAGS, allowPositionals: true });
  } catch (error) {
    const { parseError, message } = error as UsageError;
    // Node's own text ("To specify a positional argument starting with a '-' ...") sends the user the wrong way.
    const option = parseError === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /'(-[^']*|\[redacted\])'/.exec(message)?.[1]
      : undefined;
    if (option === undefined) throw error;
    throw new UsageError(`setup takes no ${option}; it writes --host-id (the host's name) itself and takes only --db, `
      + '--write-profile, --project-id, --print and --force; edit the entry afterwards for any other launcher flag');
  }
  const { values, positionals } = parsed;
  const flags = { print: values.print === true, force: values.force === true };
  if (values.help) return { mode: 'help', ...flags };
  if (positionals.length !== 1 || !(SETUP_HOSTS as readonly string[]).includes(positionals[0]!)) {
    if (positionals.length > 1) throw new UsageError(`one host only, got: ${positionals.join(' ')}`);
    throw new UsageError(`the host must be one of: ${SETUP_HOSTS.join(', ')}`);
  }
  const host = positionals[0] as SetupHost;
  if (values.db === '') throw new UsageError('--db needs a path');
  const db = values.db === undefined ? defaultDatabasePath(env) : resolve(values.db);
  checkDatabasePlace(db);
  const args = ['--db', db, '--host-id', host];
  if (values['write-profile'] !== undefined) args.push('--write-profile', values['write-profile']);
  if (values['project-id'] !== undefined) args.push('--project-id', values['project-id']);
  try {
    parseLaunchOptions(args, env);
  } catch (error) {
    if (!isUsageFailure(error)) throw error;
    throw new UsageError(error instanceof AdapterError ? `${error.code}: ${error.message}` : (error as Error).message);
  }
  return { mode: 'setup', host, args: Object.freeze(args), ...flags };
}

/**
 * UsageError when `db` can never be a database file: a directory or another non-file, a path under a file, the
 * companion file of another database, or a backup (which every start refuses). The host would only report "Failed to
 * connect", with the reason in its own logs.
 */
function checkDatabasePlace(db: string): void {
  try {
    resolveDatabasePath(db);
    assertNotABackup(db);
  } catch (error) {
    if (!(error instanceof AdapterError)) throw error;
    throw new UsageError(`--db ${db}: ${error.message}`);
  }
  if (existsSync(db)) {
    if (!statSync(db).isFile()) {
      throw new UsageError(`--db ${db} is not a regular file; give the path of a database file`);
    }
    return;
  }
  let parent = dirname(db);
  while (!existsSync(parent)) parent = dirname(parent);
  if (!statSync(parent).isDirectory()) throw new UsageError(`--db ${db} is under ${parent}, which is not a directory`);
}

/** Codex's config file: `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`. */
export function codexConfigPath(env: NodeJS.ProcessEnv): string {
  return join(env.CODEX_HOME ? resolve(env.CODEX_HOME) : join(homedir(), '.codex'), 'config.toml');
}

/** Hermes's config file: `$HERMES_HOME/config.yaml`, else `~/.hermes/config.yaml`. */
export function hermesConfigPath(env: NodeJS.ProcessEnv): string {
  return join(env.HERMES_HOME ? resolve(env.HERMES_HOME) : join(homedir(), '.hermes'), 'config.yaml');
}

/**
 * The running launcher's real path (symlinks of an installed bin followed): the command a host runs. VERIFY_FAILED
 * when it is not executable, since the host would fail to start it.
 */
export function launcherPath(script: string): string {
  const path = realpathSync(script);
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new AdapterError('VERIFY_FAILED', `the launcher ${path} is not executable; ` +
      'run factlane setup from the built or installed factlane');
  }
  return path;
}

/**
 * Edits one host config file: the same entry changes nothing; a different one is TARGET_EXISTS without `force`;
 * otherwise an existing file is backed up beside it and the new text written atomically. Returns the line to say.
 */
function setupConfigFile(host: SetupHost, path: string, plan: (text: string | null, where: string) => EntryPlan,
  force: boolean, now: Date): string {
  const file = readConfigFile(path);
  const { state, text } = plan(file.text, file.path);
  if (state === 'same') {
    return `factlane setup: ${host} is already configured (entry ${ENTRY_NAME} in ${file.path}); nothing changed`;
  }
  if (state === 'different' && !force) {
    throw new AdapterError('TARGET_EXISTS', `${file.path} already has a different MCP server entry ${ENTRY_NAME}; ` +
      'left as it was: rerun with --force to replace it');
  }
  const backup = file.text === null ? null : backupConfigFile(file, now);
  writeConfigAtomically(file, text);
  const done = state === 'different' ? 'entry replaced' : file.text === null ? 'configured (new file)' : 'configured';
  const kept = backup === null ? '' : `; the previous file is kept as ${backup}`;
  return `factlane setup: ${host} ${done}: entry ${ENTRY_NAME} in ${file.path}${kept}`;
}

function setup(request: SetupRequest, entry: ServerEntry, env: NodeJS.ProcessEnv): number {
  const say = (line: string) => process.stdout.write(`${line}\n`);
  if (request.print) {
    if (request.host === 'codex') process.stdout.write(codexSnippet(entry));
    if (request.host === 'hermes') process.stdout.write(hermesSnippet(entry));
    if (request.host === 'claude-code') for (const line of claudeCommandLines(entry, env)) say(line);
    const note = request.force ? null : refusalNote(request.host!, entry, env);
    if (note !== null) process.stderr.write(`${note}\n`);
    return 0;
  }
  const now = new Date();
  if (request.host === 'claude-code') return setupClaudeCode({ entry, force: request.force, env, now, say });
  const [path, plan] = configOf(request.host!, env);
  say(withConfigLock(path,
    () => setupConfigFile(request.host!, path, (text, where) => plan(text, entry, where), request.force, now)));
  return 0;
}

/** The config file of a host that has one, and how its entry is planned. */
function configOf(host: 'codex' | 'hermes', env: NodeJS.ProcessEnv): [string, typeof planCodexEntry] {
  return host === 'codex' ? [codexConfigPath(env), planCodexEntry] : [hermesConfigPath(env), planHermesEntry];
}

/**
 * For --print: a note when the real run would refuse (a different entry, no --force); nothing when it cannot tell.
 * For Claude Code it adds what the printed remove line costs: the entry's other keys, which --force keeps.
 */
function refusalNote(host: SetupHost, entry: ServerEntry, env: NodeJS.ProcessEnv): string | null {
  try {
    let found: { path: string; state: EntryState };
    if (host === 'claude-code') {
      found = claudeEntryState(entry, env);
    } else {
      const [path, plan] = configOf(host, env);
      const file = readConfigFile(path);
      found = { path: file.path, state: plan(file.text, entry, file.path).state };
    }
    if (found.state !== 'different') return null;
    const cost = host === 'claude-code' ? ' (the remove line above drops its other keys, such as env; --force keeps '
      + 'them)' : '';
    return `factlane setup: ${found.path} already has a different MCP server entry ${ENTRY_NAME}: `
      + `without --print this command would refuse; add --force to replace it${cost}`;
  } catch {
    return null;
  }
}

/** `factlane setup ...`: argv after `setup`; sets process.exitCode (0 done or nothing to do, 1 refused, 2 usage). */
export async function runHostSetup(argv: readonly string[], script: string, env = process.env): Promise<void> {
  await runCommand('factlane setup', SETUP_USAGE, () => false, async () => {
    const request = parseSetupArgs(argv, env);
    if (request.mode === 'help') {
      process.stdout.write(SETUP_USAGE);
      return 0;
    }
    return setup(request, Object.freeze({ command: launcherPath(script), args: request.args! }), env);
  });
}
