import { canonicalJson } from '../core/canonical-json.js';
import { utf8Bytes } from '../core/text.js';
import { countTokens } from './token-measure.js';

/** The outcome of fitting results into a byte and token budget (CONTRACT.md §12.5). */
export interface FittedResults {
  readonly results: Record<string, unknown>[];
  readonly truncated: boolean;
  readonly serializedBytes: number;
  readonly serializedTokens: number;
}

/**
 * Removes the last result while the canonical JSON of the list exceeds `maxBytes` bytes or `maxTokens`
 * o200k_base tokens; measures the final list (0 and 0 when empty).
 */
export async function fitBudget(results: readonly Record<string, unknown>[], maxBytes: number, maxTokens: number): Promise<FittedResults> {
  const kept = [...results];
  let truncated = false;
  for (;;) {
    if (kept.length === 0) return { results: kept, truncated, serializedBytes: 0, serializedTokens: 0 };
    const text = canonicalJson(kept);
    const bytes = utf8Bytes(text);
    const tokens = bytes > maxBytes ? Number.POSITIVE_INFINITY : await countTokens(text);
    if (bytes <= maxBytes && tokens <= maxTokens) return { results: kept, truncated, serializedBytes: bytes, serializedTokens: tokens };
    kept.pop();
    truncated = true;
  }
}
