#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { SYSTEM_CLOCK } from '../core/time.js';
import { writeVerifiedBackup } from '../maintenance/backup-operation.js';
import { verifyBackup, verifyDatabase, type VerifyReport } from '../maintenance/verify-operation.js';
import { MaintenanceTarget } from '../storage/maintenance-target.js';
import { EXIT, UsageError, runCommand } from './cli-support.js';

const USAGE = `usage:
  factlane-admin backup --db PATH --out FILE [--json]
  factlane-admin verify (--db PATH | --backup FILE) [--json]

restore, audit, housekeep, reembed and recover are not in this build yet.
exit codes: 0 success; 1 refused or failed; 2 usage; 3 verify found problems
`;

const argv = process.argv.slice(2);
const wantsJson = () => argv.includes('--json');

function parse() {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: {
      db: { type: 'string' }, out: { type: 'string' }, backup: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
    } });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const [command, ...rest] = parsed.positionals;
  if (parsed.values.help) return { command: 'help', values: parsed.values };
  if (rest.length > 0) throw new UsageError(`unexpected argument ${rest[0]}`);
  if (command === 'backup') {
    if (!parsed.values.db || !parsed.values.out || parsed.values.backup) throw new UsageError('backup needs --db PATH and --out FILE');
  } else if (command === 'verify') {
    if (Boolean(parsed.values.db) === Boolean(parsed.values.backup) || parsed.values.out) throw new UsageError('verify needs exactly one of --db PATH and --backup FILE');
  } else {
    throw new UsageError(command ? `unknown or unavailable command ${command}` : 'a command is required');
  }
  return { command, values: parsed.values };
}

function printVerify(report: VerifyReport): void {
  process.stdout.write(`verify: ${report.ok ? 'all checks passed' : 'PROBLEMS FOUND'}; interlock ${report.interlock_present ? 'PRESENT' : 'absent'}\n`);
  for (const check of report.checks) process.stdout.write(`  ${check.status}  ${check.name.padEnd(24)} ${check.detail}\n`);
}

await runCommand('factlane-admin', USAGE, wantsJson, async () => {
  const { command, values } = parse();
  if (command === 'help') {
    process.stdout.write(USAGE);
    return EXIT.OK;
  }
  if (command === 'verify' && values.backup) {
    const report = verifyBackup(values.backup, MaintenanceTarget.shippedMigrations());
    if (wantsJson()) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else printVerify(report);
    return report.ok ? EXIT.OK : EXIT.PROBLEMS;
  }
  const target = MaintenanceTarget.open({ dbPath: values.db!, lease: 'shared' });
  try {
    if (command === 'verify') {
      const report = { db_identity: target.dbIdentity, ...verifyDatabase(target) };
      if (wantsJson()) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      else printVerify(report);
      return report.ok ? EXIT.OK : EXIT.PROBLEMS;
    }
    const manifest = await writeVerifiedBackup(target, values.out!, SYSTEM_CLOCK);
    if (wantsJson()) process.stdout.write(`${JSON.stringify({ db_identity: target.dbIdentity, manifest }, null, 2)}\n`);
    else process.stdout.write(`backup written and verified: ${manifest.file_bytes} bytes, sha256 ${manifest.file_sha256}\n`);
    return EXIT.OK;
  } finally {
    target.close();
  }
});
