import { STORAGE_CONTRACT_VERSION } from '@factlane/schema';
import { AdapterError } from '../core/adapter-error.js';
import { PACKAGE_LABEL } from '../core/package-info.js';
import type { Clock } from '../core/time.js';
import type { MaintenanceTarget } from '../storage/maintenance-target.js';
import type { CheckResult } from '../storage/schema-verification.js';
import type { RecordCounter } from '../storage/token-count-repository.js';
import { writeVerifiedBackup, type BackupManifest } from './backup-operation.js';
import { IGNORE_STEPS, type StepListener } from './operation-steps.js';
import { assertNoInterlock } from '../storage/schema-inspection.js';

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

/**
 * The state of a schema against the shipped migrations, refusing what the server refuses (STORAGE.md §10): a storage
 * contract above this release's is NEWER_THAN_RELEASE, any other than this release's NOT_FACTLANE (no migration turns
 * one contract into another); an empty or gapped ledger, like a changed file, is CHECKSUM_MISMATCH.
 */
function stateOf(findings: MaintenanceTarget['findings'], latest: number): MigrationState {
  if (findings.kind !== 'FACTLANE') return 'NOT_FACTLANE';
  const contract = findings.contractVersion;
  if (findings.schemaVersion > latest || Number(contract) > STORAGE_CONTRACT_VERSION) return 'NEWER_THAN_RELEASE';
  if (contract !== String(STORAGE_CONTRACT_VERSION)) return 'NOT_FACTLANE';
  if (!findings.contiguous || findings.applied.some((row) => !row.checksumOk)) return 'CHECKSUM_MISMATCH';
  return findings.schemaVersion < latest ? 'PENDING' : 'UP_TO_DATE';
}

/** Classifies the target's schema against the shipped migrations. */
export function migrationStatus(target: MaintenanceTarget): StatusReport {
  const findings = target.findings;
  const latest = target.shipped.at(-1)?.version ?? 0;
  const state = stateOf(findings, latest);
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
  CHECKSUM_MISMATCH: 'the applied migrations are not 1…n or do not match the files shipped with this release; '
    + 'restore a backup',
  NOT_FACTLANE: `the file is not a FactLane database of storage contract ${STORAGE_CONTRACT_VERSION}`,
};

/** Throws SCHEMA_MISMATCH for a status that no migration can fix. */
function assertMigratable(status: StatusReport): void {
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
  /** The work table of a reembed that did not finish was dropped (applyPending); run reembed again. */
  readonly reembed_work_discarded: boolean;
  readonly verification: readonly CheckResult[];
}

/**
 * `factlane-migrate up` on a target holding the exclusive lease: refuses NEWER_THAN_RELEASE,
 * CHECKSUM_MISMATCH and NOT_FACTLANE (SCHEMA_MISMATCH) and an interlock (MAINTENANCE_IN_PROGRESS);
 * with nothing pending succeeds without a backup; else writes the verified backup when asked, applies
 * all pending files in one transaction (verified before commit) and runs the verify checks after.
 * `onStep` hears `lease_taken`, the backup's steps prefixed `backup_`, for each file `applying_migration` as it
 * begins and `migration_applied` (done/total files), both with `version` and `name`, inside the transaction,
 * `derived_rows_rebuilt` (done/total rows, and which `rows`), `committed`, `verifying`, and last `verified`
 * (`failed_checks`) (decision 0023). `countRecord` stores the token count of every record when schema 5 is applied
 * (decision 0036); without it records keep none and are counted whole when read.
 */
export async function migrateUp(
  target: MaintenanceTarget,
  options: { backupFile: string | null; clock: Clock; onStep?: StepListener; countRecord?: RecordCounter },
): Promise<UpReport> {
  const onStep = options.onStep ?? IGNORE_STEPS;
  onStep({ step: 'lease_taken', fields: { lease: target.leaseMode } });
  const verified = () => {
    onStep({ step: 'verifying' });
    const checks = target.verify();
    onStep({ step: 'verified', fields: { failed_checks: checks.filter((check) => check.status === 'FAIL').length } });
    return checks;
  };
  const before = migrationStatus(target);
  assertMigratable(before);
  assertNoInterlock(target.findings);
  if (before.state === 'UP_TO_DATE') {
    return {
      db_identity: target.dbIdentity, state_before: before.state, applied: [], backup: null,
      skipped_reason: 'nothing pending', schema_version: before.schema_version, reembed_work_discarded: false,
      verification: verified(),
    };
  }
  const backupStep: StepListener = (step) => onStep({ ...step, step: `backup_${step.step}` });
  const backup = options.backupFile === null ? null
    : await writeVerifiedBackup(target, options.backupFile, options.clock, backupStep);
  // The way back from up is restoring this backup (§12.3), and restore refuses a copy that fails verify.
  const unrestorable = backup?.verification.checks.filter((check) => check.status === 'FAIL') ?? [];
  if (unrestorable.length > 0) {
    throw new AdapterError('VERIFY_FAILED', `the backup taken before up fails verify `
      + `(${unrestorable.map((check) => check.name).join(', ')}), so restore would refuse it; nothing was migrated. `
      + 'Run factlane-migrate verify and repair the database first');
  }
  // Counted by position, not by call: a transaction retried after BACKEND_BUSY reports its files again.
  const pending = target.pending.map((file) => file.version);
  const { steps, reembedWorkDiscarded } = await target.applyPending({
    clock: options.clock, appliedBy: PACKAGE_LABEL,
    onStarting: ({ version, name }) => onStep({ step: 'applying_migration', fields: { version, name } }),
    onStep: ({ version, name }) => onStep({
      step: 'migration_applied', done: pending.indexOf(version) + 1, total: pending.length, fields: { version, name },
    }),
    onRebuilt: (done, total, rows) => onStep({ step: 'derived_rows_rebuilt', done, total, fields: { rows } }),
    countRecord: options.countRecord,
  });
  onStep({ step: 'committed', done: steps.length, total: steps.length });
  return {
    db_identity: target.dbIdentity,
    state_before: before.state,
    applied: steps.map(({ version, name }) => ({ version, name })),
    backup,
    skipped_reason: null,
    schema_version: target.findings.schemaVersion,
    reembed_work_discarded: reembedWorkDiscarded,
    verification: verified(),
  };
}
