import { sql } from 'kysely';
import { createdAtKey, inScope, type Reader, type RecordRow, type ScopeColumns } from './record-repository.js';

// The retrieval channels of CONTRACT.md §12.2. Every query matches the exact scope tuple; for CURRENT the
// eligibility filter sits inside the same SQL, before LIMIT (or, for vectors, before k).

/** One channel candidate: the record and its channel position (1-based) or vector distance. */
export interface ChannelHit {
  readonly row: RecordRow;
  readonly rank: number;
  readonly distance: number | null;
}

/** EXACT: records whose content hash equals the query's, newest first; CURRENT filter before the limit. */
export async function exactHits(reader: Reader, scope: ScopeColumns, contentHash: string, currentOnly: boolean, limit: number): Promise<ChannelHit[]> {
  let query = inScope(reader, scope).where('native_content_hash', '=', contentHash);
  if (currentOnly) query = query.where('lifecycle_state', '=', 'VALIDATED_CURRENT').where('contradiction_state', 'in', ['NONE', 'RESOLVED']);
  const rows = (await query.orderBy(createdAtKey(), 'desc').orderBy('record_id', 'asc').limit(limit).execute()) as RecordRow[];
  return rows.map((row, index) => ({ row, rank: index + 1, distance: null }));
}

/**
 * KEYWORD: FTS5 over search_text with every term quoted (all must match), ordered by bm25, then newest;
 * scope and CURRENT filter in the same statement before LIMIT. An expression FTS5 rejects gives no hits.
 */
export async function keywordHits(reader: Reader, scope: ScopeColumns, terms: readonly string[], currentOnly: boolean, limit: number): Promise<ChannelHit[]> {
  if (terms.length === 0) return [];
  const match = terms.map((term) => `"${term.replaceAll('"', '""')}"`).join(' ');
  const current = currentOnly ? sql`AND r.lifecycle_state = 'VALIDATED_CURRENT' AND r.contradiction_state IN ('NONE', 'RESOLVED')` : sql``;
  try {
    // FTS5 MATCH and bm25() have no Kysely builder, hence raw SQL.
    const result = await sql<RecordRow>`
      SELECT r.* FROM fact_fts JOIN adapter_records r ON r.row_id = fact_fts.rowid
      WHERE fact_fts MATCH ${match} AND r.scope = ${scope.scope} AND r.project_id IS ${scope.project_id}
        AND r.worktree_id IS ${scope.worktree_id} AND r.workflow_id IS ${scope.workflow_id} AND r.agent_id IS ${scope.agent_id} ${current}
      ORDER BY bm25(fact_fts) ASC, ${createdAtKey('r.created_at')} DESC, r.record_id ASC LIMIT ${limit}`.execute(reader);
    return result.rows.map((row, index) => ({ row, rank: index + 1, distance: null }));
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_ERROR') return [];
    throw error;
  }
}

/**
 * SEMANTIC: sqlite-vec KNN in the scope's partition with `k = limit`; for CURRENT `is_current = 1` is a
 * constraint inside the KNN query, so nearer Candidates never use up k.
 */
export async function semanticHits(reader: Reader, scopeKey: string, embedding: Float32Array, currentOnly: boolean, limit: number): Promise<ChannelHit[]> {
  const vector = new Uint8Array(embedding.buffer, embedding.byteOffset, embedding.byteLength);
  const current = currentOnly ? sql`AND is_current = ${1n}` : sql``;
  const neighbours = await sql<{ rowid: number; distance: number }>`
    SELECT rowid, distance FROM fact_vec WHERE embedding MATCH ${vector} AND k = ${BigInt(limit)} AND scope_key = ${scopeKey} ${current}
    ORDER BY distance`.execute(reader);
  if (neighbours.rows.length === 0) return [];
  const rows = (await reader.selectFrom('adapter_records').selectAll().where('row_id', 'in', neighbours.rows.map((n) => n.rowid)).execute()) as RecordRow[];
  const byRowId = new Map(rows.map((row) => [row.row_id, row]));
  return neighbours.rows.flatMap((n, index) => {
    const row = byRowId.get(n.rowid);
    return row ? [{ row, rank: index + 1, distance: n.distance }] : [];
  });
}

/** True when the exact scope holds at least one compacted (HISTORICAL) record. */
export async function scopeHasHistorical(reader: Reader, scope: ScopeColumns): Promise<boolean> {
  return (await inScope(reader, scope).where('lifecycle_state', '=', 'HISTORICAL').executeTakeFirst()) !== undefined;
}

/** The records of one memory in the exact scope, revision descending. */
export async function memoryRecords(reader: Reader, scope: ScopeColumns, memoryId: string, limit: number): Promise<RecordRow[]> {
  return (await inScope(reader, scope).where('memory_id', '=', memoryId).orderBy('revision', 'desc').limit(limit).execute()) as RecordRow[];
}
