import t, { type Test } from 'tap';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import {
  chmodSync, chownSync, closeSync, existsSync, linkSync, mkdirSync, openSync, readFileSync, readdirSync, readSync,
  renameSync, realpathSync, symlinkSync, writeFileSync, writeSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { recoverDatabase, type RecoverOptions, type RecoveryOutcome } from '../../src/maintenance/recover-operation.js';
import { RECOVERY_HOLD_CODES, type RecoveryHoldCode } from '../../src/maintenance/recovery-hold.js';
import { planSha256, tombstoneColumns, type RecoveryPlan } from '../../src/maintenance/recovery-plan.js';
import { sanitizedImagePath } from '../../src/maintenance/recovery-sealing.js';
import { writeRecoveryState } from '../../src/maintenance/recovery-state.js';
import { dbIdentity } from '../../src/storage/maintenance-target.js';
import { recreateNextTable } from '../../src/storage/reembed-repository.js';
import { INTERLOCK_KEY } from '../../src/storage/recovery-interlock.js';
import { vectorTableDefinitions } from '../../src/storage/schema-verification.js';
import { openLocalHashEngine } from '../helpers/mcp.js';
import {
  adapterFor, digestsByRecord, fileBytes, MARKER, planFor, recover, secretScenario, type SecretScenario,
} from '../helpers/recovery.js';
import {
  ADMIN_BIN, migrationsDir, nextMigration, RawDatabase, REPO_ROOT, runBin, SHIPPED_MIGRATIONS, SHIPPED_VERSION,
  spawnTsHelper, sqliteVec, waitForLine, withRaw,
} from '../helpers/storage.js';
import { hex64, NOW, storeRequest, type Json } from '../helpers/writes.js';

// factlane-admin recover holds (OPERATIONS.md §5.3 preflight, §5.4 inspection): every hold a precondition can
// trigger ends in exit 3 with the database unchanged and no state file, receipt or image beside it.
// Checks 14, 15 and 18 probe what this build and its SQLite can do, which the linked libraries always can: those
// tests replace the probe (PreflightEnvironment.capabilities, .exposedTools) to show each failure holds as its code.

type Scenario = SecretScenario & { readonly dir: string };

const LOCAL_HASH_DIMENSION = 384;

async function scenario(t: Test, secretFact?: string): Promise<Scenario> {
  const dir = t.testdir();
  return { dir, ...(await secretScenario(dir, { secretFact })) };
}

const statePathIn = (dir: string) => join(dir, 'receipt.json.state.json');

/**
 * What "unchanged" compares: every byte of the files; the records with their derived rows, adapter_meta and the
 * schema (where check 17's checkpoint may legitimately move WAL frames of a peer into the file); or both.
 */
type Compare = 'bytes' | 'records' | 'both';

function snapshot(dbPath: string, compare: Compare): unknown {
  if (compare === 'bytes') return fileBytes(dbPath);
  if (compare === 'both') return { bytes: fileBytes(dbPath), rows: snapshot(dbPath, 'records') };
  const meta = withRaw(dbPath, (db) => db.prepare('SELECT key, value FROM adapter_meta ORDER BY key').all());
  const schema = withRaw(dbPath, (db) => db.prepare('SELECT type, name, sql FROM sqlite_master ORDER BY name').all());
  return { records: [...digestsByRecord(dbPath)].sort(), meta, schema };
}

/** The names in `dir`, without SQLite's sidecars (a peer connection of the test may hold them). */
function listing(dir: string): string[] {
  return readdirSync(dir).filter((name) => !/-(wal|shm|journal)$/.test(name)).sort();
}

interface HeldOptions {
  readonly compare?: Compare;
  /** Where the state file is (default beside the receipt); a state file there before the run must stay as it was. */
  readonly statePath?: string;
}

/** The holds the tests below reached; the last test compares them with RECOVERY_HOLD_CODES. */
const reached = new Set<string>();

/**
 * Runs `run` and asserts the hold: `code`, exit 3, HELD_NO_MUTATION, the database unchanged, no file created or
 * removed beside it (no state file, receipt or sanitized image), and a pre-existing state file left as it was.
 */
async function assertHeld(t: Test, s: { dir: string; dbPath: string }, code: RecoveryHoldCode,
  run: () => Promise<RecoveryOutcome>, options: HeldOptions = {}): Promise<RecoveryOutcome> {
  t.ok(RECOVERY_HOLD_CODES.includes(code), `${code} is a recovery hold`);
  const compare = options.compare ?? 'bytes';
  const statePath = options.statePath ?? statePathIn(s.dir);
  const stateBefore = existsSync(statePath) ? readFileSync(statePath, 'utf8') : null;
  const before = snapshot(s.dbPath, compare);
  const names = listing(s.dir);
  const outcome = await run();
  t.equal(outcome.hold, code, `held with ${code}: ${outcome.message}`);
  if (outcome.hold === code) reached.add(code);
  t.equal(outcome.exit, 3, 'exit 3');
  t.equal(outcome.result, 'HELD_NO_MUTATION');
  t.equal(outcome.receipt, null, 'no receipt');
  const unchanged = {
    bytes: 'every byte of the database and its sidecars is unchanged',
    records: 'every record, derived row, meta row and schema object is unchanged',
    both: 'every row and every byte is unchanged',
  };
  t.strictSame(snapshot(s.dbPath, compare), before, unchanged[compare]);
  if (stateBefore === null) t.notOk(existsSync(statePath), 'no state file was written');
  else t.equal(readFileSync(statePath, 'utf8'), stateBefore, 'the existing state file is unchanged');
  t.notOk(existsSync(join(s.dir, 'receipt.json')), 'no receipt file');
  t.strictSame(listing(s.dir), names, 'nothing was created or removed beside the database');
  const leaks = outcome.message.includes('FLSECRET') || outcome.message.includes(s.dir);
  t.notOk(leaks, 'the message names no content and no path');
  return outcome;
}

/** A raw read-write connection with sqlite-vec loaded and the writer function registered (an "older build"). */
function gatedRaw<T>(dbPath: string, write: (db: InstanceType<typeof RawDatabase>) => T): T {
  const db = new RawDatabase(dbPath);
  try {
    sqliteVec.load(db);
    db.function('factlane_contract_v2_writer', { deterministic: false }, () => 1);
    return write(db);
  } finally {
    db.close();
  }
}

function rowIdOf(dbPath: string, recordId: string): number {
  const query = 'SELECT row_id FROM adapter_records WHERE record_id = ?';
  return withRaw(dbPath, (db) => db.prepare(query).pluck().get(recordId) as number);
}

function vectorBlob(seed: number): Buffer {
  const vector = new Float32Array(LOCAL_HASH_DIMENSION).fill(0.001);
  vector[seed % LOCAL_HASH_DIMENSION] = 1;
  const norm = Math.hypot(...vector);
  return Buffer.from(vector.map((x) => x / norm).buffer);
}

/** A child process the test started; killed (by its handle) at teardown. */
function track(t: Test, child: ChildProcess): ChildProcess {
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });
  return child;
}

