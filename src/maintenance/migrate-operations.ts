import { AdapterError } from '../core/adapter-error.js';
import { PACKAGE_LABEL } from '../core/package-info.js';
import type { Clock } from '../core/time.js';
import type { MaintenanceTarget } from '../storage/maintenance-target.js';
import type { CheckResult } from '../storage/schema-verification.js';
import { writeVerifiedBackup, type BackupManifest } from './backup-operation.js';

/** `factlane-migrate status` states (STORAGE.md §12.3). */
export type MigrationState = 'UP_TO_DATE' | 'PENDING' | 'NEWER_THAN_RELEASE' | 'CHECKSUM_MISMATCH' | 'NOT_FACTLANE';

/** The `status` report. */
export interface StatusReport {
  readonly db_identity: string;
  readonly state: MigrationState;
  readonly schema_version: number;
  readonly latest_version: number;
  readonly pending: readonly { version: number; name: string }[];
  readonly applied: readonly { version: number; name: string; checksum_ok: boolean }[];
  readonly contract_version: string | null;
  readonly interlock_present: boolean;
}

/** Classifies the target's schema against the shipped migrations. */
export function migrationStatus(target: MaintenanceTarget): StatusReport {
  const findings = target.findings;
  const latest = target.shipped.at(-1)?.version ?? 0;
  let state: MigrationState;
  if (findings.kind !== 'FACTLANE') state = 'NOT_FACTLANE';
  else if (findings.schemaVersion > latest) state = 'NEWER_THAN_RELEASE';
  else if (!findings.contiguous || findings.applied.some((row) => !row.checksumOk)) state = 'CHECKSUM_MISMATCH';
  else if (findings.schemaVersion < latest) state = 'PENDING';
  else state = 'UP_TO_DATE';
  return {
    db_identity: target.dbIdentity,
    state,
    schema_version: findings.schemaVersion,
    latest_version: latest,
    pending: state === 'PENDING' ? target.pending.map(({ version, name }) => ({ version, name })) : [],
    applied: findings.applied.map(({ version, name, checksumOk }) => ({ version, name, checksum_ok: checksumOk })),
    contract_version: findings.contractVersion,
    interlock_present: findings.interlockPresent,
  };
}

const REFUSED_STATES: Partial<Record<MigrationState, string>> = {
  NEWER_THAN_RELEASE: 'the database is newer than this release; run a newer FactLane',
  CHECKSUM_MISMATCH: 'an applied migration does not match the file shipped with this release; restore a backup',
  NOT_FACTLANE: 'the file is not a FactLane database',
};

/** Throws SCHEMA_MISMATCH for a status that no migration can fix. */
export function assertMigratable(status: StatusReport): void {
  const refusal = REFUSED_STATES[status.state];
  if (refusal) throw new AdapterError('SCHEMA_MISMATCH', refusal);
}

/** The `up` report: what ran, what was skipped and why. */
export interface UpReport {
  readonly db_identity: string;
  readonly state_before: MigrationState;
  readonly applied: readonly { version: number; name: string }[];
  readonly backup: BackupManifest | null;
  readonly skipped_reason: string | null;
  readonly schema_version: number;
  readonly verification: readonly CheckResult[];
}

/**
 * `factlane-migrate up` on a target holding the exclusive lease: refuses NEWER_THAN_RELEASE,
 * CHECKSUM_MISMATCH and NOT_FACTLANE (SCHEMA_MISMATCH) and an interlock (MAINTENANCE_IN_PROGRESS);
 * with nothing pending succeeds without a backup; else writes the verified backup when asked, applies
 * all pending files in one transaction (verified before commit) and runs the verify checks after.
 */
export async function migrateUp(
  target: MaintenanceTarget,
  options: { backupFile: string | null; clock: Clock; onStep?: (step: { version: number; name: string }) => void },
): Promise<UpReport> {
  const before = migrationStatus(target);
  assertMigratable(before);
  if (before.interlock_present) {
    throw new AdapterError('MAINTENANCE_IN_PROGRESS', 'the database holds the recovery interlock; finish recovery first');
  }
  if (before.state === 'UP_TO_DATE') {
    return { db_identity: target.dbIdentity, state_before: before.state, applied: [], backup: null, skipped_reason: 'nothing pending', schema_version: before.schema_version, verification: target.verify() };
  }
  const backup = options.backupFile === null ? null : await writeVerifiedBackup(target, options.backupFile, options.clock);
  const steps = await target.applyPending({ clock: options.clock, appliedBy: PACKAGE_LABEL, onStep: options.onStep });
  return {
    db_identity: target.dbIdentity,
    state_before: before.state,
    applied: steps.map(({ version, name }) => ({ version, name })),
    backup,
    skipped_reason: null,
    schema_version: target.findings.schemaVersion,
    verification: target.verify(),
  };
}
