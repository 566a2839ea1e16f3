import { keptPlacesHoldingContent, rowsHoldingContent } from '../storage/recovery-content.js';
import { writeInterlock, type RecoveryInterlock } from '../storage/recovery-interlock.js';
import {
  dropStatistics, ftsCommands, purgeRecord, readDerivedRows, readRecordsById,
} from '../storage/recovery-repository.js';
import { RecoveryHold } from './recovery-hold.js';
import type { Inspection } from './recovery-inspection.js';
import { isTombstoneOf, tombstoneColumns } from './recovery-plan.js';
import type { PreparedRecovery } from './recovery-preflight.js';
import { residualTexts } from './recovery-sealing.js';

// OPERATIONS.md §5.5: the one transaction of a recovery that changes the database.

/** The one purge transaction of §5.5; returns the interlock it committed. Holds and errors roll it back. */
export async function purge(
  prepared: PreparedRecovery, inspection: Extract<Inspection, { kind: 'UNTOUCHED' }>, committedAt: string,
  check: () => Promise<void>,
): Promise<RecoveryInterlock> {
  const interlock = {
    operation_id: prepared.plan.operation_id, plan_sha256: prepared.planSha256, committed_at: committedAt,
  };
  await prepared.connection.write(async (trx, raw) => {
    await ftsCommands.secureDelete(trx);
    for (const { row } of inspection.targets) {
      await purgeRecord(trx, row.row_id, tombstoneColumns(prepared.plan.operation_id, row.record_id));
    }
    await dropStatistics(trx);
    await ftsCommands.rebuild(trx);
    await ftsCommands.integrityCheck(trx);
    // The targets' rows are checked whole (a tombstone spells identifiers only), every other row for content.
    const targetRows = new Set(inspection.targets.map(({ row }) => row.row_id));
    const leftovers = rowsHoldingContent(raw, inspection.needles, targetRows);
    const tombstones = readRecordsById(raw, inspection.targets.map(({ row }) => row.record_id));
    const untombstoned = inspection.targets.filter(({ row }) => {
      const now = tombstones.get(row.record_id);
      return now === undefined || !isTombstoneOf(now, prepared.plan.operation_id);
    });
    const derived = inspection.targets.map(({ row }) => readDerivedRows(raw, row.row_id))
      .filter((d) => d.ftsText !== null || d.vector || d.eligibleVector || d.eligibleCode);
    if (leftovers.length > 0 || derived.length > 0 || untombstoned.length > 0) {
      throw new RecoveryHold('HOLD_LOGICAL_PURGE_VERIFY_FAILED',
        'target content remained after the purge; it was rolled back');
    }
    // What the purge cannot remove, and the residual byte scan (§5.6) would find in the file after the commit.
    const needles = residualTexts(inspection.needles.texts, [...tombstones.values()]);
    const kept = keptPlacesHoldingContent(raw, needles, targetRows);
    if (kept.length > 0) {
      const tables = [...new Set(kept.map((place) => place.split(':')[0]))].join(', ');
      throw new RecoveryHold('HOLD_LOGICAL_PURGE_VERIFY_FAILED', `a target's text is also in what the purge keeps `
        + `(in ${tables}: a tombstone's ids or idempotency_key, a meta value or the schema); the residual byte scan `
        + 'would fail after the commit, so it was rolled back');
    }
    await check();
    await writeInterlock(trx, interlock);
  });
  return interlock;
}