/** `node -e script dbPath` from the repository root (so better-sqlite3 resolves), printing "ready" once set up. */
function nodeChild(t: Test, script: string, dbPath: string): ChildProcess {
  const options = { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'] as ['pipe', 'pipe', 'pipe'] };
  return track(t, spawn(process.execPath, ['-e', script, dbPath], options));
}

/** An empty /proc: the inventory of check 8 then sees no process, as for one in another PID namespace. */
function blindInventory(dir: string) {
  const procRoot = join(dir, 'empty-proc');
  mkdirSync(procRoot);
  return { procRoot };
}

const edited = (edit: (plan: Json) => void) => (plan: Json) => {
  edit(plan);
  return plan;
};

// ---------------------------------------------------------------------------------------------------- §5.3

t.test('check 1: any platform but Linux holds with HOLD_UNSUPPORTED_PLATFORM_NO_MUTATION', async (t) => {
  const s = await scenario(t);
  const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
  const env = { platform: 'darwin' as const };
  await assertHeld(t, s, 'HOLD_UNSUPPORTED_PLATFORM_NO_MUTATION', () => recover(s.dir, s.dbPath, planPath, { env }));
});

t.test('check 2: an invalid plan holds with HOLD_PLAN_INVALID_NO_MUTATION', async (t) => {
  t.test('an unknown plan key', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId], 'plan.json', edited((plan) => {
      plan.notes = 'extra';
    }));
    const outcome = await assertHeld(t, s, 'HOLD_PLAN_INVALID_NO_MUTATION', () => recover(s.dir, s.dbPath, planPath));
    t.match(outcome.message, /unknown key/);
  });
  t.test('an unknown target key', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId], 'plan.json', edited((plan) => {
      plan.targets[0].fact = 'x';
    }));
    await assertHeld(t, s, 'HOLD_PLAN_INVALID_NO_MUTATION', () => recover(s.dir, s.dbPath, planPath));
  });
  t.test('a plan naming another database than --db', async (t) => {
    const s = await scenario(t);
    const other = join(s.dir, 'other.sqlite3');
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId], 'plan.json', edited((plan) => {
      plan.db_path = other;
    }));
    await assertHeld(t, s, 'HOLD_PLAN_INVALID_NO_MUTATION', () => recover(s.dir, s.dbPath, planPath));
    t.notOk(existsSync(other), 'the other database was not created');
  });
  t.test('a plan file that is not there', async (t) => {
    const s = await scenario(t);
    const request = {
      dbPath: s.dbPath, planPath: join(s.dir, 'missing-plan.json'), confirm: 'recovery-x',
      receiptPath: join(s.dir, 'receipt.json'),
    };
    await assertHeld(t, s, 'HOLD_PLAN_INVALID_NO_MUTATION', () => recoverDatabase(request));
  });
});

