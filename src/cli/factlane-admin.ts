#!/usr/bin/env node
import { realpathSync } from 'node:fs';
import { SYSTEM_CLOCK } from '../core/time.js';
import { EMBEDDING_PROFILES } from '../embedding/embedding-profiles.js';
import { createProvider } from '../embedding/provider-factory.js';
import { auditDatabase, unreadableAudit } from '../maintenance/audit-operation.js';
import { writeVerifiedBackup } from '../maintenance/backup-operation.js';
import { restoreVerifiedBackup } from '../maintenance/restore-operation.js';
import { housekeep, type HousekeepRequest } from '../maintenance/housekeep-operation.js';
import { rowTokenRecounter } from '../adapter/public-record.js';
import { validateScope } from '../adapter/request-scope.js';
import { AdapterError } from '../core/adapter-error.js';
import { isUuid } from '../core/identifiers.js';
import { recoverDatabase } from '../maintenance/recover-operation.js';
import { buildRecoveryPlan, writeRecoveryPlan } from '../maintenance/recovery-plan-builder.js';
import { reembedDatabase } from '../maintenance/reembed-operation.js';
import { unreadableFile, unreadableReport, verifyBackup, verifyDatabase } from '../maintenance/verify-operation.js';
import { MaintenanceTarget, dbIdentity } from '../storage/maintenance-target.js';
import { printAudit, printBackup, printHousekeep, printReembed, printRestore, printVerify } from './admin-output.js';
import { EXIT, UsageError, parseFlags, runCommand, versionText, wholeNumber } from './cli-support.js';
import { isLoopbackOllamaUrl } from './launcher-options.js';
import { operationProgress, recoveryStep, reembedBatchStep, type ProgressOperation } from './operation-progress.js';
import { REVIEW_NOTES, REVIEW_OPTIONS, REVIEW_USAGE, parseReviewCommand, rejectReviewFlags } from './review-flags.js';

const USAGE = `usage:
  factlane-admin backup --db PATH --out FILE [--json]
  factlane-admin restore --from FILE --db PATH [--json]
  factlane-admin verify (--db PATH | --backup FILE) [--json]
  factlane-admin reembed --db PATH --profile ID [--ollama-url URL] [--dry-run] [--json]
  factlane-admin audit --db PATH [--json]
  factlane-admin housekeep --db PATH --scope SCOPE [--project-id ID] [--worktree-id ID] [--workflow-id ID]
                           [--agent-id ID] --max-records N --required-free-bytes B [--json]
${REVIEW_USAGE}  factlane-admin recover plan --db PATH --memory-id ID [--memory-id ID ...] [--incident-class S1|M1]
                              --out PLAN.json [--json]
  factlane-admin recover --db PATH --plan PLAN.json --confirm OPERATION_ID --receipt RECEIPT.json
                         [--state STATE.json] [--json]
  factlane-admin --version

restore writes a new database only: PATH, PATH-wal, PATH-shm and PATH-journal must not exist
reembed needs every FactLane process on the database stopped;
  profiles: ${Object.keys(EMBEDDING_PROFILES).join(', ')}
housekeep compacts at most N ready SUPERSEDED records of one exact scope, only while free space is below B
${REVIEW_NOTES}recover purges the records of a plan for good (docs/operations.md, "Operations: incident recovery"):
  stop every host first, run as root
exit codes: 0 success; 1 refused or failed; 2 usage; 3 verify or audit found problems,
  or recover held without mutating;
  4 recover committed but sealing is incomplete (rerun the same plan)
`;

const argv = process.argv.slice(2);
const wantsJson = () => argv.includes('--json');

