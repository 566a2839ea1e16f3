import { realpathSync } from 'node:fs';
import { TOOL_NAMES, fullToolReference, toolReference, type ToolName } from '@factlane/schema';
import { MemoryAdapter } from '../adapter/memory-adapter.js';
import { warmUpTokenizer } from '../adapter/token-measure.js';
import { prepareSimhash } from '../storage/simhash-projection.js';
import { AdapterError } from '../core/adapter-error.js';
import { createStderrLogger } from '../core/logger.js';
import { PACKAGE_VERSION } from '../core/package-info.js';
import { SYSTEM_CLOCK, formatTimestamp } from '../core/time.js';
import { freshBindingJson } from '../embedding/embedding-binding.js';
import { EMBEDDING_PROFILES } from '../embedding/embedding-profiles.js';
import { createProvider } from '../embedding/provider-factory.js';
import { MemoryGateway } from '../gateway/memory-gateway.js';
import { connectStdio, createFactLaneServer } from '../server/factlane-server.js';
import { MigrationFileError } from '../storage/migration-files.js';
import { SQLiteVecEngine } from '../storage/sqlite-vec-engine.js';
import { runDemo } from './factlane-demo.js';
import { isUsageFailure, parseLaunchOptions, type LaunchOptions } from './launcher-options.js';
import { UsageError, versionText } from './cli-support.js';
import { onStopSignal, releaseStopSignals } from './stop-signals.js';

const USAGE = `usage: factlane --host-id LABEL [--db PATH] [--write-profile P] [--profile ID] [options]
       factlane setup codex|claude-code|hermes [--db PATH] [--write-profile P] [--project-id ID] [--print] [--force]
       factlane --help | --version | --help-tools | --help-tool NAME
       factlane demo [--keep]      a guided first run on a temporary database

Speaks MCP over stdio with five tools: ${TOOL_NAMES.join(', ')}.

  --db PATH                   database file (default $XDG_DATA_HOME/factlane/factlane.sqlite3)
  --host-id LABEL             the host this server runs for (required), e.g. codex
  --write-profile P           read-only (default), delegated-candidate, owner-current, repo-verifier, automated-verifier
  --profile ID                embedding profile (default local-hash-384)
  --ollama-url URL            loopback Ollama (default http://127.0.0.1:11434)
  --binding-source LABEL      host binding source label (default explicit-launcher)
  --project-id ID, --workflow-id ID, --agent-id ID      bound context, each with its source label:
  --project-id-source LABEL, --workflow-id-source LABEL, --agent-id-source LABEL
  --context-binding-source LABEL                        (default explicit-launcher)
  --tokenizer-path PATH       accepted and ignored: tokens are counted with the bundled o200k_base

Host configuration (Codex, ~/.codex/config.toml):
  [mcp_servers.factlane]
  command = "/absolute/path/to/factlane"
  args = ["--db", "/absolute/state/factlane.sqlite3", "--host-id", "codex"]
factlane setup HOST writes this entry for you (factlane setup --help).

exit codes: 0 clean shutdown or help; 1 startup failure; 2 usage error
`;

const DEMO_HELP = `Takes a temporary database through the fact lifecycle over stdio, with two launched servers: an agent
(delegated-candidate) submits a Candidate and the owner (owner-current) promotes it, each step printed with its
answer. The database is removed at the end; --keep keeps it.
exit codes: 0 every step answered as the contract says; 1 otherwise; 2 usage error
`;

const SHUTDOWN_GRACE_MS = 5000;
/** Set to `off` by the write bench for its comparison run only. */
const BENCH_WRITER_QUEUE_ENV = 'FACTLANE_BENCH_WRITER_QUEUE';
const logger = createStderrLogger('factlane');

function printHelp(options: LaunchOptions): number {
  if (options.mode === 'help') process.stdout.write(USAGE);
  if (options.mode === 'version') process.stdout.write(versionText('factlane'));
  if (options.mode === 'help-tools') process.stdout.write(fullToolReference());
  if (options.mode === 'help-tool') {
    if (!(TOOL_NAMES as readonly string[]).includes(options.helpTool!)) {
      process.stderr.write(`factlane: unknown tool; one of: ${TOOL_NAMES.join(', ')}\n`);
      return 2;
    }
    process.stdout.write(toolReference(options.helpTool as ToolName));
  }
  return 0;
}

