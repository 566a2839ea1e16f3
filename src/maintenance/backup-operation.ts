import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, realpathSync, unlinkSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { AdapterError } from '../core/adapter-error.js';
import { canonicalJson } from '../core/canonical-json.js';
import { PACKAGE_VERSION } from '../core/package-info.js';
import { formatTimestamp, type Clock } from '../core/time.js';
import {
  assertRootOnlyPath, backupManifestPath, companionOwner, createPrivateFile, fileDigest, fsyncPath, nameTaken,
  removeStaleTemporaries, sqliteFiles, temporaryName,
} from '../storage/durable-files.js';
import { integrityOk, lifecycleCounts, onlineBackup } from '../storage/online-backup.js';
import { auditFile, type AuditReport } from './audit-operation.js';
import type { MaintenanceTarget } from '../storage/maintenance-target.js';
import { withReadOnly } from '../storage/write-connection.js';
import {
  assertNoInterlock, bindingProfileId, inspectSchema, type SchemaFindings,
} from '../storage/schema-inspection.js';
import { sqliteCode } from '../storage/sqlite-errors.js';
import { verifySchema, type CheckResult } from '../storage/schema-verification.js';
import type { MigrationFile } from '../storage/migration-files.js';
import type { RecounterLoader } from '../storage/token-count-repository.js';
import { IGNORE_STEPS, type StepListener } from './operation-steps.js';
import { stopAtOnce } from './operation-signals.js';

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

/**
 * The checks a backup's verification or audit failed (OPERATIONS.md §4.1 step 3 records them without refusing the
 * copy), by name; empty when the copy passed them all. A copy that fails a verify check is refused by `restore`.
 */
export function backupProblems(manifest: BackupManifest): string[] {
  return [
    ...manifest.verification.checks.filter((check) => check.status === 'FAIL').map((check) => `verify ${check.name}`),
    ...manifest.audit.checks.filter((check) => check.status === 'FAIL').map((check) => `audit ${check.name}`),
  ];
}

/**
 * Verifies a fresh copy as OPERATIONS.md §4.1 step 3 asks: integrity_check must be `ok` (else VERIFY_FAILED);
 * the verify checks run and are returned, not enforced, so a damaged database can still be copied.
 */
export function verifyCopy(path: string, shipped: readonly MigrationFile[]): {
  findings: SchemaFindings; checks: CheckResult[];
} {
  if (!integrityOk(path))
    throw new AdapterError('VERIFY_FAILED', 'the copy failed integrity_check; the source may be damaged');
  return withReadOnly(path, (connection) => {
    const findings = inspectSchema(connection, shipped);
    return { findings, checks: verifySchema(connection, findings, shipped) };
  }, { loadVec: true });
}

/**
 * A system error of the output directory (read-only, no permission, full) as BACKEND_UNAVAILABLE with its code only.
 */
function unwritable(error: unknown): unknown {
  // Only the system's own errors (with an errno) are about the output; an SQLite error is the source's or the copy's.
  const { code, errno } = error as NodeJS.ErrnoException;
  if (error instanceof AdapterError || typeof code !== 'string' || typeof errno !== 'number') return error;
  return new AdapterError('BACKEND_UNAVAILABLE', `the output cannot be written there (${code}); nothing was published`,
    { cause: error });
}

/** A small file published together with the main one, such as a backup's manifest. */
export interface Companion {
  readonly path: string;
  readonly text: string;
}

/**
 * Writes `file` through a temporary file beside it (OPERATIONS.md §4.1 steps 2-4): the temporary file is created
 * exclusively with mode 0600 before anything is written into it, `fill` writes and verifies it, then it is
 * fsynced and published by hard link, which fails if `file` exists (never overwrite), and the directory is
 * fsynced. A `companion` (the manifest) is derived from the filled file and written and fsynced under its own
 * temporary name before anything is published; the two links then follow each other, so a killed run leaves
 * both, neither, or (only between two link calls) the file alone. On failure the temporary files, any
 * `-wal`/`-shm` of them, and a file this call already linked are removed. TARGET_EXISTS when a target or a
 * temporary name is taken.
 */
