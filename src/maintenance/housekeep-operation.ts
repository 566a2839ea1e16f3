import { AdapterError } from '../core/adapter-error.js';
import { compactRecord, readyForCompaction } from '../storage/compaction-repository.js';
import { readHealth, type HealthReading } from '../storage/lineage-audit.js';
import type { MaintenanceTarget } from '../storage/maintenance-target.js';
import type { ScopeColumns } from '../storage/record-repository.js';
import { assertNoInterlock, assertVectorTablesWhole, schemaRefusal } from '../storage/schema-inspection.js';
import { capacityKnown, countScope, readCapacity } from '../storage/status-repository.js';
import { WriteConnection } from '../storage/write-connection.js';
import { Interrupted, sayThenStopAtOnce, watchSignals } from './operation-signals.js';
import { IGNORE_STEPS, type StepListener } from './operation-steps.js';

/** What one housekeeping run asks for (OPERATIONS.md §3). */
export interface HousekeepRequest {
  readonly scope: ScopeColumns;
  /** At most this many records are compacted (≥ 1). */
  readonly maxRecords: number;
  /** The free space the operator needs for the operation they plan, for this run only (≥ 0). */
  readonly requiredFreeBytes: number;
  /**
   * Hears `lease_taken`, `capacity_observed`, `health_checked`, `selected` (total), `compacted` (done/total, with
   * `compacted` so far), `rechecked`, and last `outcome` on every path (decision 0023).
   */
  readonly onStep?: StepListener;
  /** Where SIGINT and SIGTERM come from; default the process (tests pass an emitter). */
  readonly signals?: NodeJS.EventEmitter;
  /** Hears each signal during the compactions, with the count so far; default SAY_AND_STOP_AT_ONCE_ON_REPEAT. */
  readonly onSignal?: (signal: string, repeated: boolean, compacted: number) => void;
}

/**
 * The first signal during the compactions is said on stderr (the run stops before its next compaction, which may first
 * wait out a busy database); a second stops the process at once, exit 1, saying what stays.
 */
export const SAY_AND_STOP_AT_ONCE_ON_REPEAT = (signal: string, repeated: boolean, compacted: number): void =>
  sayThenStopAtOnce(
    (said) => `${said}: housekeep stops before its next compaction; send it again to stop at once`,
    (said) => `housekeep stopped at once by a second ${said}; the ${compacted} compacted before it stay`,
  )(signal, repeated);

/** The housekeeping report (OPERATIONS.md §3): counts and outcomes only, never record ids, hashes or provenance. */
export interface HousekeepReport {
  readonly outcome: string;
  readonly next_action: string;
  readonly mutation: 'NONE' | 'BOUNDED_COMPACTION';
  readonly required_free_bytes: number;
  readonly max_records: number;
  readonly filesystem_free_bytes_before: number | null;
  readonly filesystem_free_bytes_after: number | null;
  readonly capacity_requirement_met_before: boolean | null;
  readonly capacity_requirement_met_after: boolean | null;
  readonly compaction_ready_before: number;
  readonly compaction_ready_after: number;
  readonly selected_records: number;
  readonly compacted_records: number;
  readonly compaction_blocked_partial: number;
  readonly historical_total_before: number;
  readonly historical_total_after: number;
  readonly vector_orphans_after: number | null;
  readonly current_lineage_forks_after: number | null;
  readonly quick_check_after: 'PASS' | 'FAIL' | null;
  readonly integrity_check_after: 'PASS' | 'FAIL' | null;
  readonly physical_file_shrink_claimed: false;
  readonly automatic_housekeeping: false;
}

/** Capacity and the scope's retention counts at one moment. */
interface Observation {
  readonly known: boolean;
  readonly freeBytes: number | null;
  readonly ready: number;
  readonly blockedPartial: number;
  readonly historical: number;
}

/**
 * The readings a run takes and its one mutation; tests replace them to reach outcomes a healthy machine never shows.
 */
export interface HousekeepProbes {
  readonly capacity: typeof readCapacity;
  readonly health: typeof readHealth;
  /** Compacts one record in its own transaction; true when it was compacted. */
  readonly compact: (connection: WriteConnection, recordId: string) => Promise<boolean>;
}
const PROBES: HousekeepProbes = {
  capacity: readCapacity, health: readHealth, compact: (connection, recordId) =>
    connection.write((trx) => compactRecord(trx, recordId)),
};

async function observe(
  connection: WriteConnection, path: string, scope: ScopeColumns, probes: HousekeepProbes,
): Promise<Observation> {
  const reading = await connection.read((db) => countScope(db, scope));
  const capacity = probes.capacity(reading.pages, path);
  return {
    known: capacityKnown(capacity), freeBytes: capacity.filesystemFreeBytes,
    ready: reading.retention.compactionReady, blockedPartial: reading.retention.compactionBlockedPartial,
    historical: reading.counts.HISTORICAL,
  };
}