function parse() {
  const parsed = parseFlags({ args: argv, allowPositionals: true, options: {
    db: { type: 'string' }, out: { type: 'string' }, backup: { type: 'string' }, from: { type: 'string' },
    json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' },
    profile: { type: 'string' }, 'ollama-url': { type: 'string' }, 'dry-run': { type: 'boolean' },
    plan: { type: 'string' }, confirm: { type: 'string' }, receipt: { type: 'string' }, state: { type: 'string' },
    'incident-class': { type: 'string' }, 'memory-id': { type: 'string', multiple: true },
    ...Object.fromEntries(HOUSEKEEP_FLAGS.map((flag) => [flag, { type: 'string' }])),
    ...REVIEW_OPTIONS,
  } });
  const [command, ...rest] = parsed.positionals;
  if (parsed.values.help) return { command: 'help', values: parsed.values };
  if (parsed.values.version) return { command: 'version', values: parsed.values };
  if (command === 'candidates' || command === 'promote') return {
    command, values: parsed.values, review: parseReviewCommand(command, rest, parsed.values),
  };
  rejectReviewFlags(command, parsed.values);
  const subcommand = command === 'recover' && rest[0] === 'plan' ? rest.shift() : undefined;
  if (rest.length > 0) throw new UsageError(`unexpected argument ${rest[0]}`);
  const recoverFlags = [...RECOVER_FLAGS, 'memory-id']
    .filter((flag) => parsed.values[flag as keyof typeof parsed.values] !== undefined);
  if (command !== 'recover' && recoverFlags.length > 0) throw new UsageError(`--${recoverFlags[0]} belongs to recover`);
  if (command !== 'restore' && parsed.values.from !== undefined) throw new UsageError('--from belongs to restore');
  const housekeepFlags = HOUSEKEEP_FLAGS.filter((flag) =>
    parsed.values[flag as keyof typeof parsed.values] !== undefined);
  if (command !== 'housekeep' && housekeepFlags.length > 0)
    throw new UsageError(`--${housekeepFlags[0]} belongs to housekeep`);
  const reembedFlags = ['profile', 'ollama-url', 'dry-run'].filter((flag) =>
    parsed.values[flag as keyof typeof parsed.values] !== undefined);
  if (command !== 'reembed' && reembedFlags.length > 0) throw new UsageError(`--${reembedFlags[0]} belongs to reembed`);
  if (command === 'reembed') {
    const { db, profile, out, backup } = parsed.values;
    if (!db || !profile || out || backup) throw new UsageError('reembed needs --db PATH and --profile ID');
    if (!Object.hasOwn(EMBEDDING_PROFILES, profile))
      throw new UsageError(`--profile must be one of: ${Object.keys(EMBEDDING_PROFILES).join(', ')}`);
    if (parsed.values['ollama-url'] !== undefined && !isLoopbackOllamaUrl(parsed.values['ollama-url'])) {
      throw new UsageError('--ollama-url must be http://127.0.0.1[:port] or http://[::1][:port] with no path, user, '
        + 'query or fragment');
    }
  } else if (command === 'recover' && subcommand === 'plan') {
    const { db, out, plan, confirm, receipt, state } = parsed.values;
    if (!db || !out || !parsed.values['memory-id']?.length || plan || confirm || receipt || state) {
      throw new UsageError('recover plan needs --db PATH, --out PLAN.json and at least one --memory-id ID');
    }
    const notUuid = parsed.values['memory-id'].find((memoryId) => !isUuid(memoryId));
    if (notUuid !== undefined) throw new UsageError(`--memory-id must be a UUID, not ${JSON.stringify(notUuid)}`);
    const incidentClass = parsed.values['incident-class'];
    if (incidentClass !== undefined && incidentClass !== 'S1' && incidentClass !== 'M1')
      throw new UsageError('--incident-class must be S1 or M1');
    return { command: 'recover-plan', values: parsed.values };
  } else if (command === 'recover') {
    const { db, plan, confirm, receipt, out } = parsed.values;
    if (!db || !plan || !confirm || !receipt || out || parsed.values['memory-id'] || parsed.values['incident-class']) {
      throw new UsageError(
        'recover needs --db PATH, --plan PLAN.json, --confirm OPERATION_ID and --receipt RECEIPT.json');
    }
  } else if (command === 'restore') {
    if (!parsed.values.from || !parsed.values.db || parsed.values.out || parsed.values.backup)
      throw new UsageError('restore needs --from FILE and --db PATH');
  } else if (command === 'audit') {
    if (!parsed.values.db || parsed.values.out || parsed.values.backup) throw new UsageError('audit needs --db PATH');
  } else if (command === 'housekeep') {
    if (!parsed.values.db || parsed.values.out || parsed.values.backup)
      throw new UsageError('housekeep needs --db PATH');
    return {
      command, values: parsed.values, housekeep: housekeepRequest(parsed.values as Record<string, string | undefined>),
    };
  } else if (command === 'backup') {
    if (!parsed.values.db || !parsed.values.out || parsed.values.backup)
      throw new UsageError('backup needs --db PATH and --out FILE');
  } else if (command === 'verify') {
    if (Boolean(parsed.values.db) === Boolean(parsed.values.backup) || parsed.values.out)
      throw new UsageError('verify needs exactly one of --db PATH and --backup FILE');
  } else {
    throw new UsageError(command ? `unknown or unavailable command ${command}` : 'a command is required');
  }
  return { command, values: parsed.values };
}

