import {
  accessSync, closeSync, constants, existsSync, openSync, readFileSync, readSync, realpathSync, statSync,
} from 'node:fs';
import { resolve } from 'node:path';
import { AdapterError } from '../core/adapter-error.js';
import { isJsonObject } from '../core/canonical-json.js';
import { backupManifestPath, fileDigest } from '../storage/durable-files.js';
import { dbIdentity, type MaintenanceTarget } from '../storage/maintenance-target.js';
import { withReadOnly } from '../storage/write-connection.js';
import type { MigrationFile } from '../storage/migration-files.js';
import { integrityOk } from '../storage/online-backup.js';
import { inspectSchema, type SchemaFindings } from '../storage/schema-inspection.js';
import { verifySchema, type CheckResult } from '../storage/schema-verification.js';
import { sqliteCode } from '../storage/sqlite-errors.js';

/** The `factlane-admin verify` report (OPERATIONS.md §4.3). */
export interface VerifyReport {
  readonly ok: boolean;
  readonly interlock_present: boolean;
  readonly checks: readonly CheckResult[];
}

const pass = (name: string, ok: boolean, detail: string): CheckResult => ({
  name, status: ok ? 'PASS' : 'FAIL', detail,
});

function report(checks: CheckResult[], interlockPresent: boolean): VerifyReport {
  return { ok: checks.every((c) => c.status === 'PASS'), interlock_present: interlockPresent, checks };
}

const SQLITE_FILE = 'an SQLite database file';

/**
 * Verifies a live database under the caller's shared lease (OPERATIONS.md §4.3): an SQLite file, integrity_check,
 * then every migrate-verify check.
 */
export function verifyDatabase(target: MaintenanceTarget): VerifyReport {
  const checks = [
    pass('sqlite_file', true, SQLITE_FILE), pass('integrity_check', integrityOk(target.path), 'PRAGMA integrity_check'),
    ...target.verify(),
  ];
  return report(checks, target.findings.interlockPresent);
}

/** A file a read-only command could not open: its identity, and whether it is an SQLite database at all. */
export interface UnreadableFile {
  readonly db_identity: string;
  readonly notADatabase: boolean;
}

/**
 * What `error`, thrown by MaintenanceTarget.open on `dbPath`, says of the file when SQLite could not read it
 * (BACKEND_CORRUPT): read-only commands report such a file instead of failing on it (STORAGE.md §10). Undefined for
 * any other failure, which the caller throws.
 */
export function unreadableFile(dbPath: string, error: unknown): UnreadableFile | undefined {
  if (!(error instanceof AdapterError) || error.code !== 'BACKEND_CORRUPT') return undefined;
  return { db_identity: dbIdentity(realpathSync(dbPath)), notADatabase: sqliteCode(error.cause) === 'SQLITE_NOTADB' };
}

/**
 * The report on a file SQLite cannot open for its checks: not a database at all (`sqlite_file` fails), or an SQLite
 * file too damaged to read its schema (`integrity_check` fails); nothing else can be checked.
 */
export function unreadableReport(notADatabase: boolean): VerifyReport {
  if (notADatabase) return report([pass('sqlite_file', false, SQLITE_FILE)], false);
  return report([
    pass('sqlite_file', true, SQLITE_FILE),
    pass('integrity_check', false, 'PRAGMA integrity_check (the schema cannot be read)'),
  ], false);
}

/**
 * The -wal or hot -journal lying beside a backup file, if any: SQLite would read it with the file, and the manifest's
 * digest covers the file alone, so a backup with one never matches its manifest.
 */
export function backupCompanion(path: string): '-wal' | '-journal' | undefined {
  return (['-wal', '-journal'] as const).find((suffix) => existsSync(`${path}${suffix}`));
}

/**
 * True when `path` is an SQLite file whose header says WAL mode (bytes 18 and 19, the file format versions, are 2).
 * A backup is left in rollback-journal mode (OPERATIONS.md §4.1 step 3), so one in WAL mode was opened as a live
 * database since it was taken, by a server or a tool: it no longer matches its manifest, and opening it again, even
 * read-only, would leave a -wal and -shm beside it.
 */
export function inWalMode(path: string): boolean {
  const header = Buffer.alloc(20);
  const fd = openSync(path, 'r');
  try {
    if (readSync(fd, header, 0, header.length, 0) < header.length) return false;
  } finally {
    closeSync(fd);
  }
  return header.toString('latin1', 0, 16) === 'SQLite format 3\0' && (header[18] === 2 || header[19] === 2);
}

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code ?? 'unknown error';

/** What a manifest must match, named in `manifest_matches` when everything matches. */
const MANIFEST_MATCHES = 'size, SHA-256, database_id and schema version; rollback-journal mode, no -wal or -journal '
  + 'beside it';

