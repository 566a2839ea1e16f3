import { canonicalJson } from '../core/canonical-json.js';
import { utf8Bytes } from '../core/text.js';
import { countListTokens } from './token-measure.js';

/** The outcome of fitting results into a byte and token budget (CONTRACT.md §12.5). */
export interface FittedResults {
  readonly results: Record<string, unknown>[];
  readonly truncated: boolean;
  readonly serializedBytes: number;
  readonly serializedTokens: number;
}

/**
 * Removes the last result while the canonical JSON of the list exceeds `maxBytes` bytes or `maxTokens`
 * o200k_base tokens; measures the final list (0 and 0 when empty). Each result is serialised and counted
 * once, whatever the number of lists tried (countListTokens).
 */
export async function fitBudget(results: readonly Record<string, unknown>[], maxBytes: number, maxTokens: number): Promise<FittedResults> {
  const texts = results.map((result) => canonicalJson(result));
  const sizes = texts.map(utf8Bytes);
  for (let kept = results.length; kept > 0; kept -= 1) {
    // `[`, `]` and a comma between neighbours.
    const bytes = 2 + (kept - 1) + sizes.slice(0, kept).reduce((sum, size) => sum + size, 0);
    if (bytes > maxBytes) continue;
    const tokens = await countListTokens(texts.slice(0, kept));
    if (tokens <= maxTokens) return { results: results.slice(0, kept), truncated: kept < results.length, serializedBytes: bytes, serializedTokens: tokens };
  }
  return { results: [], truncated: results.length > 0, serializedBytes: 0, serializedTokens: 0 };
}
