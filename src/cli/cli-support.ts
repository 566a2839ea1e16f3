import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { PUBLIC_CONTRACT_REVISION, STORAGE_CONTRACT_VERSION } from '@factlane/schema';
import { AdapterError } from '../core/adapter-error.js';
import { isSecretLike } from '../core/identifiers.js';
import { MIGRATIONS_DIR, PACKAGE_VERSION } from '../core/package-info.js';
import { backupProblems, type BackupManifest } from '../maintenance/backup-operation.js';
import { Interrupted } from '../maintenance/operation-signals.js';
import { MigrationFileError, loadMigrationFiles } from '../storage/migration-files.js';

/** Exit codes shared by the operator commands (STORAGE.md §12.3, OPERATIONS.md §1). */
export const EXIT = Object.freeze({ OK: 0, FAILED: 1, USAGE: 2, PROBLEMS: 3 });

/**
 * The four versions of OPERATIONS.md §6.1, one a line, the first naming `program`: what `--version` prints for
 * `factlane`, `factlane-migrate` and `factlane-admin` alike, so an operator reads the same release from each. With
 * `json`, the operator commands' `--json`, one JSON report of the same values.
 */
export function versionText(program: string, json = false): string {
  const versions = {
    command: program, package_version: PACKAGE_VERSION, public_contract_revision: PUBLIC_CONTRACT_REVISION,
    storage_contract_version: STORAGE_CONTRACT_VERSION,
    schema_version: loadMigrationFiles(MIGRATIONS_DIR).at(-1)?.version ?? 0,
  };
  if (json) return `${JSON.stringify(versions, null, 2)}\n`;
  return `${program} ${versions.package_version}\npublic contract revision ${versions.public_contract_revision}\n`
    + `storage contract version ${versions.storage_contract_version}\nschema version ${versions.schema_version}\n`;
}

/**
 * How a backup's line begins: "backup written and verified", or, when its verification or audit recorded failed
 * checks (OPERATIONS.md §4.1 step 3 keeps such a copy), "backup written; its checks FAILED: ..." with their names.
 */
export function backupLine(manifest: BackupManifest): string {
  const problems = backupProblems(manifest);
  if (problems.length === 0) return 'backup written and verified';
  return `backup written; its checks FAILED: ${problems.join(', ')} (restore refuses a copy that fails verify)`;
}

/** The default database: `$XDG_DATA_HOME/factlane/factlane.sqlite3`, else under `~/.local/share`. */
export function defaultDatabasePath(env: NodeJS.ProcessEnv = process.env): string {
  const dataHome = env.XDG_DATA_HOME && env.XDG_DATA_HOME.startsWith('/') ? env.XDG_DATA_HOME
    : join(homedir(), '.local', 'share');
  return join(dataHome, 'factlane', 'factlane.sqlite3');
}

/**
 * A usage error: printed with the usage of the command it concerns (`usageFor`), exit 2. `parseError` is the code of
 * node:util's parse error it stands for, if any; that error itself is not kept, its text may quote a secret.
 */
export class UsageError extends Error {
  override name = 'UsageError';
  readonly parseError: string | undefined;

  constructor(message: string, parseError?: string) {
    super(withoutSecrets(message));
    this.parseError = parseError;
  }
}

/**
 * node:util parseArgs, strict, for every command of the package: a parse failure is a UsageError (with the code of
 * Node's error), and so is a value flag given twice (docs/decisions/0029-a-flag-given-twice.md). parseArgs alone keeps
 * the last value silently, so a host entry or a script that gained a second `--db` or `--write-profile` would run on
 * the one its owner did not mean. A flag declared `multiple` may repeat, and so may a boolean.
 */
export function parseFlags<const T extends Omit<ParseArgsConfig, 'strict' | 'tokens'>>(
  config: T,
): ReturnType<typeof parseArgs<T & { strict: true; tokens: true }>> {
  let parsed: ReturnType<typeof parseArgs<T & { strict: true; tokens: true }>>;
  try {
    parsed = parseArgs({ ...config, strict: true, tokens: true });
  } catch (error) {
    throw new UsageError((error as Error).message, (error as NodeJS.ErrnoException).code);
  }
  const seen = new Set<string>();
  for (const token of parsed.tokens ?? []) {
    if (token.kind !== 'option' || token.value === undefined) continue;
    if (config.options?.[token.name]?.multiple !== true && seen.has(token.name))
      throw new UsageError(`--${token.name} was given more than once; give it once`);
    seen.add(token.name);
  }
  return parsed;
}

