#!/usr/bin/env node
import { fixedTokensOfRow } from '../adapter/public-record.js';
import { warmUpTokenizer } from '../adapter/token-measure.js';
import { SYSTEM_CLOCK } from '../core/time.js';
import { migrateUp, migrationStatus, type StatusReport, type UpReport } from '../maintenance/migrate-operations.js';
import { unreadableFile, unreadableReport } from '../maintenance/verify-operation.js';
import { MaintenanceTarget } from '../storage/maintenance-target.js';
import type { CheckResult } from '../storage/schema-verification.js';
import { EXIT, UsageError, backupLine, parseFlags, runCommand, versionText } from './cli-support.js';
import { operationProgress } from './operation-progress.js';

const USAGE = `usage:
  factlane-migrate status --db PATH [--json]
  factlane-migrate up --db PATH (--backup FILE | --no-backup) [--json]
  factlane-migrate verify --db PATH [--json]
  factlane-migrate --version

exit codes: 0 success; 1 refused or failed; 2 usage; 3 pending migrations (status) or problems found (verify)
`;

const argv = process.argv.slice(2);
const wantsJson = () => argv.includes('--json');

function parse() {
  if (argv.includes('--help') || argv.includes('-h')) return {
    command: 'help' as const, values: {} as Record<string, never>,
  };
  if (argv.includes('--version')) return { command: 'version' as const, values: {} as Record<string, never> };
  const parsed = parseFlags({ args: argv, allowPositionals: true, options: {
    db: { type: 'string' }, json: { type: 'boolean' }, backup: { type: 'string' }, 'no-backup': { type: 'boolean' },
  } });
  const [command, ...rest] = parsed.positionals;
  if (command !== 'status' && command !== 'up' && command !== 'verify')
    throw new UsageError(command ? `unknown command ${command}` : 'a command is required');
  if (rest.length > 0) throw new UsageError(`unexpected argument ${rest[0]}`);
  if (!parsed.values.db) throw new UsageError('--db PATH is required');
  if (parsed.values.backup === '') throw new UsageError('--backup needs a file path');
  const hasBackup = parsed.values.backup !== undefined;
  if (command === 'up' && hasBackup === Boolean(parsed.values['no-backup']))
    throw new UsageError('up needs exactly one of --backup FILE and --no-backup');
  if (command !== 'up' && (hasBackup || parsed.values['no-backup']))
    throw new UsageError(`--backup and --no-backup belong to up, not ${command}`);
  return { command, values: parsed.values };
}

function printChecks(checks: readonly CheckResult[]): void {
  for (const check of checks) process.stdout.write(`  ${check.status}  ${check.name.padEnd(24)} ${check.detail}\n`);
}

function printStatus(report: StatusReport): void {
  const out = (label: string, value: string) => process.stdout.write(`${label.padEnd(12)}${value}\n`);
  out('database', report.db_identity);
  out('state', report.state);
  out('schema', `${report.schema_version} (this release: ${report.latest_version})`);
  out('contract', report.contract_version ?? 'missing');
  out('interlock', report.interlock_present ? 'PRESENT' : 'absent');
  // A migration of a newer release has no shipped checksum here to match or to differ from.
  const checksum = (row: StatusReport['applied'][number]) => row.version > report.latest_version
    ? 'not in this release' : `checksum ${row.checksum_ok ? 'ok' : 'MISMATCH'}`;
  for (const row of report.applied)
    out('applied', `${String(row.version).padStart(4, '0')}_${row.name}  ${checksum(row)}`);
  for (const row of report.pending) out('pending', `${String(row.version).padStart(4, '0')}_${row.name}`);
}

function printUp(report: UpReport): void {
  if (report.skipped_reason)
    process.stdout.write(`nothing to do: ${report.skipped_reason}; schema version ${report.schema_version}\n`);
  else process.stdout.write(`applied ${report.applied.length} migration(s); schema version ${report.schema_version}\n`);
  if (report.backup) process.stdout.write(`${backupLine(report.backup)} (sha256 ${report.backup.file_sha256})\n`);
  if (report.reembed_work_discarded) {
    process.stdout.write('dropped fact_vec_next, the work table of a reembed that did not finish; '
      + 'run factlane-admin reembed again\n');
  }
  process.stdout.write('verification:\n');
  printChecks(report.verification);
}

const print = (report: unknown, human: () => void) =>
  (wantsJson() ? process.stdout.write(`${JSON.stringify(report, null, 2)}\n`) : human());

/**
 * Prints a status report and returns its exit code. STORAGE.md §12.3: a refused state exits 1 after its report, with
 * one error line and `error_code` SCHEMA_MISMATCH in the JSON report.
 */
