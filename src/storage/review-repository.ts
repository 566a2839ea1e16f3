import { Kysely, sql } from 'kysely';
import type { DB } from '../../generated/db.js';
import { ImmediateSqliteDialect } from './immediate-sqlite-driver.js';
import { inSnapshot } from './read-snapshot.js';
import { createdAtKey, inScope, scopeOf, type Reader, type ScopeColumns } from './record-repository.js';
import type { RecordRow } from './record-rows.js';
import { translateSqliteError } from './sqlite-errors.js';
import { openReadOnlyConnection } from './write-connection.js';

// The owner's review queue (docs/decisions/0022): the pending Candidates of a database and the current facts of
// their scope that share their contradiction key or their fact, read on one snapshot of a read-only connection.

/** Which Candidates to read: one exact scope tuple or every scope, oldest first, at most `limit`. */
export interface ReviewQueueFilter {
  readonly scope: ScopeColumns | null;
  readonly limit: number;
}

/**
 * One pending Candidate and the current records of its exact scope with its contradiction key (any fact) or its
 * fact (`native_content_hash`, any key: a REPLACE without `subject` gives the same fact another key).
 */
export interface PendingCandidate {
  readonly candidate: RecordRow;
  readonly relatedCurrent: readonly RecordRow[];
}

/** What the review queue holds: how many Candidates match in all, and the first `limit` of them. */
export interface ReviewQueueReading {
  readonly total: number;
  readonly candidates: readonly PendingCandidate[];
}

// At most this many current records are read per Candidate: the write rules keep one current fact per key and
// scope, so more than one of a key is already a finding the audit reports.
const MAX_RELATED_CURRENT = 8;

function candidatesOf(reader: Reader, scope: ScopeColumns | null) {
  const base = scope ? inScope(reader, scope) : reader.selectFrom('adapter_records').selectAll();
  return base.where('lifecycle_state', '=', 'CANDIDATE');
}

/**
 * Reads the review queue of the database at `path` on a read-only connection (no writer function, query_only) in
 * one read transaction, so the count, the Candidates and their current records come from the same snapshot.
 * Candidates are ordered by created_at, then record_id. Storage errors are translated (BACKEND_BUSY, ...).
 */
export async function readReviewQueue(path: string, filter: ReviewQueueFilter): Promise<ReviewQueueReading> {
  const connection = openReadOnlyConnection(path);
  // The gate stays shut: this handle never opens a write transaction, and the connection has no writer function.
  const db = new Kysely<DB>({ dialect: new ImmediateSqliteDialect(connection, { open: false }) });
  try {
    // One deferred read transaction (inSnapshot): Kysely's transactions are BEGIN IMMEDIATE, which a read-only
    // connection cannot take.
    return await inSnapshot(db, async (snapshot) => {
      const counted = await candidatesOf(snapshot, filter.scope).clearSelect()
        .select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow();
      const rows = await candidatesOf(snapshot, filter.scope).orderBy(createdAtKey()).orderBy('record_id')
        .limit(filter.limit).execute() as RecordRow[];
      const candidates: PendingCandidate[] = [];
      for (const candidate of rows) {
        const relatedCurrent = await snapshot.selectFrom('adapter_records').selectAll()
          .where('scope_key', '=', candidate.scope_key)
          .where((eb) => eb.or([eb('contradiction_key', '=', candidate.contradiction_key),
            eb('native_content_hash', '=', candidate.native_content_hash)]))
          .where('lifecycle_state', '=', 'VALIDATED_CURRENT')
          .orderBy(createdAtKey(), 'desc').orderBy('record_id').limit(sql.lit(MAX_RELATED_CURRENT))
          .execute() as RecordRow[];
        candidates.push({ candidate, relatedCurrent });
      }
      return { total: Number(counted.total), candidates };
    });
  } catch (error) {
    throw translateSqliteError(error);
  } finally {
    // destroy() closes the connection, and with it any read transaction an error left open.
    await db.destroy();
  }
}

/**
 * Where a memory lives: the scope tuple of its records and its live record (CANDIDATE or VALIDATED_CURRENT), if any.
 */
export interface MemoryWhereabouts {
  readonly scope: ScopeColumns;
  readonly live: RecordRow | undefined;
}

/**
 * The scope and live record of a memory, by `memory_id` alone, in any scope (every revision of a memory shares its
 * scope tuple); undefined when no record of it exists.
 */
export async function findMemoryWhereabouts(reader: Reader, memoryId: string): Promise<MemoryWhereabouts | undefined> {
  const rows = await reader.selectFrom('adapter_records').selectAll().where('memory_id', '=', memoryId)
    .orderBy('revision', 'desc').execute() as RecordRow[];
  const newest = rows[0];
  if (!newest) return undefined;
  const live = rows.find((row) => row.lifecycle_state === 'CANDIDATE' || row.lifecycle_state === 'VALIDATED_CURRENT');
  return { scope: scopeOf(newest), live };
}
