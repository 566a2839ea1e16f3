import { sql } from 'kysely';
import { eligibleNeighbours, type Neighbour } from './eligible-neighbours.js';
import { vectorBytes } from './eligible-vectors.js';
import {
  createdAtKey, inScope, scopeArgs, scopeSlots, type Reader, type RecordRow, type ScopeColumns,
} from './record-repository.js';
import { runShape } from './statement-shapes.js';

// The retrieval channels of CONTRACT.md §12.2. Every query matches the exact scope tuple; for CURRENT the
// eligibility filter sits inside the same SQL, before LIMIT (or, for vectors, before k).

/**
 * The columns a search ranks, filters (CURRENT eligibility, freshness) and diversifies its candidates on. A channel
 * reads only these, for its whole pool; the full records are read for the results alone (resultRecords).
 */
const CANDIDATE_COLUMNS = [
  'row_id', 'record_id', 'lifecycle_state', 'contradiction_state', 'verified_by', 'last_verified_at',
  'freshness_policy',
  'source_provenance',
] as const;

/** A search candidate: the columns of CANDIDATE_COLUMNS. */
export type CandidateRow = Pick<RecordRow, (typeof CANDIDATE_COLUMNS)[number]>;

/** One channel candidate: the record's candidate columns and its channel position (1-based) or vector distance. */
export interface ChannelHit {
  readonly row: CandidateRow;
  readonly rank: number;
  readonly distance: number | null;
}

/** EXACT: records whose content hash equals the query's, newest first; CURRENT filter before the limit. */
export async function exactHits(
  reader: Reader, scope: ScopeColumns, contentHash: string, currentOnly: boolean, limit: number,
): Promise<ChannelHit[]> {
  const rows = (await runShape(reader, `exactHits:${currentOnly}`, [...scopeArgs(scope), contentHash, limit],
    (slots) => {
    let query = inScope(reader, scopeSlots(slots)).clearSelect().select(CANDIDATE_COLUMNS)
      .where('native_content_hash', '=', slots[5]);
    if (currentOnly)
      query = query.where('lifecycle_state', '=', 'VALIDATED_CURRENT')
        .where('contradiction_state', 'in', ['NONE', 'RESOLVED']);
    return query.orderBy(createdAtKey(), 'desc').orderBy('record_id', 'asc').limit(slots[6]).compile();
  })).rows as CandidateRow[];
  return rows.map((row, index) => ({ row, rank: index + 1, distance: null }));
}

/**
 * KEYWORD: FTS5 over search_text with every term quoted (all must match), ordered by bm25, then newest;
 * scope and CURRENT filter in the same statement before LIMIT. An expression FTS5 rejects gives no hits (CONTRACT.md
 * §12.2; quoted token runs give FTS5 nothing to reject, so this is a safeguard); any other error is a fault and passes
 * through, such as a damaged `fact_fts`, which used to look like a search that found nothing.
 */
export async function keywordHits(
  reader: Reader, scope: ScopeColumns, terms: readonly string[], currentOnly: boolean, limit: number,
): Promise<ChannelHit[]> {
  if (terms.length === 0) return [];
  const match = terms.map((term) => `"${term.replaceAll('"', '""')}"`).join(' ');
  const columns = sql.join(CANDIDATE_COLUMNS.map((column) => sql.ref(`r.${column}`)));
  const current = currentOnly
    ? sql`AND r.lifecycle_state = 'VALIDATED_CURRENT' AND r.contradiction_state IN ('NONE', 'RESOLVED')`
    : sql``;
  try {
    // FTS5 MATCH and bm25() have no Kysely builder, hence raw SQL.
    const result = await runShape(reader, `keywordHits:${currentOnly}`, [...scopeArgs(scope), match, limit],
      (slots) => {
      const s = scopeSlots(slots);
      return sql<CandidateRow>`
      SELECT ${columns} FROM fact_fts JOIN adapter_records r ON r.row_id = fact_fts.rowid
      WHERE fact_fts MATCH ${slots[5]} AND r.scope = ${s.scope} AND r.project_id IS ${s.project_id}
        AND r.worktree_id IS ${s.worktree_id} AND r.workflow_id IS ${s.workflow_id} AND r.agent_id IS ${s.agent_id}
        ${current}
      ORDER BY bm25(fact_fts) ASC, ${createdAtKey('r.created_at')} DESC, r.record_id ASC LIMIT ${slots[6]}`
        .compile(reader);
    });
    return result.rows.map((row, index) => ({ row, rank: index + 1, distance: null }));
  } catch (error) {
    if (isRejectedExpression(error)) return [];
    throw error;
  }
}

