import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { MemoryAdapter } from '../adapter/memory-adapter.js';
import { validateScope } from '../adapter/request-scope.js';
import { AdapterError } from '../core/adapter-error.js';
import { isUuid } from '../core/identifiers.js';
import { createStderrLogger } from '../core/logger.js';
import { SYSTEM_CLOCK } from '../core/time.js';
import { EMBEDDING_PROFILES } from '../embedding/embedding-profiles.js';
import { createProvider } from '../embedding/provider-factory.js';
import { createHostBinding } from '../gateway/bindings.js';
import { MemoryGateway } from '../gateway/memory-gateway.js';
import { listCandidates, type CandidatesReport } from '../maintenance/review-queue-operation.js';
import { MaintenanceTarget } from '../storage/maintenance-target.js';
import type { ScopeColumns } from '../storage/record-repository.js';
import { findMemoryWhereabouts } from '../storage/review-repository.js';
import { bindingProfileId } from '../storage/schema-inspection.js';
import { SQLiteVecEngine } from '../storage/sqlite-vec-engine.js';
import { EXIT, UsageError } from './cli-support.js';
import { isLoopbackOllamaUrl } from './launcher-options.js';
import { printCandidates, printPromotion, printRefusal, type PromotionReport } from './review-output.js';

// factlane-admin candidates and promote: the owner's review queue (docs/decisions/0022).

/** The usage lines of the review commands, and their notes, in factlane-admin's usage text. */
export const REVIEW_USAGE = `  factlane-admin candidates --db PATH [--scope SCOPE [--project-id ID] [--worktree-id ID]
                            [--workflow-id ID] [--agent-id ID]] [--limit N] [--json]
  factlane-admin promote --db PATH --memory-id ID --expected-revision N --expected-record-id ID
                         [--source-timestamp TS] [--ollama-url URL] [--json]
`;
export const REVIEW_NOTES = `candidates lists pending Candidates oldest first, read-only: every scope or one exact scope,
  at most N (default 50)
promote makes one Candidate VALIDATED_CURRENT, verified_by OWNER, as memory_update REVERIFY; copy its ids from candidates
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
/** The host binding of the operator CLI: what the audit of every promotion names. */
export const OPERATOR_HOST_ID = 'factlane-admin';
export const OPERATOR_BINDING_SOURCE = 'operator-cli';

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

function whole(flag: string, text: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const value = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `from ${min} up` : `from ${min} to ${max}`;
    throw new UsageError(`--${flag} must be a whole number ${range}`);
  }
  return value;
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
    const limit = values.limit === undefined ? DEFAULT_LIMIT : whole('limit', values.limit as string, 1, MAX_LIMIT);
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
    command, db, memoryId: memoryIds[0]!.toLowerCase(), expectedRevision: whole('expected-revision', revision, 1),
    expectedRecordId: recordId.toLowerCase(), sourceTimestamp: (values['source-timestamp'] as string | undefined) ?? null,
    ollamaUrl,
  };
}

/** Runs a parsed review command; a governed refusal prints its code, message and a one-line hint, exit 1. */
export async function runReviewCommand(review: ReviewCommand, json: boolean): Promise<number> {
  try {
    if (review.command === 'candidates') {
      printCandidates(await candidates(review), json);
      return EXIT.OK;
    }
    printPromotion(await promote(review), json);
    return EXIT.OK;
  } catch (error) {
    if (!(error instanceof AdapterError)) throw error;
    printRefusal(error, json);
    return EXIT.FAILED;
  }
}

async function candidates(review: Extract<ReviewCommand, { command: 'candidates' }>): Promise<CandidatesReport> {
  const target = MaintenanceTarget.open({ dbPath: review.db, lease: 'shared' });
  try {
    return await listCandidates(target, { scope: review.scope, limit: review.limit, clock: SYSTEM_CLOCK });
  } finally {
    target.close();
  }
}

/**
 * Promotes one Candidate through the gateway and adapter as memory_update REVERIFY under the owner-current write
 * profile, bound as host `factlane-admin` from `operator-cli`; `--source-timestamp` supplies the
 * verification.source_timestamp a Candidate stored without one needs. The idempotency key is derived from the expected
 * record, so running the same command again after a lost answer replays the promotion instead of writing twice.
 */
async function promote(review: Extract<ReviewCommand, { command: 'promote' }>): Promise<PromotionReport> {
  if (!existsSync(resolve(review.db))) {
    throw new AdapterError('SOURCE_NOT_FOUND', 'the database file does not exist; check --db');
  }
  const engine = await SQLiteVecEngine.open({
    dbPath: review.db,
    // promote never creates a database: a file gone since the check above, or empty, is refused and left as it is.
    newDatabaseBinding: async () => {
      throw new AdapterError('SCHEMA_MISMATCH', 'the file is not a FactLane database; check --db');
    },
    logger: createStderrLogger('factlane-admin'),
  });
  try {
    const profileId = bindingProfileId(engine.storedBinding);
    if (profileId === null || !Object.hasOwn(EMBEDDING_PROFILES, profileId)) {
      throw new AdapterError('PROFILE_MISMATCH', 'the database is bound to no embedding profile this release serves');
    }
    const provider = createProvider(profileId, review.ollamaUrl);
    const whereabouts = await engine.read((db) => findMemoryWhereabouts(db, review.memoryId));
    if (!whereabouts) throw new AdapterError('NOT_FOUND', 'no memory with this memory_id');
    const { live, scope } = whereabouts;
    const named = live && live.revision === review.expectedRevision && live.record_id === review.expectedRecordId;
    if (named && live.lifecycle_state !== 'CANDIDATE') {
      const state = live.lifecycle_state;
      throw new AdapterError('NOT_FOUND', `the live record is ${state}, not a Candidate; nothing to promote`);
    }
    const adapter = new MemoryAdapter({ engine, provider, writeProfile: 'owner-current', hostId: OPERATOR_HOST_ID });
    const gateway = new MemoryGateway({
      adapter, hostBinding: createHostBinding(OPERATOR_HOST_ID, OPERATOR_BINDING_SOURCE), contextBinding: null,
      transport: 'stdio',
    });
    const scopeFields = Object.fromEntries(Object.entries(scope).filter(([, value]) => value !== null));
    const envelope = await gateway.handle('memory_update', {
      ...scopeFields, memory_id: review.memoryId, mode: 'REVERIFY', expected_revision: review.expectedRevision,
      expected_record_id: review.expectedRecordId, idempotency_key: `factlane-admin-promote:${review.expectedRecordId}`,
      // The adapter validates the timestamp (INVALID_TIMESTAMP) like any verification payload.
      ...(review.sourceTimestamp === null ? {} : { verification: { source_timestamp: review.sourceTimestamp } }),
    });
    return { previous: { revision: review.expectedRevision, record_id: review.expectedRecordId }, envelope };
  } finally {
    await engine.close();
  }
}
