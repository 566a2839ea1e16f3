import { runLineageAudit, type AuditCheck } from '../storage/lineage-audit.js';
import type { MaintenanceTarget } from '../storage/maintenance-target.js';
import { withReadOnly } from '../storage/write-connection.js';
import type { MigrationFile } from '../storage/migration-files.js';
import { inspectSchema } from '../storage/schema-inspection.js';
import { verifySchema, type CheckResult } from '../storage/schema-verification.js';
import type { RecordRecounter } from '../storage/token-count-repository.js';
import { IGNORE_STEPS, type StepListener } from './operation-steps.js';

/** The `factlane-admin audit` report (OPERATIONS.md §4.4). */
export interface AuditReport {
  readonly ok: boolean;
  readonly checks: readonly AuditCheck[];
}

/**
 * An audit check from verify's checks `parts`: FAIL when one failed, or when verify could not run any of them (no
 * reference schema for the file's version, or no vector table): a check that did not run never passes.
 */
function fromVerify(name: string, verify: readonly CheckResult[], parts: readonly string[]): AuditCheck {
  const reported = verify.filter((check) => parts.includes(check.name));
  if (reported.length === 0) {
    return { name, status: 'FAIL', count: 1,
      samples: ['not checked: no reference schema for this version, or no vector table'] };
  }
  const failed = reported.filter((check) => check.status === 'FAIL');
  return { name, status: failed.length === 0 ? 'PASS' : 'FAIL', count: failed.length, samples: [] };
}

/**
 * Audits the database file at `path` read-only (sqlite-vec loaded, no writer function): the lineage
 * invariants L1-L10 (schema package queries), fences, schema currency, the recovery interlock and
 * quick_check, each PASS/FAIL with a count and up to 20 samples. With `recount` (the adapter's rowTokenRecounter),
 * `token_counts` also recounts every stored token count; without it, it checks only which records have one.
 * `onStep` hears `verifying_schema`, `schema_verified` (the verify checks, quick_check among them, are done), then
 * for each lineage check `checking` (its `check`) as it begins and `checked` (`done` of them so far, its `check` and
 * `status`) once done (decision 0023).
 */
export function auditFile(
  path: string, shipped: readonly MigrationFile[], recount?: RecordRecounter, onStep: StepListener = IGNORE_STEPS,
): AuditReport {
  const checks = withReadOnly(path, (connection) => {
    onStep({ step: 'verifying_schema' });
    const findings = inspectSchema(connection, shipped);
    const verify = verifySchema(connection, findings, shipped);
    onStep({ step: 'schema_verified' });
    const lineage = findings.kind === 'FACTLANE' ? runLineageAudit(connection, findings.schemaVersion, recount, {
      starting: (check) => onStep({ step: 'checking', fields: { check } }),
      checked: (check, done) => onStep({ step: 'checked', done, fields: { check: check.name, status: check.status } }),
    }) : [];
    return [
      ...lineage,
      fromVerify('fences_present', verify, ['fences_present']),
      fromVerify('schema_current', verify, [
        'contract_version', 'versions_contiguous', 'checksums_match', 'release_knows_version',
      ]),
      { name: 'interlock_absent', status: findings.interlockPresent ? 'FAIL' : 'PASS',
        count: findings.interlockPresent ? 1 : 0, samples: [] } as AuditCheck,
      fromVerify('quick_check', verify, ['quick_check']),
    ];
  }, { loadVec: true });
  return { ok: checks.every((check) => check.status === 'PASS'), checks };
}

/** The checks an audit reports on any file, FactLane database or not. */
const FILE_CHECKS = ['fences_present', 'schema_current', 'interlock_absent', 'quick_check'] as const;

/**
 * The audit of a file SQLite cannot open for its checks, reported rather than refused (STORAGE.md §10, read-only
 * commands): the checks of any file, each FAIL with the reason as its one sample, as verify reports `sqlite_file`.
 */
export function unreadableAudit(notADatabase: boolean): AuditReport {
  const reason = notADatabase ? 'unreadable: not an SQLite database' : 'unreadable: the schema cannot be read';
  return { ok: false, checks: FILE_CHECKS.map((name) => ({ name, status: 'FAIL', count: 1, samples: [reason] })) };
}

/** Audits a live database under the caller's shared lease (`recount` and `onStep` as for auditFile). */
export function auditDatabase(
  target: MaintenanceTarget, recount?: RecordRecounter, onStep: StepListener = IGNORE_STEPS,
): AuditReport {
  onStep({ step: 'lease_taken', fields: { lease: target.leaseMode } });
  return auditFile(target.path, target.shipped, recount, onStep);
}
