import { AdapterError } from '../core/adapter-error.js';
import { WRITE_PROFILES, type WriteProfile } from '@factlane/schema';
import { DEFAULT_PROFILE_ID, EMBEDDING_PROFILES } from '../embedding/embedding-profiles.js';
import { createContextBinding, createHostBinding, type ContextBinding, type HostBinding } from '../gateway/bindings.js';
import { defaultDatabasePath, parseFlags, UsageError } from './cli-support.js';

/** Everything `factlane` was launched with, validated (CONTRACT.md §16.1). */
export interface LaunchOptions {
  readonly mode: 'serve' | 'help' | 'version' | 'help-tools' | 'help-tool';
  readonly helpTool?: string;
  readonly dbPath: string;
  readonly profileId: string;
  readonly ollamaUrl: string;
  readonly writeProfile: WriteProfile;
  readonly hostBinding?: HostBinding;
  readonly contextBinding: ContextBinding | null;
  readonly tokenizerPathGiven: boolean;
}

/** Every launcher flag (CONTRACT.md §16.1); `factlane --help` names each. */
export const LAUNCHER_FLAGS = {
  db: { type: 'string' }, 'host-id': { type: 'string' }, profile: { type: 'string' }, 'ollama-url': { type: 'string' },
  'write-profile': { type: 'string' }, 'binding-source': { type: 'string' }, 'project-id': { type: 'string' },
  'workflow-id': { type: 'string' }, 'agent-id': { type: 'string' }, 'project-id-source': { type: 'string' },
  'workflow-id-source': { type: 'string' }, 'agent-id-source': { type: 'string' },
  'context-binding-source': { type: 'string' },
  'tokenizer-path': { type: 'string' }, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' },
  'help-tools': { type: 'boolean' }, 'help-tool': { type: 'string' },
} as const;

/** `--ollama-url` as written: http, host 127.0.0.1 or [::1] literally, optional port, path empty or `/`. */
const LOOPBACK_OLLAMA_URL = /^http:\/\/(?:127\.0\.0\.1|\[::1\])(?::(\d{1,5}))?\/?$/i;

/**
 * `--ollama-url` (CONTRACT.md §14.4): http, host exactly 127.0.0.1 or [::1], optional port (1-65535), path empty or
 * `/`, no user info, query or fragment. Matched on the string as written: a URL parser would first normalise
 * `127.1`, `0x7f000001`, `[0:0:0:0:0:0:0:1]`, `/..`, tabs or a missing `//` into an accepted form.
 */
export function isLoopbackOllamaUrl(value: string): boolean {
  const match = LOOPBACK_OLLAMA_URL.exec(value);
  return match !== null && (match[1] === undefined || (Number(match[1]) >= 1 && Number(match[1]) <= 65535));
}

/**
 * Parses and validates argv. Throws UsageError for a missing, unknown or malformed flag or value (exit 2),
 * and AdapterError INVALID_HOST_BINDING / INVALID_CONTEXT_BINDING / RAW_OR_SENSITIVE_CONTENT for bad
 * labels (also exit 2). Touches no file.
 */
export function parseLaunchOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): LaunchOptions {
  const values: Record<string, string | boolean | undefined> = parseFlags({
    args: [...argv], options: LAUNCHER_FLAGS, allowPositionals: false,
  }).values;
  const str = (name: string) => values[name] as string | undefined;
  const base = {
    dbPath: str('db') ?? defaultDatabasePath(env), profileId: str('profile') ?? DEFAULT_PROFILE_ID,
    ollamaUrl: str('ollama-url') ?? 'http://127.0.0.1:11434',
    writeProfile: (str('write-profile') ?? 'read-only') as WriteProfile,
    contextBinding: null, tokenizerPathGiven: str('tokenizer-path') !== undefined,
  };
  if (values.help) return { ...base, mode: 'help' };
  if (values.version) return { ...base, mode: 'version' };
  if (values['help-tools']) return { ...base, mode: 'help-tools' };
  if (str('help-tool') !== undefined) return { ...base, mode: 'help-tool', helpTool: str('help-tool') };
  if (str('db') === '') throw new UsageError('--db needs a path');
  if (!Object.hasOwn(EMBEDDING_PROFILES, base.profileId))
    throw new UsageError(`--profile must be one of: ${Object.keys(EMBEDDING_PROFILES).join(', ')}`);
  if (!isLoopbackOllamaUrl(base.ollamaUrl))
    throw new UsageError('--ollama-url must be http://127.0.0.1[:port] or http://[::1][:port] with no path, user, '
      + 'query or fragment');
  if (!(WRITE_PROFILES as readonly string[]).includes(base.writeProfile))
    throw new UsageError(`--write-profile must be one of: ${WRITE_PROFILES.join(', ')}`);
  const hostId = str('host-id');
  if (hostId === undefined)
    throw new UsageError('--host-id LABEL is required (the host this server runs for, e.g. codex)');
  return {
    ...base, mode: 'serve',
    hostBinding: createHostBinding(hostId, str('binding-source')),
    contextBinding: createContextBinding({
      bindingSource: str('context-binding-source'), projectId: str('project-id'),
      projectIdSource: str('project-id-source'),
      workflowId: str('workflow-id'), workflowIdSource: str('workflow-id-source'), agentId: str('agent-id'),
      agentIdSource: str('agent-id-source'),
    }),
  };
}

/** True for the errors that make a launch a usage error (exit 2). */
export function isUsageFailure(error: unknown): boolean {
  return error instanceof UsageError
    || (error instanceof AdapterError
      && ['INVALID_HOST_BINDING', 'INVALID_CONTEXT_BINDING', 'RAW_OR_SENSITIVE_CONTENT'].includes(error.code));
}
