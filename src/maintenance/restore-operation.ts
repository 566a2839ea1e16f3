import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { AdapterError } from '../core/adapter-error.js';
import {
  assertRootOnlyPath, backupManifestPath, companionOwner, createPrivateParents, fileDigest, nameTaken,
  removeDirectories, sqliteFiles,
} from '../storage/durable-files.js';
import { dbIdentity } from '../storage/maintenance-target.js';
import type { MigrationFile } from '../storage/migration-files.js';
import type { RecounterLoader } from '../storage/token-count-repository.js';
import { lifecycleCounts, onlineBackup, setWalMode } from '../storage/online-backup.js';
import type { CheckResult } from '../storage/schema-verification.js';
import { auditFile, type AuditReport } from './audit-operation.js';
import { verifyCopy, writeThenPublish } from './backup-operation.js';
import { backupCompanion, inWalMode, verifyBackup } from './verify-operation.js';
import { IGNORE_STEPS, type StepListener } from './operation-steps.js';

/** What `factlane-admin restore` reports (OPERATIONS.md §4.2); no path, no record content. */
export interface RestoreReport {
  readonly db_identity: string;
  readonly database_id: string | null;
  readonly schema_version: number;
  /** True when the backup's schema is older than this release: run `factlane-migrate up` before serving it. */
  readonly needs_migration: boolean;
  readonly journal_mode: 'wal';
  readonly file_bytes: number;
  readonly lifecycle_counts: Record<string, number>;
  readonly verification: { readonly integrity_check: 'PASS'; readonly checks: readonly CheckResult[] };
  readonly audit: AuditReport;
}

/** The SHA-256 the backup's manifest records (verifyBackup has already compared it with the file). */
function readManifestDigest(from: string): string {
  return String((JSON.parse(readFileSync(backupManifestPath(from), 'utf8')) as { file_sha256?: unknown }).file_sha256);
}

const failed = (checks: readonly CheckResult[], name: string) =>
  checks.some((check) => check.name === name && check.status === 'FAIL');

/**
 * Restores a verified backup into a new database file (OPERATIONS.md §4.2). The backup must match its manifest
 * (MANIFEST_MISMATCH), pass every verify check (VERIFY_FAILED; SCHEMA_MISMATCH when its schema is newer than this
 * release) and hold no recovery interlock (MAINTENANCE_IN_PROGRESS). Never overwrites: TARGET_EXISTS when the
 * database or its `-wal`/`-shm` exists. The copy is made with the online backup API into a temporary file (0600,
 * missing parents 0700) beside the target, verified as a backup is, set to WAL, then published by hard link.
 * The copy keeps the backup's database_id. On failure the temporary file is removed. `onStep` hears
 * `checking_backup` (first), `manifest_checked` (the manifest, its SHA-256 and the verify checks of the backup
 * passed), `pages_copied` (copied/total pages), `hash_rechecked`, `verifying` (the copy's checks and audit begin),
 * `verified`, and last `published` (decision 0023).
 */
