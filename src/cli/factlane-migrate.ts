#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { SYSTEM_CLOCK } from '../core/time.js';
import { migrateUp, migrationStatus, type StatusReport, type UpReport } from '../maintenance/migrate-operations.js';
import { MaintenanceTarget } from '../storage/maintenance-target.js';
import type { CheckResult } from '../storage/schema-verification.js';
import { EXIT, UsageError, backupLine, runCommand } from './cli-support.js';
import { operationProgress } from './operation-progress.js';

const USAGE = `usage:
  factlane-migrate status --db PATH [--json]
  factlane-migrate up --db PATH (--backup FILE | --no-backup) [--json]
  factlane-migrate verify --db PATH [--json]

exit codes: 0 success; 1 refused or failed; 2 usage; 3 pending migrations (status) or problems found (verify)
`;

const argv = process.argv.slice(2);
const wantsJson = () => argv.includes('--json');

function parse() {
  if (argv.includes('--help') || argv.includes('-h')) return {
    command: 'help' as const, values: {} as Record<string, never>,
  };
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { db: { type: 'string' }, json: { type: 'boolean' }, backup: { type: 'string' }, 'no-backup': {
        type: 'boolean',
      } },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const [command, ...rest] = parsed.positionals;
  if (command !== 'status' && command !== 'up' && command !== 'verify')
    throw new UsageError(command ? `unknown command ${command}` : 'a command is required');
  if (rest.length > 0) throw new UsageError(`unexpected argument ${rest[0]}`);
  if (!parsed.values.db) throw new UsageError('--db PATH is required');
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
  for (const row of report.applied) out('applied',
    `${String(row.version).padStart(4, '0')}_${row.name}  checksum ${row.checksum_ok ? 'ok' : 'MISMATCH'}`);
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

await runCommand('factlane-migrate', USAGE, wantsJson, async () => {
  const { command, values } = parse();
  if (command === 'help') {
    process.stdout.write(USAGE);
    return EXIT.OK;
  }
  const target = MaintenanceTarget.open({ dbPath: values.db!, lease: command === 'up' ? 'exclusive' : 'shared' });
  try {
    if (command === 'status') {
      const report = migrationStatus(target);
      // STORAGE.md §12.3: a refused state exits 1 after its report, with `error_code` in the JSON report.
      const refused = report.state !== 'PENDING' && report.state !== 'UP_TO_DATE';
      print(refused ? { ...report, error_code: 'SCHEMA_MISMATCH' } : report, () => printStatus(report));
      if (report.state === 'PENDING') return EXIT.PROBLEMS;
      if (refused) {
        process.stderr.write(`factlane-migrate: SCHEMA_MISMATCH: database state is ${report.state}\n`);
        return EXIT.FAILED;
      }
      return EXIT.OK;
    }
    if (command === 'verify') {
      const checks = target.verify();
      const ok = checks.every((c) => c.status === 'PASS');
      print({ db_identity: target.dbIdentity, ok, interlock_present: target.findings.interlockPresent, checks }, () => {
        process.stdout.write(`verify: ${ok ? 'all checks passed' : 'PROBLEMS FOUND'}; interlock `
          + `${target.findings.interlockPresent ? 'PRESENT' : 'absent'}\n`);
        printChecks(checks);
      });
      return ok ? EXIT.OK : EXIT.PROBLEMS;
    }
    // Progress on stderr (decision 0023): a live line on a terminal, JSON lines with --json.
    const report = await operationProgress('migrate_up', wantsJson()).run((onStep) => migrateUp(target, {
      backupFile: values.backup ?? null, clock: SYSTEM_CLOCK, onStep,
    }));
    // STORAGE.md §12.3: a failed check after up exits 1 with the error line and `error_code`, as a refusal does.
    const failed = report.verification.filter((check) => check.status !== 'PASS').map((check) => check.name);
    print(failed.length > 0 ? { ...report, error_code: 'VERIFY_FAILED' } : report, () => printUp(report));
    if (failed.length === 0) return EXIT.OK;
    process.stderr.write(`factlane-migrate: VERIFY_FAILED: checks failed after up: ${failed.join(', ')}\n`);
    return EXIT.FAILED;
  } finally {
    target.close();
  }
});
