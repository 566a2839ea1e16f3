import { readFileSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { AdapterError } from '../core/adapter-error.js';
import { MIGRATIONS_DIR } from '../core/package-info.js';
import { DatabaseLease } from '../storage/database-lease.js';
import { dbIdentity } from '../storage/maintenance-target.js';
import { loadMigrationFiles, type MigrationFile } from '../storage/migration-files.js';
import { hardLinkedFiles, otherOpeners, type InventoryOptions } from '../storage/quiescence-inventory.js';
import { bothIntegrityChecksOk, journalMode } from '../storage/recovery-pragmas.js';
import { MalformedInterlock, readInterlock, type RecoveryInterlock } from '../storage/recovery-interlock.js';
import { RuntimeRefusal, probeRuntime, type RuntimeProbeOptions } from '../storage/runtime-probe.js';
import { inspectSchema, type SchemaFindings } from '../storage/schema-inspection.js';
import { hasNextVectorTable } from '../storage/reembed-repository.js';
import { NEXT_VECTOR_TABLE } from '../storage/schema-verification.js';
import { verifySchema } from '../storage/schema-verification.js';
import { WriteConnection, withReadOnly } from '../storage/write-connection.js';
import { checkCapabilities, type CapabilityOverrides } from './recovery-capabilities.js';
import { RecoveryHold, type RecoveryHoldCode } from './recovery-hold.js';
import { checkOutputPaths, resolvedPath, type RecoveryPaths } from './recovery-output-paths.js';
import { parseRecoveryPlan, planSha256, type RecoveryPlan } from './recovery-plan.js';
import { readRecoveryState, type RecoveryState } from './recovery-state.js';

// OPERATIONS.md §5.3: the 18 preflight checks, in order; the first failure is a hold and nothing was mutated.

/** The command line of one recovery run. */
export interface RecoveryRequest extends RecoveryPaths {
  readonly confirm: string;
}

/** Seams for tests: the platform, the runtime probe, the /proc inventory, the migrations folder, checks 14-18. */
export interface PreflightEnvironment extends CapabilityOverrides {
  readonly platform?: NodeJS.Platform;
  readonly runtime?: RuntimeProbeOptions;
  readonly inventory?: InventoryOptions;
  readonly migrationsDir?: string;
  /** The effective user id; default process.geteuid(). */
  readonly euid?: number;
}

/** What a passed preflight holds: the exclusive lease, the open write connection and what was read. */
export interface PreparedRecovery {
  readonly plan: RecoveryPlan;
  readonly planSha256: string;
  readonly path: string;
  readonly dbIdentity: string;
  readonly statePath: string;
  readonly state: RecoveryState | null;
  readonly interlock: RecoveryInterlock | null;
  readonly shipped: readonly MigrationFile[];
  readonly findings: SchemaFindings;
  /** The exclusive lease on the database inode, taken at check 7. */
  readonly lease: DatabaseLease;
  /** The read-write connection, secure_delete on, writer queue off. */
  readonly connection: WriteConnection;
}

const hold = (code: RecoveryHoldCode, message: string) => new RecoveryHold(code, message);

/** The longest file name Linux filesystems take. */
const MAX_FILE_NAME_BYTES = 255;
/** What `<db>.recovery-<op>.sanitized-journal` adds to the two names (the longest image sidecar). */
const IMAGE_NAME_EXTRA = '.recovery-'.length + '.sanitized-journal'.length;

/** Checks 1-4: platform, plan and authorization by the plan file, the runtime. Nothing is opened yet. */
function checkCommand(request: RecoveryRequest, env: PreflightEnvironment): { plan: RecoveryPlan; euid: number } {
  if ((env.platform ?? process.platform) !== 'linux') {
    throw hold('HOLD_UNSUPPORTED_PLATFORM_NO_MUTATION', 'recovery runs on Linux only');
  }
  let text: string;
  let planMode: number;
  try {
    text = readFileSync(request.planPath, 'utf8');
    planMode = statSync(request.planPath).mode;
  } catch {
    throw hold('HOLD_PLAN_INVALID_NO_MUTATION', 'the plan file cannot be read');
  }
  const plan = parseRecoveryPlan(text);
  const planned = resolvedPath(plan.db_path, 'the plan\'s db_path');
  const db = resolvedPath(request.dbPath, '--db');
  if (planned !== db) {
    throw hold('HOLD_PLAN_INVALID_NO_MUTATION', 'the plan names another database than --db');
  }
  // The image of §5.6 and its sidecars are named after the operation: a name the filesystem refuses would only fail
  // after the commit, and every rerun would fail the same way.
  const imageNameBytes = Buffer.byteLength(basename(db)) + IMAGE_NAME_EXTRA
    + plan.operation_id.length;
  if (imageNameBytes > MAX_FILE_NAME_BYTES) {
    throw hold('HOLD_PLAN_INVALID_NO_MUTATION', 'operation_id is too long for an image name beside this database'
      + ` (${imageNameBytes} > ${MAX_FILE_NAME_BYTES} bytes); choose a shorter one`);
  }
  checkOutputPaths(request, plan);
  if (request.confirm !== plan.operation_id) {
    throw hold('HOLD_AUTHORIZATION_MISSING_NO_MUTATION', '--confirm must repeat the plan\'s operation_id');
  }
  if ((planMode & 0o022) !== 0) {
    throw hold('HOLD_AUTHORIZATION_MISSING_NO_MUTATION', 'the plan file is writable by group or others; chmod go-w it');
  }
  try {
    probeRuntime(env.runtime);
  } catch (error) {
    if (error instanceof RuntimeRefusal && error.component === 'sqlite-vec') {
      throw hold('HOLD_SQLITE_VEC_UNAVAILABLE_NO_MUTATION', error.message);
    }
    if (error instanceof RuntimeRefusal && error.component === 'flock') {
      throw hold('HOLD_UNSUPPORTED_PLATFORM_NO_MUTATION', error.message);
    }
    if (error instanceof AdapterError) throw hold('HOLD_SQLITE_RUNTIME_UNSUPPORTED_NO_MUTATION', error.message);
    throw error;
  }
  return { plan, euid: env.euid ?? process.geteuid?.() ?? 0 };
}

/** Checks 5-8: the file, its links, the exclusive lease, and no other process holding it. Returns the lease. */
function checkQuiescence(
  request: RecoveryRequest, env: PreflightEnvironment, euid: number,
): { path: string; lease: DatabaseLease } {
  const path = resolvedPath(request.dbPath, '--db');
  let stats;
  try {
    stats = statSync(path);
  } catch {
    throw hold('HOLD_DB_NOT_FOUND_NO_MUTATION', 'no database file at the plan\'s path');
  }
  if (!stats.isFile()) throw hold('HOLD_DB_NOT_FOUND_NO_MUTATION', 'the plan\'s path is not a regular file');
  if (euid !== 0 && stats.uid !== euid) {
    throw hold('HOLD_AUTHORIZATION_MISSING_NO_MUTATION', 'run recover as the database file\'s owner or as root');
  }
  const aliased = hardLinkedFiles(path);
  if (aliased.length > 0) {
    throw hold('HOLD_HARD_LINK_ALIAS_NO_MUTATION',
      `${aliased.join(', ')} has another hard link; remove the alias first`);
  }
  let lease: DatabaseLease;
  try {
    lease = DatabaseLease.acquire(path, 'exclusive', { create: false });
  } catch (error) {
    if (error instanceof AdapterError) {
      throw hold('HOLD_NONQUIESCENT_NO_MUTATION', `the exclusive lease cannot be taken: ${error.message}`);
    }
    throw error;
  }
  let openers: number;
  try {
    openers = otherOpeners(path, { ownerUid: stats.uid, ...env.inventory });
  } catch (error) {
    lease.release();
    throw error;
  }
  if (openers > 0) {
    lease.release();
    // Not root, it cannot look inside other users' processes and counts those of root and of the owner as holders.
    const blind = euid === 0 ? '' : ', or could not be looked into (run recover as root, which can)';
    throw hold('HOLD_NONQUIESCENT_NO_MUTATION',
      `${openers} other process(es) have the database, -wal, -shm or -writer open${blind}; stop every host first`);
  }
  return { path, lease };
}

/** Check 9 (§5.8): a state file and an interlock, where present, belong to this very plan and database. */
function checkState(prepared: {
  plan: RecoveryPlan; sha: string; identity: string; state: RecoveryState | null; interlock: RecoveryInterlock | null;
}): void {
  const { plan, sha, state, interlock } = prepared;
  if (interlock && (interlock.operation_id !== plan.operation_id || interlock.plan_sha256 !== sha)) {
    throw hold('HOLD_RECOVERY_STATE_MISMATCH',
      'the database holds the interlock of another recovery plan; rerun that plan to finish it');
  }
  if (state && (state.operation_id !== plan.operation_id || state.plan_sha256 !== sha
    || state.db_identity !== prepared.identity || state.database_id !== plan.database_id)) {
    throw hold('HOLD_RECOVERY_STATE_MISMATCH',
      'the state file belongs to another plan or database; pass the state file of this plan');
  }
}

/** Checks 10-13 on read-only connections: schema, identity, journal mode, integrity. */
function checkDatabase(path: string, plan: RecoveryPlan, shipped: readonly MigrationFile[]): SchemaFindings {
  return withReadOnly(path, (connection) => {
    let findings: SchemaFindings;
    try {
      findings = inspectSchema(connection, shipped);
    } catch {
      throw hold('HOLD_SCHEMA_MISMATCH_NO_MUTATION', 'the file is not an SQLite database of FactLane');
    }
    const schemaChecks = [
      'versions_contiguous', 'release_knows_version', 'checksums_match', 'contract_version', 'meta_keys_present',
      'schema_objects', 'fences_present', 'fts5_options',
    ];
    const failed = findings.kind !== 'FACTLANE' ? ['not a FactLane database']
      : verifySchema(connection, findings, shipped)
        .filter((c) => schemaChecks.includes(c.name) && c.status === 'FAIL')
        .map((c) => c.name);
    if (failed.length === 0 && findings.schemaVersion !== shipped.at(-1)?.version) {
      failed.push('schema not current (run factlane-migrate up)');
    }
    // The work table of a reembed that did not finish holds vectors too, which the purge does not reach; verify
    // accepts it (STORAGE.md §4.6), so it is looked for on its own. Reembed run to completion drops it.
    if (hasNextVectorTable(connection)) {
      failed.push(`${NEXT_VECTOR_TABLE} is the work table of a reembed that did not finish: `
        + 'run factlane-admin reembed to completion first');
    }
    if (failed.length > 0) {
      throw hold('HOLD_SCHEMA_MISMATCH_NO_MUTATION', `the schema is not this release's: ${failed.join(', ')}`);
    }
    if (findings.meta.database_id !== plan.database_id) {
      throw hold('HOLD_DB_IDENTITY_MISMATCH_NO_MUTATION', 'the database_id differs from the plan\'s');
    }
    if (journalMode(connection) !== 'wal') {
      throw hold('HOLD_UNSUPPORTED_DB_MODE_NO_MUTATION', 'the database is not in WAL journal mode');
    }
    if (!bothIntegrityChecksOk(connection)) {
      throw hold('HOLD_DB_INTEGRITY_NO_MUTATION',
        'quick_check or integrity_check reports problems; restore a backup instead');
    }
    return findings;
  }, { loadVec: true });
}

/**
 * Runs the 18 preflight checks of OPERATIONS.md §5.3 in order and returns what the rest of recovery needs. The first
 * failing check throws its RecoveryHold; every lease and connection taken so far is released first, and nothing in
 * the database or beside it was changed (check 17's checkpoint only moves committed frames into the file).
 */
export async function runPreflight(
  request: RecoveryRequest, env: PreflightEnvironment = {},
): Promise<PreparedRecovery> {
  const { plan, euid } = checkCommand(request, env);
  const sha = planSha256(plan);
  const statePath = request.statePath ?? `${request.receiptPath}.state.json`;
  const { path, lease } = checkQuiescence(request, env, euid);
  let connection: WriteConnection | undefined;
  try {
    const shipped = loadMigrationFiles(env.migrationsDir ?? MIGRATIONS_DIR);
    const state = readRecoveryState(statePath);
    let interlock: RecoveryInterlock | null = null;
    try {
      interlock = withReadOnly(path, readInterlock);
    } catch (error) {
      if (error instanceof MalformedInterlock) {
        throw hold('HOLD_RECOVERY_STATE_MISMATCH', 'the interlock row is not well-formed; it belongs to no plan');
      }
      // Busy and lease errors hold below; a file that is no SQLite database holds no interlock: check 10 says so.
      if (error instanceof AdapterError && error.code !== 'BACKEND_CORRUPT') throw error;
    }
    const identity = dbIdentity(path);
    checkState({ plan, sha, identity, state, interlock });
    const findings = checkDatabase(path, plan, shipped);
    connection = WriteConnection.open({ path, writerQueue: { enabled: false } });
    checkCapabilities(connection, plan, findings, env);
    return {
      plan, planSha256: sha, path, dbIdentity: identity, statePath, state, interlock, shipped, findings,
      lease, connection,
    };
  } catch (error) {
    const closed = connection ? await connection.close() : true;
    if (closed) lease.release();
    if (error instanceof AdapterError && (error.code === 'BACKEND_BUSY' || error.code === 'MAINTENANCE_IN_PROGRESS')) {
      throw hold('HOLD_NONQUIESCENT_NO_MUTATION', `another connection holds the database (${error.code})`);
    }
    if (error instanceof AdapterError) {
      throw hold('HOLD_DB_INTEGRITY_NO_MUTATION', `the database cannot be opened (${error.code}: ${error.message})`);
    }
    throw error;
  }
}
