import { searchText, tokenRuns } from '../core/text.js';
import { contractNow } from '../core/timestamps.js';
import type { EmbeddingProvider } from '../embedding/embedding-provider.js';
import type { SQLiteVecEngine } from '../storage/sqlite-vec-engine.js';
import { contradictionSummary, type Reader } from '../storage/record-repository.js';
import {
  exactHits, keywordHits, resultRecords, scopeHasHistorical, semanticHits, type CandidateRow, type ChannelHit,
} from '../storage/retrieval-repository.js';
import { fitBudget } from './budget-fitting.js';
import { nativeContentHash } from './derived-identities.js';
import { adapterAudit, emptyBudget, envelopeScope } from './envelope.js';
import { rowIsFresh } from './freshness.js';
import { publicRecord } from './public-record.js';
import { scopeDigest, type ScopeTuple } from './request-scope.js';
import { selectDiverse, type DiversityCandidate } from './source-diversity.js';
import { routeSearch, type SearchPlan } from './truth-router.js';
import { embedUnderRuntime, requireCompatible } from './runtime-compatibility.js';

type Source = DiversityCandidate['source'];

/** A candidate with its score; its source (§12.4) is parsed on first use, for the candidates selection reaches. */
class Scored implements DiversityCandidate {
  #source: Source | undefined;

  constructor(readonly row: CandidateRow, readonly score: number) {}

  get source(): Source {
    if (this.#source === undefined) {
      const { source_class, source_ref, source_hash } = JSON.parse(this.row.source_provenance) as Source;
      this.#source = { source_class, source_ref, source_hash };
    }
    return this.#source;
  }
}

/**
 * Candidates of the plan's channel(s), scored (CONTRACT.md §12.2), read on `db` (the search's snapshot), with the
 * query's embedding computed before it when the plan uses vectors.
 */
async function scoredCandidates(
  db: Reader, plan: SearchPlan, scope: ScopeTuple, embedding: Float32Array | null,
): Promise<Scored[]> {
  const currentOnly = plan.mode === 'CURRENT';
  const scores = new Map<number, { row: CandidateRow; vector?: number; keyword?: number }>();
  const add = (hits: ChannelHit[], channel: 'vector' | 'keyword') => {
    for (const hit of hits) {
      const entry = scores.get(hit.row.row_id) ?? { row: hit.row };
      entry[channel] = channel === 'vector' ? Math.max(0, 1 - hit.distance! / 2) : 1 / hit.rank;
      scores.set(hit.row.row_id, entry);
    }
  };
  if (plan.kind === 'EXACT') {
    const hits = await exactHits(db, scope, nativeContentHash(scope, plan.query), currentOnly, plan.pool);
    return hits.map((hit) => new Scored(hit.row, 1));
  }
  if (embedding !== null) add(await semanticHits(db, scopeDigest(scope), embedding, currentOnly, plan.pool), 'vector');
  if (plan.kind === 'KEYWORD' || plan.kind === 'HYBRID') {
    add(await keywordHits(db, scope, tokenRuns(searchText(plan.query)), currentOnly, plan.pool), 'keyword');
  }
  return [...scores.values()].map(({ row, vector, keyword }) => new Scored(row,
    vector !== undefined && keyword !== undefined ? 0.6 * vector + 0.4 * keyword : (vector ?? keyword ?? 0)));
}

/** VALIDATED_CURRENT and not in an open contradiction: what CURRENT retrieval may return (freshness aside). */
function currentAndValid(row: CandidateRow): boolean {
  return row.lifecycle_state === 'VALIDATED_CURRENT'
    && (row.contradiction_state === 'NONE' || row.contradiction_state === 'RESOLVED');
}

/**
 * memory_search (CONTRACT.md §5.1, §12): TruthRouter validation, NO_MEMORY_NEEDED short-circuit, the
 * channel(s) of the kind, CURRENT eligibility and freshness, source diversity for CURRENT SEMANTIC and
 * HYBRID, budget fitting, and the status and degradation precedence of §12.6.
 */