t.test('check 2: a receipt or state path that would overwrite something holds with HOLD_PLAN_INVALID_NO_MUTATION',
  async (t) => {
    // The receipt is written over its path once the purge is verified: over the database it destroyed the store.
    const cases: [string, (s: Scenario, planPath: string) => Partial<RecoverOptions>, RegExp][] = [
      ['the database as --receipt', (s) => ({ receiptPath: s.dbPath, statePath: join(s.dir, 'state.json') }),
        /--receipt names the database;/],
      ['the database through another spelling',
        (s) => ({ receiptPath: join(s.dir, '.', 'sub', '..', basename(s.dbPath)) }), /--receipt names the database;/],
      ['the database\'s -wal as --state', (s) => ({ statePath: `${s.dbPath}-wal` }),
        /--state names the database's -wal/],
      ['the database\'s -wal, --db a symbolic link to it', (s) => {
        symlinkSync(s.dbPath, join(s.dir, 'link.sqlite3'));
        return { dbPath: join(s.dir, 'link.sqlite3'), receiptPath: `${s.dbPath}-wal` };
      }, /--receipt names the database's -wal/],
      ['the plan as --receipt', (s, planPath) => ({ receiptPath: planPath, statePath: join(s.dir, 'state.json') }),
        /--receipt names the plan/],
      // A dangling link is written through: the state file would be created where the image is about to be.
      ['a dangling symbolic link to the sanitized image as --state', (s, planPath) => {
        const plan = JSON.parse(readFileSync(planPath, 'utf8')) as RecoveryPlan;
        const image = sanitizedImagePath(realpathSync(s.dbPath), plan.operation_id);
        symlinkSync(image, join(s.dir, 'state-link.json'));
        return { statePath: join(s.dir, 'state-link.json') };
      }, /--state names the sanitized image/],
      // Found only when the receipt is written, after the purge.
      ['a loop of symbolic links as --receipt', (s) => {
        symlinkSync('loop.json', join(s.dir, 'loop.json'));
        return { receiptPath: join(s.dir, 'loop.json'), statePath: join(s.dir, 'state.json') };
      }, /--receipt is a loop of symbolic links/],
      ['one file as both', (s) => ({ statePath: join(s.dir, 'receipt.json') }), /--receipt and --state name one file/],
      ['a directory that is not there', (s) => ({ receiptPath: join(s.dir, 'missing', 'receipt.json'),
        statePath: join(s.dir, 'state.json') }), /directory of --receipt does not exist/],
      ['an existing file that is no receipt', (s) => {
        writeFileSync(join(s.dir, 'notes.json'), '{"mine":true}\n');
        return { receiptPath: join(s.dir, 'notes.json'), statePath: join(s.dir, 'state.json') };
      }, /existing file that is not this operation's receipt/],
      // Read to see whether it is this operation's receipt, a FIFO blocked the run for good, SIGTERM included.
      ['a FIFO as --receipt', (s) => {
        execFileSync('mkfifo', [join(s.dir, 'fifo.json')]);
        return { receiptPath: join(s.dir, 'fifo.json'), statePath: join(s.dir, 'state.json') };
      }, /existing file that is not this operation's receipt/],
    ];
    for (const [name, options, message] of cases) {
      await t.test(name, async (t) => {
        const s = await scenario(t);
        mkdirSync(join(s.dir, 'sub'));
        const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
        const planBytes = readFileSync(planPath);
        const chosen = options(s, planPath);
        const outcome = await assertHeld(t, s, 'HOLD_PLAN_INVALID_NO_MUTATION',
          () => recover(s.dir, s.dbPath, planPath, chosen), { statePath: chosen.statePath });
        t.match(outcome.message, message);
        t.ok(readFileSync(planPath).equals(planBytes), 'the plan is unchanged');
      });
    }
  });

t.test('checks 2 and 5: missing authorization holds with HOLD_AUTHORIZATION_MISSING_NO_MUTATION', async (t) => {
  t.test('--confirm differs from operation_id', async (t) => {
    const s = await scenario(t);
    const { plan, planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    const outcome = await assertHeld(t, s, 'HOLD_AUTHORIZATION_MISSING_NO_MUTATION',
      () => recover(s.dir, s.dbPath, planPath, { confirm: `${plan.operation_id}-typo` }));
    t.match(outcome.message, /--confirm/);
  });
  t.test('the plan file is writable by its group', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    chmodSync(planPath, 0o620);
    const outcome = await assertHeld(t, s, 'HOLD_AUTHORIZATION_MISSING_NO_MUTATION',
      () => recover(s.dir, s.dbPath, planPath));
    t.match(outcome.message, /writable by group or others/);
  });
  t.test('the plan file is writable by others', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    chmodSync(planPath, 0o602);
    await assertHeld(t, s, 'HOLD_AUTHORIZATION_MISSING_NO_MUTATION', () => recover(s.dir, s.dbPath, planPath));
  });
  t.test('the effective user neither owns the database nor is root', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    const outcome = await assertHeld(t, s, 'HOLD_AUTHORIZATION_MISSING_NO_MUTATION',
      () => recover(s.dir, s.dbPath, planPath, { env: { euid: 12345 } }));
    t.match(outcome.message, /owner or as root/);
  });
});

t.test('check 3: an SQLite below the floor holds with HOLD_SQLITE_RUNTIME_UNSUPPORTED_NO_MUTATION', async (t) => {
  const s = await scenario(t);
  const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
  const env = { runtime: { sqliteVersion: () => '3.40.0' } };
  const outcome = await assertHeld(t, s, 'HOLD_SQLITE_RUNTIME_UNSUPPORTED_NO_MUTATION',
    () => recover(s.dir, s.dbPath, planPath, { env }));
  t.match(outcome.message, /3\.40\.0/);
});

t.test('check 4: an sqlite-vec that cannot load holds with HOLD_SQLITE_VEC_UNAVAILABLE_NO_MUTATION', async (t) => {
  const s = await scenario(t);
  const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
  // The version seam receives the probe's connection: refusing extension loading on it is a build without sqlite-vec.
  type ProbeConnection = { loadExtension: unknown; prepare(sql: string): { pluck(): { get(): unknown } } };
  const env = {
    runtime: {
      sqliteVersion: (connection: ProbeConnection) => {
        connection.loadExtension = () => {
          throw new Error('extension loading refused by the test');
        };
        return String(connection.prepare('SELECT sqlite_version()').pluck().get());
      },
    },
  } as never;
  const outcome = await assertHeld(t, s, 'HOLD_SQLITE_VEC_UNAVAILABLE_NO_MUTATION',
    () => recover(s.dir, s.dbPath, planPath, { env }));
  t.match(outcome.message, /sqlite-vec/);
});

t.test('check 5: no database at the path holds with HOLD_DB_NOT_FOUND_NO_MUTATION and creates none', async (t) => {
  const s = await scenario(t);
  const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
  const moved = join(s.dir, 'moved.sqlite3');
  renameSync(s.dbPath, moved);
  const before = fileBytes(moved);
  await assertHeld(t, s, 'HOLD_DB_NOT_FOUND_NO_MUTATION', () => recover(s.dir, s.dbPath, planPath));
  t.notOk(existsSync(s.dbPath), 'no database was created at the path');
  t.equal(fileBytes(moved), before, 'the moved file is unchanged');
});

t.test('check 6: a hard-link alias of the database holds with HOLD_HARD_LINK_ALIAS_NO_MUTATION', async (t) => {
  const s = await scenario(t);
  const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
  linkSync(s.dbPath, join(s.dir, 'alias.sqlite3'));
  const outcome = await assertHeld(t, s, 'HOLD_HARD_LINK_ALIAS_NO_MUTATION', () => recover(s.dir, s.dbPath, planPath));
  t.match(outcome.message, /another hard link/);
  t.ok(existsSync(join(s.dir, 'alias.sqlite3')), 'the alias is left for the operator');
});

t.test('checks 7, 8 and 17: a database in use holds with HOLD_NONQUIESCENT_NO_MUTATION', async (t) => {
  t.test('check 7: a running engine in another process holds its shared lease', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    const server = track(t, spawnTsHelper('engine-process.ts', ['engine', s.dbPath]));
    await waitForLine(server, /^ready$/);
    const outcome = await assertHeld(t, s, 'HOLD_NONQUIESCENT_NO_MUTATION', () => recover(s.dir, s.dbPath, planPath));
    t.match(outcome.message, /exclusive lease cannot be taken/, 'stopped by the lease (check 7)');
  });

  t.test('check 8: another process has the file open without any lease', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    const holder = nodeChild(t, `require('fs').openSync(process.argv[1], 'r');
      console.log('ready'); setInterval(() => {}, 1 << 30);`, s.dbPath);
    await waitForLine(holder, /^ready$/);
    const outcome = await assertHeld(t, s, 'HOLD_NONQUIESCENT_NO_MUTATION', () => recover(s.dir, s.dbPath, planPath));
    t.match(outcome.message, /^1 other process\(es\) have the database, -wal, -shm or -writer open; stop every/,
      'stopped by the /proc inventory (check 8)');
    // Run by the file's owner, not root: processes it cannot look into count, and the hold says what would.
    if (process.geteuid?.() !== 0) return;
    chownSync(s.dbPath, 65534, 65534);
    const asOwner = await assertHeld(t, s, 'HOLD_NONQUIESCENT_NO_MUTATION',
      () => recover(s.dir, s.dbPath, planPath, { env: { euid: 65534 } }));
    t.match(asOwner.message, /open, or could not be looked into \(run recover as root, which can\); stop every host/);
  });

  t.test('check 17: a reader the inventory cannot see pins WAL frames', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    // A raw peer commits a change and its undo (so the WAL has frames; an update to the same bytes writes none),
    // then keeps a read transaction on those frames: TRUNCATE can backfill them but not restart the WAL.
    const reader = nodeChild(t, `const db = new (require('better-sqlite3'))(process.argv[1]);
      db.function('factlane_contract_v2_writer', { deterministic: false }, () => 1);
      db.prepare("UPDATE adapter_meta SET value = value || '#' WHERE key = 'database_id'").run();
      db.prepare("UPDATE adapter_meta SET value = substr(value, 1, length(value) - 1) WHERE key = 'database_id'")
        .run();
      db.exec('BEGIN'); db.prepare('SELECT count(*) FROM adapter_records').get();
      console.log('ready'); setInterval(() => db.inTransaction, 1 << 30);`, s.dbPath);
    await waitForLine(reader, /^ready$/);
    const env = { inventory: blindInventory(s.dir) };
    const outcome = await assertHeld(t, s, 'HOLD_NONQUIESCENT_NO_MUTATION',
      () => recover(s.dir, s.dbPath, planPath, { env }), { compare: 'records' });
    t.match(outcome.message, /wal_checkpoint/, 'stopped by the checkpoint (check 17)');
  });

  t.test('a writer the inventory cannot see holds the write lock', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    const writer = track(t, spawnTsHelper('engine-process.ts', ['lock', s.dbPath]));
    await waitForLine(writer, /^ready$/);
    const env = { inventory: blindInventory(s.dir) };
    // Check 15's probe needs the write lock: its SQLITE_BUSY names the active connection, not a missing FTS5 option.
    const outcome = await assertHeld(t, s, 'HOLD_NONQUIESCENT_NO_MUTATION',
      () => recover(s.dir, s.dbPath, planPath, { env }), { compare: 'records' });
    t.match(outcome.message, /BACKEND_BUSY/, 'the busy probe is reported as such');
  });
});

