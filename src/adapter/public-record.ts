import { AdapterError } from '../core/adapter-error.js';
import { canonicalJson } from '../core/canonical-json.js';
import { utf8Bytes } from '../core/text.js';
import { scopeOf, type RecordRow } from '../storage/record-repository.js';
import { fitBudget } from './budget-fitting.js';
import { countObjectTokens, fixedRecordTokens, fixedTokensRecounter } from './token-measure.js';

/** The public form of a record (CONTRACT.md §6.4); internal hashes, keys and embedding provenance never appear. */
export function publicRecord(
  row: RecordRow, search: { relevance_score: number; retrieval_rank: number } | null = null,
): Record<string, unknown> {
  return {
    memory_id: row.memory_id, record_id: row.record_id, revision: row.revision, parent_record_id: row.parent_record_id,
    scope: scopeOf(row),
    memory_type: row.memory_type, fact: row.fact, source_provenance: JSON.parse(row.source_provenance),
    source_timestamp: row.source_timestamp, created_at: row.created_at, last_verified_at: row.last_verified_at,
    verified_by: row.verified_by, authority_role: row.authority_role,
    contribution_origin: JSON.parse(row.contribution_origin),
    freshness_policy: JSON.parse(row.freshness_policy), supersedes: JSON.parse(row.supersedes),
    contradiction_state: row.contradiction_state, confidence: row.confidence, tags: JSON.parse(row.tags),
    lifecycle_state: row.lifecycle_state,
    relevance_score: search ? Number(search.relevance_score.toFixed(6)) : null,
    retrieval_rank: search?.retrieval_rank ?? null,
  };
}

/** A single record's budget (CONTRACT.md §13.1): what every tool can return alone with default budgets. */
export const MAX_RECORD_BYTES = 5800;
export const MAX_RECORD_TOKENS = 1150;

/**
 * INVALID_ENVELOPE when the record's public canonical JSON exceeds 5800 bytes or 1150 tokens. Returns the count its
 * writer stores beside it (fixedRecordTokens, decision 0036), null when its text does not count by pieces.
 */
export async function assertRecordFitsBudget(record: Record<string, unknown>): Promise<number | null> {
  const text = canonicalJson(record);
  const bytes = utf8Bytes(text);
  // A token is at least one byte, so a text of at most MAX_RECORD_TOKENS bytes cannot exceed the token budget.
  if (bytes > MAX_RECORD_BYTES || (bytes > MAX_RECORD_TOKENS && (await countObjectTokens(text)) > MAX_RECORD_TOKENS)) {
    throw new AdapterError('INVALID_ENVELOPE',
      `the record would exceed the single-record budget of ${MAX_RECORD_BYTES} bytes / ${MAX_RECORD_TOKENS} tokens; `
        + `shorten the fact, tags or provenance`);
  }
  return fixedRecordTokens(record, text);
}

/** The budget of a write envelope: measured, never trimmed, truncated false (CONTRACT.md §6.1). */
export async function measuredBudget(results: readonly Record<string, unknown>[]): Promise<Record<string, unknown>> {
  // The same measure as a read's budget, with nothing to drop.
  const measured = await fitBudget(results, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY);
  return {
    requested_top_k: null, returned: measured.results.length, serialized_bytes: measured.serializedBytes,
    serialized_tokens: measured.serializedTokens, truncated: false,
  };
}

/**
 * The count a record's writer stores beside it (decision 0036), from the stored row: what the migration to schema 5
 * and the search bench store for records written without one. Null when its text does not count by pieces.
 */
export async function fixedTokensOfRow(row: RecordRow): Promise<number | null> {
  const record = publicRecord(row);
  return fixedRecordTokens(record, canonicalJson(record));
}

/**
 * Loads the encoder and resolves with a synchronous fixedTokensOfRow: what `audit` recounts every stored count with
 * (storage's RecordRecounter; the CLI passes it down, as it passes fixedTokensOfRow to the migration).
 */
export async function rowTokenRecounter(): Promise<(row: RecordRow) => number | null> {
  const recount = await fixedTokensRecounter();
  return (row) => {
    const record = publicRecord(row);
    return recount(record, canonicalJson(record));
  };
}
