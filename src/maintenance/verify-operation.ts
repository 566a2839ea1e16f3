import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { AdapterError } from '../core/adapter-error.js';
import { withReadOnly, type MaintenanceTarget } from '../storage/maintenance-target.js';
import type { MigrationFile } from '../storage/migration-files.js';
import { integrityOk } from '../storage/online-backup.js';
import { inspectSchema } from '../storage/schema-inspection.js';
import { verifySchema, type CheckResult } from '../storage/schema-verification.js';

/** The `factlane-admin verify` report (OPERATIONS.md §4.3). */
export interface VerifyReport {
  readonly ok: boolean;
  readonly interlock_present: boolean;
  readonly checks: readonly CheckResult[];
}

const pass = (name: string, ok: boolean, detail: string): CheckResult => ({ name, status: ok ? 'PASS' : 'FAIL', detail });

function report(checks: CheckResult[], interlockPresent: boolean): VerifyReport {
  return { ok: checks.every((c) => c.status === 'PASS'), interlock_present: interlockPresent, checks };
}

/** Verifies a live database under the caller's shared lease: integrity_check plus every migrate-verify check. */
export function verifyDatabase(target: MaintenanceTarget): VerifyReport {
  const checks = [pass('integrity_check', integrityOk(target.path), 'PRAGMA integrity_check'), ...target.verify()];
  return report(checks, target.findings.interlockPresent);
}

/**
 * Verifies a backup file read-only: its manifest must match (size, SHA-256, database_id, schema
 * version), then the same checks as a database. SOURCE_NOT_FOUND when the file or its manifest is absent.
 */
export function verifyBackup(file: string, shipped: readonly MigrationFile[]): VerifyReport {
  const path = resolve(file);
  const manifestPath = `${path}.manifest.json`;
  if (!existsSync(path) || !existsSync(manifestPath)) throw new AdapterError('SOURCE_NOT_FOUND', 'the backup file or its manifest does not exist');
  let manifest: Record<string, unknown>;
  try {
    manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as Record<string, unknown>;
  } catch {
    manifest = {};
  }
  const digest = createHash('sha256').update(readFileSync(path)).digest('hex');
  const { findings, checks } = withReadOnly(path, (connection) => {
    const copy = inspectSchema(connection, shipped);
    return { findings: copy, checks: verifySchema(connection, copy, shipped) };
  }, { loadVec: true });
  const manifestOk = manifest.file_bytes === statSync(path).size && manifest.file_sha256 === digest &&
    manifest.database_id === (findings.meta.database_id ?? null) && manifest.schema_version === findings.schemaVersion;
  return report([
    pass('manifest_matches', manifestOk, 'size, SHA-256, database_id and schema version'),
    pass('integrity_check', integrityOk(path), 'PRAGMA integrity_check'),
    ...checks,
  ], findings.interlockPresent);
}
