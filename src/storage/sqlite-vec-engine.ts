import { randomUUID } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import type { Kysely, Transaction } from 'kysely';
import { AdapterError } from '../core/adapter-error.js';
import { MIGRATIONS_DIR, PACKAGE_LABEL } from '../core/package-info.js';
import { SYSTEM_CLOCK, formatTimestamp, type Clock } from '../core/time.js';
import { STORAGE_CONTRACT_VERSION } from '@factlane/schema';
import type { DB } from '../../generated/db.js';
import { DEFAULT_BUSY_RETRY, withBusyRetry, type BusyRetryPolicy } from './busy-retry.js';
import { DatabaseLease } from './database-lease.js';
import { resolveDatabasePath } from './database-path.js';
import { assertNotABackup, createPrivateParents, removeStaleTemporaries } from './durable-files.js';
import { applyMigrations } from './migration-apply.js';
import { loadMigrationFiles, type MigrationFile } from './migration-files.js';
import { inSnapshot } from './read-snapshot.js';
import { assertOneName, hardLinkedFiles } from './quiescence-inventory.js';
import { probeRuntime, type RuntimeProbeOptions, type RuntimeReport } from './runtime-probe.js';
import {
  assertNoInterlock, assertVectorTablesWhole, bindingDimension, inspectSchema, schemaRefusal, type SchemaFindings,
} from './schema-inspection.js';
import {
  BUSY_TIMEOUT_MS, WriteConnection, withReadOnly, type WriterQueueSettings, type WriteWork,
} from './write-connection.js';
import {
  assertNoStrayJournal, creationFailure, privateMode, removeUnfinishedDatabase, rollBackUnfinishedCreation,
} from './new-database-files.js';
import { sqliteCode } from './sqlite-errors.js';
import type { WriterQueueTurns } from './writer-queue.js';
import type { Logger } from '../core/logger.js';

/** The embedding binding written into a new database (CONTRACT.md §14.5). */
export interface NewDatabaseBinding {
  readonly vectorDimension: number;
  /** Canonical JSON of the binding, stored as `adapter_meta.embedding_profile`. */
  readonly bindingJson: string;
}

/** Options of SQLiteVecEngine.open, frozen. */
export interface SQLiteVecEngineOptions {
  readonly dbPath: string;
  /**
   * Called only when this open creates the database, before any file or directory exists, so a failing
   * provider check (an Ollama profile) leaves nothing behind.
   */
  readonly newDatabaseBinding: () => Promise<NewDatabaseBinding>;
  readonly clock?: Clock;
  readonly runtime?: RuntimeProbeOptions;
  readonly retry?: BusyRetryPolicy;
  /** The migrations to create from and check against; defaults to the shipped folder. */
  readonly migrationsDir?: string;
  /** The cross-process writer queue (STORAGE.md §6, docs/decisions/0018); on by default. */
  readonly writerQueue?: WriterQueueSettings;
  /** Receives storage warnings (a writer queue that cannot be used); default silent. */
  readonly logger?: Logger;
  /**
   * Settles when the process is asked to stop while it opens: the open's busy waits and retries end then, and it
   * fails (BACKEND_BUSY) instead of waiting out a writer that holds the database for up to about 36 s.
   */
  readonly stopped?: Promise<unknown>;
  /**
   * Internal maintenance capability of recovery's postflight (OPERATIONS.md §5.7), never set by the server: the
   * exclusive lease this process holds on the database inode. The engine checks that `dbPath` names that inode
   * instead of taking a shared lease, admits the recovery interlock, and leaves the lease to its owner on close.
   */
  readonly maintenanceLease?: DatabaseLease;
}

/**
 * Step 5 of STORAGE.md §10 on a non-empty file: classify it read-only before the read-write connection
 * could convert it to WAL, and read the recovery interlock. A file another process holds locked is read again
 * with the bounded retry of §6 before the start fails with BACKEND_BUSY (§11).
 */
async function inspectExistingFile(
  path: string, shipped: readonly MigrationFile[], retry: BusyRetryPolicy,
): Promise<SchemaFindings> {
  const inspect = async () => withReadOnly(path, (connection) => inspectSchema(connection, shipped));
  try {
    try {
      return await withBusyRetry(retry, inspect);
    } catch (error) {
      // A creation killed midway left a hot journal: rolled back, the file is the empty one it was, and is read again.
      const rollback = sqliteCode((error as { cause?: unknown }).cause) === 'SQLITE_READONLY_ROLLBACK';
      if (!rollback || !rollBackUnfinishedCreation(path, BUSY_TIMEOUT_MS)) throw error;
      return await withBusyRetry(retry, inspect);
    }
  } catch (error) {
    if (error instanceof AdapterError) throw error;
    throw new AdapterError('BACKEND_UNAVAILABLE',
      'the recovery interlock could not be read; the database was not opened', { cause: error });
  }
}

