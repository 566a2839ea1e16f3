import { createHash } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, linkSync, openSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { AdapterError } from '../core/adapter-error.js';
import { canonicalJson } from '../core/canonical-json.js';
import { PACKAGE_VERSION } from '../core/package-info.js';
import { formatTimestamp, type Clock } from '../core/time.js';
import { integrityOk, lifecycleCounts, onlineBackup } from '../storage/online-backup.js';
import { auditFile, type AuditReport } from './audit-operation.js';
import { withReadOnly, type MaintenanceTarget } from '../storage/maintenance-target.js';
import { bindingProfileId, inspectSchema, type SchemaFindings } from '../storage/schema-inspection.js';
import { verifySchema, type CheckResult } from '../storage/schema-verification.js';
import type { MigrationFile } from '../storage/migration-files.js';

/** What a verified backup wrote (OPERATIONS.md §4.1); also the manifest's content. */
export interface BackupManifest {
  readonly manifest_version: 1;
  readonly factlane_version: string;
  readonly database_id: string | null;
  readonly schema_version: number;
  readonly contract_version: string | null;
  readonly embedding_profile_id: string | null;
  readonly vector_dimension: number | null;
  readonly created_at: string;
  readonly file_bytes: number;
  readonly file_sha256: string;
  readonly lifecycle_counts: Record<string, number>;
  readonly verification: { readonly integrity_check: 'PASS' | 'FAIL'; readonly checks: readonly CheckResult[] };
  readonly audit: AuditReport;
}

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Verifies a fresh copy as OPERATIONS.md §4.1 step 3 asks: integrity_check must be `ok` (else VERIFY_FAILED);
 * the verify checks run and are returned, not enforced, so a damaged database can still be copied.
 */
export function verifyCopy(path: string, shipped: readonly MigrationFile[]): { findings: SchemaFindings; checks: CheckResult[] } {
  if (!integrityOk(path)) throw new AdapterError('VERIFY_FAILED', 'the copy failed integrity_check; the source may be damaged');
  return withReadOnly(path, (connection) => {
    const findings = inspectSchema(connection, shipped);
    return { findings, checks: verifySchema(connection, findings, shipped) };
  }, { loadVec: true });
}

/**
 * Publishes a finished temporary file under `file` without ever overwriting (OPERATIONS.md §4.1 step 4):
 * fsync, hard link (fails with EEXIST if `file` exists), drop the temporary name, fsync the directory.
 */
export function publishWithoutOverwrite(temp: string, file: string): void {
  fsyncPath(temp);
  linkSync(temp, file);
  unlinkSync(temp);
  fsyncPath(dirname(file));
}

/**
 * Writes a verified online backup of `target` to `outFile` and its `outFile.manifest.json`
 * (OPERATIONS.md §4.1), under the lease the caller already holds. Never overwrites: TARGET_EXISTS when
 * the file, its `-wal`/`-shm` or its manifest exist. MAINTENANCE_IN_PROGRESS for a database holding the
 * recovery interlock. VERIFY_FAILED when the copy's integrity_check fails; other check failures are
 * recorded in the manifest, not fatal, so a damaged database can still be saved. On failure the
 * temporary file is removed.
 */
export async function writeVerifiedBackup(target: MaintenanceTarget, outFile: string, clock: Clock): Promise<BackupManifest> {
  if (target.findings.interlockPresent) {
    throw new AdapterError('MAINTENANCE_IN_PROGRESS', 'the database holds the recovery interlock; an unsealed purge may still hold old pages');
  }
  const file = resolve(outFile);
  const manifestPath = `${file}.manifest.json`;
  if ([file, `${file}-wal`, `${file}-shm`, manifestPath].some((p) => existsSync(p))) {
    throw new AdapterError('TARGET_EXISTS', 'the backup file or its manifest already exists; choose a new --backup path');
  }
  if (!existsSync(dirname(file))) throw new AdapterError('SOURCE_NOT_FOUND', 'the backup directory does not exist');
  const temp = join(dirname(file), `.${basename(file)}.${process.pid}.tmp`);
  try {
    await onlineBackup(target.path, temp);
    const { findings, checks } = verifyCopy(temp, target.shipped);
    publishWithoutOverwrite(temp, file);
    const bytes = readFileSync(file);
    const manifest: BackupManifest = {
      manifest_version: 1,
      factlane_version: PACKAGE_VERSION,
      database_id: findings.meta.database_id ?? null,
      schema_version: findings.schemaVersion,
      contract_version: findings.contractVersion,
      embedding_profile_id: bindingProfileId(findings.bindingText),
      vector_dimension: findings.vectorDimension,
      created_at: formatTimestamp(clock()),
      file_bytes: statSync(file).size,
      file_sha256: createHash('sha256').update(bytes).digest('hex'),
      lifecycle_counts: lifecycleCounts(file),
      verification: { integrity_check: 'PASS', checks },
      audit: auditFile(file, target.shipped),
    };
    writeFileSync(manifestPath, `${canonicalJson(manifest)}\n`, { mode: 0o600, flag: 'wx' });
    fsyncPath(dirname(file));
    return manifest;
  } catch (error) {
    if (existsSync(temp)) unlinkSync(temp);
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new AdapterError('TARGET_EXISTS', 'the backup file appeared while it was being written; choose a new --backup path');
    }
    throw error;
  }
}
