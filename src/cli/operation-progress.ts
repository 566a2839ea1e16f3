import type { OperationStep } from '../maintenance/operation-steps.js';
import type { RecoveryEvent } from '../maintenance/recover-operation.js';
import type { ReembedProgress } from '../maintenance/reembed-operation.js';
import { ProgressReporter, type ProgressStream } from './progress-reporter.js';

/** The operator operations that report progress, by their JSON `operation` value. */
export type ProgressOperation =
  'backup' | 'restore' | 'audit' | 'housekeep' | 'reembed' | 'recover' | 'migrate_up';

/** A reembed batch as a step: `batch` with done/total records, and the batch number, rate and time left. */
export function reembedBatchStep(progress: ReembedProgress): OperationStep {
  const { batch, done, total, records_per_second: recordsPerSecond, seconds_left: secondsLeft } = progress;
  return {
    step: 'batch', done, total, fields: { batch, records_per_second: recordsPerSecond, seconds_left: secondsLeft },
  };
}

/** A recovery phase as a step named after it, keeping `phase`, `recovery_state` and `detail` as they were. */
export function recoveryStep(event: RecoveryEvent): OperationStep {
  const fields = {
    phase: event.phase, recovery_state: event.recovery_state, ...(event.detail ? { detail: event.detail } : {}),
  };
  return { step: event.phase, fields };
}

const number = (step: OperationStep, key: string) => Number(step.fields?.[key] ?? 0);

/**
 * The plain stderr lines the commands printed before decision 0023, kept byte for byte: reembed a line per batch (and,
 * since stop 44, one before its switch), recover a line per phase, migrate up a line per file (since stop 45 as the
 * file begins, no longer once it is applied: the text said "applying"). Backup, restore, audit and housekeep have
 * none.
 */
const PLAIN_LINES: Readonly<Partial<Record<ProgressOperation, (step: OperationStep) => string | null>>> = {
  reembed: (step) => {
    if (step.step === 'switching') return `reembed: switching ${step.done ?? 0} records to the new vectors`;
    if (step.step !== 'batch') return null;
    const done = step.done ?? 0;
    const total = step.total ?? 0;
    const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
    return `reembed: batch ${number(step, 'batch')}: ${done}/${total} records (${percent}%), `
      + `${number(step, 'records_per_second')}/s, about ${number(step, 'seconds_left')} s left`;
  },
  recover: (step) => {
    const detail = step.fields?.detail ? ` (${step.fields.detail})` : '';
    return `recover: ${step.step}${detail}; state ${step.fields?.recovery_state ?? 'none'}`;
  },
  migrate_up: (step) => (step.step === 'applying_migration'
    ? `factlane-migrate: applying ${String(step.fields?.version).padStart(4, '0')}_${step.fields?.name}`
    : null),
};

/**
 * Terminal texts other than describeStep's: reembed's batches and recover's phases read as their plain lines, and
 * audit's checks as `audit: checking NAME` and `audit: checked N: NAME STATUS`.
 */
const LIVE_TEXTS: Readonly<Partial<Record<ProgressOperation, (step: OperationStep) => string | null>>> = {
  reembed: PLAIN_LINES.reembed, recover: PLAIN_LINES.recover,
  audit: (step) => {
    if (step.step === 'checking') return `audit: checking ${step.fields?.check}`;
    if (step.step === 'checked') return `audit: checked ${step.done}: ${step.fields?.check} ${step.fields?.status}`;
    return null;
  },
};

/** The reporter of one operator command on `stream` (process.stderr unless told otherwise). */
export function operationProgress(
  operation: ProgressOperation, json: boolean, stream: ProgressStream = process.stderr,
): ProgressReporter {
  return new ProgressReporter({
    operation, stream, json, plainLine: PLAIN_LINES[operation], liveText: LIVE_TEXTS[operation],
  });
}