// verify's checks that do not refuse a run: the binding, which a compaction never reads, and quick_check, which the
// table answers itself (row 6, BLOCKED_DATABASE_INTEGRITY, once rows 1-5 did not match).
const CHECKS_LEFT_TO_THE_RUN = new Set(['meta_keys_present', 'binding_well_formed', 'quick_check']);

/**
 * Refuses a file housekeeping must not open for writing: one that is not a FactLane database (SCHEMA_MISMATCH; an
 * empty file was given an SQLite header), one this release cannot write (SCHEMA_MISMATCH), and one whose schema is
 * damaged (BACKEND_CORRUPT): the capacity reading queries the vector table, and sqlite-vec ends the process on a vec0
 * table that lost a shadow table.
 */
function assertHousekeepable(target: MaintenanceTarget): void {
  if (target.findings.kind !== 'FACTLANE') {
    throw new AdapterError('SCHEMA_MISMATCH', 'the file is not a FactLane database; check --db');
  }
  const refusal = schemaRefusal(target.findings, target.shipped, null);
  if (refusal) throw new AdapterError('SCHEMA_MISMATCH', refusal);
  assertVectorTablesWhole(target.findings);
  // A binding the server can still open (UNPROVEN / BINDING_INVALID, STORAGE.md §10) does not stop a compaction,
  // which never reads it; everything else verify checks but quick_check is structure a compaction writes through.
  const failed = target.verify().filter((check) => check.status === 'FAIL' && !CHECKS_LEFT_TO_THE_RUN.has(check.name))
    .map((check) => check.name);
  if (failed.length > 0) {
    throw new AdapterError('BACKEND_CORRUPT', `the database fails verification (${failed.join(', ')}); `
      + 'run factlane-admin verify, then restore a backup (factlane-admin restore)');
  }
}

const healthy = (health: HealthReading) =>
  health.vectorOrphans === 0 && health.currentLineageForks === 0 && health.quickCheck === 'PASS'
    && health.integrityCheck === 'PASS';

/**
 * One bounded housekeeping run over an exact scope (OPERATIONS.md §3) under the shared lease the caller holds:
 * the first matching row of the table decides the outcome; only step 8 compacts, up to `maxRecords` ready
 * records oldest first, one transaction each (STORAGE.md §8), then re-checks health and capacity. The embedding
 * provider is not consulted. Refusals: MAINTENANCE_IN_PROGRESS (recovery interlock), SCHEMA_MISMATCH (a database
 * this release cannot write). An error during compaction stops the run; finished compactions stay.
 */
