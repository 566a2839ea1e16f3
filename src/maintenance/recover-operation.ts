import { existsSync } from 'node:fs';
import { canonicalJson } from '../core/canonical-json.js';
import { SYSTEM_CLOCK, formatTimestamp, type Clock } from '../core/time.js';
import type { DatabaseLease } from '../storage/database-lease.js';
import { writePrivateFileAtomic } from '../storage/durable-files.js';
import { recordDigests } from '../storage/recovery-repository.js';
import { AdapterError } from '../core/adapter-error.js';
import { RecoveryHold, type RecoveryHoldCode } from './recovery-hold.js';
import { inspectTargets, type Inspection, type RecoveryNeedles } from './recovery-inspection.js';
import { tombstoneColumns } from './recovery-plan.js';
import { purge } from './recovery-purge.js';
import { receiptOf, type RecoveryReceipt } from './recovery-receipt.js';
import {
  runPreflight, type PreflightEnvironment, type PreparedRecovery, type RecoveryRequest,
} from './recovery-preflight.js';
import {
  SealingFailure, runPostflight, sealDatabase, type ResidualScan, type SealStep,
} from './recovery-sealing.js';
import { Interrupted, watchSignals } from './operation-signals.js';
import { phaseReached, writeRecoveryState, type RecoveryPhase, type RecoveryState } from './recovery-state.js';

// `factlane-admin recover` (OPERATIONS.md §5): preflight, inspection, one purge transaction, sealing, postflight.

/** One progress line: a phase that completed, or the outcome. No content, no path. */
export interface RecoveryEvent {
  readonly phase:
    'preflight' | 'target_inspection' | 'logical_purge' | SealStep | 'postflight' | 'completed' | 'outcome';
  readonly recovery_state: RecoveryPhase | null;
  readonly detail?: string;
}

/** Options of recoverDatabase. */
export interface RecoverOptions extends RecoveryRequest {
  readonly clock?: Clock;
  readonly env?: PreflightEnvironment;
  /** Called as each phase completes (progress on stderr; tests inject faults here). */
  readonly onPhase?: (event: RecoveryEvent) => void;
  /** Where SIGINT and SIGTERM are watched; default the process. */
  readonly signals?: NodeJS.EventEmitter;
}

/** How a run ended: exit 0 done, 1 failed before any commit, 3 held without mutating, 4 committed but not sealed. */
export interface RecoveryOutcome {
  readonly exit: 0 | 1 | 3 | 4;
  readonly result: 'LOCAL_FACTLANE_PURGE_PASS' | 'HELD_NO_MUTATION' | 'FAILED_NO_MUTATION' | 'SEALING_INCOMPLETE';
  readonly hold: RecoveryHoldCode | null;
  readonly recovery_state: RecoveryPhase | null;
  readonly message: string;
  /** The resume path this run took. */
  readonly mode: 'FRESH' | 'RESUME_SEALING' | 'RESUME_POSTFLIGHT' | 'ALREADY_VERIFIED' | null;
  readonly receipt: RecoveryReceipt | null;
}

/** The state's `last_hold` after a byte scan found target content (content-free; docs/decisions/0019). */
const RESIDUE_FOUND = 'SEALING_RESIDUAL_BYTES_FOUND' as const;

/** A Node system error (a file could not be read or written): its message names a path, its code does not. */
function isSystemError(error: unknown): error is NodeJS.ErrnoException {
  return error instanceof Error && typeof (error as NodeJS.ErrnoException).code === 'string'
    && !(error instanceof AdapterError);
}

/** The message of an error without paths: governed and sealing messages as they are, a system error by its code. */
function safeMessage(error: unknown): string {
  if (error instanceof AdapterError || error instanceof SealingFailure || error instanceof RecoveryHold
    || error instanceof Interrupted) {
    const cause = (error as Error).cause;
    return isSystemError(cause) ? `${error.message} (${cause.code})` : error.message;
  }
  if (isSystemError(error)) return `a file could not be read or written (${error.code})`;
  return 'unexpected error (see the operator logs)';
}

