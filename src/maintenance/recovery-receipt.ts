import type { PreparedRecovery } from './recovery-preflight.js';
import { MATERIALIZATION_CLASSES } from './recovery-plan.js';
import type { ResidualScan } from './recovery-sealing.js';

// The receipt a verified recovery writes (OPERATIONS.md §5.9).

/** The receipt of OPERATIONS.md §5.9: no content, content hash or path. */
export type RecoveryReceipt = Readonly<Record<string, unknown>>;

/** The receipt of a run whose purge is sealed and verified: counts and checks, never content or paths. */
export function receiptOf(prepared: PreparedRecovery, residual: ResidualScan, completedAt: string): RecoveryReceipt {
  const { plan } = prepared;
  const classes = Object.fromEntries(MATERIALIZATION_CLASSES.map((name) => [
    name, plan.targets.filter((t) => t.expected_materialization === name).length,
  ]));
  return {
    operation_id: plan.operation_id, incident_class: plan.incident_class, db_identity: prepared.dbIdentity,
    database_id: plan.database_id, result: 'LOCAL_FACTLANE_PURGE_PASS', recovery_state: 'LOCAL_FACTLANE_PURGE_VERIFIED',
    target_count: plan.targets.length, materialization_classes: classes, core_secure_delete: true,
    fts5_secure_delete: true, fts_rebuild_in_logical_transaction: true, fts_integrity_check: 'PASS',
    first_wal_checkpoint_truncate: 'PASS', vacuum_into_sanitized_image: 'PASS', second_wal_checkpoint_truncate: 'PASS',
    post_sealing_db_fts_verification: 'PASS', residual_byte_scan: residual, public_mcp_tool_count: 5,
    plaintext_pre_mutation_backup: false, raw_content_logged: false, content_derived_confirmation_oracle: false,
    external_residual_copy_status: 'UNKNOWN', physical_erasure_claim: false, completed_at: completedAt,
    ...(plan.safe_ids_for_receipt === true ? { safe_target_ids: plan.targets.map((t) => t.record_id) } : {}),
  };
}
