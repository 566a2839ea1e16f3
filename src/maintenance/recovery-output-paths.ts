import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { realPathOf } from '../storage/database-path.js';
import { sqliteFiles } from '../storage/durable-files.js';
import { RecoveryHold } from './recovery-hold.js';
import type { RecoveryPlan } from './recovery-plan.js';
import { sanitizedImagePath } from './recovery-sealing.js';

// The files a recovery run names (OPERATIONS.md §5.3 check 2): the database, the plan, and the receipt and state file
// it writes, compared by real path and by inode, so no spelling or hard link lets one output land on another file.

/** The paths of one recovery run's command line. */
export interface RecoveryPaths {
  readonly dbPath: string;
  readonly planPath: string;
  readonly receiptPath: string;
  /** Default `<receipt>.state.json`. */
  readonly statePath?: string;
}

const invalid = (message: string) => new RecoveryHold('HOLD_PLAN_INVALID_NO_MUTATION', message);

/**
 * The real path of `path` as every file of a run is compared (realPathOf: symbolic links followed, a dangling one
 * too, a missing file by its existing ancestor's real path), so two spellings of one file compare equal.
 * HOLD_PLAN_INVALID_NO_MUTATION naming `name` for a loop of symbolic links: a write through it would fail at the end
 * of a run whose purge is done.
 */
export function resolvedPath(path: string, name: string): string {
  const resolved = realPathOf(path);
  if (resolved === null) throw invalid(`${name} is a loop of symbolic links`);
  return resolved;
}

/** The device and inode of an existing file, or null. */
function inodeOf(path: string): string | null {
  try {
    const stat = statSync(path);
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return null;
  }
}

/**
 * Part of check 2: the receipt and the state file are written over whatever their paths name (the state during the
 * run, the receipt once the purge is verified). Neither may name the database, its `-wal` or `-shm`, the sanitized
 * image, the plan, or the other one, by any spelling or hard link: a receipt written over the database destroyed the
 * sanitized store after the run had verified it. An existing receipt is kept unless it is this operation's, and the
 * receipt's directory must take it: found only at the end, either would fail a run whose purge is already done.
 */
export function checkOutputPaths(request: RecoveryPaths, plan: RecoveryPlan): void {
  // The database as recovery names it (a symbolic link followed), with every file it or its image may write.
  const db = resolvedPath(request.dbPath, '--db');
  const image = sanitizedImagePath(db, plan.operation_id);
  const taken: [string, string][] = [
    [db, 'the database'], [`${db}-wal`, 'the database\'s -wal'], [`${db}-shm`, 'the database\'s -shm'],
    ...sqliteFiles(image).map((file): [string, string] => [file, 'the sanitized image']),
    [resolvedPath(request.planPath, '--plan'), 'the plan'],
  ];
  const outputs: [string, string][] = [
    ['--receipt', request.receiptPath], ['--state', request.statePath ?? `${request.receiptPath}.state.json`],
  ];
  const resolvedOutputs: string[] = [];
  for (const [flag, path] of outputs) {
    const resolved = resolvedPath(path, flag);
    const inode = inodeOf(resolved);
    const clash = taken.find(([other]) => other === resolved || (inode !== null && inodeOf(other) === inode));
    if (clash) throw invalid(`${flag} names ${clash[1]}; choose a new file`);
    resolvedOutputs.push(resolved);
  }
  const [receipt, state] = resolvedOutputs;
  if (receipt === state) throw invalid('--receipt and --state name one file');
  try {
    accessSync(dirname(receipt!), constants.W_OK | constants.X_OK);
  } catch {
    throw invalid('the directory of --receipt does not exist or cannot be written');
  }
  if (existsSync(receipt!) && receiptOperation(receipt!) !== plan.operation_id) {
    throw invalid('--receipt names an existing file that is not this operation\'s receipt; choose a new file');
  }
}

/** The operation_id of a receipt file, or null when the file is not a receipt (nor a regular file, never read). */
function receiptOperation(path: string): string | null {
  // A FIFO there would block the read, and the run with it, beyond the reach of SIGTERM.
  if (!statSync(path).isFile()) return null;
  try {
    const receipt = JSON.parse(readFileSync(path, 'utf8')) as { operation_id?: unknown; result?: unknown };
    return receipt.result === 'LOCAL_FACTLANE_PURGE_PASS' && typeof receipt.operation_id === 'string'
      ? receipt.operation_id : null;
  } catch {
    return null;
  }
}
