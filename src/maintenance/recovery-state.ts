import { readFileSync, statSync } from 'node:fs';
import { canonicalJson } from '../core/canonical-json.js';
import { writePrivateFileAtomic } from '../storage/durable-files.js';
import { RecoveryHold, type RecoveryHoldCode } from './recovery-hold.js';

// The recovery state file of OPERATIONS.md §5.8: 0600, replaced atomically and fsynced, no content and no path.

/** The phases, in the only order they advance (a rolled-back purge returns to the first). */
export const RECOVERY_PHASES = Object.freeze([
  'PREPARED_NO_MUTATION',
  'LOGICAL_PURGE_IN_PROGRESS',
  'LOGICAL_PURGE_COMMITTED_SEALING_INCOMPLETE',
  'LOCAL_FACTLANE_PURGE_VERIFIED',
] as const);
export type RecoveryPhase = (typeof RECOVERY_PHASES)[number];

/** The state file's content. */
export interface RecoveryState {
  readonly operation_id: string;
  readonly plan_sha256: string;
  readonly db_identity: string;
  readonly database_id: string;
  readonly phase: RecoveryPhase;
  readonly updated_at: string;
  /** The last hold, or SEALING_RESIDUAL_BYTES_FOUND when sealing found target bytes in the image. */
  readonly last_hold: RecoveryHoldCode | 'SEALING_RESIDUAL_BYTES_FOUND' | null;
}

const STATE_KEYS = ['operation_id', 'plan_sha256', 'db_identity', 'database_id', 'phase', 'updated_at', 'last_hold'];

/** True once the phase has reached or passed `phase`. */
export function phaseReached(state: RecoveryState | null, phase: RecoveryPhase): boolean {
  return state !== null && RECOVERY_PHASES.indexOf(state.phase) >= RECOVERY_PHASES.indexOf(phase);
}

/** The state at `path`, or null when there is none. HOLD_RECOVERY_STATE_MISMATCH when it cannot be read as a state. */
export function readRecoveryState(path: string): RecoveryState | null {
  let text: string;
  try {
    // A FIFO there would block the read, and the run with it, beyond the reach of SIGTERM.
    if (!statSync(path).isFile()) {
      throw new RecoveryHold('HOLD_RECOVERY_STATE_MISMATCH', 'the recovery state file is not a regular file');
    }
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if (error instanceof RecoveryHold) throw error;
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new RecoveryHold('HOLD_RECOVERY_STATE_MISMATCH', 'the recovery state file cannot be read');
  }
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new RecoveryHold('HOLD_RECOVERY_STATE_MISMATCH',
      'the recovery state file is not JSON; it belongs to no run of this plan');
  }
  const keys = Object.keys(value ?? {}).sort();
  if (keys.join() !== [...STATE_KEYS].sort().join() || !RECOVERY_PHASES.includes(value.phase as RecoveryPhase)) {
    throw new RecoveryHold('HOLD_RECOVERY_STATE_MISMATCH', 'the recovery state file is not a recovery state');
  }
  return value as unknown as RecoveryState;
}

/** Replaces the state file atomically (0600, fsynced file and directory). Throws the system error. */
export function writeRecoveryState(path: string, state: RecoveryState): void {
  writePrivateFileAtomic(path, `${canonicalJson(state)}\n`);
}
