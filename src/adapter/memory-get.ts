import { AdapterError } from '../core/adapter-error.js';
import { isUuid } from '../core/identifiers.js';
import { contractNow } from '../core/timestamps.js';
import { RETRIEVAL_MODES } from '@factlane/schema';
import type { SQLiteVecEngine } from '../storage/sqlite-vec-engine.js';
import { memoryPresence } from '../storage/record-repository.js';
import { memoryRecords } from '../storage/retrieval-repository.js';
import { fitBudget } from './budget-fitting.js';
import { adapterAudit, envelopeScope } from './envelope.js';
import { rowIsFresh } from './freshness.js';
import { publicRecord } from './public-record.js';
import { requireEnum, type ScopeTuple } from './request-scope.js';

const GET_MAX_BYTES = 6000;
const GET_MAX_TOKENS = 1200;
const HISTORY_LIMIT = 8;

/**
 * memory_get (CONTRACT.md §5.2): CURRENT returns the memory's current record in the exact scope if fresh
 * (else DEGRADED / STALE_ONLY); REVIEW_HISTORY its records of any lifecycle, newest 8, budget-fitted.
 * Nothing qualifying: CROSS_SCOPE_DENIED when the memory lives only under another scope, else NOT_FOUND.
 */
export async function getMemory(
  deps: { engine: SQLiteVecEngine; clock: () => Date },
  input: { request: Readonly<Record<string, unknown>>; scope: ScopeTuple; requestId: string },
): Promise<Record<string, unknown>> {
  const { request, scope } = input;
  if (typeof request.memory_id !== 'string' || !isUuid(request.memory_id))
    throw new AdapterError('INVALID_ENVELOPE', 'memory_id must be a UUID');
  const memoryId = request.memory_id.toLowerCase();
  const mode = requireEnum('retrieval_mode', request.retrieval_mode ?? 'CURRENT', RETRIEVAL_MODES);
  const now = contractNow(deps.clock());
  const records = await deps.engine.read((db) =>
    memoryRecords(db, scope, memoryId, mode === 'CURRENT' ? 1 : HISTORY_LIMIT));
  const qualifying = mode === 'CURRENT' ? records.filter((row) => row.lifecycle_state === 'VALIDATED_CURRENT')
    : records;
  if (qualifying.length === 0) {
    const presence = await deps.engine.read((db) => memoryPresence(db, scope, memoryId));
    if (!presence.inScope && presence.anywhere)
      throw new AdapterError('CROSS_SCOPE_DENIED', 'the memory exists only under another scope; send its exact scope');
    if (mode === 'CURRENT' && presence.inScope) {
      throw new AdapterError('NOT_FOUND',
        'this memory has no current record in this scope; retrieval_mode REVIEW_HISTORY reads its records');
    }
    throw new AdapterError('NOT_FOUND', 'no record of this memory in this scope');
  }
  let degradation: string | null = null;
  let candidates = qualifying;
  if (mode === 'CURRENT' && !rowIsFresh(qualifying[0]!, now.epochMicros)) {
    degradation = 'STALE_ONLY';
    candidates = [];
  }
  // A record's stored count (decision 0036) spares counting it whole, as a search's results are.
  const fitted = await fitBudget(candidates.map((row) => publicRecord(row)), GET_MAX_BYTES, GET_MAX_TOKENS,
    candidates.map((row) => row.fixed_tokens));
  if (fitted.truncated && degradation === null) degradation = 'BUDGET_EXCEEDED';
  return {
    status: degradation ? 'DEGRADED' : 'OK', memory_needed: true, scope: envelopeScope(scope), results: fitted.results,
    contradictions: [],
    budget: { requested_top_k: null, returned: fitted.results.length, serialized_bytes: fitted.serializedBytes,
      serialized_tokens: fitted.serializedTokens, truncated: fitted.truncated },
    degradation, audit: adapterAudit('memory_get', input.requestId, scope, 0),
  };
}
