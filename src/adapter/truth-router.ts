import { AdapterError } from '../core/adapter-error.js';
import { strip, utf8Bytes } from '../core/text.js';
import { INTENT_CLASSES, RETRIEVAL_MODES, RETRIEVAL_MODE_KINDS } from '@factlane/schema';
import { requireEnum } from './request-scope.js';

/** A validated search plan: what to retrieve and how much. */
export interface SearchPlan {
  readonly query: string;
  readonly intent: (typeof INTENT_CLASSES)[number];
  readonly mode: (typeof RETRIEVAL_MODES)[number];
  readonly kind: (typeof RETRIEVAL_MODE_KINDS)[number];
  readonly topK: number;
  readonly maxMemories: number;
  readonly maxBytes: number;
  readonly maxTokens: number;
  /** True when the intent needs no memory: answer NO_MEMORY_NEEDED without reading storage. */
  readonly noMemoryNeeded: boolean;
  /** Candidate pool per channel (CONTRACT.md §12.1). */
  readonly pool: number;
  /** True when a query embedding is needed (SEMANTIC, HYBRID). */
  readonly usesVectors: boolean;
}

const MAX_QUERY_BYTES = 512;

function integer(field: string, value: unknown, min: number, max: number, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
    throw new AdapterError('INVALID_ENVELOPE', `${field} must be an integer ${min}-${max}`);
  return value;
}

/**
 * The TruthRouter (CONTRACT.md §5.1, §11, §12.1): validates a search request in contract order (query,
 * integers, retrieval_mode_kind, retrieval_mode, intent_class), short-circuits intents that need no
 * memory, requires REVIEW_HISTORY for HISTORICAL_QUESTION, and sizes the candidate pools.
 */
export function routeSearch(request: Readonly<Record<string, unknown>>): SearchPlan {
  if (typeof request.query !== 'string' || strip(request.query) === ''
    || utf8Bytes(strip(request.query)) > MAX_QUERY_BYTES) {
    throw new AdapterError('INVALID_ENVELOPE', `query must be 1-${MAX_QUERY_BYTES} bytes after stripping whitespace`);
  }
  const topK = integer('top_k', request.top_k, 1, 8, 5);
  const maxMemories = integer('max_memories', request.max_memories, 1, 8, 5);
  const maxBytes = integer('max_bytes', request.max_bytes, 1, 8000, 6000);
  const maxTokens = integer('max_tokens', request.max_tokens, 1, 1600, 1200);
  const kind = requireEnum('retrieval_mode_kind', request.retrieval_mode_kind ?? 'SEMANTIC', RETRIEVAL_MODE_KINDS);
  const mode = requireEnum('retrieval_mode', request.retrieval_mode ?? 'CURRENT', RETRIEVAL_MODES);
  if (typeof request.intent_class !== 'string'
    || !(INTENT_CLASSES as readonly string[]).includes(request.intent_class)) {
    throw new AdapterError('UNKNOWN_INTENT', `intent_class must be one of: ${[...INTENT_CLASSES].sort().join(', ')}`);
  }
  const intent = request.intent_class as SearchPlan['intent'];
  const noMemoryNeeded = intent === 'GENERAL_TASK_NO_MEMORY_REQUIRED';
  if (!noMemoryNeeded && intent === 'HISTORICAL_QUESTION' && mode !== 'REVIEW_HISTORY') {
    throw new AdapterError('INVALID_ENVELOPE', 'HISTORICAL_QUESTION needs retrieval_mode REVIEW_HISTORY');
  }
  return {
    query: strip(request.query), intent, mode, kind, topK, maxMemories, maxBytes, maxTokens, noMemoryNeeded,
    pool: kind === 'EXACT' ? topK * 4 : Math.max(topK * 4, 16), usesVectors: kind === 'SEMANTIC' || kind === 'HYBRID',
  };
}
