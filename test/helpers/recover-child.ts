// A child process that runs one recovery (recoverDatabase) with a fault injected, for qualification tests
// (test/70-qualification/recover-faults.test.ts bundles it once; spawnTsHelper runs it as well).
// Usage: recover-child.ts DB_PATH PLAN_PATH RECEIPT_PATH [FAULT] [linger]
//   none                 run to the end (the default)
//   kill:PHASE           SIGKILL itself when the onPhase event PHASE fires
//   kill:purge_commit    SIGKILL itself inside the purge transaction, as its COMMIT is about to run (every tombstone
//                        and the interlock written, nothing committed)
//   kill:interlock_delete  SIGKILL itself in the postflight, as the deletion of the interlock is prepared
//   signal:SIG:PHASE     emit SIG (SIGINT or SIGTERM) on the recovery's signal emitter when PHASE fires
//   os-signal:SIG:PHASE  send SIG to this process when PHASE fires: a real signal, which Node hands to the recovery
//                        (watching `process`) only on a turn of its event loop, as Ctrl-C or kill would
//   signal:SIG:purge     emit SIG inside the purge transaction, as the FTS5 rebuild is prepared
//   signal:SIG:interlock_delete  emit SIG in the postflight, as the deletion of the interlock is prepared
//   pause:MS             sleep MS (blocking) at every phase after the preflight, to widen the windows of a race
//   hold:P1+P2+...       at each listed phase, wait (blocking, up to 60 s) until the file go-PHASE exists beside the
//                        receipt, so the parent can start runtimes while recovery holds its leases there
// Prints "phase NAME STATE [DETAIL]" per event and "outcome JSON" at the end, then exits 0 (also after exit 4: the
// leases a failed run keeps go with the process). With `linger`, it first waits (up to 60 s) for the file go-exit
// beside the receipt, so the parent can observe what the ended run still holds.
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { recoverDatabase, type RecoveryEvent } from '../../src/maintenance/recover-operation.js';

const [dbPath, planPath, receiptPath, fault = 'none', linger] = process.argv.slice(2);
if (!dbPath || !planPath || !receiptPath) throw new Error('usage: recover-child.ts DB_PATH PLAN_PATH RECEIPT [FAULT]');
const [kind, first, second] = fault.split(':');
const signals: EventEmitter = kind === 'os-signal' ? process : new EventEmitter();

/** Runs `onSql` before better-sqlite3 prepares any statement (storage caches statements, so it sees each once). */
function beforePrepare(onSql: (sql: string) => void): void {
  const require = createRequire(import.meta.url);
  const prototype = (require('better-sqlite3') as { prototype: { prepare(sql: string): unknown } }).prototype;
  const prepare = prototype.prepare;
  prototype.prepare = function patchedPrepare(this: unknown, sql: string) {
    onSql(sql);
    return prepare.call(this, sql);
  };
}

if (kind === 'kill' && first === 'purge_commit') {
  let armed = false;
  beforePrepare((sql) => {
    if (/^\s*insert\s+into\s+"?adapter_meta"?/i.test(sql)) armed = true;
    if (armed && /^\s*commit\s*$/i.test(sql)) process.kill(process.pid, 'SIGKILL');
  });
}
/** Kysely's statement deleting the interlock row (the only adapter_meta deletion recovery makes). */
const INTERLOCK_DELETE = /^\s*delete\s+from\s+"?adapter_meta"?/i;
if (kind === 'kill' && first === 'interlock_delete') {
  beforePrepare((sql) => {
    if (INTERLOCK_DELETE.test(sql)) process.kill(process.pid, 'SIGKILL');
  });
}
if (kind === 'signal' && second === 'purge') {
  beforePrepare((sql) => {
    if (sql.includes("VALUES ('rebuild')")) signals.emit(first!);
  });
}
if (kind === 'signal' && second === 'interlock_delete') {
  beforePrepare((sql) => {
    if (INTERLOCK_DELETE.test(sql)) signals.emit(first!);
  });
}

const HOLD_LIMIT_MS = 60_000;
const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const pauseMs = kind === 'pause' ? Number(first) : 0;
const holds = new Set(kind === 'hold' ? first!.split('+') : []);
/** Blocks until the parent creates go-NAME beside the receipt (or the limit passes). */
const waitForGo = (name: string) => {
  const go = join(dirname(receiptPath), `go-${name}`);
  for (let waited = 0; !existsSync(go) && waited < HOLD_LIMIT_MS; waited += 5) sleep(5);
};
const onPhase = (event: RecoveryEvent) => {
  process.stdout.write(`phase ${event.phase} ${event.recovery_state}${event.detail ? ` ${event.detail}` : ''}\n`);
  if (kind === 'kill' && event.phase === first) process.kill(process.pid, 'SIGKILL');
  if (kind === 'signal' && event.phase === second) signals.emit(first!);
  if (kind === 'os-signal' && event.phase === second) process.kill(process.pid, first as NodeJS.Signals);
  if (pauseMs > 0 && event.phase !== 'preflight' && event.phase !== 'outcome') sleep(pauseMs);
  if (holds.has(event.phase)) waitForGo(event.phase);
};

const plan = JSON.parse(readFileSync(planPath, 'utf8')) as { operation_id: string };
const outcome = await recoverDatabase({ dbPath, planPath, confirm: plan.operation_id, receiptPath, onPhase, signals });
process.stdout.write(`outcome ${JSON.stringify(outcome)}\n`);
if (linger === 'linger') waitForGo('exit');
process.exit(0);