export async function searchMemory(
  deps: { engine: SQLiteVecEngine; provider: EmbeddingProvider; clock: () => Date },
  input: { request: Readonly<Record<string, unknown>>; scope: ScopeTuple; requestId: string },
): Promise<Record<string, unknown>> {
  const { scope } = input;
  const plan = routeSearch(input.request);
  if (plan.noMemoryNeeded) {
    const audit = adapterAudit('memory_search', input.requestId, scope, 0);
    return {
      status: 'NO_MEMORY_NEEDED', memory_needed: false, scope: envelopeScope(scope), results: [], contradictions: [],
      budget: emptyBudget(plan.topK), degradation: null,
      audit: { request_id: audit.request_id, operation: audit.operation, scope_digest: audit.scope_digest,
        public_contract_revision: audit.public_contract_revision, raw_content_logged: false },
    };
  }
  const now = contractNow(deps.clock());
  let embedding: Float32Array | null = null;
  if (plan.kind !== 'EXACT' && plan.usesVectors) {
    // The compatibility step precedes any retrieval (CONTRACT.md §11); the embedding runs outside storage.
    const runtime = await requireCompatible(deps);
    embedding = await embedUnderRuntime(deps, runtime.fingerprint, () => deps.provider.embedQuery(plan.query));
  }
  // Every read of the search (channels, the results' full records, the contradiction summary, the history check) sees
  // one snapshot: read one by one, another server's commit in between could drop a record from the answer while its
  // successor was never read, or pair an empty answer with a contradiction summary, a state the database was never in.
  const read = await deps.engine.readSnapshot(async (db) => {
    const scored = await scoredCandidates(db, plan, scope, embedding);
    const byRecordId = (a: Scored, b: Scored) => (a.row.record_id < b.row.record_id ? -1
      : a.row.record_id > b.row.record_id ? 1 : 0);
    scored.sort((a, b) => b.score - a.score || byRecordId(a, b));
    let staleDropped = 0;
    const eligible = plan.mode === 'REVIEW_HISTORY' ? scored : scored.filter(({ row }) => {
      if (!currentAndValid(row)) return false;
      if (rowIsFresh(row, now.epochMicros)) return true;
      staleDropped += 1;
      return false;
    });
    const diversify = plan.mode === 'CURRENT' && plan.usesVectors;
    const selected = diversify ? selectDiverse(eligible, plan.maxMemories) : eligible.slice(0, plan.maxMemories);
    // The full records of the results only; the same snapshot, so each is as its channel read it.
    const records = await resultRecords(db, selected.map((candidate) => candidate.row.row_id));
    const found = selected.flatMap((candidate) => {
      const row = records.get(candidate.row.row_id);
      return row === undefined ? [] : [{ row, score: candidate.score }];
    });
    const results = found.map(({ row, score }, index) =>
      publicRecord(row, { relevance_score: score, retrieval_rank: index + 1 }));
    const fixedTokens = found.map(({ row }) => row.fixed_tokens);
    const contradictions = await contradictionSummary(db, scopeDigest(scope));
    const historical = plan.mode === 'REVIEW_HISTORY' && plan.usesVectors && (await scopeHasHistorical(db, scope));
    return { results, fixedTokens, staleDropped, contradictions, historical };
  });
  const { results, staleDropped, contradictions } = read;
  const fitted = await fitBudget(results, plan.maxBytes, plan.maxTokens, read.fixedTokens);
  let status = 'OK';
  let degradation: string | null = null;
  if (results.length === 0 && staleDropped > 0) [status, degradation] = ['DEGRADED', 'STALE_ONLY'];
  else if (results.length === 0 && contradictions.length > 0) [status, degradation] = [
    'CONTRADICTION', 'CONTRADICTION_UNRESOLVED',
  ];
  else if (read.historical) [status, degradation] = ['DEGRADED', 'HISTORY_SEMANTIC_PARTIAL'];
  if (fitted.truncated && degradation === null) [status, degradation] = ['DEGRADED', 'BUDGET_EXCEEDED'];
  return {
    status, memory_needed: true, scope: envelopeScope(scope), results: fitted.results, contradictions,
    budget: { requested_top_k: plan.topK, returned: fitted.results.length, serialized_bytes: fitted.serializedBytes,
      serialized_tokens: fitted.serializedTokens, truncated: fitted.truncated, max_bytes: plan.maxBytes,
      max_tokens: plan.maxTokens },
    degradation, audit: adapterAudit('memory_search', input.requestId, scope, embedding === null ? 0 : 1),
  };
}
