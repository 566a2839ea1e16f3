import type { Transaction } from 'kysely';
import type { DB } from '../../generated/db.js';
import { AdapterError } from '../core/adapter-error.js';
import { canonicalJson } from '../core/canonical-json.js';
import type { SqliteConnection } from './native.js';

// The recovery interlock (STORAGE.md §11, OPERATIONS.md §5): one adapter_meta row, written in the purge's transaction
// and deleted only by a verified postflight. While it is there, every ordinary start fails MAINTENANCE_IN_PROGRESS.

/** The adapter_meta key of the recovery interlock (STORAGE.md §11). */
export const INTERLOCK_KEY = 'sensitive_recovery_interlock';

/** The interlock row's value. */
export interface RecoveryInterlock {
  readonly operation_id: string;
  readonly plan_sha256: string;
  readonly committed_at: string;
}


/** An interlock row that is not the interlock's JSON: it belongs to no plan, and no plan may pass it. */
export class MalformedInterlock extends AdapterError {
  constructor() {
    super('BACKEND_CORRUPT', 'the recovery interlock row is not well-formed');
  }
}

/**
 * The interlock row, parsed, or null when absent (also when the file has no adapter_meta table). MalformedInterlock
 * when the row is not the interlock's JSON; SQLite errors (busy, not a database) are thrown as they are.
 */
export function readInterlock(connection: SqliteConnection): RecoveryInterlock | null {
  const metaTable = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'adapter_meta'";
  const hasMeta = connection.prepare(metaTable).get();
  if (hasMeta === undefined) return null;
  const value = connection.prepare('SELECT value FROM adapter_meta WHERE key = ?').pluck().get(INTERLOCK_KEY) as
    string | undefined;
  if (value === undefined) return null;
  try {
    const parsed = JSON.parse(value) as RecoveryInterlock;
    if (typeof parsed.operation_id === 'string' && typeof parsed.plan_sha256 === 'string') return parsed;
  } catch {
    // Falls through to the refusal.
  }
  throw new MalformedInterlock();
}

/** Writes the interlock row inside the purge transaction. */
export async function writeInterlock(trx: Transaction<DB>, interlock: RecoveryInterlock): Promise<void> {
  await trx.insertInto('adapter_meta').values({ key: INTERLOCK_KEY, value: canonicalJson(interlock) }).execute();
}

/** Deletes the interlock row of `operationId` in the postflight's gated transaction; false when it was not there. */
export async function deleteInterlock(trx: Transaction<DB>, interlock: RecoveryInterlock): Promise<boolean> {
  const deleted = await trx.deleteFrom('adapter_meta')
    .where('key', '=', INTERLOCK_KEY)
    .where('value', '=', canonicalJson(interlock))
    .executeTakeFirst();
  return deleted.numDeletedRows === 1n;
}