export async function restoreVerifiedBackup(input: {
  from: string; dbPath: string; shipped: readonly MigrationFile[]; onStep?: StepListener;
  /** Gives audit's recounter (auditFile), once the backup passed its checks. */
  loadRecounter?: RecounterLoader;
}): Promise<RestoreReport> {
  const onStep = input.onStep ?? IGNORE_STEPS;
  // Hashing and checking a large backup takes seconds: said when it begins (decision 0023, stop 45).
  onStep({ step: 'checking_backup' });
  const source = verifyBackup(input.from, input.shipped);
  const from = resolve(input.from);
  if (failed(source.checks, 'manifest_matches')) {
    const walMode = inWalMode(from);
    const beside = backupCompanion(from);
    // A live database given as --from (no manifest, WAL mode or its -wal beside it): the advice for a spoilt backup
    // below (move its -wal away) would lose that database's latest writes.
    if ((walMode || beside !== undefined) && !existsSync(backupManifestPath(from))) {
      throw new AdapterError('MANIFEST_MISMATCH', '--from names a live database, not a backup: it has no manifest '
        + 'beside it and is in WAL mode or has its -wal beside it. Take a backup of it (factlane-admin backup --db '
        + 'PATH --out FILE), then restore FILE');
    }
    if (walMode) {
      throw new AdapterError('MANIFEST_MISMATCH', 'the backup was opened as a live database since it was taken (it is '
        + 'in WAL mode; factlane-admin backup leaves rollback-journal mode), so it no longer matches its manifest; '
        + 'restore another backup or take a new one. To use a backup, restore it: never point a server at it');
    }
    if (beside) {
      throw new AdapterError('MANIFEST_MISMATCH', `a ${beside} file lies beside the backup: SQLite would read it with `
        + 'the backup, so the backup no longer matches its manifest; move that file away (it is not part of the '
        + 'backup), then restore');
    }
    const detail = source.checks.find((check) => check.name === 'manifest_matches')?.detail;
    throw new AdapterError('MANIFEST_MISMATCH', `the backup does not match its manifest: ${detail}`);
  }
  if (failed(source.checks, 'release_knows_version'))
    throw new AdapterError('SCHEMA_MISMATCH',
      'the backup\'s schema is newer than this release; restore it with the release that wrote it');
  if (source.interlock_present) {
    throw new AdapterError('MAINTENANCE_IN_PROGRESS',
      'the backup holds the recovery interlock; an unsealed purge may still hold old pages');
  }
  const failing = source.checks.filter((check) => check.status === 'FAIL').map((check) => check.name);
  if (failing.length > 0)
    throw new AdapterError('VERIFY_FAILED',
      `the backup fails verification (${failing.join(', ')}); see factlane-admin verify --backup`);

  const manifestDigest = readManifestDigest(from);
  const file = resolve(input.dbPath);
  if (existsSync(file) && statSync(file).isDirectory()) {
    throw new AdapterError('TARGET_EXISTS', 'the database path is a directory; give the name of a new database file '
      + '(in that directory, say)');
  }
  if (sqliteFiles(file).some(nameTaken)) {
    throw new AdapterError('TARGET_EXISTS', 'the database or its -wal/-shm/-journal already exists; restore never '
      + 'overwrites: stop every FactLane process and move them aside first');
  }
  if (companionOwner(file) !== undefined) {
    throw new AdapterError('TARGET_EXISTS', 'the database path names the -wal, -shm, -journal or -writer of an '
      + 'existing file: SQLite would take the restored database for that file\'s companion and replay or delete it; '
      + 'choose another name');
  }
  onStep({ step: 'manifest_checked' });
  const recount = await input.loadRecounter?.();
  assertRootOnlyPath(file);
  const createdDirectories = createPrivateParents(file);
  try {
    const copy = await writeThenPublish(file, async (temp) => {
      // Verified while still in rollback-journal mode, so the read-only checks leave no -wal/-shm beside it.
      await onlineBackup(from, temp, (done, total) => onStep({ step: 'pages_copied', done, total }));
      if (fileDigest(from).sha256 !== manifestDigest)
        throw new AdapterError('MANIFEST_MISMATCH',
          'the backup changed while it was being restored; nothing was written');
      onStep({ step: 'hash_rechecked' });
      onStep({ step: 'verifying' });
      const verified = verifyCopy(temp, input.shipped);
      const counts = lifecycleCounts(temp);
      const audit = auditFile(temp, input.shipped, recount);
      setWalMode(temp);
      onStep({ step: 'verified' });
      return { ...verified, counts, audit };
    }, undefined, () => removeDirectories(createdDirectories));
    onStep({ step: 'published', fields: { file_bytes: statSync(file).size } });
    return {
      db_identity: dbIdentity(realpathSync(file)),
      database_id: copy.findings.meta.database_id ?? null,
      schema_version: copy.findings.schemaVersion,
      needs_migration: copy.findings.schemaVersion < (input.shipped.at(-1)?.version ?? 0),
      journal_mode: 'wal',
      file_bytes: statSync(file).size,
      lifecycle_counts: copy.counts,
      verification: { integrity_check: 'PASS', checks: copy.checks },
      audit: copy.audit,
    };
  } catch (error) {
    if (!existsSync(file)) removeDirectories(createdDirectories);
    throw error;
  }
}