const STOPPED = Symbol('stopped');

async function serve(options: LaunchOptions): Promise<void> {
  // A stop signal that comes while the server starts (about a second; held since the launcher's first line, see
  // stop-signals.ts) is kept, not left to Node's default, which ends the process by the signal with the database half
  // opened: once storage is open it stops cleanly, exit 0.
  let stopRequested = false;
  let stopNow: () => void = () => {};
  const stopped = new Promise<typeof STOPPED>((resolve) => { stopNow = () => resolve(STOPPED); });
  let onStop: () => unknown = () => {
    stopRequested = true;
    stopNow();
  };
  onStopSignal(() => onStop());
  if (options.tokenizerPathGiven)
    logger.info('--tokenizer-path is accepted and ignored: tokens are measured with the bundled o200k_base');
  // Loaded while the database opens, and awaited before initialize is answered: the first store of a fresh server
  // took 186 ms when it met the load in progress, 21 ms after it (docs/decisions/0026-ready-before-initialize.md).
  const tokenizerReady = warmUpTokenizer();
  const profile = EMBEDDING_PROFILES[options.profileId]!;
  const provider = createProvider(profile.profileId, options.ollamaUrl);
  // A new database with an Ollama profile waits for the provider's status first (up to its request timeouts, minutes):
  // a stop then ends the start at once, before any file is created (STORAGE.md §10 step 3), exit 0.
  const statusOrStop = async () => {
    const status = await Promise.race([provider.statusCheck(), stopped]);
    if (status === STOPPED) process.exit(0);
    return status;
  };
  const engine = await SQLiteVecEngine.open({
    dbPath: options.dbPath,
    newDatabaseBinding: async () => ({
      vectorDimension: profile.outputDimension,
      bindingJson: freshBindingJson(profile, await statusOrStop(), formatTimestamp(SYSTEM_CLOCK())),
    }),
    // Only the write bench turns the queue off, to measure SQLite's busy handling alone beside it
    // (docs/decisions/0018); it is no flag, and off changes latency, never an outcome.
    writerQueue: { enabled: process.env[BENCH_WRITER_QUEUE_ENV] !== 'off' },
    logger,
    // A stop while another writer holds the database ends the open's busy waits: exit 0 (CONTRACT.md §16.2), not
    // BACKEND_BUSY and exit 1 some 36 s later.
    stopped,
  }).catch((error: unknown) => {
    if (stopRequested) process.exit(0);
    throw error;
  });
  const gateway = new MemoryGateway({
    adapter: new MemoryAdapter({
      engine, provider, writeProfile: options.writeProfile, hostId: options.hostBinding!.host_id,
    }),
    hostBinding: options.hostBinding!, contextBinding: options.contextBinding, transport: 'stdio',
  });
  const inFlight = new Set<Promise<unknown>>();
  const trackedGateway = {
    handle(operation: string, request: unknown) {
      const pending = gateway.handle(operation, request);
      inFlight.add(pending);
      void pending.finally(() => inFlight.delete(pending)).catch(() => {});
      return pending;
    },
  };
  const server = createFactLaneServer({ gateway: trackedGateway, version: PACKAGE_VERSION, logger });
  // The SimHash planes, and the code compiled: built now rather than by a write holding the writer lock.
  prepareSimhash(profile.outputDimension);
  await tokenizerReady;
  if (stopRequested) {
    await engine.close();
    process.exit(0);
  }
  const transport = await connectStdio(server);
  if (process.stdin.isTTY) {
    logger.info(`speaks MCP on stdio (database ${engine.path}, profile ${profile.profileId}, write profile `
      + `${options.writeProfile}); it is meant to be launched by an MCP host: see factlane --help for a host `
      + `configuration. Press Ctrl-D to quit.`);
  }
  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    // Not process.stdin.pause(): a send waiting on a full stdout resumed input when it drained (stop 52).
    transport.stopReading();
    engine.stopWaiting(SHUTDOWN_GRACE_MS);
    const grace = new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref());
    await Promise.race([Promise.allSettled([...inFlight]), grace]);
    // A settled call still has its answer to frame and write: let the SDK's continuations run, then wait until
    // stdout has taken every byte written so far (process.exit would drop a pipe write still queued).
    await Promise.race([answersWritten(), grace]);
    await server.close().catch(() => {});
    await engine.close();
    process.exit(0);
  };
  process.stdin.on('end', shutdown);
  // A host that goes away closes its end of stdout, and the next answer fails with EPIPE: the end of the session,
  // as closing stdin is (CONTRACT.md §16.2), not a fault. In-flight calls finish, storage closes, exit 0.
  process.stdout.on('error', shutdown);
  onStop = shutdown;
  if (stopRequested) await shutdown(); // a signal that came while stdio was being connected
}

