import { AdapterError } from '../core/adapter-error.js';
import type { EmbeddingProvider } from '../embedding/embedding-provider.js';
import type { SQLiteVecEngine } from '../storage/sqlite-vec-engine.js';
import {
  contradictionSummary, findByIdempotencyKey, findRecord, type NewRecordRow, type Reader, type RecordRow,
} from '../storage/record-repository.js';
import { isIdempotencyKeyViolation } from '../storage/sqlite-errors.js';
import { adapterAudit, envelopeScope } from './envelope.js';
import { measuredBudget, publicRecord } from './public-record.js';
import { embedUnderRuntime } from './runtime-compatibility.js';
import { scopeDigest, type ScopeTuple } from './request-scope.js';
import type { ToolName } from '@factlane/schema';

/** What every write handler needs. */
export interface WriteDeps {
  readonly engine: SQLiteVecEngine;
  readonly provider: EmbeddingProvider;
}

/** Embeds one document under an unchanged runtime (see embedUnderRuntime). */
export async function embedDocument(deps: WriteDeps, text: string, fingerprintBefore: string): Promise<Float32Array> {
  const [vector] = await embedUnderRuntime(deps, fingerprintBefore, () => deps.provider.embedDocuments([text]));
  if (!vector) {
    throw new AdapterError('PROFILE_MISMATCH', 'the embedding provider returned no vector, so nothing was written; '
      + 'memory_status reports the provider\'s state');
  }
  return vector;
}

/** The idempotency decision: a replay of the record the key created, a conflict, or nothing yet. */
export async function idempotencyDecision(reader: Reader, key: string, fingerprint: string): Promise<RecordRow | null> {
  const existing = await findByIdempotencyKey(reader, key);
  if (!existing) return null;
  if (existing.payload_fingerprint !== fingerprint) {
    throw new AdapterError('IDEMPOTENCY_CONFLICT',
      'idempotency_key was already used for a different request (another body, or the same body from another host '
        + 'or write profile: keys are shared by every host of the database); use a new key');
  }
  return existing;
}

/**
 * Runs the write transaction; a lost race on the idempotency key is decided again as idempotency
 * (replay or IDEMPOTENCY_CONFLICT), else WRITE_UNCONFIRMED.
 */
export async function writeOrReplay<T>(
  deps: WriteDeps, key: string, fingerprint: string, write: () => Promise<T>,
): Promise<T | RecordRow> {
  try {
    return await write();
  } catch (error) {
    if (!isIdempotencyKeyViolation(error)) throw error;
    const replay = await deps.engine.read((db) => idempotencyDecision(db, key, fingerprint));
    if (replay) return replay;
    throw new AdapterError('WRITE_UNCONFIRMED', 'the write could not be confirmed; read the memory before retrying');
  }
}

/** True when the row holds exactly the written columns with equal values (row_id aside). */
function sameColumns(row: RecordRow, written: NewRecordRow): boolean {
  const values = written as Readonly<Record<string, unknown>>;
  const columns = Object.keys(values).filter((column) => values[column] !== undefined);
  const stored = row as Readonly<Record<string, unknown>>;
  return Object.hasOwn(stored, 'row_id') && Object.keys(stored).length === columns.length + 1
    && columns.every((column) => Object.hasOwn(stored, column) && stored[column] === values[column]);
}

/** Reads the committed record back; WRITE_UNCONFIRMED when it is missing or differs. */
export async function readBack(deps: WriteDeps, written: NewRecordRow): Promise<RecordRow> {
  const row = await deps.engine.read((db) => findRecord(db, written.record_id));
  if (!row || !sameColumns(row, written)) {
    throw new AdapterError('WRITE_UNCONFIRMED',
      'the committed record could not be read back unchanged; read the memory before retrying');
  }
  return row;
}

/** A write envelope (CONTRACT.md §6.1): measured budget, never trimmed. */
export async function writeEnvelope(input: {
  deps: WriteDeps; operation: ToolName; requestId: string; scope: ScopeTuple; status: string; record: RecordRow;
  withSummary: boolean; replay?: boolean; embeddingCalls: number;
}): Promise<Record<string, unknown>> {
  const results = [publicRecord(input.record)];
  const contradictions = input.withSummary
    ? await input.deps.engine.read((db) => contradictionSummary(db, scopeDigest(input.scope)))
    : [];
  return {
    status: input.status, memory_needed: true, scope: envelopeScope(input.scope), results, contradictions,
    budget: await measuredBudget(results), degradation: null,
    audit: adapterAudit(input.operation, input.requestId, input.scope, input.embeddingCalls),
    ...(input.replay ? { idempotent_replay: true } : {}),
  };
}