t.test('check 9: a state file or interlock of another plan holds with HOLD_RECOVERY_STATE_MISMATCH', async (t) => {
  t.test('the state file of another plan', async (t) => {
    const s = await scenario(t);
    const { plan: other } = planFor(s.dir, s.dbPath, [s.memoryId], 'other-plan.json');
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    writeRecoveryState(statePathIn(s.dir), {
      operation_id: other.operation_id, plan_sha256: planSha256(other), db_identity: dbIdentity(s.dbPath),
      database_id: other.database_id, phase: 'LOGICAL_PURGE_IN_PROGRESS', updated_at: NOW, last_hold: null,
    });
    const outcome = await assertHeld(t, s, 'HOLD_RECOVERY_STATE_MISMATCH', () => recover(s.dir, s.dbPath, planPath));
    t.match(outcome.message, /state file belongs to another plan/);
  });

  t.test('the state file of this plan, edited after it was written', async (t) => {
    const s = await scenario(t);
    const { plan, planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    writeRecoveryState(statePathIn(s.dir), {
      operation_id: plan.operation_id, plan_sha256: hex64('another plan text'), db_identity: dbIdentity(s.dbPath),
      database_id: plan.database_id, phase: 'PREPARED_NO_MUTATION', updated_at: NOW, last_hold: null,
    });
    await assertHeld(t, s, 'HOLD_RECOVERY_STATE_MISMATCH', () => recover(s.dir, s.dbPath, planPath));
  });

  t.test('a state file that is not a recovery state', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    const statePath = join(s.dir, 'state.json');
    const fd = openSync(statePath, 'wx', 0o600);
    writeSync(fd, '{"phase": "DONE"}\n');
    closeSync(fd);
    await assertHeld(t, s, 'HOLD_RECOVERY_STATE_MISMATCH', () => recover(s.dir, s.dbPath, planPath, { statePath }),
      { statePath });
  });

  t.test('a FIFO as the state file, which a read would block on', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    const statePath = join(s.dir, 'state.fifo');
    execFileSync('mkfifo', [statePath]);
    const outcome = await recover(s.dir, s.dbPath, planPath, { statePath });
    t.match(outcome, { exit: 3, hold: 'HOLD_RECOVERY_STATE_MISMATCH', receipt: null,
      message: /the recovery state file is not a regular file/ });
  });

  t.test('another operation\'s interlock', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    writeInterlockRow(s.dbPath, { operation_id: 'recovery-another-operation', plan_sha256: hex64('other') });
    const outcome = await assertHeld(t, s, 'HOLD_RECOVERY_STATE_MISMATCH', () => recover(s.dir, s.dbPath, planPath));
    t.match(outcome.message, /interlock of another recovery plan/);
  });

  t.test('this plan\'s interlock while its targets are untouched', async (t) => {
    const s = await scenario(t);
    const { plan, planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    writeInterlockRow(s.dbPath, { operation_id: plan.operation_id, plan_sha256: planSha256(plan) });
    // Held at the resume decision (§5.8), after check 17 and the inspection.
    const outcome = await assertHeld(t, s, 'HOLD_RECOVERY_STATE_MISMATCH', () => recover(s.dir, s.dbPath, planPath),
      { compare: 'both' });
    t.match(outcome.message, /not tombstoned/);
  });
});