export async function housekeep(
  target: MaintenanceTarget, request: HousekeepRequest, probes: HousekeepProbes = PROBES,
): Promise<HousekeepReport> {
  const onStep = request.onStep ?? IGNORE_STEPS;
  onStep({ step: 'lease_taken', fields: { lease: target.leaseMode } });
  assertNoInterlock(target.findings);
  assertHousekeepable(target);
  const connection = WriteConnection.open({ path: target.path });
  try {
    const required = request.requiredFreeBytes;
    const met = (observation: Observation) =>
      (observation.known && observation.freeBytes !== null ? observation.freeBytes >= required : null);
    const before = await observe(connection, target.path, request.scope, probes);
    let after = before;
    let health: HealthReading | null = null;
    let selected = 0;
    let compacted = 0;
    onStep({ step: 'capacity_observed' });
    const report = (outcome: string, nextAction: string): HousekeepReport => {
      onStep({ step: 'outcome', fields: { outcome, compacted } });
      return reportOf(outcome, nextAction);
    };
    const reportOf = (outcome: string, nextAction: string): HousekeepReport => ({
      outcome, next_action: nextAction, mutation: compacted > 0 ? 'BOUNDED_COMPACTION' : 'NONE',
      required_free_bytes: required, max_records: request.maxRecords,
      filesystem_free_bytes_before: before.freeBytes, filesystem_free_bytes_after: after.freeBytes,
      capacity_requirement_met_before: met(before), capacity_requirement_met_after: met(after),
      compaction_ready_before: before.ready, compaction_ready_after: after.ready,
      selected_records: selected, compacted_records: compacted, compaction_blocked_partial: before.blockedPartial,
      historical_total_before: before.historical, historical_total_after: after.historical,
      vector_orphans_after: health?.vectorOrphans ?? null,
      current_lineage_forks_after: health?.currentLineageForks ?? null,
      quick_check_after: health?.quickCheck ?? null, integrity_check_after: health?.integrityCheck ?? null,
      physical_file_shrink_claimed: false, automatic_housekeeping: false,
    });

    if (!before.known)
      return report('BLOCKED_UNKNOWN_CAPACITY', 'RESTORE_CAPACITY_OBSERVABILITY_BEFORE_MEMORY_MUTATION');
    if (met(before)) return report('NO_ACTION_CAPACITY_REQUIREMENT_ALREADY_MET', 'NO_ACTION_REQUIRED');
    if (before.blockedPartial > 0)
      return report('BLOCKED_PARTIAL_RECLAIM_STATE', 'REPAIR_PARTIAL_RECLAIM_STATE_BEFORE_MEMORY_MUTATION');
    health = probes.health(connection.connection);
    onStep({ step: 'health_checked' });
    if (health.vectorOrphans > 0)
      return report('BLOCKED_PREEXISTING_VECTOR_ORPHAN', 'REPAIR_VECTOR_ORPHANS_BEFORE_MEMORY_MUTATION');
    if (health.currentLineageForks > 0)
      return report('BLOCKED_PREEXISTING_CURRENT_FORK', 'REPAIR_CURRENT_LINEAGE_FORK_BEFORE_MEMORY_MUTATION');
    if (health.quickCheck !== 'PASS' || health.integrityCheck !== 'PASS')
      return report('BLOCKED_DATABASE_INTEGRITY', 'REPAIR_DATABASE_INTEGRITY_BEFORE_MEMORY_MUTATION');

    const ready = await connection.read((db) => readyForCompaction(db, request.scope, request.maxRecords));
    if (ready.length === 0)
      return report('NO_ELIGIBLE_RECORDS_CAPACITY_REQUIREMENT_NOT_MET',
        'ADDITIONAL_CAPACITY_OR_OPERATOR_ACTION_REQUIRED');
    selected = ready.length;
    onStep({ step: 'selected', total: selected });
    // Ctrl-C or SIGTERM during the compactions stops the run before the next one (each is its own transaction,
    // STORAGE.md §8): those before it stay, and the run exits 1 saying how many (decision 0016), not 130 with no word
    // of them. The first signal is said at once (a compaction may wait out a busy database, about 36 s); a second
    // stops the process at once. Before them nothing has changed, and after them nothing more will: a signal there
    // ends the run as it comes.
    const hear = request.onSignal ?? SAY_AND_STOP_AT_ONCE_ON_REPEAT;
    const signals = watchSignals(request.signals ?? process, (signal, repeated) => hear(signal, repeated, compacted));
    try {
      for (const [index, recordId] of ready.entries()) {
        await signals.check().catch((error: unknown) => {
          if (!(error instanceof Interrupted)) throw error;
          throw new Interrupted(error.signal, index === 0 ? `housekeep stopped by ${error.signal} before compacting `
            + 'anything' : `housekeep stopped by ${error.signal} before compaction ${index + 1} of ${selected}; the `
            + `${compacted} compacted before it stay`);
        });
        try {
          if (await probes.compact(connection, recordId)) compacted += 1;
        } catch (error) {
          // The storage floor's message speaks of the failed transaction alone ("nothing was written"): the compactions
          // before it are committed and stay (STORAGE.md §8), and the operator is told so.
          if (!(error instanceof AdapterError) || compacted === 0) throw error;
          throw new AdapterError(error.code, `compaction ${index + 1} of ${selected} failed: ${error.message}; the `
            + `${compacted} compacted before it stay`, { cause: error, retryable: error.retryable });
        }
        onStep({ step: 'compacted', done: index + 1, total: selected, fields: { compacted } });
      }
    } finally {
      signals.stop();
    }
    after = await observe(connection, target.path, request.scope, probes);
    health = probes.health(connection.connection);
    onStep({ step: 'rechecked' });
    if (!healthy(health))
      return report('BLOCKED_POST_MAINTENANCE_HEALTH', 'REPAIR_POST_MAINTENANCE_HEALTH_BEFORE_MEMORY_MUTATION');
    if (!after.known)
      return report('BLOCKED_POST_MAINTENANCE_UNKNOWN_CAPACITY',
        'RESTORE_CAPACITY_OBSERVABILITY_BEFORE_MEMORY_MUTATION');
    return met(after)
      ? report('HOUSEKEEPING_COMPLETE_CAPACITY_REQUIREMENT_MET', 'NO_ACTION_REQUIRED')
      : report('HOUSEKEEPING_COMPLETE_CAPACITY_REQUIREMENT_NOT_MET', 'ADDITIONAL_CAPACITY_OR_OPERATOR_ACTION_REQUIRED');
  } finally {
    await connection.close();
  }
}