const RECOVER_FLAGS = ['plan', 'confirm', 'receipt', 'state', 'incident-class'] as const;
const HOUSEKEEP_FLAGS = [
  'scope', 'project-id', 'worktree-id', 'workflow-id', 'agent-id', 'max-records', 'required-free-bytes',
] as const;

/** The housekeep flags as a request: the scope follows CONTRACT.md §4.2; a violation is a usage error. */
function housekeepRequest(values: Record<string, string | undefined>): HousekeepRequest {
  const fields = {
    scope: values.scope, project_id: values['project-id'], worktree_id: values['worktree-id'],
    workflow_id: values['workflow-id'], agent_id: values['agent-id'],
  };
  let scope;
  try {
    scope = validateScope(Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)));
  } catch (error) {
    if (error instanceof AdapterError) throw new UsageError(`${error.code}: ${error.message}`);
    throw error;
  }
  return {
    scope, maxRecords: wholeNumber('max-records', values['max-records'], 1),
    requiredFreeBytes: wholeNumber('required-free-bytes', values['required-free-bytes'], 0),
  };
}

/** The command's progress on stderr (decision 0023): a live line on a terminal, JSON lines with --json. */
const progress = (operation: ProgressOperation) => operationProgress(operation, wantsJson());

await runCommand('factlane-admin', USAGE, wantsJson, async () => {
  const parsedCommand = parse();
  const { command, values } = parsedCommand;
  if (command === 'help' || command === 'version') {
    process.stdout.write(command === 'help' ? USAGE : versionText('factlane-admin', wantsJson()));
    return EXIT.OK;
  }
  if (parsedCommand.review)
    return (await import('./review-queue.js')).runReviewCommand(parsedCommand.review, wantsJson());
  if (command === 'recover-plan') {
    const { plan, linkedMemories } = buildRecoveryPlan({
      dbPath: values.db!, memoryIds: values['memory-id']!,
      incidentClass: values['incident-class'] as 'S1' | 'M1' | undefined,
    });
    writeRecoveryPlan(values.out!, plan);
    const summary = {
      operation_id: plan.operation_id, target_count: plan.targets.length, linked_memories: linkedMemories,
    };
    if (wantsJson()) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    else {
      process.stdout.write(`recover plan: ${plan.targets.length} target(s) written, operation_id ${plan.operation_id}; `
        + `review the plan, then run recover with --confirm ${plan.operation_id}\n`);
      if (linkedMemories.length > 0) {
        process.stdout.write(`not in the plan, joined to it by REPLACE: memory ${linkedMemories.join(', ')}; recover `
          + 'finds exact copies only, so read them (memory_get REVIEW_HISTORY) and plan again with their --memory-id '
          + 'if they carry the content\n');
      }
    }
    return EXIT.OK;
  }
  if (command === 'recover') {
    const outcome = await progress('recover').run((onStep) => recoverDatabase({
      dbPath: values.db!, planPath: values.plan!, confirm: values.confirm!, receiptPath: values.receipt!,
      statePath: values.state, onPhase: (event) => onStep(recoveryStep(event)),
    }));
    const line = `recover: ${outcome.hold ?? outcome.result}: ${outcome.message}\n`;
    // A hold, a failure or an incomplete sealing is a refusal: its line goes to stderr (OPERATIONS.md §1).
    if (outcome.exit !== EXIT.OK) process.stderr.write(line);
    if (wantsJson()) process.stdout.write(`${JSON.stringify(outcome, null, 2)}\n`);
    else if (outcome.exit === EXIT.OK) process.stdout.write(line);
    return outcome.exit;
  }
  if (command === 'reembed') {
    const provider = createProvider(values.profile!, values['ollama-url'] ?? 'http://127.0.0.1:11434');
    printReembed(await progress('reembed').run((onStep) => reembedDatabase({
      dbPath: values.db!, provider, dryRun: values['dry-run'] === true,
      onStep, onProgress: (batch) => onStep(reembedBatchStep(batch)),
    })), wantsJson());
    return EXIT.OK;
  }
  if (command === 'restore') {
    const report = await progress('restore').run((onStep) => restoreVerifiedBackup({
      from: values.from!, dbPath: values.db!, shipped: MaintenanceTarget.shippedMigrations(), onStep,
      loadRecounter: rowTokenRecounter,
    }));
    printRestore(report, wantsJson());
    return EXIT.OK;
  }
  if (command === 'verify' && values.backup) {
    const checked = verifyBackup(values.backup, MaintenanceTarget.shippedMigrations());
    // Named as verify --db names a database (OPERATIONS.md §1): by db_identity, never by its path.
    const report = { db_identity: dbIdentity(realpathSync(values.backup)), ...checked };
    printVerify(report, wantsJson());
    return report.ok ? EXIT.OK : EXIT.PROBLEMS;
  }
  let target: MaintenanceTarget;
  try {
    target = MaintenanceTarget.open({ dbPath: values.db!, lease: 'shared' });
  } catch (error) {
    // OPERATIONS.md §4.3: "an SQLite file" is one of verify's checks, reported like the others (exit 3); audit,
    // read-only too, reports its checks failed on such a file (STORAGE.md §10).
    const unreadable = command === 'verify' || command === 'audit' ? unreadableFile(values.db!, error) : undefined;
    if (!unreadable) throw error;
    const identity = { db_identity: unreadable.db_identity };
    if (command === 'audit') printAudit({ ...identity, ...unreadableAudit(unreadable.notADatabase) }, wantsJson());
    else printVerify({ ...identity, ...unreadableReport(unreadable.notADatabase) }, wantsJson());
    return EXIT.PROBLEMS;
  }
  try {
    if (command === 'audit') {
      const recount = await rowTokenRecounter();
      const audit = await progress('audit').run(async (onStep) => auditDatabase(target, recount, onStep));
      const report = { db_identity: target.dbIdentity, ...audit };
      printAudit(report, wantsJson());
      return report.ok ? EXIT.OK : EXIT.PROBLEMS;
    }
    if (command === 'housekeep') {
      printHousekeep(await progress('housekeep')
        .run((onStep) => housekeep(target, { ...parsedCommand.housekeep!, onStep })), wantsJson());
      return EXIT.OK;
    }
    if (command === 'verify') {
      const report = { db_identity: target.dbIdentity, ...verifyDatabase(target) };
      printVerify(report, wantsJson());
      return report.ok ? EXIT.OK : EXIT.PROBLEMS;
    }
    const manifest = await progress('backup')
      .run((onStep) => writeVerifiedBackup(target, values.out!, SYSTEM_CLOCK, onStep, rowTokenRecounter));
    printBackup({ db_identity: target.dbIdentity, manifest }, wantsJson());
    return EXIT.OK;
  } finally {
    target.close();
  }
});