t.test('check 10: a schema other than this release\'s holds with HOLD_SCHEMA_MISMATCH_NO_MUTATION', async (t) => {
  t.test('an unknown table', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    gatedRaw(s.dbPath, (db) => db.exec('CREATE TABLE operator_notes (note TEXT)'));
    const outcome = await assertHeld(t, s, 'HOLD_SCHEMA_MISMATCH_NO_MUTATION',
      () => recover(s.dir, s.dbPath, planPath));
    t.match(outcome.message, /schema_objects/);
  });
  t.test('the work table of a reembed that did not finish', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    // As reembed leaves it when killed: the table with its indexes (verify accepts it) and the vectors written so far.
    gatedRaw(s.dbPath, (db) => {
      recreateNextTable(db, vectorTableDefinitions(SHIPPED_MIGRATIONS, SHIPPED_VERSION, LOCAL_HASH_DIMENSION));
      db.exec('INSERT INTO fact_vec_next (rowid, scope_key, is_current, embedding) '
        + 'SELECT rowid, scope_key, is_current, embedding FROM fact_vec');
    });
    const verify = runBin(ADMIN_BIN, ['verify', '--db', s.dbPath]);
    t.equal(verify.status, 0, 'verify accepts the work table');
    const outcome = await assertHeld(t, s, 'HOLD_SCHEMA_MISMATCH_NO_MUTATION',
      () => recover(s.dir, s.dbPath, planPath));
    t.match(outcome.message,
      /fact_vec_next is the work table of a reembed that did not finish: run factlane-admin reembed to completion/);
  });
  t.test('a schema older than the release', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    const newer = migrationsDir(s.dir, 'migrations', {
      [nextMigration('operator_notes')]: 'CREATE TABLE operator_notes (note TEXT);\n',
    });
    const outcome = await assertHeld(t, s, 'HOLD_SCHEMA_MISMATCH_NO_MUTATION',
      () => recover(s.dir, s.dbPath, planPath, { env: { migrationsDir: newer } }));
    t.match(outcome.message, /not current/);
  });
});

t.test('check 11: another database_id holds with HOLD_DB_IDENTITY_MISMATCH_NO_MUTATION', async (t) => {
  const s = await scenario(t);
  const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId], 'plan.json', edited((plan) => {
    plan.database_id = randomUUID();
  }));
  const outcome = await assertHeld(t, s, 'HOLD_DB_IDENTITY_MISMATCH_NO_MUTATION',
    () => recover(s.dir, s.dbPath, planPath));
  t.match(outcome.message, /database_id/);
});

t.test('check 12: a database out of WAL mode holds with HOLD_UNSUPPORTED_DB_MODE_NO_MUTATION', async (t) => {
  const s = await scenario(t);
  const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
  withRawWrite(s.dbPath, (db) => {
    db.pragma('journal_mode = DELETE');
  });
  const mode = withRaw(s.dbPath, (db) => db.pragma('journal_mode', { simple: true }));
  t.equal(mode, 'delete', 'the file is in rollback-journal mode');
  const outcome = await assertHeld(t, s, 'HOLD_UNSUPPORTED_DB_MODE_NO_MUTATION',
    () => recover(s.dir, s.dbPath, planPath));
  t.match(outcome.message, /WAL/);
});

t.test('check 13: a corrupt index holds with HOLD_DB_INTEGRITY_NO_MUTATION', async (t) => {
  const s = await scenario(t);
  const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
  corruptIndexEntry(s.dbPath, s.replacementId);
  const report = withRaw(s.dbPath, (db) => db.prepare('PRAGMA integrity_check').pluck().all()) as string[];
  t.match(report.join('\n'), /idx_adapter_scope_key/, 'integrity_check names the index');
  const outcome = await assertHeld(t, s, 'HOLD_DB_INTEGRITY_NO_MUTATION', () => recover(s.dir, s.dbPath, planPath));
  t.match(outcome.message, /integrity_check reports problems/, 'held by check 13 itself');
});

t.test('check 16: a plan profile other than the binding holds with HOLD_PROFILE_MISMATCH_NO_MUTATION', async (t) => {
  const s = await scenario(t);
  const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId], 'plan.json', edited((plan) => {
    plan.profile = 'ollama-nomic-embed-text';
  }));
  // Check 16 runs after check 14 on the read-write connection: rows and bytes are compared.
  await assertHeld(t, s, 'HOLD_PROFILE_MISMATCH_NO_MUTATION', () => recover(s.dir, s.dbPath, planPath),
    { compare: 'both' });
});

// ---------------------------------------------------------------------------------------------------- §5.4
// Inspection runs after check 17's checkpoint, so these compare rows; with no peer connection the checkpoint has
// nothing to move and the last close removes the sidecars, so every byte is compared too.

function assertInspectionHold(t: Test, s: Scenario, code: RecoveryHoldCode, planPath: string) {
  return assertHeld(t, s, code, () => recover(s.dir, s.dbPath, planPath), { compare: 'both' });
}

t.test('a target other than the plan describes holds with HOLD_TARGET_DRIFT_NO_MUTATION', async (t) => {
  t.test('another expected_content_hash', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId], 'plan.json',
      edited((plan) => { plan.targets[1].expected_content_hash = hex64('drifted'); }));
    const outcome = await assertInspectionHold(t, s, 'HOLD_TARGET_DRIFT_NO_MUTATION', planPath);
    t.match(outcome.message, /^target 2 of 2 is not in the database as the plan describes it .*write a new plan$/,
      'the second target, counted from 1 as the file reads');
  });
  t.test('another revision', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId], 'plan.json', edited((plan) => {
      plan.targets[0].revision += 1;
    }));
    await assertInspectionHold(t, s, 'HOLD_TARGET_DRIFT_NO_MUTATION', planPath);
  });
  t.test('another lifecycle', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId], 'plan.json',
      edited((plan) => { plan.targets[1].expected_lifecycle = 'VALIDATED_CURRENT'; }));
    await assertInspectionHold(t, s, 'HOLD_TARGET_DRIFT_NO_MUTATION', planPath);
  });
  t.test('a record that is not in the database', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId], 'plan.json', edited((plan) => {
      plan.targets[0].record_id = randomUUID();
    }));
    await assertInspectionHold(t, s, 'HOLD_TARGET_DRIFT_NO_MUTATION', planPath);
  });
});

