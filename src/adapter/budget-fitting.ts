import { canonicalJson, freezeCanonical } from '../core/canonical-json.js';
import { utf8Bytes } from '../core/text.js';
import { countListTokens, recordCoreTokens } from './token-measure.js';

/** The outcome of fitting results into a byte and token budget (CONTRACT.md §12.5). */
export interface FittedResults {
  readonly results: Record<string, unknown>[];
  readonly truncated: boolean;
  readonly serializedBytes: number;
  readonly serializedTokens: number;
}

/**
 * Removes the last result while the canonical JSON of the list exceeds `maxBytes` bytes or `maxTokens`
 * o200k_base tokens; measures the final list (0 and 0 when empty). Both measures only grow with the
 * list, so the longest prefix that fits is found from the front, and each result is serialised and
 * counted at most once (countListTokens), never past the first one that does not fit. Each result
 * measured is deep-frozen with its text (freezeCanonical), so the envelope's text reuses it. `fixedTokens[i]`, when
 * given, is result i's stored count (record_token_counts, decision 0036): its core is then not counted again.
 */
export async function fitBudget(
  results: readonly Record<string, unknown>[], maxBytes: number, maxTokens: number,
  fixedTokens: readonly (number | null)[] = [],
): Promise<FittedResults> {
  const texts: string[] = [];
  const knownCores: (number | undefined)[] = [];
  let fitted = { serializedBytes: 0, serializedTokens: 0 };
  for (const result of results) {
    const text = canonicalJson(freezeCanonical(result));
    // `[`, `]` and a comma between neighbours.
    const bytes = texts.length === 0 ? 2 + utf8Bytes(text) : fitted.serializedBytes + 1 + utf8Bytes(text);
    if (bytes > maxBytes) break;
    const fixed = fixedTokens[texts.length];
    knownCores.push(fixed == null ? undefined : await recordCoreTokens(result, text, fixed));
    const tokens = await countListTokens([...texts, text], knownCores);
    if (tokens > maxTokens) break;
    texts.push(text);
    fitted = { serializedBytes: bytes, serializedTokens: tokens };
  }
  return { results: results.slice(0, texts.length), truncated: texts.length < results.length, ...fitted };
}
