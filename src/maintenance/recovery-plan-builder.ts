import { randomBytes } from 'node:crypto';
import { AdapterError } from '../core/adapter-error.js';
import { canonicalJson } from '../core/canonical-json.js';
import { SYSTEM_CLOCK, compactUtcStamp, type Clock } from '../core/time.js';
import { createPrivateFile } from '../storage/durable-files.js';
import { MaintenanceTarget } from '../storage/maintenance-target.js';
import { scopeOf } from '../storage/record-repository.js';
import { readDerivedRows, recordIdsOfMemories, replaceLinkedMemories } from '../storage/recovery-repository.js';
import { assertNoInterlock, assertVectorTablesWhole, bindingProfileId } from '../storage/schema-inspection.js';
import { materializationOf } from './recovery-inspection.js';
import { parseRecoveryPlan, type RecoveryPlan } from './recovery-plan.js';

/** Options of buildRecoveryPlan. */
export interface PlanRequest {
  readonly dbPath: string;
  readonly memoryIds: readonly string[];
  readonly incidentClass?: 'S1' | 'M1';
  readonly clock?: Clock;
}

/** A plan, and the memories joined to the named ones by REPLACE that it does not target (replaceLinkedMemories). */
export interface PlanDraft {
  readonly plan: RecoveryPlan;
  readonly linkedMemories: readonly string[];
}

/**
 * `factlane-admin recover plan` (docs/decisions/0019): a plan with one target per record of each named memory, every
 * field read from the database under a shared lease; nothing is changed. The operator reviews it, then runs recover
 * with it. The memories a REPLACE joined to the named ones come back beside it: recover's completeness check finds
 * copies of a target's exact text, not an edited one, so the operator must look at those. Errors: NOT_FOUND (a memory
 * has no record), VERIFY_FAILED (one already purged, or records a plan cannot name), SOURCE_NOT_FOUND,
 * MAINTENANCE_IN_PROGRESS (a conflicting lease, or a recovery not sealed), SCHEMA_MISMATCH.
 */
export function buildRecoveryPlan(request: PlanRequest): PlanDraft {
  const target = MaintenanceTarget.open({ dbPath: request.dbPath, lease: 'shared' });
  try {
    const { findings } = target;
    if (findings.kind !== 'FACTLANE' || findings.meta.database_id === undefined) {
      throw new AdapterError('SCHEMA_MISMATCH', 'the file is not a FactLane database');
    }
    assertVectorTablesWhole(findings);
    assertNoInterlock(findings);
    const { memories, linkedMemories } = target.withReadOnly((connection) => {
      const byMemory = recordIdsOfMemories(connection, [...new Set(request.memoryIds)]);
      const read = [...byMemory].map(([memoryId, rows]) => {
        if (rows.length === 0) throw new AdapterError('NOT_FOUND', `memory ${memoryId} has no record in this database`);
        if (rows.some((row) => row.lifecycle_state === 'QUARANTINED')) {
          throw new AdapterError('VERIFY_FAILED',
            `memory ${memoryId} was already purged by incident recovery: its records are tombstones`);
        }
        return rows.map((row) => ({
          row, materialization: materializationOf(row, readDerivedRows(connection, row.row_id)),
        }));
      });
      return { memories: read, linkedMemories: replaceLinkedMemories(connection, [...byMemory.keys()]) };
    });
    const stamp = compactUtcStamp((request.clock ?? SYSTEM_CLOCK)());
    const plan = {
      operation_id: `recovery-${stamp}-${randomBytes(4).toString('hex')}`, db_path: target.path,
      database_id: findings.meta.database_id,
      profile: bindingProfileId(findings.bindingText) ?? '', incident_class: request.incidentClass ?? 'S1',
      propagation_state: 'EXPLICIT_TARGET_SET_COMPLETE', retained_identity_fields_classified_non_sensitive: true,
      safe_ids_for_receipt: false,
      targets: memories.flat().map(({ row, materialization }) => ({
        record_id: row.record_id, memory_id: row.memory_id, revision: row.revision,
        scope: scopeOf(row),
        expected_lifecycle: row.lifecycle_state, expected_materialization: materialization,
        expected_content_hash: row.native_content_hash,
      })),
    };
    // The plan goes through the same validation recover applies, so the helper never writes a plan recover refuses.
    try {
      return { plan: parseRecoveryPlan(JSON.stringify(plan)), linkedMemories };
    } catch (error) {
      throw new AdapterError('VERIFY_FAILED', `these records cannot be recovered by plan: ${(error as Error).message}`);
    }
  } finally {
    target.close();
  }
}

/** Writes the plan to a new 0600 file. TARGET_EXISTS when `out` exists. */
export function writeRecoveryPlan(out: string, plan: RecoveryPlan): void {
  try {
    createPrivateFile(out, `${JSON.stringify(JSON.parse(canonicalJson(plan)), null, 2)}\n`);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new AdapterError('TARGET_EXISTS', '--out already exists; choose a new file');
    throw new AdapterError('BACKEND_UNAVAILABLE', `the plan file cannot be written (${code ?? 'error'})`);
  }
}
