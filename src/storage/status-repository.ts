import { statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import { sql, type Kysely } from 'kysely';
import type { DB } from '../../generated/db.js';
import { fileBytes } from './durable-files.js';
import type { ScopeColumns } from './record-repository.js';
import { isBusyError } from './sqlite-errors.js';
import { runShape } from './statement-shapes.js';

/** Records per stored lifecycle state in one exact scope. */
export type LifecycleCounts = Record<'CANDIDATE' | 'VALIDATED_CURRENT' | 'SUPERSEDED' | 'QUARANTINED' | 'HISTORICAL',
  number>;

/** Retention counts of one exact scope (OPERATIONS.md §2). */
export interface RetentionCounts {
  readonly compactionReady: number;
  readonly compactionBlockedPartial: number;
}

/** The three page pragmas (OPERATIONS.md §2). */
export interface PageReading {
  readonly page_size: number;
  readonly page_count: number;
  readonly freelist_count: number;
}

/** Capacity numbers of the database file (OPERATIONS.md §2); null where a reading failed. */
export interface CapacityReading {
  readonly pageSizeBytes: number | null;
  readonly pageCount: number | null;
  readonly freelistCount: number | null;
  readonly databaseFileBytes: number | null;
  readonly walFileBytes: number | null;
  readonly shmFileBytes: number | null;
  readonly filesystemFreeBytes: number | null;
}

/** What countScope reads for one exact scope. */
export interface ScopeReading {
  readonly counts: LifecycleCounts;
  readonly retention: RetentionCounts;
  readonly pages: PageReading | null;
}

/** `total_changes()`, the rows this connection has changed, and `data_version`, which moves with another connection's
 * commits. */
interface ChangeState {
  readonly changes: number;
  readonly version: number;
}

/**
 * The readings of countScope, remembered per scope for one connection while the database stays unchanged.
 * Before counting it reads `PRAGMA data_version` (changes when another connection commits) and
 * `total_changes()` (rows this connection changed); a remembered reading is served only while both are
 * what they were just before it was counted, so any commit after that moment makes the next call count
 * again. Counts, retention and page numbers change only with such commits. The check is one small
 * statement instead of the counting one. A reading without pages is never remembered.
 */
export class ScopeCounter {
  readonly #readings = new Map<string, ChangeState & { readonly reading: ScopeReading }>();

  async count(db: Kysely<DB>, scope: ScopeColumns): Promise<ScopeReading> {
    const state = (await runShape(db, 'databaseChangeState', [], () => sql<ChangeState>`SELECT
      total_changes() AS changes, (SELECT data_version FROM pragma_data_version()) AS version`.compile(db))).rows[0]!;
    const key = JSON.stringify([scope.scope, scope.project_id, scope.worktree_id, scope.workflow_id, scope.agent_id]);
    const known = this.#readings.get(key);
    if (known !== undefined && known.changes === state.changes && known.version === state.version) return known.reading;
    const reading = await countScope(db, scope);
    if (reading.pages === null) {
      this.#readings.delete(key);
    } else {
      if (!this.#readings.has(key) && this.#readings.size >= REMEMBERED_SCOPES)
        this.#readings.delete(this.#readings.keys().next().value!);
      Object.freeze(reading.counts); Object.freeze(reading.retention); Object.freeze(reading.pages);
      this.#readings.set(key, { changes: state.changes, version: state.version, reading: Object.freeze(reading) });
    }
    return reading;
  }
}
const REMEMBERED_SCOPES = 64;

/**
 * Counts the exact scope's records per lifecycle (IS matches null identities) and its retention state:
 * SUPERSEDED records ready for compaction (FTS row present, vector present with is_current 0, no eligible form:
 * the same test as housekeep's selection) and those blocked as partial (a derived row missing, an eligible form
 * left behind, or HISTORICAL still holding a vector). One statement, so
 * both come from one snapshot and a status call pays for one query instead of two.
 */
export async function countScope(db: Kysely<DB>, scope: ScopeColumns): Promise<ScopeReading> {
  try {
    return await scopeStatement(db, scope, true);
  } catch (error) {
    // The page pragmas are an observation: when they fail, capacity is UNKNOWN, the counts still stand.
    if (isBusyError(error)) throw error;
    return { ...(await scopeStatement(db, scope, false)), pages: null };
  }
}

async function scopeStatement(db: Kysely<DB>, scope: ScopeColumns, withPages: boolean): Promise<ScopeReading> {
  // fact_fts and fact_vec are virtual tables without generated types for rowid lookups, hence raw SQL;
  // CASE keeps the derived-row lookups to SUPERSEDED and HISTORICAL records.
  const pages = withPages
    ? sql`, (SELECT page_size FROM pragma_page_size()) AS page_size,
      (SELECT page_count FROM pragma_page_count()) AS page_count,
      (SELECT freelist_count FROM pragma_freelist_count()) AS freelist_count`
    : sql``;
  type Counts = 'candidate' | 'current' | 'superseded' | 'quarantined' | 'historical' | 'ready' | 'blocked';
  const result = await sql<Record<Counts | keyof PageReading, number>>`
    WITH scoped AS (
      SELECT r.lifecycle_state AS state,
             CASE WHEN r.lifecycle_state IN ('SUPERSEDED', 'HISTORICAL')
               THEN EXISTS (SELECT 1 FROM fact_fts f WHERE f.rowid = r.row_id) END AS has_fts,
             CASE WHEN r.lifecycle_state IN ('SUPERSEDED', 'HISTORICAL')
               THEN (SELECT v.is_current FROM fact_vec v WHERE v.rowid = r.row_id) END AS vec_current,
             CASE WHEN r.lifecycle_state IN ('SUPERSEDED', 'HISTORICAL')
               THEN EXISTS (SELECT 1 FROM eligible_vectors e WHERE e.row_id = r.row_id) END AS has_eligible
      FROM adapter_records r
      WHERE r.scope = ${scope.scope} AND r.project_id IS ${scope.project_id} AND r.worktree_id IS ${scope.worktree_id}
        AND r.workflow_id IS ${scope.workflow_id} AND r.agent_id IS ${scope.agent_id})
    SELECT
      coalesce(sum(state = 'CANDIDATE'), 0) AS candidate, coalesce(sum(state = 'VALIDATED_CURRENT'), 0) AS current,
      coalesce(sum(state = 'SUPERSEDED'), 0) AS superseded, coalesce(sum(state = 'QUARANTINED'), 0) AS quarantined,
      coalesce(sum(state = 'HISTORICAL'), 0) AS historical,
      coalesce(sum(state = 'SUPERSEDED' AND has_fts AND vec_current = 0 AND NOT has_eligible), 0) AS ready,
      coalesce(sum((state = 'SUPERSEDED' AND (NOT has_fts OR vec_current IS NULL OR vec_current <> 0 OR has_eligible))
                   OR (state = 'HISTORICAL' AND (vec_current IS NOT NULL OR has_eligible))), 0) AS blocked ${pages}
    FROM scoped`.execute(db);
  const row = result.rows[0]!;
  return {
    counts: { CANDIDATE: Number(row.candidate), VALIDATED_CURRENT: Number(row.current),
      SUPERSEDED: Number(row.superseded), QUARANTINED: Number(row.quarantined), HISTORICAL: Number(row.historical) },
    retention: { compactionReady: Number(row.ready), compactionBlockedPartial: Number(row.blocked) },
    pages: withPages
      ? {
        page_size: Number(row.page_size), page_count: Number(row.page_count),
        freelist_count: Number(row.freelist_count),
      }
      : null,
  };
}

/**
 * OPERATIONS.md §2: capacity is KNOWN when the three pragmas, the database file size and the free space were all read.
 */
export function capacityKnown(reading: CapacityReading): boolean {
  return [
    reading.pageSizeBytes, reading.pageCount, reading.freelistCount, reading.databaseFileBytes,
    reading.filesystemFreeBytes,
  ].every((value) => value !== null);
}

/**
 * Capacity from the page pragmas read with the counts (null when they failed) and file sizes; each failed reading is
 * null.
 */
export function readCapacity(pages: PageReading | null, path: string): CapacityReading {
  let filesystemFreeBytes: number | null;
  try {
    const fs = statfsSync(dirname(path));
    filesystemFreeBytes = fs.bavail * fs.bsize;
  } catch {
    filesystemFreeBytes = null;
  }
  return {
    pageSizeBytes: pages?.page_size ?? null, pageCount: pages?.page_count ?? null,
    freelistCount: pages?.freelist_count ?? null,
    databaseFileBytes: fileBytes(path), walFileBytes: fileBytes(`${path}-wal`), shmFileBytes: fileBytes(`${path}-shm`),
    filesystemFreeBytes,
  };
}
