import type { Insertable, Selectable } from 'kysely';
import type { AdapterRecords } from '../../generated/db.js';

// The row types of adapter_records, apart from the repository so the §7.3 checks (record-invariants.ts) can name
// them without importing the repository that calls them.

/** A stored record row as read back. */
export type RecordRow = Selectable<AdapterRecords> & { row_id: number };
/** A record row to insert; `row_id` is assigned by SQLite. */
export type NewRecordRow = Omit<Insertable<AdapterRecords>, 'row_id'> & {
  parent_record_id: string | null; supersedes: string; project_id: string | null; worktree_id: string | null;
  workflow_id: string | null; agent_id: string | null; source_timestamp: string | null; last_verified_at: string | null;
};
