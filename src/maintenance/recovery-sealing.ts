import { closeSync, existsSync, openSync, readSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import { AdapterError } from '../core/adapter-error.js';
import { DatabaseLease } from '../storage/database-lease.js';
import { createPrivateFile, fsyncPath, sqliteFiles } from '../storage/durable-files.js';
import {
  bothIntegrityChecksOk, checkpointTruncate, ftsIntegrityOk, openImage, vacuumInto,
} from '../storage/recovery-pragmas.js';
import { rowsHoldingContent } from '../storage/recovery-content.js';
import { deleteInterlock, readInterlock, type RecoveryInterlock } from '../storage/recovery-interlock.js';
import {
  checkpointThrough, readDerivedRows, readPostflight, readRecordsById, recordDigests, unattributableDerivedRows,
} from '../storage/recovery-repository.js';
import { SQLiteVecEngine } from '../storage/sqlite-vec-engine.js';
import type { WriteConnection } from '../storage/write-connection.js';
import { canonicalJson } from '../core/canonical-json.js';
import type { RecordRow } from '../storage/record-rows.js';
import type { RecoveryNeedles } from './recovery-inspection.js';
import { isTombstoneOf } from './recovery-plan.js';

// OPERATIONS.md §5.6 (sealing) and §5.7 (postflight). Everything here runs after the purge committed: a failure is
// exit 4, and the interlock keeps every runtime out until a rerun of the same plan completes.

/** A step after the commit failed; recovery exits 4 and a rerun of the same plan resumes. */
export class SealingFailure extends Error {
  override name = 'SealingFailure';
  /** True when a SQLite handle could not be proven closed: every exclusive lease stays until the process exits. */
  readonly failClosed: boolean;
  /** True when the byte scan found target content in the image: a resumed run, which cannot scan, must not pass. */
  readonly residue: boolean;
  /** True when the interlock was gone (the postflight deleted it, or found none) when it failed: it holds nobody. */
  readonly interlockDeleted: boolean;

  constructor(message: string, options: {
    failClosed?: boolean; residue?: boolean; interlockDeleted?: boolean; cause?: unknown;
  } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.failClosed = options.failClosed ?? false;
    this.residue = options.residue ?? false;
    this.interlockDeleted = options.interlockDeleted ?? false;
  }
}

/** What the sealed image must show (§5.6 step 3). */
export interface SealExpectations {
  readonly operationId: string;
  readonly interlock: RecoveryInterlock;
  /** The targets, each with its whole record as the purge wrote it (the kept identity fields and the tombstone). */
  readonly targets: readonly { readonly recordId: string; readonly rowId: number; readonly row: RecordRow }[];
  /** Digests of every other record, read before the purge (or, on a resumed run, before sealing). */
  readonly digests: ReadonlyMap<number, string>;
  /** The targets' content, known only to the run that purged; null on a resumed run. */
  readonly needles: RecoveryNeedles | null;
}

/** How the residual byte scan of the image went (receipt `residual_byte_scan`, docs/decisions/0019). */
export type ResidualScan = 'CLEAN' | 'NOT_APPLICABLE_SHORT_CONTENT' | 'NOT_REPEATABLE_AFTER_RESUME';

/** The sanitized image's path for an operation: same directory as the database. */
export function sanitizedImagePath(path: string, operationId: string): string {
  return `${path}.recovery-${operationId}.sanitized`;
}

function fail(message: string): never {
  throw new SealingFailure(message);
}

/** The first of `needles` found in the file's bytes, read in pieces that overlap by the longest needle. */
function fileContainsAny(path: string, needles: readonly Buffer[]): boolean {
  if (!existsSync(path) || needles.length === 0) return false;
  const overlap = Math.max(...needles.map((n) => n.length)) - 1;
  const chunk = Buffer.alloc(8 * 1024 * 1024 + overlap);
  const fd = openSync(path, 'r');
  try {
    let carried = 0;
    let position = 0;
    for (;;) {
      const read = readSync(fd, chunk, carried, chunk.length - carried, position);
      if (read === 0) return false;
      position += read;
      const view = chunk.subarray(0, carried + read);
      if (needles.some((needle) => view.includes(needle))) return true;
      carried = Math.min(overlap, view.length);
      view.copy(chunk, 0, view.length - carried);
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * The byte strings the residual scan looks for: each target text as stored plain and as stored inside a JSON value
 * (quotes and backslashes escaped), and each vector and code. A text that the tombstones themselves spell (a fact
 * such as `operator-recovery`) cannot be told from them and is left out.
 */
function byteNeedles(needles: RecoveryNeedles, tombstones: readonly RecordRow[]): Buffer[] {
  return [...residualTexts(needles.texts, tombstones).map((text) => Buffer.from(text, 'utf8')), ...needles.blobs];
}

/**
 * The text needles of the residual scan: each target text plain and as stored inside a JSON value (quotes and
 * backslashes escaped), less those the tombstones' own fact, provenance, freshness and tags spell. The purge checks
 * the same list before its commit (keptPlacesHoldingContent), so that it never commits what this scan would fail.
 */
export function residualTexts(texts: readonly string[], tombstones: readonly RecordRow[]): string[] {
  const forms = new Set(texts.flatMap((text) => [text, JSON.stringify(text).slice(1, -1)]));
  const tombstoneText = tombstones
    .map((row) => `${row.fact}${row.source_provenance}${row.freshness_policy}${row.tags}`).join('');
  return [...forms].filter((text) => !tombstoneText.includes(text));
}

/** §5.6 step 3: the image verified on its own connection, then its bytes scanned. Returns the scan's outcome. */
function verifyImage(imagePath: string, expect: SealExpectations): ResidualScan {
  const connection = openImage(imagePath);
  try {
    if (!bothIntegrityChecksOk(connection) || !ftsIntegrityOk(connection)) {
      fail('the sanitized image fails integrity_check or the FTS5 integrity-check');
    }
    const targetRows = new Set(expect.targets.map((t) => t.rowId));
    const digests = recordDigests(connection, targetRows);
    const same = digests.size === expect.digests.size
      && [...expect.digests].every(([id, digest]) => digests.get(id) === digest);
    if (!same) fail('a record outside the targets differs in the sanitized image');
    const rows = readRecordsById(connection, expect.targets.map((t) => t.recordId));
    for (const { recordId, rowId, row: written } of expect.targets) {
      const row = rows.get(recordId);
      if (!row || canonicalJson(row) !== canonicalJson(written) || !isTombstoneOf(row, expect.operationId)) {
        fail('a tombstone in the sanitized image is not as written');
      }
      const derived = readDerivedRows(connection, rowId);
      if (derived.ftsText !== null || derived.vector || derived.eligibleVector || derived.eligibleCode) {
        fail('a target still has derived rows in the image');
      }
    }
    if (unattributableDerivedRows(connection).length > 0) {
      fail('the sanitized image has FTS or vector rows without a record');
    }
    const interlock = readInterlock(connection);
    if (!interlock || canonicalJson(interlock) !== canonicalJson(expect.interlock)) {
      fail('the sanitized image lacks the interlock');
    }
    // The targets' own rows were compared whole above: a tombstone is made of identifiers only.
    if (expect.needles && rowsHoldingContent(connection, expect.needles, targetRows).length > 0) {
      fail('a row of the sanitized image holds target content');
    }
  } finally {
    connection.close();
  }
  if (!expect.needles) return 'NOT_REPEATABLE_AFTER_RESUME';
  const needles = byteNeedles(expect.needles, expect.targets.map((t) => t.row));
  if (['', '-wal', '-shm'].some((suffix) => fileContainsAny(imagePath + suffix, needles))) {
    throw new SealingFailure('target bytes remain in the sanitized image', { residue: true });
  }
  return expect.needles.short ? 'NOT_APPLICABLE_SHORT_CONTENT' : 'CLEAN';
}

function removeIfPresent(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** Seams for fault injection and progress: called as each sealing step completes. */
export type SealStep = 'first_checkpoint' | 'vacuum_into' | 'image_verified' | 'connections_closed' | 'renamed';

/**
 * Seals a purged database (§5.6): checkpoint (0, 0, 0); VACUUM INTO a fresh 0600 image beside it, checkpoint
 * again, switch the image to WAL; verify the image; close the write connection (its empty sidecars go); lock the
 * image's inode exclusively and rename it over the path while `lease` still holds the old inode; fsync the
 * directory. Returns the lease on the new inode and the residual scan. SealingFailure on any failed step.
 */
export async function sealDatabase(
  input: { path: string; connection: WriteConnection; expect: SealExpectations },
  onStep: (step: SealStep) => void | Promise<void>,
): Promise<{ lease: DatabaseLease; residual: ResidualScan }> {
  const { path, connection, expect } = input;
  const raw = connection.connection;
  if (!checkpointTruncate(raw)) fail('the first wal_checkpoint(TRUNCATE) did not return (0, 0, 0)');
  await onStep('first_checkpoint');
  const image = sanitizedImagePath(path, expect.operationId);
  for (const file of sqliteFiles(image)) removeIfPresent(file);
  // recover runs as root (§5.2): an image owned by root would lock out every host of the database's owner.
  createPrivateFile(image, '', path);
  vacuumInto(raw, image);
  if (!checkpointTruncate(raw)) fail('the second wal_checkpoint(TRUNCATE) did not return (0, 0, 0)');
  await onStep('vacuum_into');
  const residual = verifyImage(image, expect);
  await onStep('image_verified');
  if (!(await connection.close())) {
    throw new SealingFailure('the connection to the old database could not be proven closed', { failClosed: true });
  }
  for (const suffix of ['-wal', '-shm']) {
    if (suffix === '-wal' && existsSync(path + suffix) && statSync(path + suffix).size > 0) {
      fail('the old database left a non-empty -wal');
    }
    removeIfPresent(path + suffix);
  }
  await onStep('connections_closed');
  let lease: DatabaseLease;
  try {
    lease = DatabaseLease.acquire(image, 'exclusive', { create: false });
  } catch (error) {
    throw new SealingFailure('the exclusive lease on the sanitized image could not be taken', { cause: error });
  }
  try {
    renameSync(image, path);
    lease.adoptPath(path);
    fsyncPath(dirname(path));
  } catch (error) {
    throw new SealingFailure('the sanitized image could not be renamed over the database', {
      cause: error, failClosed: true,
    });
  }
  await onStep('renamed');
  return { lease, residual };
}

/**
 * The postflight (§5.7): opens the storage engine through the maintenance capability of `lease` (the exclusive lease
 * on the inode the path names), checks quick_check, the tombstones and that the targets have no derived rows, deletes
 * `interlock` (null when an earlier postflight already did) in a gated transaction, checkpoints, and closes the
 * engine. SealingFailure when a check fails; with `failClosed` when the close cannot be confirmed.
 */
export async function runPostflight(input: {
  path: string; lease: DatabaseLease; operationId: string; recordIds: readonly string[];
  interlock: RecoveryInterlock | null;
}): Promise<void> {
  let engine: SQLiteVecEngine;
  try {
    engine = await SQLiteVecEngine.open({
      dbPath: input.path, maintenanceLease: input.lease, writerQueue: { enabled: false },
      newDatabaseBinding: () =>
        Promise.reject(new AdapterError('SOURCE_NOT_FOUND', 'the database vanished before the postflight')),
    });
  } catch (error) {
    const code = (error as AdapterError).code ?? 'error';
    throw new SealingFailure(`the postflight could not open the database (${code})`, { cause: error });
  }
  let failure: SealingFailure | undefined;
  let interlockDeleted = false;
  try {
    const reading = await engine.read((db) => readPostflight(db, input.recordIds));
    const tombstones = input.recordIds.every((id) => {
      const row = reading.rows.get(id);
      return row !== undefined && isTombstoneOf(row, input.operationId);
    });
    if (!reading.quickCheckOk || !tombstones || reading.derivedRows > 0) {
      failure = new SealingFailure(
        'the postflight found the database not as sealed (quick_check, tombstones or derived rows)');
    } else {
      const interlock = input.interlock;
      if (interlock && !(await engine.write((trx) => deleteInterlock(trx, interlock)))) {
        // Absent either way: it holds no runtime out.
        failure = new SealingFailure('the interlock was not found to delete', { interlockDeleted: true });
      } else {
        interlockDeleted = interlock !== null;
        if (!(await engine.read(checkpointThrough)))
          failure = new SealingFailure('the postflight checkpoint did not return (0, 0, 0)', { interlockDeleted });
      }
    }
  } catch (error) {
    failure = new SealingFailure('the postflight failed', { cause: error, interlockDeleted });
  } finally {
    await engine.close();
  }
  if (!engine.closeConfirmed) {
    throw new SealingFailure('the postflight could not prove its SQLite handle closed',
      { failClosed: true, interlockDeleted });
  }
  if (failure) throw failure;
}
