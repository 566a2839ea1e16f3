import { auditOf, integrityOf, lostWrites, type AckedWrite } from './acked-writes.js';
import type { Leftovers } from './kill-files.js';
import type { CommandRun } from './server-fleet.js';

/** The running tallies of the kills part, and the checks after each kill that feed them. */
export class KillTally {
  kills = 0;
  readonly killsByTarget: Record<string, number>;
  ackedChecked = 0;
  lostWrites = 0;
  auditFindings = 0;
  readonly auditFailed = new Set<string>();
  integrityFailures = 0;
  readonly integrityFailed = new Set<string>();
  rerunFailures = 0;
  readonly rerunFailedTargets = new Set<string>();
  restartFailures = 0;
  resendFailures = 0;
  readonly resends: Record<string, number> = { replayed: 0, written_fresh: 0 };
  killsWithRequestsInFlight = 0;
  unexpectedExits = 0;
  missedKills = 0;
  readonly leftovers: Record<string, Leftovers> = {};

  constructor(targets: readonly string[]) {
    this.killsByTarget = Object.fromEntries(targets.map((target) => [target, 0]));
  }

  leftover(target: string, left: Leftovers): void {
    const sum = (this.leftovers[target] ??= { temporaries: 0, complete_outputs: 0, partial_outputs: 0 });
    sum.temporaries += left.temporaries;
    sum.complete_outputs += left.complete_outputs;
    sum.partial_outputs += left.partial_outputs;
  }
  readonly migrateStateAfterKill: Record<string, number> = { schema_1: 0, migrated: 0 };

  /** The acknowledged writes, integrity and audit of one file. */
  check(dbPath: string, writes: readonly AckedWrite[], options: { audit?: boolean } = {}): void {
    this.ackedChecked += writes.length;
    this.lostWrites += lostWrites(dbPath, writes);
    const integrity = integrityOf(dbPath);
    this.integrityFailures += integrity.failures;
    for (const name of integrity.failed) this.integrityFailed.add(name);
    if (options.audit === false) return;
    const audit = auditOf(dbPath);
    this.auditFindings += audit.findings;
    for (const name of audit.failed) this.auditFailed.add(name);
  }

  rerun(target: string, run: CommandRun): void {
    if (run.exit.code === 0) return;
    this.rerunFailures += 1;
    this.rerunFailedTargets.add(target);
  }
}