/**
 * The storage engine of one process (STORAGE.md §3, §9, §10): probes the runtime, takes the shared
 * lease, refuses foreign, damaged, interlocked, older and newer databases, creates a new one at the
 * latest schema version, and runs every write as one gated BEGIN IMMEDIATE transaction.
 */
export class SQLiteVecEngine {
  readonly path: string;
  readonly runtime: RuntimeReport;
  /** True when this open created the database. */
  readonly created: boolean;
  /** What the database held when opened (after creation, for a new one). */
  readonly findings: SchemaFindings;
  /** The lease this engine took and releases; undefined when a maintenance capability lent it. */
  readonly #lease: DatabaseLease | undefined;
  /** The lease on the database inode, taken or lent: every write checks that the path still names that inode. */
  readonly #inode: DatabaseLease;
  readonly #connection: WriteConnection;
  #closed = false;
  #closeConfirmed = false;

  private constructor(
    init: {
      path: string; runtime: RuntimeReport; created: boolean; findings: SchemaFindings;
      lease: DatabaseLease | undefined; inode: DatabaseLease; connection: WriteConnection;
    },
  ) {
    this.path = init.path;
    this.runtime = init.runtime;
    this.created = init.created;
    this.findings = init.findings;
    this.#lease = init.lease;
    this.#inode = init.inode;
    this.#connection = init.connection;
  }

  /**
   * Opens (or creates) the database. Errors, in startup order: BACKEND_COMPATIBILITY_MISMATCH (runtime
   * floor, before any file is created; weak pragmas), BACKEND_UNAVAILABLE (path not a regular file,
   * unopenable, path changed), MAINTENANCE_IN_PROGRESS (conflicting lease or recovery interlock),
   * BACKEND_CORRUPT (not a database), SCHEMA_MISMATCH (foreign, older, newer, tampered, wrong contract or
   * dimension). A failed first start leaves no database file.
   */
  static async open(options: SQLiteVecEngineOptions): Promise<SQLiteVecEngine> {
    const runtime = probeRuntime(options.runtime);
    const shipped = loadMigrationFiles(options.migrationsDir ?? MIGRATIONS_DIR);
    const clock = options.clock ?? SYSTEM_CLOCK;
    const path = resolveDatabasePath(options.dbPath);
    const existing = existsSync(path) ? statSync(path) : undefined;
    if (existing && !existing.isFile()) throw new AdapterError('BACKEND_UNAVAILABLE', '--db must name a regular file');
    if (!existing) assertNoStrayJournal(path);
    const maintenance = options.maintenanceLease;
    if (maintenance) assertMaintenanceLease(maintenance, path, existing?.size ?? 0);
    let binding = !existing || existing.size === 0 ? await options.newDatabaseBinding() : undefined;

    if (binding) createPrivateParents(path);
    const lease = maintenance ?? DatabaseLease.acquire(path, 'shared', { create: true });
    const ownsLease = maintenance === undefined;
    let connection: WriteConnection | undefined;
    try {
      // The second name a restore killed between its link and its clean-up left (a dead pid's temporary name beside
      // the file) goes, as that restore would have removed it; any other second name is refused. A file of one name,
      // the usual case, is looked at once.
      if (hardLinkedFiles(path).length > 0) {
        removeStaleTemporaries(path);
        assertOneName(path);
      }
      if (statSync(path).size > 0) {
        const findings = await inspectExistingFile(path, shipped, options.retry ?? DEFAULT_BUSY_RETRY);
        // What step 7 would refuse is refused here, read-only: opening for writing switches a rollback-journal
        // file (a backup served by mistake) to WAL, and a refused start leaves a file as it was (CONTRACT.md §16.2).
        // A foreign file first; a FactLane one after the damage and interlock checks of this step.
        const refusal = schemaRefusal(findings, shipped, bindingDimension(findings.bindingText));
        if (findings.kind === 'FOREIGN') throw new AdapterError('SCHEMA_MISMATCH', refusal!);
        // A backup is named before its schema: an older one would otherwise send the operator to migrate it.
        assertNotABackup(path);
        assertVectorTablesWhole(findings);
        if (ownsLease) assertNoInterlock(findings);
        if (refusal) throw new AdapterError('SCHEMA_MISMATCH', refusal);
        // An SQLite file with no schema objects is created in place (STORAGE.md §10 step 5).
        if (findings.kind === 'EMPTY') binding ??= await options.newDatabaseBinding();
      }
      // A database is created 0600 (STORAGE.md §2), also in a file that was there empty: before SQLite opens it, so
      // its -wal and -shm, which take the file's mode, are private too.
      if (binding) privateMode(path);
      const { retry, writerQueue, logger } = options;
      const opened = WriteConnection.open({ path, retry, writerQueue, logger });
      connection = opened;
      void options.stopped?.then(() => opened.stopWaiting(0));
      let created = false;
      const findings = await connection.write(async (trx, raw) => {
        const current = inspectSchema(raw, shipped);
        if (current.kind !== 'EMPTY') {
          // Someone else (or an earlier run) created it: check instead of creating. Throwing rolls back.
          return current;
        }
        // The binding was computed before the transaction: no provider call runs while it is open.
        const newBinding = binding;
        if (!newBinding) throw new Error('invariant: an empty database reached creation without a binding');
        const now = formatTimestamp(clock());
        await applyMigrations(trx, raw, shipped, {
          vectorDimension: newBinding.vectorDimension, appliedAt: now, appliedBy: PACKAGE_LABEL,
        });
        await trx.insertInto('adapter_meta').values([
          { key: 'contract_version', value: String(STORAGE_CONTRACT_VERSION) },
          { key: 'database_id', value: randomUUID() },
          { key: 'created_at', value: now },
          { key: 'created_by', value: PACKAGE_LABEL },
          { key: 'embedding_profile', value: newBinding.bindingJson },
        ]).execute();
        created = true;
        return inspectSchema(raw, shipped);
      });
      const refusal = schemaRefusal(findings, shipped, bindingDimension(findings.bindingText));
      if (refusal) throw new AdapterError('SCHEMA_MISMATCH', refusal);
      lease.assertSameInode();
      return new SQLiteVecEngine({
        path, runtime, created, findings, lease: ownsLease ? lease : undefined, inode: lease, connection,
      });
    } catch (error) {
      const closed = connection ? await connection.close() : true;
      if (closed && lease.createdFile) removeUnfinishedDatabase(lease);
      if (closed && ownsLease) lease.release();
      throw binding ? creationFailure(error) : error;
    }
  }