t.test('one target already tombstoned by this operation holds with HOLD_TARGET_SET_PARTIALLY_APPLIED', async (t) => {
  const s = await scenario(t);
  const { plan, planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
  writeTombstone(s.dbPath, plan, s.targetIds[0]!);
  const outcome = await assertInspectionHold(t, s, 'HOLD_TARGET_SET_PARTIALLY_APPLIED', planPath);
  t.match(outcome.message, /1 of 2/);
});

t.test('another record holding the secret holds with HOLD_TARGET_SET_INCOMPLETE_NO_MUTATION', async (t) => {
  const s = await scenario(t);
  const engine = await openLocalHashEngine(s.dbPath);
  let stored: Json;
  try {
    const request = storeRequest({ scope: 'PROJECT', project_id: 'proj-a', fact: `${s.secretFact} (copy)` });
    const delegated = adapterFor(engine, 'delegated-candidate', 'agent-host');
    stored = (await delegated.execute('memory_store', request)) as Json;
    t.equal(stored.status, 'OK', 'the copy is stored as a Candidate of another memory');
  } finally {
    await engine.close();
  }
  const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
  const outcome = await assertInspectionHold(t, s, 'HOLD_TARGET_SET_INCOMPLETE_NO_MUTATION', planPath);
  // Its record, FTS row and vector: three rows of one memory, named so the operator can plan it.
  t.match(outcome.message, new RegExp(`^\\d+ row\\(s\\) outside the target set hold target content, in memory `
    + `${stored.results[0].memory_id}; write a new plan with their --memory-id too; nothing was changed$`));
  t.notMatch(outcome.message, s.secretFact.slice(0, 16), 'no content in the message');
  const both = planFor(s.dir, s.dbPath, [s.memoryId, stored.results[0].memory_id], 'both.json');
  t.match(await recover(s.dir, s.dbPath, both.planPath), { exit: 0 }, 'planned with it, the recovery runs');
});

t.test('a word the index keeps without its diacritics holds too, before anything changes', async (t) => {
  // unicode61 indexes "…nümmer" as "…nummer": the target's one-word fact as a term of another record, which the
  // residual byte scan found in the file after the commit, holding the database under its interlock for good.
  const s = await scenario(t, 'Quellensteuerbescheinigungsnummer');
  const engine = await openLocalHashEngine(s.dbPath);
  let stored: Json;
  try {
    const request = storeRequest({ scope: 'PROJECT', project_id: 'proj-a',
      fact: 'Die Angabe lautet Quellensteuerbescheinigungsnümmer' });
    stored = (await adapterFor(engine, 'delegated-candidate', 'agent-host').execute('memory_store', request)) as Json;
    t.equal(stored.status, 'OK');
  } finally {
    await engine.close();
  }
  const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
  const outcome = await assertInspectionHold(t, s, 'HOLD_TARGET_SET_INCOMPLETE_NO_MUTATION', planPath);
  t.match(outcome.message, new RegExp(`^1 row\\(s\\) outside the target set hold target content, in memory `
    + `${stored.results[0].memory_id}; write`));
  const both = planFor(s.dir, s.dbPath, [s.memoryId, stored.results[0].memory_id], 'both.json');
  t.match(await recover(s.dir, s.dbPath, both.planPath), { exit: 0, receipt: { residual_byte_scan: 'CLEAN' } },
    'planned with it, the recovery runs and the scan is clean');
});

t.test('a vector row of no record holds with HOLD_UNATTRIBUTABLE_VECTOR_NO_MUTATION', async (t) => {
  const s = await scenario(t);
  gatedRaw(s.dbPath, (db) => {
    const free = 'SELECT max(row_id) + 1000 AS rowId, min(scope_key) AS scopeKey FROM adapter_records';
    const { rowId, scopeKey } = db.prepare(free).get() as { rowId: number; scopeKey: string };
    insertVector(db, rowId, scopeKey, vectorBlob(7));
  });
  const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
  const outcome = await assertInspectionHold(t, s, 'HOLD_UNATTRIBUTABLE_VECTOR_NO_MUTATION', planPath);
  t.match(outcome.message, /PM3_UNATTRIBUTABLE_DERIVED_ROW/);
});

t.test('a materialisation other than the plan expects holds with HOLD_MATERIALIZATION_DRIFT_NO_MUTATION', async (t) => {
  const s = await scenario(t);
  const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId], 'plan.json', edited((plan) => {
    t.equal(plan.targets[0].expected_materialization, 'PM0_HISTORICAL_RECORD_AND_FTS', 'the HISTORICAL target is PM0');
    plan.targets[0].expected_materialization = 'PM1_FULL_MATERIALIZATION';
  }));
  const outcome = await assertInspectionHold(t, s, 'HOLD_MATERIALIZATION_DRIFT_NO_MUTATION', planPath);
  t.match(outcome.message, /target 1 of \d+ is PM0_HISTORICAL_RECORD_AND_FTS/);
});

