import { validateScope } from '../adapter/request-scope.js';
import { AdapterError } from '../core/adapter-error.js';
import { isUuid } from '../core/identifiers.js';
import type { ScopeColumns } from '../storage/record-repository.js';
import { UsageError, wholeNumber } from './cli-support.js';
import { isLoopbackOllamaUrl } from './launcher-options.js';

// The flags of factlane-admin candidates and promote (docs/decisions/0022). They are parsed with the rest of
// factlane-admin's; the commands themselves (review-queue.ts, which loads the adapter and gateway) are imported only
// when one of them runs, so the other operator commands start without that code.

/** The usage lines of the review commands, and their notes, in factlane-admin's usage text. */
export const REVIEW_USAGE = `  factlane-admin candidates --db PATH [--scope SCOPE [--project-id ID] [--worktree-id ID]
                            [--workflow-id ID] [--agent-id ID]] [--limit N] [--json]
  factlane-admin promote --db PATH --memory-id ID --expected-revision N --expected-record-id ID
                         [--source-timestamp TS] [--ollama-url URL] [--json]
`;
export const REVIEW_NOTES = `candidates lists pending Candidates oldest first, read-only: every scope or one exact
  scope, at most N (default 50)
promote makes one Candidate VALIDATED_CURRENT, verified_by OWNER, as memory_update REVERIFY;
  copy its ids from candidates
`;

/** The parseArgs options the review commands add to factlane-admin's. */
export const REVIEW_OPTIONS = {
  limit: { type: 'string' }, 'expected-revision': { type: 'string' }, 'expected-record-id': { type: 'string' },
  'source-timestamp': { type: 'string' },
} as const;
const SCOPE_FLAGS = ['scope', 'project-id', 'worktree-id', 'workflow-id', 'agent-id'] as const;
const OWN_FLAGS: Readonly<Record<string, readonly string[]>> = {
  candidates: ['db', 'json', ...SCOPE_FLAGS, 'limit'],
  promote: ['db', 'json', 'memory-id', 'expected-revision', 'expected-record-id', 'source-timestamp', 'ollama-url'],
};
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 1000;

/** A parsed review command. */
export type ReviewCommand =
  | { readonly command: 'candidates'; readonly db: string; readonly scope: ScopeColumns | null; readonly limit: number }
  | { readonly command: 'promote'; readonly db: string; readonly memoryId: string; readonly expectedRevision: number;
      readonly expectedRecordId: string; readonly sourceTimestamp: string | null; readonly ollamaUrl: string };

type Values = Readonly<Record<string, string | boolean | string[] | undefined>>;

/** A usage error for a flag of candidates or promote given to another command. */
export function rejectReviewFlags(command: string | undefined, values: Values): void {
  const flag = Object.keys(REVIEW_OPTIONS).find((name) => values[name] !== undefined);
  if (!flag) return;
  const owner = flag === 'limit' ? 'candidates' : 'promote';
  throw new UsageError(`--${flag} belongs to ${owner}, not ${command ?? 'no command'}`);
}

/** The scope flags as an exact tuple (CONTRACT.md §4.2), as housekeep validates them; none given means every scope. */
function scopeFilter(values: Values): ScopeColumns | null {
  const fields = {
    scope: values.scope, project_id: values['project-id'], worktree_id: values['worktree-id'],
    workflow_id: values['workflow-id'], agent_id: values['agent-id'],
  };
  if (fields.scope === undefined) {
    const identity = SCOPE_FLAGS.find((flag) => values[flag] !== undefined);
    if (identity) throw new UsageError(`--${identity} needs --scope`);
    return null;
  }
  try {
    return validateScope(Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)));
  } catch (error) {
    if (error instanceof AdapterError) throw new UsageError(`${error.code}: ${error.message}`);
    throw error;
  }
}

/** Parses candidates or promote; every missing, foreign or malformed flag is a usage error. */
export function parseReviewCommand(
  command: 'candidates' | 'promote', extra: readonly string[], values: Values,
): ReviewCommand {
  if (extra.length > 0) throw new UsageError(`unexpected argument ${extra[0]}`);
  const foreign = Object.keys(values).find((flag) => values[flag] !== undefined && !OWN_FLAGS[command]!.includes(flag));
  if (foreign) throw new UsageError(`--${foreign} does not belong to ${command}`);
  const db = values.db;
  if (typeof db !== 'string') throw new UsageError(`${command} needs --db PATH`);
  if (command === 'candidates') {
    const limit = values.limit === undefined ? DEFAULT_LIMIT
      : wholeNumber('limit', values.limit as string, 1, MAX_LIMIT);
    return { command, db, scope: scopeFilter(values), limit };
  }
  const memoryIds = (values['memory-id'] as string[] | undefined) ?? [];
  const revision = values['expected-revision'] as string | undefined;
  const recordId = values['expected-record-id'] as string | undefined;
  if (memoryIds.length !== 1 || revision === undefined || recordId === undefined) {
    throw new UsageError(
      'promote needs --db PATH, one --memory-id ID, --expected-revision N and --expected-record-id ID');
  }
  if (!isUuid(memoryIds[0]!)) throw new UsageError('--memory-id must be a UUID');
  if (!isUuid(recordId)) throw new UsageError('--expected-record-id must be a UUID');
  const ollamaUrl = (values['ollama-url'] as string | undefined) ?? 'http://127.0.0.1:11434';
  if (!isLoopbackOllamaUrl(ollamaUrl)) {
    throw new UsageError(
      '--ollama-url must be http://127.0.0.1[:port] or http://[::1][:port] with no path, user, query or fragment');
  }
  return {
    command, db, memoryId: memoryIds[0]!.toLowerCase(), expectedRevision: wholeNumber('expected-revision', revision, 1),
    expectedRecordId: recordId.toLowerCase(),
    sourceTimestamp: (values['source-timestamp'] as string | undefined) ?? null,
    ollamaUrl,
  };
}
