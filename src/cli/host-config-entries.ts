import { TomlDate, TomlError, parse as parseToml, stringify as stringifyToml, type TomlTable } from 'smol-toml';
import { isMap, isScalar, parseDocument, stringify as stringifyYaml } from 'yaml';
import { AdapterError } from '../core/adapter-error.js';

/** The name of FactLane's entry in every host's MCP server list. */
export const ENTRY_NAME = 'factlane';

/** A host's stdio MCP server entry: what the host runs to launch FactLane. */
export interface ServerEntry {
  readonly command: string;
  readonly args: readonly string[];
}

/** What a config holds under the entry's name: nothing, this very entry, or something else. */
export type EntryState = 'absent' | 'same' | 'different';

/** A config's entry state and the whole file's text with the entry set (to write when it is not `same`). */
export interface EntryPlan {
  readonly state: EntryState;
  readonly text: string;
}

/**
 * The state of `found` (the value under the entry's name) against `entry`. The same entry is the same command and
 * args; any other key the user added to it (an `env`, a timeout) is theirs and does not make it different.
 */
export function entryState(found: unknown, entry: ServerEntry): EntryState {
  if (found === undefined) return 'absent';
  if (!isPlainObject(found)) return 'different';
  const args = found.args;
  const sameArgs = Array.isArray(args) && args.length === entry.args.length &&
    args.every((arg, i) => arg === entry.args[i]);
  return found.command === entry.command && sameArgs ? 'same' : 'different';
}

/**
 * The keys of a remote (HTTP) server entry in Codex's and Hermes's configs. A replaced entry drops them: a stdio
 * command beside a `url` is an error to Codex, and Hermes speaks HTTP to any entry with a `url`, ignoring the command.
 */
const REMOTE_KEYS = ['url', 'bearer_token', 'bearer_token_env_var', 'http_headers', 'env_http_headers', 'headers'];

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof TomlDate);
}

function unparsable(where: string, language: string, detail: string): AdapterError {
  return new AdapterError('VERIFY_FAILED',
    `${where} does not parse as ${language} (${detail}); it was left as it was: fix it or move it away, then rerun`);
}

/**
 * Codex's `config.toml` (null: no file yet) with the table `[mcp_servers.factlane]` set to `entry`. smol-toml keeps
 * every other table and value, and drops comments and formatting (docs/decisions/0021). VERIFY_FAILED when the
 * text is not TOML or `mcp_servers` is not a table.
 */
export function planCodexEntry(text: string | null, entry: ServerEntry, where: string): EntryPlan {
  let config: TomlTable;
  try {
    // asNeeded: an integer past 2^53 stays exact instead of being rounded on the way back.
    config = text === null ? {} : parseToml(text, { integersAsBigInt: 'asNeeded' });
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    throw unparsable(where, 'TOML', `${error.message.split('\n')[0]} at line ${error.line}, column ${error.column}`);
  }
  const servers = config.mcp_servers ?? {};
  if (!isPlainObject(servers)) throw unparsable(where, 'a Codex config', 'mcp_servers is not a table');
  const state = entryState(servers[ENTRY_NAME], entry);
  if (state === 'same') return Object.freeze({ state, text: text! });
  // A replaced entry keeps the keys the user added to it (env, default_tools_approval_mode, a timeout), but not those
  // of a remote server.
  const previous = isPlainObject(servers[ENTRY_NAME]) ? servers[ENTRY_NAME] as TomlTable : {};
  const kept = Object.fromEntries(Object.entries(previous).filter(([key]) => !REMOTE_KEYS.includes(key)));
  config.mcp_servers = { ...servers, [ENTRY_NAME]: { ...kept, command: entry.command, args: [...entry.args] } };
  return Object.freeze({ state, text: stringifyToml(config) });
}

/**
 * Hermes's `config.yaml` (null: no file yet) with `mcp_servers: factlane:` set to `entry`. The YAML document API
 * keeps comments and the order of keys. VERIFY_FAILED when the text is not one YAML document, its top level is not
 * a mapping, or `mcp_servers` is not a mapping.
 */
export function planHermesEntry(text: string | null, entry: ServerEntry, where: string): EntryPlan {
  const doc = parseDocument(text ?? '');
  if (doc.errors.length > 0) throw unparsable(where, 'YAML', doc.errors[0]!.message.split('\n')[0]!.replace(/:$/, ''));
  if (doc.contents !== null && !isMap(doc.contents)) {
    throw unparsable(where, 'a Hermes config', 'the top level is not a mapping');
  }
  const servers = doc.get('mcp_servers', true);
  const emptyServers = servers === undefined || (isScalar(servers) && servers.value === null);
  if (!emptyServers && !isMap(servers)) throw unparsable(where, 'a Hermes config', 'mcp_servers is not a mapping');
  const found = emptyServers
    ? undefined
    : (doc.toJS() as { mcp_servers: Record<string, unknown> }).mcp_servers[ENTRY_NAME];
  const state = entryState(found, entry);
  if (state === 'same') return Object.freeze({ state, text: text! });
  const old = isMap(servers) ? servers.get(ENTRY_NAME, true) : undefined;
  if (isMap(old)) {
    // A replaced entry keeps the keys the user added to it, and their comments; not those of a remote server.
    for (const key of REMOTE_KEYS) old.delete(key);
    old.set('command', entry.command);
    old.set('args', doc.createNode([...entry.args]));
  } else {
    const node = doc.createNode({ command: entry.command, args: [...entry.args] });
    if (emptyServers) doc.set('mcp_servers', doc.createNode({ [ENTRY_NAME]: node }));
    else if (isMap(servers)) servers.set(ENTRY_NAME, node);
  }
  return Object.freeze({ state, text: doc.toString() });
}

/**
 * The user-scope entry of Claude Code's `~/.claude.json` (null: no file yet), or undefined. Claude Code writes
 * that file itself through `claude mcp add`; FactLane only reads it. VERIFY_FAILED when it is not a JSON object or
 * its `mcpServers` is not an object.
 */
export function claudeUserEntry(text: string | null, where: string): unknown {
  if (text === null) return undefined;
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch {
    // V8's message quotes the text around the fault, and this file holds account details: say where only.
    throw unparsable(where, 'JSON', 'not valid JSON');
  }
  if (!isPlainObject(config)) throw unparsable(where, 'a Claude Code config', 'the top level is not an object');
  const servers = config.mcpServers ?? {};
  if (!isPlainObject(servers)) throw unparsable(where, 'a Claude Code config', 'mcpServers is not an object');
  return servers[ENTRY_NAME];
}

/** The Codex table alone, as `--print` shows it. */
export function codexSnippet(entry: ServerEntry): string {
  return stringifyToml({ mcp_servers: { [ENTRY_NAME]: { command: entry.command, args: [...entry.args] } } });
}

/** The Hermes `mcp_servers:` block alone, as `--print` shows it. */
export function hermesSnippet(entry: ServerEntry): string {
  return stringifyYaml({ mcp_servers: { [ENTRY_NAME]: { command: entry.command, args: [...entry.args] } } });
}