/**
 * A usage message with any secret-like argument it quotes (node:util parseArgs quotes the token it could not take)
 * replaced by `[redacted]`: stderr reaches logs, and a stray key must not (CONTRACT.md §9.4).
 */
function withoutSecrets(message: string): string {
  if (!isSecretLike(message)) return message;
  const redacted = message.split(/([\s'"]+)/).map((part) => (isSecretLike(part) ? '[redacted]' : part)).join('');
  return isSecretLike(redacted) ? 'an argument that looks like a secret (a key, token or password) is not repeated here'
    : redacted;
}

/**
 * A flag's whole number written in decimal digits, from `min` to `max` (at most 2^53 - 1, the largest a report can
 * carry exactly), else a usage error naming the range.
 */
export function wholeNumber(
  flag: string, text: string | undefined, min: number, max = Number.MAX_SAFE_INTEGER,
): number {
  const value = text !== undefined && /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max)
    throw new UsageError(`--${flag} must be a whole number from ${min} to ${max}`);
  return value;
}

/**
 * Runs a command's main function and turns its outcome into an exit code: governed errors print one
 * line `<command>: <CODE>: <message>` on stderr (and `error_code` on stdout with --json), a run stopped by a signal
 * its message (and `interrupted_by` with --json), usage errors exit 2, anything unexpected keeps its stack on stderr
 * and exits 1.
 */
export async function runCommand(
  command: string, usage: string, json: () => boolean, main: () => Promise<number>,
): Promise<never> {
  ignoreClosedStdout();
  let code: number;
  try {
    code = await main();
  } catch (error) {
    if (error instanceof UsageError) {
      // Operator commands need --db; say where the server keeps the database when started without one.
      const where = /--db PATH/.test(error.message)
        ? ` (a server started without --db uses ${defaultDatabasePath()})` : '';
      process.stderr.write(`${command}: ${error.message}${where}\n${usageFor(usage, command, process.argv.slice(2))}`);
      code = EXIT.USAGE;
    } else if (error instanceof AdapterError) {
      process.stderr.write(`${command}: ${error.code}: ${error.message}\n`);
      if (json())
        process.stdout.write(`${JSON.stringify({
          error_code: error.code, message: error.message, retryable: error.retryable,
        })}\n`);
      code = EXIT.FAILED;
    } else if (error instanceof Interrupted) {
      process.stderr.write(`${command}: ${error.message}\n`);
      // --json prints one report on stdout (OPERATIONS.md §1), a stopped run too: a script reads why it ended.
      if (json()) process.stdout.write(`${JSON.stringify({ interrupted_by: error.signal, message: error.message })}\n`);
      code = EXIT.FAILED;
    } else if (error instanceof MigrationFileError) {
      process.stderr.write(`${command}: SCHEMA_MISMATCH: ${error.message}\n`);
      code = EXIT.FAILED;
    } else {
      process.stderr.write(`${command}: internal error\n${(error as Error)?.stack ?? String(error)}\n`);
      code = EXIT.FAILED;
    }
  }
  process.exitCode = code;
  // Let stdout drain instead of process.exit(), which can cut a piped report short.
  return undefined as never;
}

/**
 * What a usage error prints under its message: the usage lines of the command `argv` names (the first word of it that
 * `usage` lists as a command, with the lines that continue them), and where the rest is; the whole text when `argv`
 * names none, so a mistyped command still shows every command.
 */
function usageFor(usage: string, program: string, argv: readonly string[]): string {
  const commands = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of usage.split('\n')) {
    if (line.startsWith(`  ${program} `)) {
      const name = line.slice(program.length + 3).split(' ')[0]!;
      current = commands.get(name) ?? [];
      commands.set(name, current);
      current.push(line);
    } else if (current !== undefined && /^ {3,}\S/.test(line)) current.push(line);
    else current = undefined;
  }
  const named = argv.find((arg) => commands.has(arg));
  if (named === undefined) return usage;
  const pointer = `(${program} --help lists every command, its notes and exit codes)`;
  return `usage:\n${commands.get(named)!.join('\n')}\n${pointer}\n`;
}

/**
 * A reader that stops early (`factlane-admin audit | head -3`) closes the pipe: the rest of the report has nowhere to
 * go, and that is no failure of the command. Once stdout reports EPIPE, its later errors are ignored too (writes to
 * the closed stream), so the command ends with its own exit code and nothing on stderr. Other errors still throw.
 */
function ignoreClosedStdout(): void {
  let closed = false;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') closed = true;
    if (!closed) throw error;
  });
}