t.test('a target without its FTS row holds with HOLD_PARTIAL_MATERIALIZATION_NO_MUTATION', async (t) => {
  const s = await scenario(t);
  const rowId = rowIdOf(s.dbPath, s.targetIds[1]!);
  gatedRaw(s.dbPath, (db) => db.prepare('DELETE FROM fact_fts WHERE rowid = ?').run(BigInt(rowId)));
  const { plan, planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
  t.equal(plan.targets[1]!.expected_materialization, 'PM2_DERIVED_ROW_MISSING_OR_MISMATCHED', 'the plan expects PM2');
  await assertInspectionHold(t, s, 'HOLD_PARTIAL_MATERIALIZATION_NO_MUTATION', planPath);
});

t.test('a HISTORICAL target with a vector holds with HOLD_UNEXPECTED_DERIVED_STATE_NO_MUTATION', async (t) => {
  const s = await scenario(t);
  const rowId = rowIdOf(s.dbPath, s.targetIds[0]!);
  gatedRaw(s.dbPath, (db) => {
    const scopeKey = db.prepare('SELECT scope_key FROM adapter_records WHERE row_id = ?').pluck().get(rowId) as string;
    insertVector(db, rowId, scopeKey, vectorBlob(11));
  });
  const { plan, planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
  t.equal(plan.targets[0]!.expected_materialization, 'PM4_UNEXPECTED_DERIVED_STATE', 'the plan expects PM4');
  await assertInspectionHold(t, s, 'HOLD_UNEXPECTED_DERIVED_STATE_NO_MUTATION', planPath);
});

t.test('review fixes: holds the first build of recover missed', async (t) => {
  t.test('an operation_id too long to name the image beside the database (check 2)', async (t) => {
    const first = await scenario(t);
    const s = { ...first, dbPath: join(first.dir, `${'d'.repeat(100)}.sqlite3`) };
    renameSync(first.dbPath, s.dbPath);
    const operationId = `op-${'x'.repeat(125)}`;
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId], 'plan.json', edited((plan) => {
      plan.operation_id = operationId;
    }));
    const outcome = await assertHeld(t, s, 'HOLD_PLAN_INVALID_NO_MUTATION',
      () => recover(s.dir, s.dbPath, planPath, { confirm: operationId }));
    t.match(outcome.message, /too long for an image name/);
  });

  t.test('a process that has only the writer sidecar open (check 8)', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    const holder = nodeChild(t, `require('fs').openSync(process.argv[1] + '-writer', 'a');
      console.log('ready'); setInterval(() => {}, 1 << 30);`, s.dbPath);
    await waitForLine(holder, /^ready$/);
    const outcome = await assertHeld(t, s, 'HOLD_NONQUIESCENT_NO_MUTATION', () => recover(s.dir, s.dbPath, planPath));
    t.match(outcome.message, /1 other process\(es\)/, 'the sidecar counts as holding the database');
  });

  t.test('an interlock row that is not the interlock\'s JSON (check 9)', async (t) => {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    const insert = 'INSERT INTO adapter_meta (key, value) VALUES (?, ?)';
    gatedRaw(s.dbPath, (db) => db.prepare(insert).run(INTERLOCK_KEY, '{'));
    const outcome = await assertHeld(t, s, 'HOLD_RECOVERY_STATE_MISMATCH', () => recover(s.dir, s.dbPath, planPath));
    t.match(outcome.message, /not well-formed/);
  });

  t.test('targets tombstoned by this plan with no state file to say the sealing ran (§5.8)', async (t) => {
    const s = await scenario(t);
    const { plan, planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    for (const id of s.targetIds) writeTombstone(s.dbPath, plan, id);
    const outcome = await assertHeld(t, s, 'HOLD_RECOVERY_STATE_MISMATCH', () => recover(s.dir, s.dbPath, planPath),
      { compare: 'both' });
    t.match(outcome.message,
      /already tombstoned by this plan and its interlock is gone.*rerun with the --receipt \(or --state\) of the run that did it$/);
  });

  t.test('a copy of a fact with quotes inside a JSON tag (completeness reads JSON values)', async (t) => {
    const s = await scenario(t);
    const fact = 'The vault key is "QZ7RV41XK9" for staging';
    const engine = await openLocalHashEngine(s.dbPath);
    let memoryId: string;
    try {
      const delegated = adapterFor(engine, 'delegated-candidate', 'agent-host');
      const project = { scope: 'PROJECT', project_id: 'proj-a' };
      const stored = (await delegated.execute('memory_store', storeRequest({ ...project, fact }))) as Json;
      memoryId = stored.results[0].memory_id;
      const copy = storeRequest({ ...project, fact: 'The vault holds the staging key', tags: [fact] });
      t.equal(((await delegated.execute('memory_store', copy)) as Json).status, 'OK', 'the tag holds the fact');
    } finally {
      await engine.close();
    }
    const escaped = 'SELECT tags FROM adapter_records WHERE tags LIKE ?';
    t.ok(withRaw(s.dbPath, (db) => db.prepare(escaped).get('%\\"QZ7RV41XK9\\"%')),
      'the tag is stored with its quotes escaped');
    const { planPath } = planFor(s.dir, s.dbPath, [memoryId!]);
    await assertInspectionHold(t, s, 'HOLD_TARGET_SET_INCOMPLETE_NO_MUTATION', planPath);
  });
});

t.test('checks 14, 15 and 18 hold when the build lacks a capability (probes replaced)', async (t) => {
  const cases: [RecoveryHoldCode, Record<string, unknown>][] = [
    ['HOLD_SECURE_DELETE_UNAVAILABLE_NO_MUTATION', { capabilities: { secureDelete: () => false } }],
    ['HOLD_FTS_UNAVAILABLE_NO_MUTATION', { capabilities: { ftsPresent: () => false } }],
    ['HOLD_FTS_SECURE_DELETE_UNAVAILABLE_NO_MUTATION', { capabilities: { ftsSecureDelete: () => false } }],
    ['HOLD_PUBLIC_CONTRACT_DRIFT_NO_MUTATION', { exposedTools: ['memory_search', 'memory_get', 'memory_store',
      'memory_update', 'memory_status', 'memory_delete'] }],
    ['HOLD_PUBLIC_CONTRACT_DRIFT_NO_MUTATION', { exposedTools: ['memory_search', 'memory_get', 'memory_store',
      'memory_update'] }],
  ];
  for (const [code, env] of cases) {
    const s = await scenario(t);
    const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
    await assertHeld(t, s, code, () => recover(s.dir, s.dbPath, planPath, { env }), { compare: 'both' });
  }
});

t.test('a forged tombstone holding the secret makes the purge verification fail and roll back', async (t) => {
  const s = await scenario(t);
  const engine = await openLocalHashEngine(s.dbPath);
  let copyId: string;
  try {
    const envelope = await adapterFor(engine, 'delegated-candidate', 'agent-host').execute('memory_store',
      storeRequest({ scope: 'PROJECT', project_id: 'proj-a', fact: `${s.secretFact} (copy)` })) as Json;
    copyId = envelope.results[0].record_id;
  } finally {
    await engine.close();
  }
  // Completeness skips recovery tombstones; the verification inside the purge reads every row.
  gatedRaw(s.dbPath, (db) => {
    const rowId = BigInt(rowIdOf(s.dbPath, copyId));
    const provenance = JSON.parse(tombstoneColumns('forged', copyId).source_provenance);
    db.prepare("UPDATE adapter_records SET lifecycle_state = 'QUARANTINED', source_provenance = ? WHERE row_id = ?")
      .run(JSON.stringify(provenance), rowId);
    db.prepare('DELETE FROM fact_fts WHERE rowid = ?').run(rowId);
    db.prepare('DELETE FROM fact_vec WHERE rowid = ?').run(rowId);
  });
  const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
  const before = snapshot(s.dbPath, 'records');
  const outcome = await recover(s.dir, s.dbPath, planPath);
  t.match(outcome, { exit: 3, hold: 'HOLD_LOGICAL_PURGE_VERIFY_FAILED', result: 'HELD_NO_MUTATION' });
  if (outcome.hold) reached.add(outcome.hold);
  t.strictSame(snapshot(s.dbPath, 'records'), before, 'the purge was rolled back: every row as it was');
  t.match(JSON.parse(readFileSync(statePathIn(s.dir), 'utf8')),
    { phase: 'PREPARED_NO_MUTATION', last_hold: 'HOLD_LOGICAL_PURGE_VERIFY_FAILED' },
    'the state went back to the first phase');
  t.notOk(existsSync(join(s.dir, 'receipt.json')), 'no receipt');
});