function printStatusReport(report: StatusReport, why?: string): number {
  const refused = report.state !== 'PENDING' && report.state !== 'UP_TO_DATE';
  print(refused ? { ...report, error_code: 'SCHEMA_MISMATCH' } : report, () => printStatus(report));
  if (report.state === 'PENDING') return EXIT.PROBLEMS;
  if (!refused) return EXIT.OK;
  const reason = why ? `${why}; ` : '';
  process.stderr.write(`factlane-migrate: SCHEMA_MISMATCH: ${reason}database state is ${report.state}\n`);
  return EXIT.FAILED;
}

/** Prints a verify report and returns its exit code: 0 when every check passed, else 3. */
function printVerify(report: { db_identity: string; ok: boolean; interlock_present: boolean;
  checks: readonly CheckResult[]; }): number {
  print(report, () => {
    process.stdout.write(`verify: ${report.ok ? 'all checks passed' : 'PROBLEMS FOUND'}; interlock `
      + `${report.interlock_present ? 'PRESENT' : 'absent'}\n`);
    printChecks(report.checks);
  });
  return report.ok ? EXIT.OK : EXIT.PROBLEMS;
}

await runCommand('factlane-migrate', USAGE, wantsJson, async () => {
  const { command, values } = parse();
  if (command === 'help' || command === 'version') {
    process.stdout.write(command === 'help' ? USAGE : versionText('factlane-migrate', wantsJson()));
    return EXIT.OK;
  }
  let target: MaintenanceTarget;
  try {
    target = MaintenanceTarget.open({ dbPath: values.db!, lease: command === 'up' ? 'exclusive' : 'shared' });
  } catch (error) {
    // STORAGE.md §10: read-only commands put "not an SQLite database" in their report instead of failing on it.
    const unreadable = command === 'up' ? undefined : unreadableFile(values.db!, error);
    if (!unreadable) throw error;
    const identity = unreadable.db_identity;
    if (command === 'verify') {
      const { ok, interlock_present, checks } = unreadableReport(unreadable.notADatabase);
      return printVerify({ db_identity: identity, ok, interlock_present, checks });
    }
    // A damaged FactLane file is no NOT_FACTLANE: status fails on it with BACKEND_CORRUPT, as before.
    if (!unreadable.notADatabase) throw error;
    const latest = MaintenanceTarget.shippedMigrations().at(-1)?.version ?? 0;
    // §12.3: NOT_FACTLANE exits 1 with SCHEMA_MISMATCH (§10's table calls the same finding BACKEND_CORRUPT).
    return printStatusReport({
      db_identity: identity, state: 'NOT_FACTLANE', schema_version: 0, latest_version: latest, pending: [],
      applied: [], contract_version: null, interlock_present: false,
    }, 'the file is not an SQLite database');
  }
  try {
    if (command === 'status') return printStatusReport(migrationStatus(target));
    if (command === 'verify') {
      const checks = target.verify();
      return printVerify({
        db_identity: target.dbIdentity, ok: checks.every((c) => c.status === 'PASS'),
        interlock_present: target.findings.interlockPresent, checks,
      });
    }
    // The encoder loads before the migration's transaction, which awaits nothing but its connection (STORAGE.md §6).
    if (target.pending.some((file) => file.version >= 5)) await warmUpTokenizer();
    // Progress on stderr (decision 0023): a live line on a terminal, JSON lines with --json.
    const report = await operationProgress('migrate_up', wantsJson()).run((onStep) => migrateUp(target, {
      backupFile: values.backup ?? null, clock: SYSTEM_CLOCK, onStep, countRecord: fixedTokensOfRow,
    }));
    // STORAGE.md §12.3: a failed check after up exits 1 with the error line and `error_code`, as a refusal does.
    // With nothing pending, up succeeds (§12.3); what its checks found is said, for verify to look at (decision 0050).
    const failed = report.verification.filter((check) => check.status !== 'PASS').map((check) => check.name);
    const failedUp = failed.length > 0 && !report.skipped_reason;
    print(failedUp ? { ...report, error_code: 'VERIFY_FAILED' } : report, () => printUp(report));
    if (failed.length === 0) return EXIT.OK;
    if (!failedUp) {
      process.stderr.write('factlane-migrate: nothing was applied, but the database fails checks: '
        + `${failed.join(', ')}; run factlane-migrate verify\n`);
      return EXIT.OK;
    }
    process.stderr.write(`factlane-migrate: VERIFY_FAILED: checks failed after up: ${failed.join(', ')}\n`);
    return EXIT.FAILED;
  } finally {
    target.close();
  }
});
