import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { MemoryAdapter } from '../adapter/memory-adapter.js';
import { AdapterError } from '../core/adapter-error.js';
import { createStderrLogger } from '../core/logger.js';
import { SYSTEM_CLOCK } from '../core/time.js';
import { EMBEDDING_PROFILES } from '../embedding/embedding-profiles.js';
import { createProvider } from '../embedding/provider-factory.js';
import { createHostBinding } from '../gateway/bindings.js';
import { MemoryGateway } from '../gateway/memory-gateway.js';
import { listCandidates, type CandidatesReport } from '../maintenance/review-queue-operation.js';
import { MaintenanceTarget } from '../storage/maintenance-target.js';
import { findMemoryWhereabouts } from '../storage/review-repository.js';
import { bindingProfileId } from '../storage/schema-inspection.js';
import { SQLiteVecEngine } from '../storage/sqlite-vec-engine.js';
import { EXIT } from './cli-support.js';
import { printCandidates, printPromotion, printRefusal, type PromotionReport } from './review-output.js';
import type { ReviewCommand } from './review-flags.js';

// factlane-admin candidates and promote: the owner's review queue (docs/decisions/0022).

/** The host binding of the operator CLI: what the audit of every promotion names. */
export const OPERATOR_HOST_ID = 'factlane-admin';
export const OPERATOR_BINDING_SOURCE = 'operator-cli';

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
 * verification.source_timestamp a Candidate stored without one needs. The idempotency key is derived from the
 * expected record and revision, so the same command run again after a lost answer replays instead of writing twice.
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
    const key = `factlane-admin-promote:${review.expectedRecordId}:${review.expectedRevision}`;
    const envelope = await gateway.handle('memory_update', {
      ...scopeFields, memory_id: review.memoryId, mode: 'REVERIFY', expected_revision: review.expectedRevision,
      expected_record_id: review.expectedRecordId, idempotency_key: key,
      // The adapter validates the timestamp (INVALID_TIMESTAMP) like any verification payload.
      ...(review.sourceTimestamp === null ? {} : { verification: { source_timestamp: review.sourceTimestamp } }),
    });
    return { previous: { revision: review.expectedRevision, record_id: review.expectedRecordId }, envelope };
  } finally {
    await engine.close();
  }
}