/** `manifest_matches`: PASS, or FAIL naming what does not match. */
function manifestCheck(mismatches: readonly string[]): CheckResult {
  return mismatches.length === 0 ? pass('manifest_matches', true, MANIFEST_MATCHES)
    : pass('manifest_matches', false, mismatches.join('; '));
}

/** The manifest beside a backup, or why there is none to compare with. */
function readManifest(manifestPath: string): { manifest: Record<string, unknown>; problem?: string } {
  if (!existsSync(manifestPath)) {
    return { manifest: {}, problem: 'no manifest beside it (the file named like it plus .manifest.json, written with '
      + 'it by factlane-admin backup): copy the two together' };
  }
  if (!statSync(manifestPath).isFile()) return { manifest: {}, problem: 'its manifest is not a regular file' };
  let text: string;
  try {
    text = readFileSync(manifestPath, 'utf8');
  } catch (error) {
    return { manifest: {}, problem: `its manifest cannot be read (${errorCode(error)}); check its owner and mode` };
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    if (isJsonObject(parsed)) return { manifest: parsed };
  } catch {
    // Reported below.
  }
  return { manifest: {}, problem: 'its manifest is not a JSON object' };
}

/**
 * Verifies a backup file read-only: its size and SHA-256 are compared with the manifest before SQLite opens it,
 * then its database_id and schema version, then the same checks as a database. A missing or unreadable manifest, like
 * any mismatch, fails `manifest_matches`, which names what differs, and the other checks still run (OPERATIONS.md
 * §4.3: a report, exit 0 or 3). A file SQLite cannot read as a database fails `sqlite_file` instead of stopping the
 * report. A -wal or -journal beside the file, or WAL mode, fails the manifest, and the file is not opened.
 * SOURCE_NOT_FOUND when the file is absent or no regular file, BACKEND_UNAVAILABLE when it cannot be read.
 */
export function verifyBackup(file: string, shipped: readonly MigrationFile[]): VerifyReport {
  const path = resolve(file);
  if (!existsSync(path)) throw new AdapterError('SOURCE_NOT_FOUND', 'the backup file does not exist');
  if (!statSync(path).isFile()) throw new AdapterError('SOURCE_NOT_FOUND', 'the backup is not a regular file');
  try {
    accessSync(path, constants.R_OK);
  } catch (error) {
    // A backup is written 0600 by whoever took it: another operator cannot read it. The code, never the path.
    throw new AdapterError('BACKEND_UNAVAILABLE',
      `the backup file cannot be read (${errorCode(error)}); check its owner and mode`, { cause: error });
  }
  const { manifest, problem } = readManifest(backupManifestPath(path));
  // Not hashed or opened then: SQLite would read the companion with the file, or open a file in WAL mode with a new
  // -wal and -shm, and leave them beside the backup.
  const companion = backupCompanion(path);
  if (companion !== undefined || inWalMode(path)) {
    const why = companion !== undefined ? `a ${companion} file lies beside it`
      : 'it is in WAL mode: it was opened as a live database since it was taken';
    return report([manifestCheck([...(problem ? [problem] : []), why])], false);
  }
  // Hashed only when there is a manifest to compare with: a backup may be gigabytes.
  const mismatches = problem ? [problem] : [];
  if (!problem) {
    const digest = fileDigest(path);
    if (manifest.file_bytes !== digest.bytes) mismatches.push('its size differs from the manifest\'s');
    if (manifest.file_sha256 !== digest.sha256) mismatches.push('its SHA-256 differs from the manifest\'s');
  }
  let inspected: { findings: SchemaFindings; checks: CheckResult[] };
  try {
    inspected = withReadOnly(path, (connection) => {
      const copy = inspectSchema(connection, shipped);
      return { findings: copy, checks: verifySchema(connection, copy, shipped) };
    }, { loadVec: true });
  } catch (error) {
    if (!(error instanceof AdapterError) || error.code !== 'BACKEND_CORRUPT') throw error;
    return report([manifestCheck(mismatches), pass('sqlite_file', false, SQLITE_FILE)], false);
  }
  const { findings, checks } = inspected;
  if (!problem) {
    if (manifest.database_id !== (findings.meta.database_id ?? null))
      mismatches.push('its database_id differs from the manifest\'s');
    if (manifest.schema_version !== findings.schemaVersion)
      mismatches.push('its schema version differs from the manifest\'s');
  }
  return report([
    manifestCheck(mismatches),
    pass('sqlite_file', true, SQLITE_FILE),
    pass('integrity_check', integrityOk(path), 'PRAGMA integrity_check'),
    ...checks,
  ], findings.interlockPresent);
}