/** Which path a run takes once the preflight and the inspection passed (§5.8). */
function resumeMode(prepared: PreparedRecovery, inspection: Inspection): NonNullable<RecoveryOutcome['mode']> {
  const tombstoned = inspection.kind === 'ALL_TOMBSTONED';
  const mismatch = (why: string) => new RecoveryHold('HOLD_RECOVERY_STATE_MISMATCH', why);
  if (prepared.interlock) {
    if (!tombstoned) throw mismatch('the interlock of this plan is present but its targets are not tombstoned');
    return 'RESUME_SEALING';
  }
  if (phaseReached(prepared.state, 'LOCAL_FACTLANE_PURGE_VERIFIED')) {
    if (!tombstoned) {
      throw mismatch('the state says this plan completed, but its targets are not tombstoned in this database');
    }
    return 'ALREADY_VERIFIED';
  }
  if (tombstoned) {
    // Only the postflight deletes the interlock, after sealing; the state it failed in says so (§5.8).
    if (prepared.state?.phase !== 'LOGICAL_PURGE_COMMITTED_SEALING_INCOMPLETE') {
      throw mismatch('the targets are already tombstoned by this plan and its interlock is gone, but this state '
        + 'file does not say how the run ended: rerun with the --receipt (or --state) of the run that did it');
    }
    return 'RESUME_POSTFLIGHT';
  }
  if (phaseReached(prepared.state, 'LOGICAL_PURGE_COMMITTED_SEALING_INCOMPLETE')) {
    throw mismatch('the state says the purge committed, but no target is tombstoned');
  }
  return 'FRESH';
}

/**
 * Runs one recovery (OPERATIONS.md §5.2-§5.9): the 18 preflight checks, target inspection, then, by what the state
 * file, the interlock and the targets say (§5.8), a fresh purge, a resumed sealing, a resumed postflight, or nothing
 * (already verified). Never throws for a hold or a failure: the outcome says which exit code the command ends with.
 * After the commit, every exclusive lease is kept on failure until the process exits (fail closed).
 */
