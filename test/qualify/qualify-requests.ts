import { SeededRandom } from '../bench/seeded-random.js';
import type { PublicRecord } from './server-fleet.js';

// Valid requests of the five tools for the load and kills parts, in one PROJECT scope. Every fact starts with its
// own label and number, so no two are DUPLICATE and no two share a contradiction key; the rest of the sentence comes
// from a small vocabulary, so KEYWORD, SEMANTIC and HYBRID searches find something.

const SUBJECTS = [
  'worker pool', 'ingest job', 'release branch', 'cache layer', 'test runner', 'build step', 'log shipper',
  'queue consumer',
] as const;
const VERBS = ['runs on', 'writes to', 'reads from', 'is pinned to', 'is drained by', 'retries against'] as const;
const OBJECTS = [
  'bucket north', 'shard seven', 'node twenty', 'region west', 'the blue cluster', 'port forty', 'the nightly window',
  'replica three',
] as const;
/** The search kinds of CONTRACT.md §5.1, all of which the parts exercise. */
export const SEARCH_KINDS = ['EXACT', 'KEYWORD', 'SEMANTIC', 'HYBRID'] as const;
export type SearchKind = (typeof SEARCH_KINDS)[number];
export type RetrievalMode = 'CURRENT' | 'REVIEW_HISTORY';

/** Now as a contract timestamp (whole seconds), so current writes are fresh at admission. */
export const nowText = (): string => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

const pick = <T>(rng: SeededRandom, items: readonly T[]): T => items[rng.int(items.length)]!;

/** Builds the parts' requests in `projectId`; `label` keeps the idempotency keys and facts of two factories apart. */
export class QualifyRequests {
  readonly #scope: { scope: 'PROJECT'; project_id: string };
  readonly #label: string;
  readonly #rng: SeededRandom;
  #next = 0;

  constructor(projectId: string, label: string, seed: number) {
    this.#scope = { scope: 'PROJECT', project_id: projectId };
    this.#label = label;
    this.#rng = new SeededRandom(seed);
  }

  /** The request fields of the scope. */
  get scope(): { scope: 'PROJECT'; project_id: string } {
    return this.#scope;
  }

  #key(kind: string): string {
    this.#next += 1;
    return `${this.#label}-${kind}-${this.#next}`;
  }

  #fact(): string {
    return `${this.#label} ${this.#next}: ` +
      `the ${pick(this.#rng, SUBJECTS)} ${pick(this.#rng, VERBS)} ${pick(this.#rng, OBJECTS)}`;
  }

  #provenance(): Record<string, string> {
    return {
      source_class: 'repo', source_ref: `config/${this.#label}/${this.#next}.toml`, source_hash: 'cd'.repeat(32),
      review_ref: 'qualify-review', extraction_method: 'manual',
    };
  }

  /**
   * A Candidate store (any writing profile); it carries source_timestamp, so an owner can promote it without a payload.
   */
  storeCandidate(): Record<string, unknown> {
    const idempotencyKey = this.#key('cand');
    return {
      ...this.#scope, fact: this.#fact(), memory_type: 'PROJECT_LEARNED_FACT', idempotency_key: idempotencyKey,
      freshness_policy: { kind: 'never' }, source_provenance: this.#provenance(), source_timestamp: nowText(),
      tags: ['qualify'],
    };
  }

  /** A current store (owner-current). */
  storeCurrent(): Record<string, unknown> {
    const idempotencyKey = this.#key('cur');
    const now = nowText();
    return {
      ...this.#scope, fact: this.#fact(), memory_type: 'PROJECT_LEARNED_FACT', idempotency_key: idempotencyKey,
      freshness_policy: { kind: 'never' }, source_provenance: this.#provenance(),
      requested_lifecycle_state: 'VALIDATED_CURRENT',
      source_timestamp: now, last_verified_at: now,
    };
  }

  /** A REVERIFY of a current record (owner-current). */
  reverify(record: PublicRecord): Record<string, unknown> {
    return {
      ...this.#scope, memory_id: record.memory_id, expected_revision: record.revision, mode: 'REVERIFY',
      idempotency_key: this.#key('rv'), verification: { source_timestamp: nowText() },
    };
  }

  /** The REVERIFY that promotes a Candidate (owner-current): expected_record_id names the Candidate. */
  promote(record: PublicRecord): Record<string, unknown> {
    return {
      ...this.#scope, memory_id: record.memory_id, expected_revision: record.revision,
      expected_record_id: record.record_id, mode: 'REVERIFY',
      idempotency_key: this.#key('pr'),
    };
  }

  /** A REPLACE of a current record by a new fact (owner-current). */
  replace(record: PublicRecord): Record<string, unknown> {
    const idempotencyKey = this.#key('rp');
    return {
      ...this.#scope, memory_id: record.memory_id, expected_revision: record.revision, mode: 'REPLACE',
      idempotency_key: idempotencyKey,
      replacement: {
        fact: this.#fact(), source_provenance: this.#provenance(), freshness_policy: { kind: 'never' },
        source_timestamp: nowText(),
      },
    };
  }

  get(memoryId: string, mode: RetrievalMode): Record<string, unknown> {
    return { ...this.#scope, memory_id: memoryId, retrieval_mode: mode };
  }

  /**
   * A search of `kind` and `mode`: EXACT looks for `exactFact` (a stored fact, so it can hit), the others for words
   * of the vocabulary. REVIEW_HISTORY asks as a HISTORICAL_QUESTION, CURRENT as CURRENT_PROJECT_STATE.
   */
  search(kind: SearchKind, mode: RetrievalMode, exactFact: string | undefined): Record<string, unknown> {
    const query = kind === 'EXACT' && exactFact !== undefined
      ? exactFact
      : kind === 'KEYWORD' ? `${pick(this.#rng, SUBJECTS)} ${pick(this.#rng, OBJECTS)}`
        : `which ${pick(this.#rng, SUBJECTS)} ${pick(this.#rng, VERBS)} ${pick(this.#rng, OBJECTS)}`;
    return {
      ...this.#scope, query, retrieval_mode: mode, retrieval_mode_kind: kind,
      intent_class: mode === 'CURRENT' ? 'CURRENT_PROJECT_STATE' : 'HISTORICAL_QUESTION', top_k: 5, max_memories: 4,
      max_bytes: 8000,
    };
  }

  status(): Record<string, unknown> {
    return { ...this.#scope };
  }
}
