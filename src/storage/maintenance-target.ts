import { existsSync, realpathSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { AdapterError } from '../core/adapter-error.js';
import { MIGRATIONS_DIR } from '../core/package-info.js';
import { formatTimestamp, type Clock } from '../core/time.js';
import { DatabaseLease, type LeaseMode } from './database-lease.js';
import { assertNotABackup } from './durable-files.js';
import {
  applyMigrations, refusedMigration, type AppliedStep, type MigrationProgress,
} from './migration-apply.js';
import { loadMigrationFiles, type MigrationFile } from './migration-files.js';
import type { SqliteConnection } from './native.js';
import { dropNextVectorTable } from './reembed-repository.js';
import { assertOneName } from './quiescence-inventory.js';
import { probeRuntime, type RuntimeProbeOptions } from './runtime-probe.js';
import { assertVectorTablesWhole, EMPTY_FINDINGS, inspectSchema, type SchemaFindings } from './schema-inspection.js';
import { verifySchema, type CheckResult } from './schema-verification.js';
import { WriteConnection, withReadOnly } from './write-connection.js';
import type { BusyRetryPolicy } from './busy-retry.js';
import type { RecordCounter } from './token-count-repository.js';
import { sha256Hex } from '../core/hashing.js';

/** Options of MaintenanceTarget.open. */
export interface MaintenanceTargetOptions {
  readonly dbPath: string;
  readonly lease: LeaseMode;
  readonly runtime?: RuntimeProbeOptions;
  readonly migrationsDir?: string;
  readonly retry?: BusyRetryPolicy;
}

/** SHA-256 of the resolved absolute path: how reports name a database without showing its path. */
export function dbIdentity(path: string): string {
  return sha256Hex(path);
}

/**
 * An existing database opened by an operator command (STORAGE.md §10, maintenance order): runtime
 * probe, path resolved, lease taken, contents classified read-only. Creates nothing.
 */
export class MaintenanceTarget {
  readonly path: string;
  readonly dbIdentity: string;
  readonly shipped: readonly MigrationFile[];
  #findings: SchemaFindings;
  readonly #lease: DatabaseLease;
  readonly #retry: BusyRetryPolicy | undefined;

  private constructor(
    path: string, shipped: readonly MigrationFile[], findings: SchemaFindings, lease: DatabaseLease,
    retry?: BusyRetryPolicy,
  ) {
    this.path = path;
    this.dbIdentity = dbIdentity(path);
    this.shipped = shipped;
    this.#findings = findings;
    this.#lease = lease;
    this.#retry = retry;
  }

  /**
   * Errors: BACKEND_COMPATIBILITY_MISMATCH (runtime floor), SOURCE_NOT_FOUND (no file), BACKEND_UNAVAILABLE
   * (not a regular file, unreadable), MAINTENANCE_IN_PROGRESS (conflicting lease), BACKEND_CORRUPT (not a database).
   */
  static open(options: MaintenanceTargetOptions): MaintenanceTarget {
    probeRuntime(options.runtime);
    const shipped = loadMigrationFiles(options.migrationsDir ?? MIGRATIONS_DIR);
    const absolute = resolve(options.dbPath);
    if (!existsSync(absolute))
      throw new AdapterError('SOURCE_NOT_FOUND', 'the database file does not exist; check --db');
    const path = realpathSync(absolute);
    if (!statSync(path).isFile()) throw new AdapterError('BACKEND_UNAVAILABLE', '--db must name a regular file');
    const lease = DatabaseLease.acquire(path, options.lease, { create: false });
    try {
      assertOneName(path);
      // The exclusive lease is for commands that write (migrate up, reembed): refused before their first step, which
      // may publish a backup of the file.
      if (options.lease === 'exclusive') assertNotABackup(path);
      const findings = MaintenanceTarget.#inspect(path, shipped);
      return new MaintenanceTarget(path, shipped, findings, lease, options.retry);
    } catch (error) {
      lease.release();
      throw error;
    }
  }

  /** The shipped migrations (for commands that read a file without a lease, such as a backup). */
  static shippedMigrations(migrationsDir = MIGRATIONS_DIR): readonly MigrationFile[] {
    probeRuntime();
    return loadMigrationFiles(migrationsDir);
  }

  static #inspect(path: string, shipped: readonly MigrationFile[]): SchemaFindings {
    if (statSync(path).size === 0) return EMPTY_FINDINGS;
    return withReadOnly(path, (connection) => inspectSchema(connection, shipped));
  }

  /** What the database held at open, or after the last applyPending. */
  get findings(): SchemaFindings {
    return this.#findings;
  }

  /** The mode of the lease this target holds: `shared` or `exclusive`. */
  get leaseMode(): LeaseMode {
    return this.#lease.mode;
  }

  /** Shipped migrations newer than the database's schema version. */
  get pending(): readonly MigrationFile[] {
    return this.shipped.filter((file) => file.version > this.#findings.schemaVersion);
  }

  /** The verify checks (STORAGE.md §12.3) on a read-only connection with sqlite-vec loaded. */
  verify(): CheckResult[] {
    return withReadOnly(this.path, (connection) =>
      verifySchema(connection, inspectSchema(connection, this.shipped), this.shipped), { loadVec: true });
  }

  /**
   * Applies every pending migration in one BEGIN IMMEDIATE transaction with the writer gate open, runs
   * the verify checks inside it and commits only when they all pass; otherwise rolls back and throws
   * VERIFY_FAILED. Needs the exclusive lease. A failure leaves the database exactly as it was.
   * The work table of a reembed that did not finish is dropped first, in the same transaction: it was built for the
   * schema being left, a rerun of reembed drops it anyway (OPERATIONS.md §7), and kept it would fail the verification
   * while reembed refuses the old schema, so neither command could go on. `reembedWorkDiscarded` says so.
   */
  async applyPending(options: { clock: Clock; appliedBy: string; countRecord?: RecordCounter } & MigrationProgress,
  ): Promise<{ steps: AppliedStep[]; reembedWorkDiscarded: boolean }> {
    if (this.#lease.mode !== 'exclusive')
      throw new AdapterError('MAINTENANCE_IN_PROGRESS', 'applying migrations needs the exclusive lease');
    const connection = WriteConnection.open({ path: this.path, retry: this.#retry });
    try {
      const steps = await connection.write(async (trx, raw) => {
        const before = inspectSchema(raw, this.shipped);
        assertVectorTablesWhole(before);
        const pending = this.shipped.filter((file) => file.version > before.schemaVersion);
        const dimension = before.vectorDimension;
        if (dimension === null)
          throw new AdapterError('SCHEMA_MISMATCH', 'the database has no vector table; it is not a FactLane database');
        const reembedWorkDiscarded = dropNextVectorTable(raw);
        const applied = await applyMigrations(trx, raw, pending, {
          vectorDimension: dimension, appliedAt: formatTimestamp(options.clock()), appliedBy: options.appliedBy,
          onStarting: options.onStarting, onStep: options.onStep, onRebuilt: options.onRebuilt,
          countRecord: options.countRecord, explainRefusal: refusedMigration,
        });
        const failed = verifySchema(raw, inspectSchema(raw, this.shipped), this.shipped)
          .filter((c) => c.status === 'FAIL');
        if (failed.length > 0) {
          throw new AdapterError('VERIFY_FAILED',
            `verification before commit failed (${failed.map((c) => c.name).join(', ')}); nothing was changed`);
        }
        return { steps: applied, reembedWorkDiscarded };
      });
      this.#findings = withReadOnly(this.path, (ro) => inspectSchema(ro, this.shipped));
      return steps;
    } finally {
      await connection.close();
    }
  }

  /** Runs `work` on a short-lived read-only connection with sqlite-vec loaded (backup, audit). */
  withReadOnly<T>(work: (connection: SqliteConnection) => T): T {
    return withReadOnly(this.path, work, { loadVec: true });
  }

  /** Releases the lease; every connection this target opened is already closed. */
  close(): void {
    this.#lease.release();
  }
}
