import { performance } from 'node:perf_hooks';

/** A benchmark suite: runs once and resolves to a JSON-able report. */
export type BenchSuite = () => Promise<unknown>;

/**
 * The suites by name. Each entry imports its module lazily, so running one suite never loads (or fails
 * on) another's dependencies. Add a suite here with one line.
 */
const SUITES: ReadonlyMap<string, BenchSuite> = new Map<string, BenchSuite>([
  ['storage', async () => (await import('./storage-bench.js')).runStorageBench()],
  ['server', async () => (await import('./server-bench.js')).runServerBench()],
  ['search', async () => (await import('./search-bench.js')).runSearchBench()],
  ['write', async () => (await import('./write-bench.js')).runWriteBench()],
  ['write-queue', async () => (await import('./writer-queue-bench.js')).runWriterQueueBench()],
  ['embed', async () => (await import('./embed-bench.js')).runEmbedBench()],
  ['scopes', async () => (await import('./scopes-bench.js')).runScopesBench()],
  ['tokens', async () => (await import('./token-bench.js')).runTokenBench()],
]);

/**
 * Runs the suites named in argv (all when none), printing one JSON object per suite on stdout:
 * `{ suite, elapsed_s, result }`. Exit codes: 0 all ran, 1 a suite threw (the others still run),
 * 2 an unknown suite name (nothing runs).
 */
async function main(argv: readonly string[]): Promise<number> {
  const names = argv.length > 0 ? argv : [...SUITES.keys()];
  const unknown = names.filter((name) => !SUITES.has(name));
  if (unknown.length > 0) {
    process.stderr.write(
      `unknown bench suite: ${unknown.join(', ')}; known suites: ${[...SUITES.keys()].join(', ')}\n`);
    return 2;
  }
  let exitCode = 0;
  for (const name of names) {
    const started = performance.now();
    try {
      const result = await SUITES.get(name)!();
      const elapsedSeconds = Math.round((performance.now() - started) / 100) / 10;
      process.stdout.write(`${JSON.stringify({ suite: name, elapsed_s: elapsedSeconds, result }, null, 2)}\n`);
    } catch (error) {
      process.stderr.write(
        `bench suite ${name} failed:\n${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      exitCode = 1;
    }
  }
  return exitCode;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