/** FTS5's answer to a MATCH expression it cannot parse: `fts5: syntax error near …`, `unterminated string`. */
function isRejectedExpression(error: unknown): boolean {
  const { code, message } = error as { code?: string; message?: string };
  return code === 'SQLITE_ERROR' && /^(fts5: syntax error|unterminated string)/.test(message ?? '');
}

/**
 * SEMANTIC with `k = limit`. CURRENT scores only VALIDATED_CURRENT vectors of the exact scope (eligibleNeighbours:
 * the eligible forms of a coded scope, re-scored exactly; the scope's `fact_vec` partition filtered inside the KNN
 * for a small one), so nearer Candidates are never scored nor use up k; REVIEW_HISTORY is sqlite-vec KNN over every
 * vector of the scope's `fact_vec` partition.
 */
export async function semanticHits(
  reader: Reader, scopeKey: string, embedding: Float32Array, currentOnly: boolean, limit: number,
): Promise<ChannelHit[]> {
  // CURRENT: the candidate columns come back with the neighbours, in one statement.
  if (currentOnly) {
    const rows = await eligibleNeighbours(reader, scopeKey, embedding, limit, CANDIDATE_COLUMNS);
    return rows.map(({ rowid: _rowid, distance, ...row }, index) => ({ row, rank: index + 1, distance }));
  }
  // vec0 takes only its own ORDER BY distance, so a KNN of fact_vec cannot sit under a join that orders:
  // two statements.
  const neighbours = (await runShape(reader, 'semanticHits:history', [vectorBytes(embedding), BigInt(limit), scopeKey],
    ([v, k, key]) => sql<Neighbour>`SELECT rowid, distance FROM fact_vec WHERE embedding MATCH ${v} AND k = ${k}
      AND scope_key = ${key} ORDER BY distance`.compile(reader))).rows;
  if (neighbours.length === 0) return [];
  const rowIds = neighbours.map((n) => n.rowid);
  const rows = (await runShape(reader, `candidatesByRowId:${rowIds.length}`, rowIds, (slots) =>
    reader.selectFrom('adapter_records')
    .select(CANDIDATE_COLUMNS).where('row_id', 'in', slots).compile())).rows as CandidateRow[];
  const byRowId = new Map(rows.map((row) => [row.row_id, row]));
  return neighbours.flatMap((n, index) => {
    const row = byRowId.get(n.rowid);
    return row ? [{ row, rank: index + 1, distance: n.distance }] : [];
  });
}

/** A result's full record with its stored token count (decision 0036), null when it has none. */
export type ResultRow = RecordRow & { fixed_tokens: number | null };

/** The full records of `rowIds` by row id, with their stored token counts; a row id no longer stored is absent. */
export async function resultRecords(reader: Reader, rowIds: readonly number[]): Promise<Map<number, ResultRow>> {
  if (rowIds.length === 0) return new Map();
  const rows = (await runShape(reader, `recordsByRowId:${rowIds.length}`, rowIds, (slots) =>
    reader.selectFrom('adapter_records as r')
    .leftJoin('record_token_counts as t', 't.row_id', 'r.row_id')
    .selectAll('r').select('t.fixed_tokens').where('r.row_id', 'in', slots).compile())).rows as ResultRow[];
  return new Map(rows.map((row) => [row.row_id, row]));
}

/** True when the exact scope holds at least one compacted (HISTORICAL) record. */
export async function scopeHasHistorical(reader: Reader, scope: ScopeColumns): Promise<boolean> {
  return (await runShape(reader, 'scopeHasHistorical', scopeArgs(scope), (slots) => inScope(reader, scopeSlots(slots))
    .where('lifecycle_state', '=', 'HISTORICAL').limit(sql.lit(1)).compile())).rows.length > 0;
}

/** The records of one memory in the exact scope, revision descending, with their stored token counts. */
export async function memoryRecords(
  reader: Reader, scope: ScopeColumns, memoryId: string, limit: number,
): Promise<ResultRow[]> {
  return (await runShape(reader, 'memoryRecords', [...scopeArgs(scope), memoryId, limit], (slots) =>
    inScope(reader, scopeSlots(slots)).clearSelect().selectAll('adapter_records')
    .leftJoin('record_token_counts as t', 't.row_id', 'adapter_records.row_id').select('t.fixed_tokens')
    .where('memory_id', '=', slots[5]).orderBy('revision', 'desc').limit(slots[6]).compile())).rows as ResultRow[];
}