export async function writeThenPublish<T>(file: string, fill: (temp: string) => Promise<T>,
  companion?: (temp: string, result: T) => Companion, onStop?: () => void): Promise<T> {
  assertRootOnlyPath(file);
  removeStaleTemporaries(file);
  const nonce = randomBytes(8).toString('hex');
  const temp = temporaryName(file, nonce);
  createTemporary(temp);
  const temporaries = sqliteFiles(temp);
  const published: string[] = [];
  const removeTemporaries = () => {
    for (const path of temporaries) if (existsSync(path)) unlinkSync(path);
  };
  // Stopped by a signal (Ctrl-C during a long copy), the run is a failure like any other: the temporary files, a
  // full copy of the database's content under a hidden name, go with it (OPERATIONS.md §4.1), then exit 1.
  const stop = (signal: NodeJS.Signals) => {
    removeTemporaries();
    onStop?.();
    stopAtOnce(`stopped by ${signal}; the temporary copy was removed, nothing was published`);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let result: T;
  try {
    result = await fill(temp);
    fsyncPath(temp);
    const extra = companion?.(temp, result);
    if (extra) {
      const extraTemp = temporaryName(extra.path, nonce);
      // Written through the descriptor that created it: by name, a link swapped in meanwhile would be followed.
      createTemporary(extraTemp, extra.text);
      temporaries.push(extraTemp);
    }
    // The copy, its checks and the companion (a manifest hashes and audits the whole copy: seconds on a large file)
    // run without a turn of the event loop: a signal that came meanwhile waits for one, and would be dropped once the
    // listeners go. This turn delivers it before anything is published.
    await new Promise((resolve) => setImmediate(resolve));
    linkSync(temp, file);
    published.push(file);
    if (extra) {
      linkSync(temporaries.at(-1)!, extra.path);
      published.push(extra.path);
    }
  } catch (error) {
    if (published.length === 1 && companion) unlinkSync(file);
    removeTemporaries();
    if ((error as NodeJS.ErrnoException).code === 'EEXIST')
      throw new AdapterError('TARGET_EXISTS',
        'the target appeared while it was being written; nothing was overwritten');
    throw unwritable(error);
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  removeTemporaries();
  fsyncPath(dirname(file));
  return result;
}

/**
 * Creates `temp` exclusively with mode 0600 whatever the umask, holding `text`, fsynced; TARGET_EXISTS when an earlier
 * run left it.
 */
function createTemporary(temp: string, text = ''): void {
  try {
    createPrivateFile(temp, text);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST')
      throw new AdapterError('TARGET_EXISTS',
        `a temporary file of an earlier run is in the way (${basename(temp)}); remove it`);
    throw unwritable(error);
  }
}

/**
 * Writes a verified online backup of `target` to `outFile` and its `outFile.manifest.json`
 * (OPERATIONS.md §4.1), under the lease the caller already holds. Never overwrites: TARGET_EXISTS when
 * the file, its `-wal`/`-shm` or its manifest exist. MAINTENANCE_IN_PROGRESS for a database holding the
 * recovery interlock. VERIFY_FAILED when the copy's integrity_check fails; other check failures are
 * recorded in the manifest, not fatal, so a damaged database can still be saved. On failure the
 * temporary file is removed. `onStep` hears `lease_taken`, `pages_copied` (copied/total pages, at the copy's
 * first step and at its end), `verifying` (the copy's checks and audit begin), `verified` (`failed_checks`),
 * `published` and last `manifest_written` (decision 0023).
 * `loadRecounter` gives audit's recounter (auditFile), once the checks above passed.
 */
export async function writeVerifiedBackup(
  target: MaintenanceTarget, outFile: string, clock: Clock, onStep: StepListener = IGNORE_STEPS,
  loadRecounter?: RecounterLoader,
): Promise<BackupManifest> {
  onStep({ step: 'lease_taken', fields: { lease: target.leaseMode } });
  assertNoInterlock(target.findings, 'its old pages may still hold what it purged');
  if (target.findings.kind !== 'FACTLANE') {
    throw new AdapterError('SCHEMA_MISMATCH', 'the file is not a FactLane database; check --db');
  }
  const given = resolve(outFile);
  // The directory's real path (symbolic links followed), as the database's is: two spellings of one name compare equal.
  const file = existsSync(dirname(given)) ? join(realpathSync(dirname(given)), basename(given)) : given;
  const manifestPath = backupManifestPath(file);
  if ([...sqliteFiles(file), manifestPath].some(nameTaken)) {
    throw new AdapterError('TARGET_EXISTS', 'the backup file, its -wal/-shm/-journal or its manifest already exists; '
      + 'choose a new path (a run stopped after writing it left a backup there: factlane-admin verify --backup says '
      + 'whether it is whole and has its manifest)');
  }
  // A backup named like a companion of a file (this database or any other) would be read by SQLite as its journal
  // or WAL.
  if (companionOwner(file) !== undefined) {
    throw new AdapterError('TARGET_EXISTS', 'the backup path names the -wal, -shm, -journal or -writer of an '
      + 'existing file; choose a new path');
  }
  // Not created, as restore creates a database's: the report names no path, so a mistyped directory made here would
  // hide the backup from its operator. SOURCE_NOT_FOUND is the operator catalogue's one code for a missing file.
  if (!existsSync(dirname(file))) {
    throw new AdapterError('SOURCE_NOT_FOUND', 'the directory of the backup file does not exist; a backup creates '
      + 'no directory: check the path, or create it first');
  }
  const recount = await loadRecounter?.();
  let manifest: BackupManifest | undefined;
  await writeThenPublish(file, async (temp) => {
    await onlineBackup(target.path, temp, (done, total) => onStep({ step: 'pages_copied', done, total }));
    onStep({ step: 'verifying' });
    const verified = verifyCopy(temp, target.shipped);
    // Inside the verified step (decision 0023): the audit recounts every token count, most of a large backup's time.
    const audit = auditFile(temp, target.shipped, recount);
    onStep({
      step: 'verified', fields: { failed_checks: verified.checks.filter((check) => check.status === 'FAIL').length },
    });
    return { ...verified, audit };
  }, (temp, { findings, checks, audit }) => {
    manifest = manifestOf(temp, findings, checks, { clock, audit });
    return { path: manifestPath, text: `${canonicalJson(manifest)}\n` };
  });
  // The file and its manifest are published together (writeThenPublish), the file first.
  onStep({ step: 'published' });
  onStep({ step: 'manifest_written', fields: { file_bytes: manifest!.file_bytes } });
  return manifest!;
}

function countsOrNone(path: string): Record<string, number> {
  try {
    return lifecycleCounts(path);
  } catch (error) {
    if (sqliteCode(error) === undefined) throw error;
    return {};
  }
}

/** The manifest of a verified copy at `path` (OPERATIONS.md §4.1 step 5), read before the copy is published. */
function manifestOf(path: string, findings: SchemaFindings, checks: CheckResult[], { clock, audit }: {
  clock: Clock; audit: AuditReport;
}): BackupManifest {
  const digest = fileDigest(path);
  return {
    manifest_version: 1,
    factlane_version: PACKAGE_VERSION,
    database_id: findings.meta.database_id ?? null,
    schema_version: findings.schemaVersion,
    contract_version: findings.contractVersion,
    embedding_profile_id: bindingProfileId(findings.bindingText),
    vector_dimension: findings.vectorDimension,
    created_at: formatTimestamp(clock()),
    file_bytes: digest.bytes,
    file_sha256: digest.sha256,
    // Damage is recorded, not fatal (§4.1 step 3): counts SQLite cannot read are left out; the checks name why.
    lifecycle_counts: countsOrNone(path),
    verification: { integrity_check: 'PASS', checks },
    audit,
  };
}