/** Resolves once the pending microtasks and I/O callbacks ran and stdout flushed what was written before. */
async function answersWritten(): Promise<void> {
  for (let turn = 0; turn < 3; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  if (process.stdout.destroyed) return;
  await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
}

/** `factlane demo [--keep]`: the guided first run; exit 0 when every step answered as the contract says. */
async function demo(args: readonly string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`usage: factlane demo [--keep]\n\n${DEMO_HELP}`);
    return;
  }
  const unknown = args.find((arg) => arg !== '--keep');
  if (unknown !== undefined) {
    process.stderr.write(`factlane: ${new UsageError(`demo takes only --keep, not ${unknown}`).message}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const launcher = realpathSync(process.argv[1]!);
  try {
    const write = (text: string) => process.stdout.write(text);
    process.exitCode = await runDemo({ launcher, keep: args.includes('--keep'), write });
  } catch (error) {
    process.stderr.write(`factlane: demo failed: ${(error as Error).message}\n`);
    process.exitCode = 1;
  }
}

/** The launcher proper (CONTRACT.md §16): flags, then help output or the server. */
async function launch(args: readonly string[]): Promise<void> {
  let options: LaunchOptions;
  try {
    options = parseLaunchOptions(args);
  } catch (error) {
    if (!isUsageFailure(error)) throw error;
    const code = error instanceof AdapterError ? `${error.code}: ` : '';
    process.stderr.write(`factlane: ${code}${(error as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  if (options.mode !== 'serve') releaseStopSignals();
  try {
    if (options.mode === 'serve') await serve(options);
    else process.exitCode = printHelp(options);
  } catch (error) {
    if (error instanceof AdapterError) {
      // CONTRACT.md §16.2: the line may name the database path the operator gave (or the default it stands for).
      process.stderr.write(`factlane: ${error.code}: ${error.message} (database ${options.dbPath})\n`);
    } else if (error instanceof MigrationFileError) {
      // The server and --version read the shipped migrations, which an altered install refuses (STORAGE.md §12.1).
      process.stderr.write(`factlane: SCHEMA_MISMATCH: ${error.message}\n`);
    } else {
      process.stderr.write(`factlane: startup failed\n${(error as Error)?.stack ?? String(error)}\n`);
    }
    process.exit(1);
  }
}

/** The command line's command. A launch never has a positional argument, so a subcommand in argv[0] changes it. */
async function runCommand(argv: string[]): Promise<void> {
  if (argv[0] === 'setup' || argv[0] === 'demo') releaseStopSignals();
  if (argv[0] === 'setup') {
    // Imported on demand: the TOML and YAML libraries are not run at every server start.
    const { runHostSetup } = await import('./host-setup.js');
    await runHostSetup(argv.slice(1), process.argv[1]!);
  } else if (argv[0] === 'demo') {
    await demo(argv.slice(1));
  } else {
    await launch(argv);
  }
}

// Not awaited at the top level: the launcher is bundled as CommonJS (decision 0047). A rejection ends the process
// with its stack and status 1, as it did there, whatever Node's --unhandled-rejections says.
runCommand(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
  process.exit(1);
});