  /** Kysely handle for reads (no busy retry); prefer `read`. */
  get db(): Kysely<DB> {
    return this.#connection.db;
  }

  /** The stored embedding binding text (`adapter_meta.embedding_profile`), or null. */
  get storedBinding(): string | null {
    return this.findings.bindingText;
  }

  /** One BEGIN IMMEDIATE write transaction with the writer gate open; see WriteConnection.write. */
  write<T>(work: WriteWork<T>): Promise<T> {
    this.#assertOpen();
    // Inside the transaction, once it holds the write lock: a file replaced while the write waited is caught too.
    return this.#connection.write(async (trx, raw) => {
      this.#assertStillNamed();
      return work(trx, raw);
    });
  }

  /** How write attempts went through the writer queue (locked, bypassed, unqueued); undefined when it is off. */
  get writerQueueTurns(): WriterQueueTurns | undefined {
    return this.#connection.writerQueueTurns;
  }

  /** The server is shutting down: no busy wait or retry goes past `graceMs` from now (WriteConnection.stopWaiting). */
  stopWaiting(graceMs: number): void {
    if (!this.#closed) this.#connection.stopWaiting(graceMs);
  }

  /** A read with bounded busy retries and translated errors. */
  read<T>(work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
    this.#assertOpen();
    return this.#connection.read(work);
  }

  /** A read whose statements all see one snapshot of the database (inSnapshot), with read's retries. */
  readSnapshot<T>(work: (db: Kysely<DB> | Transaction<DB>) => Promise<T>): Promise<T> {
    return this.read((db) => inSnapshot(db, work));
  }

  /**
   * Closes the connection, then releases the lease. If SQLite cannot confirm the close, the lease is
   * kept until the process exits (fail closed, STORAGE.md §9).
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closeConfirmed = await this.#connection.close();
    if (this.#closeConfirmed) this.#lease?.release();
  }

  /** True once close() has run and SQLite confirmed the connection closed. */
  get closeConfirmed(): boolean {
    return this.#closeConfirmed;
  }

  #assertOpen(): void {
    if (this.#closed) throw new AdapterError('BACKEND_UNAVAILABLE', 'storage is closed');
  }

  /**
   * BACKEND_UNAVAILABLE (retryable) when the database path no longer names the inode this engine opened: the file
   * was deleted, or moved and perhaps replaced, while the server ran. A write would commit into a file that no other
   * process can reach any more, and be lost when this one exits (STORAGE.md §9, CONTRACT.md §10 "lease path
   * changed"). A stat of the path, a few microseconds a write.
   */
  #assertStillNamed(): void {
    try {
      this.#inode.assertSameInode();
    } catch (error) {
      // Retryable, as CONTRACT.md §10 has it for a changed lease path: a retry succeeds once the file is back.
      throw new AdapterError('BACKEND_UNAVAILABLE', 'the database file was deleted or replaced while this process had '
        + 'it open, so nothing was written (a write there would be lost); put the file back under its name, or start '
        + 'again on the file now there', { cause: error });
    }
  }
}

/** The maintenance capability must be a held exclusive lease on the existing, non-empty file at `path`. */
function assertMaintenanceLease(lease: DatabaseLease, path: string, size: number): void {
  if (lease.mode !== 'exclusive' || !lease.held || lease.path !== path || size === 0) {
    throw new AdapterError('BACKEND_UNAVAILABLE', 'the maintenance capability does not hold this database');
  }
  lease.assertSameInode();
}