t.test('a target text in what the purge keeps holds before the commit, never fails the byte scan after it',
  async (t) => {
    // §5.4 names the fact, tags, provenance and freshness, but the residual byte scan of §5.6 reads the whole file:
    // a target text in an idempotency_key or a meta value passed every check, committed, then failed the scan on
    // every rerun while the interlock blocked every start.
    const cases: [string, RecoveryHoldCode, (s: Scenario, db: InstanceType<typeof RawDatabase>) => void][] = [
      ['another record\'s idempotency_key', 'HOLD_TARGET_SET_INCOMPLETE_NO_MUTATION', (s, db) => {
        db.prepare('UPDATE adapter_records SET idempotency_key = ? WHERE record_id = ?')
          .run(`note-${s.secretFact}`, s.replacementId);
      }],
      ['the target\'s own idempotency_key, which its tombstone keeps', 'HOLD_LOGICAL_PURGE_VERIFY_FAILED', (s, db) => {
        db.prepare('UPDATE adapter_records SET idempotency_key = ? WHERE record_id = ?')
          .run(s.secretFact, s.targetIds[1]);
      }],
      ['a meta value', 'HOLD_LOGICAL_PURGE_VERIFY_FAILED', (s, db) => {
        db.prepare("INSERT INTO adapter_meta (key, value) VALUES ('owner_note', ?)").run(s.secretFact);
      }],
      // The byte scan also looks for each text as a JSON string spells it (`\"` for `"`).
      ['a meta value holding the fact as JSON escapes it', 'HOLD_LOGICAL_PURGE_VERIFY_FAILED', (s, db) => {
        db.prepare("INSERT INTO adapter_meta (key, value) VALUES ('owner_note', ?)")
          .run(JSON.stringify(s.secretFact).slice(1, -1));
      }],
    ];
    for (const [name, code, plant] of cases) {
      await t.test(name, async (t) => {
        const s = await scenario(t, `The staging deploy token is "${MARKER}"`);
        gatedRaw(s.dbPath, (db) => plant(s, db));
        const { planPath } = planFor(s.dir, s.dbPath, [s.memoryId]);
        const before = snapshot(s.dbPath, 'records');
        const outcome = await recover(s.dir, s.dbPath, planPath);
        t.match(outcome, { exit: 3, hold: code, result: 'HELD_NO_MUTATION' });
        t.strictSame(snapshot(s.dbPath, 'records'), before, 'every row as it was');
        const interlock = withRaw(s.dbPath, (db) => db.prepare('SELECT value FROM adapter_meta WHERE key = ?')
          .get(INTERLOCK_KEY));
        t.equal(interlock, undefined, 'no interlock: every runtime still starts');
        t.notOk(existsSync(join(s.dir, 'receipt.json')), 'no receipt');
      });
    }
  });

t.test('every hold code is reached above', async (t) => {
  // Only meaningful on a full run of this file (a --grep run leaves holds unreached).
  t.strictSame([...reached].sort(), [...RECOVERY_HOLD_CODES].sort(),
    'a new hold code needs a test');
});

// ---------------------------------------------------------------------------------------------------- helpers

/** A raw read-write connection without the writer function (pragmas only). */
function withRawWrite(dbPath: string, write: (db: InstanceType<typeof RawDatabase>) => void): void {
  const db = new RawDatabase(dbPath);
  try {
    write(db);
  } finally {
    db.close();
  }
}

/** Writes an interlock row (STORAGE.md §11) with a gated raw connection, as a committed purge leaves it. */
function writeInterlockRow(dbPath: string, fields: { operation_id: string; plan_sha256: string }): void {
  const value = JSON.stringify({ committed_at: NOW, ...fields });
  gatedRaw(dbPath, (db) => db.prepare('INSERT INTO adapter_meta (key, value) VALUES (?, ?)').run(INTERLOCK_KEY, value));
}

/** A fact_vec row at `rowId` (vec0 tables are not fenced: any connection with sqlite-vec loaded can write them). */
function insertVector(db: InstanceType<typeof RawDatabase>, rowId: number, scopeKey: string, embedding: Buffer): void {
  db.prepare('INSERT INTO fact_vec (rowid, scope_key, is_current, embedding) VALUES (?, ?, 0, ?)')
    .run(BigInt(rowId), scopeKey, embedding);
}

/** Writes this operation's tombstone over one target with a gated raw connection, as a purge cut short would. */
function writeTombstone(dbPath: string, plan: RecoveryPlan, recordId: string): void {
  const columns = tombstoneColumns(plan.operation_id, recordId) as unknown as Record<string, unknown>;
  const assignments = Object.keys(columns).map((column) => `${column} = @${column}`).join(', ');
  gatedRaw(dbPath, (db) => {
    const update = db.prepare(`UPDATE adapter_records SET ${assignments} WHERE record_id = @record_id`);
    const changed = update.run({ ...columns, record_id: recordId });
    if (changed.changes !== 1) throw new Error('the tombstone was not written');
  });
}

/**
 * Changes one byte of `recordId`'s entry in idx_adapter_scope_key (a one-page index of the small scenario), in the
 * closed file: the table and every structure stay readable, only integrity_check sees the index disagree.
 */
function corruptIndexEntry(dbPath: string, recordId: string): void {
  const { pageSize, rootPage } = withRaw(dbPath, (db) => ({
    pageSize: db.pragma('page_size', { simple: true }) as number,
    rootPage: db.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'idx_adapter_scope_key'")
      .pluck().get() as number,
  }));
  const fd = openSync(dbPath, 'r+');
  try {
    const page = Buffer.alloc(pageSize);
    readSync(fd, page, 0, pageSize, (rootPage - 1) * pageSize);
    if (page[0] !== 0x0a) throw new Error(`index root page ${rootPage} is not a leaf (type ${page[0]})`);
    const at = page.indexOf(Buffer.from(recordId));
    if (at < 0) throw new Error('the record_id is not on the index page');
    // The last character of the UUID: the entry then names a record_id no row has.
    const last = at + recordId.length - 1;
    page[last] = page[last] === 0x30 ? 0x31 : 0x30;
    writeSync(fd, page, last, 1, (rootPage - 1) * pageSize + last);
  } finally {
    closeSync(fd);
  }
}