export async function recoverDatabase(options: RecoverOptions): Promise<RecoveryOutcome> {
  const clock = options.clock ?? SYSTEM_CLOCK;
  const emit = (phase: RecoveryEvent['phase'], state: RecoveryPhase | null, detail?: string) =>
    options.onPhase?.({ phase, recovery_state: state, ...(detail ? { detail } : {}) });
  const signals = watchSignals(options.signals ?? process);
  let prepared: PreparedRecovery | undefined;
  let phase: RecoveryPhase | null = null;
  let mode: RecoveryOutcome['mode'] = null;
  const leases: DatabaseLease[] = [];
  let keepLeases = false;
  /** The postflight returned: it deleted the interlock (a RESUME_POSTFLIGHT run found it deleted already). */
  let interlockDeleted = false;
  const setPhase = (next: RecoveryPhase, lastHold: RecoveryState['last_hold'] = null) => {
    phase = next;
    const p = prepared!;
    writeRecoveryState(p.statePath, {
      operation_id: p.plan.operation_id, plan_sha256: p.planSha256, db_identity: p.dbIdentity,
      database_id: p.plan.database_id,
      phase: next, updated_at: formatTimestamp(clock()), last_hold: lastHold,
    });
  };
  const outcome = (
    exit: RecoveryOutcome['exit'], result: RecoveryOutcome['result'], message: string,
    hold: RecoveryHoldCode | null = null, receipt: RecoveryReceipt | null = null,
  ): RecoveryOutcome => {
    emit('outcome', phase, hold ?? result);
    return { exit, result, hold, recovery_state: phase, message, mode, receipt };
  };
  try {
    prepared = await runPreflight(options, options.env);
    leases.push(prepared.lease);
    phase = prepared.state?.phase ?? null;
    emit('preflight', phase);
    await signals.check();
    const inspection = inspectTargets(prepared.connection.connection, prepared.plan);
    mode = resumeMode(prepared, inspection);
    emit('target_inspection', phase, mode);
    await signals.check();
    const recordIds = prepared.plan.targets.map((t) => t.record_id);
    if (mode === 'ALREADY_VERIFIED') {
      await prepared.connection.close();
      const receipt = receiptOf(prepared, 'NOT_REPEATABLE_AFTER_RESUME', formatTimestamp(clock()));
      if (!existsSync(options.receiptPath)) writePrivateFileAtomic(options.receiptPath, `${canonicalJson(receipt)}\n`);
      return outcome(0, 'LOCAL_FACTLANE_PURGE_PASS', 'this plan had already completed; nothing changed', null, receipt);
    }

    let interlock = prepared.interlock;
    let needles: RecoveryNeedles | null = null;
    // What each target record must be once purged: its kept fields with the tombstone over them.
    const op = prepared.plan.operation_id;
    const written = inspection.kind === 'UNTOUCHED'
      ? inspection.targets.map(({ row }) => ({ ...row, ...tombstoneColumns(op, row.record_id) }))
      : inspection.rows;
    const targets = written.map((row) => ({ recordId: row.record_id, rowId: row.row_id, row }));
    const targetRows = new Set(targets.map((t) => t.rowId));
    const digests = recordDigests(prepared.connection.connection, targetRows);
    if (mode === 'FRESH' && inspection.kind === 'UNTOUCHED') {
      setPhase('PREPARED_NO_MUTATION');
      setPhase('LOGICAL_PURGE_IN_PROGRESS');
      try {
        interlock = await purge(prepared, inspection, formatTimestamp(clock()), signals.check);
      } catch (error) {
        const code = error instanceof RecoveryHold ? error.code : null;
        setPhase('PREPARED_NO_MUTATION', code);
        throw error;
      }
      // Committed: a failure from here on (the state file below included) is exit 4, never "nothing was changed".
      keepLeases = true;
      needles = inspection.needles;
      setPhase('LOGICAL_PURGE_COMMITTED_SEALING_INCOMPLETE');
      emit('logical_purge', phase);
    }
    // From here on the purge is committed (now or by an earlier run): any failure fails closed with exit 4.
    keepLeases = true;
    if (mode !== 'FRESH' && prepared.state?.last_hold === RESIDUE_FOUND) {
      throw new SealingFailure('an earlier run found target bytes in the sanitized image, and a resumed run cannot'
        + ' look for them; restore a backup taken before the incident and recover it, or remove the residue by hand',
      { residue: true });
    }
    await signals.check();
    let residual: ResidualScan = 'NOT_REPEATABLE_AFTER_RESUME';
    let postflightLease = prepared.lease;
    if (mode === 'FRESH' || mode === 'RESUME_SEALING') {
      const sealed = await sealDatabase({ path: prepared.path, connection: prepared.connection, expect: {
        operationId: prepared.plan.operation_id, interlock: interlock!, targets, digests, needles,
      } }, async (step) => {
        emit(step, phase);
        await signals.check();
      });
      leases.push(sealed.lease);
      postflightLease = sealed.lease;
      residual = sealed.residual;
    } else if (!(await prepared.connection.close())) {
      throw new SealingFailure('the connection could not be proven closed before the postflight', { failClosed: true });
    }
    await signals.check();
    await runPostflight({
      path: prepared.path, lease: postflightLease, operationId: prepared.plan.operation_id, recordIds,
      interlock: mode === 'RESUME_POSTFLIGHT' ? null : interlock,
    });
    interlockDeleted = true;
    await signals.check();
    emit('postflight', phase);
    setPhase('LOCAL_FACTLANE_PURGE_VERIFIED');
    const receipt = receiptOf(prepared, residual, formatTimestamp(clock()));
    writePrivateFileAtomic(options.receiptPath, `${canonicalJson(receipt)}\n`);
    keepLeases = false;
    emit('completed', phase);
    const done = `${prepared.plan.targets.length} target(s) purged, sealed and verified`;
    return outcome(0, 'LOCAL_FACTLANE_PURGE_PASS', done, null, receipt);
  } catch (error) {
    if (keepLeases) {
      const residue = error instanceof SealingFailure && error.residue;
      // Phases only advance: a run that failed after it was verified (writing the receipt) stays verified.
      if (prepared && phase !== 'LOCAL_FACTLANE_PURGE_VERIFIED') {
        try {
          const lastHold = residue ? RESIDUE_FOUND : prepared.state?.last_hold ?? null;
          setPhase('LOGICAL_PURGE_COMMITTED_SEALING_INCOMPLETE', lastHold);
        } catch {
          // The state file cannot be written: the interlock in the database still blocks every runtime.
        }
      }
      // Only while the interlock is in the database does it hold runtimes out: the postflight deletes it.
      const interlockGone = interlockDeleted || mode === 'RESUME_POSTFLIGHT'
        || (error instanceof SealingFailure && error.interlockDeleted);
      const next = interlockGone || phase === 'LOCAL_FACTLANE_PURGE_VERIFIED'
        ? 'rerun the same plan' : 'the interlock blocks every runtime: rerun the same plan';
      // The purge committed: a storage message's "nothing was written" is about the step that failed, not the run.
      const failed = `the purge is committed; a later step failed (${safeMessage(error)})`;
      return outcome(4, 'SEALING_INCOMPLETE', `${failed}; ${next}`);
    }
    if (error instanceof RecoveryHold) {
      if (prepared?.state && phase === prepared.state.phase) {
        try {
          setPhase(prepared.state.phase, error.code);
        } catch {
          // Recording the hold is best effort: the database is unchanged either way.
        }
      }
      return outcome(3, 'HELD_NO_MUTATION', error.message, error.code);
    }
    if (error instanceof Interrupted) return outcome(1, 'FAILED_NO_MUTATION', `${error.message}; nothing was changed`);
    if (isSystemError(error)) return outcome(1, 'FAILED_NO_MUTATION', `${safeMessage(error)}; nothing was changed`);
    throw error;
  } finally {
    signals.stop();
    if (prepared && !keepLeases) {
      if (prepared.connection.connection.open) await prepared.connection.close();
      if (!prepared.connection.connection.open) for (const lease of leases) lease.release();
    }
  }
}
