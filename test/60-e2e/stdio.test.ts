import t, { type Test } from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { copyFileSync, existsSync, linkSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { LATEST_PROTOCOL_VERSION, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { fullToolReference, toolReference } from '../../schema/tool-reference.js';
import { parseFlags, UsageError } from '../../src/cli/cli-support.js';
import { isLoopbackOllamaUrl, LAUNCHER_FLAGS } from '../../src/cli/launcher-options.js';
import { MIGRATIONS_DIR, PACKAGE_VERSION } from '../../src/core/package-info.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import { loadMigrationFiles } from '../../src/storage/migration-files.js';
import { FACTLANE_BIN, launchSandbox, sortedJson, startLauncher, textOf } from '../helpers/mcp.js';
import { ADMIN_BIN, downgradeToSchemaOne, MIGRATE_BIN, RawDatabase, runBin } from '../helpers/storage.js';
import { storeRequest } from '../helpers/writes.js';

const TOOL_ORDER = ['memory_search', 'memory_get', 'memory_store', 'memory_update', 'memory_status'];
const modeOf = (path: string) => statSync(path).mode & 0o777;
const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
type Exit = { code: number | null; signal: NodeJS.Signals | null };

/** Starts the built launcher through the SDK stdio client. */
const startServer = (t: Test, args: string[]) => startLauncher(t, args, 'factlane-e2e');

function leaseIsFree(dbPath: string): boolean {
  try {
    MaintenanceTarget.open({ dbPath, lease: 'exclusive' }).close();
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === 'MAINTENANCE_IN_PROGRESS') return false;
    throw error;
  }
}

t.test('the built launcher serves MCP on stdio and exits 0 when its stdin closes', async (t) => {
  const dbPath = join(t.testdir(), 'x.sqlite3');
  const server = await startServer(t, ['--db', dbPath, '--host-id', 'e2e']);
  t.equal(server.client.getServerVersion()?.name, 'factlane');
  const { tools } = await server.client.listTools();
  t.same(tools.map((tool) => tool.name), TOOL_ORDER);

  const result = (await server.client.callTool(
    { name: 'memory_status', arguments: { request: { scope: 'GLOBAL_USER', request_id: 'e2e-1' } } },
  )) as CallToolResult;
  t.notOk(result.isError);
  const text = textOf(result);
  t.equal(text, sortedJson(JSON.parse(text)), 'canonical JSON text');
  t.same(result.structuredContent, JSON.parse(text));
  t.match(result.structuredContent, {
    status: 'OK',
    launcher: { write_profile: 'read-only', permitted_operations: [], max_lifecycle: null },
    audit: { request_id: 'e2e-1', host_binding: {
      host_id: 'e2e', transport: 'stdio', binding_source: 'explicit-launcher', gateway_instance_id: /^[0-9a-f]{32}$/,
    } },
    backend_status: {
      counts: { CANDIDATE: 0, VALIDATED_CURRENT: 0 }, embedding_compatibility: { state: 'COMPATIBLE' },
    },
  });

  t.ok(existsSync(dbPath), 'database created');
  t.equal(modeOf(dbPath), 0o600, 'database file is 0600');
  t.notOk(leaseIsFree(dbPath), 'the running server holds its lease');

  await server.client.close();
  t.same(await server.exited, { code: 0, signal: null }, 'exit 0 on stdin close');
  t.same(server.kills, [], 'the client never had to signal it');
  t.equal(server.stderr(), '', 'nothing on stderr when stdin is not a terminal');
  t.ok(leaseIsFree(dbPath), 'lease released: an exclusive maintenance lease is granted');
});

t.test('on the wire, an envelope result carries its canonical text as structuredContent, written once', async (t) => {
  const child = spawn(process.execPath, [FACTLANE_BIN, '--db', join(t.testdir(), 'x.sqlite3'), '--host-id', 'e2e'], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let stdout = '';
  const lines = (count: number) => new Promise<string[]>((resolve) => {
    const check = () => {
      const done = stdout.split('\n').slice(0, -1);
      if (done.length >= count) { child.stdout.off('data', onData); resolve(done); }
    };
    const onData = (chunk: Buffer) => { stdout += chunk; check(); };
    child.stdout.on('data', onData);
    check();
  });
  const send =
    (message: Record<string, unknown>) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  send({ id: 1, method: 'initialize', params: {
    protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '0' },
  } });
  await lines(1);
  send({ method: 'notifications/initialized' });
  send({ id: 2, method: 'tools/call', params: {
    name: 'memory_status', arguments: { request: { scope: 'GLOBAL_USER', request_id: 'wire-1' } },
  } });
  const [, frame] = await lines(2);
  child.stdin.end();
  t.same(await exited, { code: 0, signal: null });
  const message = JSON.parse(frame!);
  const text = message.result.content[0].text as string;
  t.match(message, {
    jsonrpc: '2.0', id: 2, result: { structuredContent: { status: 'OK', audit: { request_id: 'wire-1' } } },
  });
  t.same(Object.keys(message.result).sort(), ['content', 'structuredContent']);
  t.ok(frame!.includes(`"structuredContent":${text}`), 'the envelope is the canonical text, keys in canonical order');
});

t.test('launcher bindings reach every envelope', async (t) => {
  const dbPath = join(t.testdir(), 'x.sqlite3');
  const server = await startServer(t, [
    '--db', dbPath, '--host-id', 'e2e', '--binding-source', 'ci', '--project-id', 'p1', '--agent-id', 'a1',
    '--agent-id-source', 'cfg',
  ]);
  const result = (await server.client.callTool(
    { name: 'memory_status', arguments: { request: { scope: 'PROJECT' } } },
  )) as CallToolResult;
  t.match(result.structuredContent, { status: 'OK', scope: { scope: 'PROJECT', project_id: 'p1', agent_id: null } });
  t.same((result.structuredContent as { audit: Record<string, unknown> }).audit.context_binding, {
    binding_source: 'explicit-launcher', project_id: 'p1', project_id_source: 'explicit-launcher', agent_id: 'a1',
    agent_id_source: 'cfg',
  });
  t.match(result.structuredContent, { audit: { host_binding: { host_id: 'e2e', binding_source: 'ci' } } });
});

t.test('an existing database starts under an unreachable Ollama profile and reports it', async (t) => {
  const dbPath = join(t.testdir(), 'x.sqlite3');
  const first = await startServer(t, ['--db', dbPath, '--host-id', 'e2e']);
  await first.client.close();
  await first.exited;
  const server = await startServer(t, ['--db', dbPath, '--host-id', 'e2e', '--profile', 'nomic-768']);
  const result = (await server.client.callTool(
    { name: 'memory_status', arguments: { request: { scope: 'GLOBAL_USER' } } },
  )) as CallToolResult;
  t.match(result.structuredContent, {
    status: 'OK',
    provider_status: { available: false, error_code: 'EMBEDDING_UNAVAILABLE' },
    backend_status: { profile: { profile_id: 'nomic-768' }, embedding_compatibility: {
      state: 'INCOMPATIBLE', reason: 'SEMANTIC_IDENTITY_MISMATCH',
    } },
  });
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  t.test(`${signal} shuts the server down cleanly with exit 0`, async (t) => {
    const dbPath = join(t.testdir(), 'x.sqlite3');
    const server = await startServer(t, ['--db', dbPath, '--host-id', 'e2e', '--write-profile', 'owner-current']);
    const result = (await server.client.callTool(
      { name: 'memory_status', arguments: { request: { scope: 'GLOBAL_USER' } } },
    )) as CallToolResult;
    t.match(result.structuredContent, { status: 'OK', launcher: { write_profile: 'owner-current' } });
    server.child.kill(signal);
    t.same(await server.exited, { code: 0, signal: null }, `exit 0 on ${signal}`);
    t.ok(leaseIsFree(dbPath), 'lease released');
  });
}

t.test('a stop while stores wait for a database another process holds: BACKEND_BUSY, exit within 5 s', async (t) => {
  // better-sqlite3 waits out busy_timeout (5 s) on the event loop, so a stop is seen only when that wait ends; the
  // store then paused and retried, and the retry (or the next call in flight) waited 5 s more before the shutdown's
  // timer could run: the exit came 8-28 s after the stop (CONTRACT.md §16.2 gives in-flight calls up to 5 s).
  // The writer queue off (its lock file unusable, or the write bench's switch): a call queued on the connection.
  const cases = [['SIGTERM', 1, 'on'], ['SIGTERM', 3, 'on'], ['stdin EOF', 3, 'on'], ['SIGTERM', 3, 'off']] as const;
  for (const [stop, calls, queue] of cases) {
    const dbPath = join(t.testdir(), `${stop}-${calls}-${queue}.sqlite3`.replace(' ', '-'));
    const server = await startLauncher(
      t, ['--db', dbPath, '--host-id', 'e2e', '--write-profile', 'delegated-candidate'],
      'factlane-e2e', queue === 'off' ? { FACTLANE_BENCH_WRITER_QUEUE: 'off' } : {});
    const holder = new RawDatabase(dbPath);
    holder.exec('BEGIN IMMEDIATE');
    const answers = Array.from({ length: calls }, () => server.client.callTool({ name: 'memory_store',
      arguments: { request: storeRequest() } }, undefined, { timeout: 60_000 }) as Promise<CallToolResult>);
    await new Promise((resolve) => setTimeout(resolve, 2000)); // inside the first store's 5 s busy wait
    const stopped = Date.now();
    if (stop === 'SIGTERM') server.child.kill('SIGTERM');
    else server.child.stdin!.end();
    t.same(await server.exited, { code: 0, signal: null }, `${stop}, ${calls} in flight, queue ${queue}: exit 0`);
    const took = Date.now() - stopped;
    t.ok(took < 5000, `${stop}, ${calls} in flight, queue ${queue}: exit within 5 s of the stop (${took} ms)`);
    for (const answer of answers) {
      t.match((await answer).structuredContent, {
        status: 'BLOCKED', error_code: 'BACKEND_BUSY', audit: { retryable: true }, message: /the server is stopping/,
      }, `${stop}: BACKEND_BUSY naming the stop`);
    }
    holder.exec('ROLLBACK');
    const { n } = holder.prepare('SELECT count(*) AS n FROM adapter_records').get() as { n: number };
    holder.close();
    t.equal(n, 0, `${stop}: nothing was written`);
    t.ok(leaseIsFree(dbPath), `${stop}: lease released`);
  }
});

t.test('a stop while the start waits for a database another process holds: exit 0 at once, not exit 1 at 36 s',
  async (t) => {
  // The start's schema check is a write: it waited out busy_timeout and its retries (about 36 s, STORAGE.md §6) and
  // ended BACKEND_BUSY, exit 1, whatever stop had come meanwhile (CONTRACT.md §16.2 asks for exit 0).
  const dbPath = join(t.testdir(), 'held.sqlite3');
  const first = await startServer(t, ['--db', dbPath, '--host-id', 'e2e']);
  await first.client.close();
  await first.exited;
  const holder = new RawDatabase(dbPath);
  t.teardown(() => holder.close());
  holder.exec('BEGIN IMMEDIATE');
  const child = spawn(process.execPath, [FACTLANE_BIN, '--db', dbPath, '--host-id', 'e2e'],
    { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, sig) => resolve({ code, signal: sig })));
  await new Promise((resolve) => setTimeout(resolve, 1500)); // inside the start's first busy wait
  const stopped = Date.now();
  child.kill('SIGTERM');
  t.same(await exited, { code: 0, signal: null }, 'exit 0');
  // One busy wait that had begun (5 s at most) ends first: a bound on liveness, not a speed target.
  t.ok(Date.now() - stopped < 10_000, `within seconds of the stop (${Date.now() - stopped} ms)`);
  t.notMatch(stderr, /BACKEND_BUSY/, 'no refusal is reported for a stop');
  holder.exec('ROLLBACK');
});

t.test('a call on a line past the 10 MiB read limit gets its error at once; the session goes on', async (t) => {
  // The answer had id null, so the SDK client could not match it to the call and waited for its timeout (60 s).
  const dbPath = join(t.testdir(), 'x.sqlite3');
  const server = await startServer(t, ['--db', dbPath, '--host-id', 'e2e', '--write-profile', 'delegated-candidate']);
  const began = Date.now();
  await t.rejects(server.client.callTool({ name: 'memory_store', arguments: { request: storeRequest({
    fact: 'x'.repeat(11 * 1024 * 1024) }) } }, undefined, { timeout: 20_000 }),
  { code: -32700, message: /a line over 10485760 bytes is not read/ });
  t.ok(Date.now() - began < 15_000, `answered, not timed out (${Date.now() - began} ms)`);
  const status =
    (await server.client.callTool({ name: 'memory_status', arguments: { request: { scope: 'GLOBAL_USER' } } }))
    .structuredContent as { status: string; backend_status: { counts: Record<string, number> } };
  t.match(
    status, { status: 'OK', backend_status: { counts: { CANDIDATE: 0 } } }, 'the session goes on; nothing stored',
  );
});

t.test('a stop signal while the launcher itself loads is held: exit 0, not killed by the signal', async (t) => {
  // The MCP SDK, ajv, kysely and the rest take 100-200 ms to load, during which Node's default ended the process by
  // the signal. A preloaded hook on CommonJS loading sends the signal when the launcher's bundle requires
  // node:child_process (the entry point that holds the signals does not) and holds the load 300 ms, so it lands
  // mid-load.
  const dir = t.testdir();
  writeFileSync(join(dir, 'hook.cjs'), `const Module = require('node:module');
  const load = Module._load;
  Module._load = function (request, ...rest) {
    if (request === 'node:child_process' && !globalThis.sent) {
      globalThis.sent = true;
      process.kill(process.pid, process.env.STOP_SIGNAL);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
    }
    return load.call(this, request, ...rest);
  };\n`);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const dbPath = join(dir, `${signal}.sqlite3`);
    const child = spawn(process.execPath, ['--require', join(dir, 'hook.cjs'), FACTLANE_BIN, '--db', dbPath,
      '--host-id', 'e2e'], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, STOP_SIGNAL: signal } });
    const exited = new Promise<Exit>((resolve) => child.once('exit', (code, sig) => resolve({ code, signal: sig })));
    t.same(await exited, { code: 0, signal: null }, `${signal}: exit 0`);
  }
});

t.test('a stop signal while the server starts is kept: storage opens, closes, exit 0; the file serves again',
  async (t) => {
  // Node's default for SIGTERM ended the process by the signal, the database half opened. The signal goes the moment
  // the database file appears (the engine is creating it), before the schema, the tokenizer and stdio are ready.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const dbPath = join(t.testdir(), `${signal}.sqlite3`);
    const child = spawn(process.execPath, [FACTLANE_BIN, '--db', dbPath, '--host-id', 'e2e'],
      { stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise<Exit>((resolve) => child.once('exit', (code, sig) => resolve({ code, signal: sig })));
    let gone = false;
    void exited.then(() => { gone = true; });
    while (!existsSync(dbPath) && !gone) await new Promise((resolve) => setTimeout(resolve, 1));
    child.kill(signal);
    t.same(await exited, { code: 0, signal: null }, `${signal}: exit 0`);
    t.ok(leaseIsFree(dbPath), `${signal}: lease released`);
    const server = await startServer(t, ['--db', dbPath, '--host-id', 'e2e']);
    const result = (await server.client.callTool({
      name: 'memory_status', arguments: { request: { scope: 'GLOBAL_USER' } },
    })) as CallToolResult;
    t.match(result.structuredContent, { status: 'OK' }, `${signal}: the database serves`);
    await server.client.close();
    await server.exited;
  }
});

t.test('a stop signal while a new database waits for Ollama ends the start at once, exit 0, nothing created',
  async (t) => {
  // The status check may wait minutes (its request timeouts) on an Ollama that accepts and never answers.
  const sockets: Socket[] = [];
  const silent = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => {}); // reset when the server process exits
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    silent.close();
  });
  const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  const dbPath = join(t.testdir(), 'new', 'x.sqlite3');
  const child = spawn(process.execPath, [FACTLANE_BIN, '--db', dbPath, '--host-id', 'e2e', '--profile', 'nomic-768',
    '--ollama-url', url], { stdio: ['pipe', 'pipe', 'pipe'] });
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, sig) => resolve({ code, signal: sig })));
  const asked = new Promise<void>((resolve) => silent.once('connection', () => resolve()));
  await asked;
  const began = Date.now();
  child.kill('SIGTERM');
  t.same(await exited, { code: 0, signal: null }, 'exit 0');
  t.ok(Date.now() - began < 5000, `within seconds (${Date.now() - began} ms)`);
  t.notOk(existsSync(dbPath), 'no database created');
});

t.test('without --db the database goes under $XDG_DATA_HOME, else ~/.local/share', async (t) => {
  for (const [label, unsetXdg] of [['XDG_DATA_HOME', false], ['HOME', true]] as const) {
    const box = launchSandbox(t.testdir());
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '', HOME: box.home, ...(unsetXdg ? {} : { XDG_DATA_HOME: box.xdg })
    };
    const child = spawn(
      process.execPath, [FACTLANE_BIN, '--host-id', 'me'], { cwd: box.cwd, env, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    let stdout = '';
    const answered = new Promise<void>((resolve) => child.stdout.on(
      'data', (chunk) => { stdout += chunk; if (stdout.includes('\n')) resolve(); },
    ));
    child.stdin.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '0' } } })}\n`,
    );
    await Promise.race([answered, exited]);
    child.stdin.end();
    t.same(await exited, { code: 0, signal: null }, `${label}: exit 0 after stdin closes`);
    const lines = stdout.trimEnd().split('\n').map((line) => JSON.parse(line));
    t.match(
      lines, [{ jsonrpc: '2.0', id: 1, result: { serverInfo: { name: 'factlane' } } }],
      `${label}: stdout carries only the JSON-RPC answer`,
    );
    const dataHome = unsetXdg ? join(box.home, '.local', 'share') : box.xdg;
    const dbPath = join(dataHome, 'factlane', 'factlane.sqlite3');
    t.ok(existsSync(dbPath), `${label}: default database created`);
    t.equal(modeOf(join(dataHome, 'factlane')), 0o700, `${label}: parent directory is 0700`);
    t.equal(modeOf(dbPath), 0o600, `${label}: database file is 0600`);
    if (!unsetXdg)
      t.same(box.tree().filter((p) => p.startsWith('home/') || p.startsWith('cwd/')), [], 'nothing under HOME or the '
        + 'working directory');
  }
});

t.test('--tokenizer-path is accepted with one notice; stdin closed at once exits 0', async (t) => {
  const box = launchSandbox(t.testdir());
  const run =
    box.run(['--db', join(box.root, 'x.sqlite3'), '--host-id', 'h', '--tokenizer-path', join(box.root, 'none.json')]);
  t.equal(run.status, 0, run.stderr);
  t.match(run.stderr, /^factlane: info: --tokenizer-path is accepted and ignored[^\n]*\n$/, 'exactly one notice');
  t.equal(run.stdout, '', 'no output without a request');
  t.ok(existsSync(join(box.root, 'x.sqlite3')));
});

t.test('--help-tools and --help-tool print the reference without --db or --host-id and create nothing', async (t) => {
  const box = launchSandbox(t.testdir());
  const before = box.tree();
  const all = box.run(['--help-tools']);
  t.equal(all.status, 0, all.stderr);
  t.equal(all.stdout, fullToolReference(), 'the reference generated from the schemas');
  t.match(all.stdout, /^# FactLane tools \(public contract revision 2\)/);
  for (const name of TOOL_ORDER) t.match(all.stdout, `\n## ${name}\n`, `lists ${name}`);
  t.match(all.stdout, '## CROSS_PROJECT_WORKFLOW matrix');
  t.match(all.stdout, '- `top_k`: integer; optional; default: 5; range: 1..8.', 'a bounded field shows its range');
  t.match(all.stdout, '- `expected_revision`: integer; required; at least 1.', 'a field bounded below says so');
  t.notMatch(all.stdout, '..-', 'no half-open range printed as 1..-');
  const one = box.run(['--help-tool', 'memory_store']);
  t.equal(one.status, 0, one.stderr);
  t.equal(one.stdout, toolReference('memory_store'));
  t.match(one.stdout, /^## memory_store\n/);
  t.match(one.stdout, '{"request":{"scope":"PROJECT"', 'minimal example wrapped in request');
  t.notMatch(one.stdout, '## memory_search', 'only the one tool');
  const unknown = box.run(['--help-tool', 'nope']);
  t.equal(unknown.status, 2, 'unknown tool exits 2');
  t.equal(unknown.stdout, '');
  t.match(unknown.stderr, TOOL_ORDER.join(', '));
  const help = box.run(['--help']);
  t.equal(help.status, 0);
  t.match(help.stdout, /^usage: factlane --host-id LABEL/);
  for (const flag of Object.keys(LAUNCHER_FLAGS)) t.match(help.stdout, `--${flag}`, `--help names --${flag}`);
  t.same(box.tree(), before, 'no file or directory created');
});

t.test('--version prints four version lines', async (t) => {
  const box = launchSandbox(t.testdir());
  const version = box.run(['--version']);
  t.equal(version.status, 0);
  const lines = (program: string) => [
    `${program} ${PACKAGE_VERSION}`, 'public contract revision 2', 'storage contract version 2',
    `schema version ${loadMigrationFiles(MIGRATIONS_DIR).at(-1)!.version}`, '',
  ];
  t.same(version.stdout.split('\n'), lines('factlane'));
  // The operator commands print the same versions under their own names, with or without a command before the flag.
  for (const [program, bin] of [['factlane-migrate', MIGRATE_BIN], ['factlane-admin', ADMIN_BIN]] as const) {
    for (const args of [['--version'], ['status', '--version']]) {
      const run = runBin(bin, args);
      t.equal(run.status, 0, `${program} ${args.join(' ')}`, { stderr: run.stderr });
      t.same(run.stdout.split('\n'), lines(program), `${program} ${args.join(' ')} prints the four versions`);
      t.equal(run.stderr, '', 'and nothing on stderr');
    }
    // With --json, as every report of theirs (OPERATIONS.md §1): the same values, one JSON object.
    const json = runBin(bin, ['--version', '--json']);
    t.equal(json.status, 0, `${program} --version --json`, { stderr: json.stderr });
    t.strictSame(JSON.parse(json.stdout), {
      command: program, package_version: PACKAGE_VERSION, public_contract_revision: 2, storage_contract_version: 2,
      schema_version: loadMigrationFiles(MIGRATIONS_DIR).at(-1)!.version,
    }, `${program} --version --json prints one JSON report`);
  }
});

t.test('--ollama-url is taken as written: only http://127.0.0.1 or http://[::1], a port, no path '
  + '(§14.4)', async (t) => {
  for (const url of [
    'http://127.0.0.1', 'http://127.0.0.1/', 'http://127.0.0.1:11434', 'http://[::1]:1/', 'HTTP://127.0.0.1:65535',
  ]) {
    t.ok(isLoopbackOllamaUrl(url), `accepted: ${url}`);
  }
  const refused = [
    'http://localhost:11434', 'https://127.0.0.1', 'http://127.0.0.1/api', 'http://127.0.0.1/?', 'http://127.0.0.1#x',
    'http://u@127.0.0.1', 'http://127.0.0.1:99999', 'http://127.0.0.1:0', 'http://127.0.0.1:', 'http://127.1:11434',
    'http://2130706433:11434', 'http://0x7f000001:11434', 'http://[0:0:0:0:0:0:0:1]:11434', 'http://127.0.0.1:11434/.',
    'http://127.0.0.1:11434/..', 'http://127.0.0.1:11434/%2e', 'http:127.0.0.1:11434', 'http:\\127.0.0.1:11434',
    ' http://127.0.0.1:11434', 'http://127.0.0.1\t:11434', 'http://127.0.0.1:11434\n'];
  for (const url of refused) t.notOk(isLoopbackOllamaUrl(url), `refused: ${JSON.stringify(url)}`);
});

t.test('parseFlags: a value flag given twice is a usage error; multiple and boolean flags may repeat', async (t) => {
  const options = {
    db: { type: 'string' }, id: { type: 'string', multiple: true }, json: { type: 'boolean' },
  } as const;
  const parse = (...args: string[]) => parseFlags({ args, options, allowPositionals: true });
  t.throws(() => parse('--db', 'a', '--db', 'b'), new UsageError('--db was given more than once; give it once'));
  t.throws(() => parse('--db=a', '--db=a'), { name: 'UsageError' }, 'even with the same value');
  t.same(parse('--id', 'a', '--id', 'b', '--json', '--json', 'x').values, { id: ['a', 'b'], json: true });
  t.same(parse('--db', 'a', 'x').positionals, ['x']);
  const unknown = t.throws(() => parse('--nope')) as UsageError;
  t.equal(unknown.name, 'UsageError');
  t.equal(unknown.parseError, 'ERR_PARSE_ARGS_UNKNOWN_OPTION', 'the code of Node\'s error is kept');
  const secret = `sk-${'Qzxv'.repeat(6)}`;
  const quoted = t.throws(() => parse(`--${secret}`)) as UsageError;
  t.notOk(inspect(quoted, { depth: 5 }).includes(secret), 'a secret-like flag is nowhere in the error');
  t.equal((t.throws(() => parse('--db', 'a', '--db', 'b')) as UsageError).parseError, undefined);
});

t.test('usage errors exit 2 before any file is touched', async (t) => {
  const box = launchSandbox(t.testdir());
  const db = join(box.root, 'new', 'x.sqlite3');
  const before = box.tree();
  const secret = `sk-${'Qzxv'.repeat(6)}`;
  const cases: [string, string[], RegExp][] = [
    ['missing --host-id', ['--db', db], /--host-id LABEL is required/],
    ['unknown flag', ['--db', db, '--host-id', 'h', '--bogus'], /bogus/],
    ['host label with a slash', ['--db', db, '--host-id', 'a/b'], /^factlane: INVALID_HOST_BINDING: /],
    ['bad write profile', ['--db', db, '--host-id', 'h', '--write-profile', 'root'], /--write-profile must be one of/],
    ['unknown profile', ['--db', db, '--host-id', 'h', '--profile', 'nope'], /--profile must be one of/],
    [
      'non-loopback Ollama URL', ['--db', db, '--host-id', 'h', '--ollama-url', 'http://localhost:11434'],
      /--ollama-url/,
    ],
    [
      'workflow without project', ['--db', db, '--host-id', 'h', '--workflow-id', 'w'],
      /^factlane: INVALID_CONTEXT_BINDING: /,
    ],
    ['secret-like host id', ['--db', db, '--host-id', secret], /^factlane: RAW_OR_SENSITIVE_CONTENT: /],
    ['secret-like unknown flag', ['--db', db, '--host-id', 'h', `--${secret}`], /Unknown option '\[redacted\]'/],
    ['secret-like positional', ['--db', db, '--host-id', 'h', secret], /Unexpected argument '\[redacted\]'/],
    ['password as a positional', ['--db', db, '--host-id', 'h', 'password=hunter2hunter2'], /\[redacted\]/],
    ['empty --db', ['--db', '', '--host-id', 'h'], /--db/],
    ['--db twice', ['--db', db, '--host-id', 'h', '--db', `${db}2`], /--db was given more than once; give it once/],
    ['--write-profile twice', ['--db', db, '--host-id', 'h', '--write-profile', 'read-only', '--write-profile=admin'],
      /--write-profile was given more than once/],
    ['a secret-like flag twice', ['--db', db, '--host-id', 'h', '--project-id', 'p', '--project-id', secret],
      /--project-id was given more than once/],
  ];
  for (const [label, args, stderr] of cases) {
    const run = box.run(args);
    t.equal(run.status, 2, `${label}: exit 2`);
    t.match(run.stderr, stderr, `${label}: says why`);
    t.match(run.stderr, /usage: factlane/, `${label}: prints the usage`);
    t.equal(run.stdout, '', `${label}: nothing on stdout`);
    t.notOk(run.stderr.includes(secret) || run.stderr.includes('hunter2'), `${label}: no secret echoed`);
  }
  t.same(box.tree(), before, 'no file or directory created');
});

t.test('startup failures exit 1 with one stderr line and leave files as they were', async (t) => {
  const box = launchSandbox(t.testdir());
  const foreign = join(box.root, 'foreign.sqlite3');
  const raw = new RawDatabase(foreign);
  raw.exec('CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES (1)');
  raw.close();
  const text = join(box.root, 'notes.txt');
  writeFileSync(text, 'this is not a database\n'.repeat(200));
  const cases: [string, string[], string][] = [
    ['foreign SQLite file', ['--db', foreign, '--host-id', 'h'], 'SCHEMA_MISMATCH'],
    ['text file', ['--db', text, '--host-id', 'h'], 'BACKEND_CORRUPT'],
    [
      'Ollama profile on a new database',
      ['--db', join(box.root, 'new', 'x.sqlite3'), '--host-id', 'h', '--profile', 'nomic-768'], 'EMBEDDING_UNAVAILABLE',
    ],
    [
      'a directory that cannot be created', ['--db', join(text, 'sub', 'x.sqlite3'), '--host-id', 'h'],
      'BACKEND_UNAVAILABLE',
    ],
    ['a path under a file', ['--db', join(text, 'x.sqlite3'), '--host-id', 'h'], 'BACKEND_UNAVAILABLE'],
  ];
  for (const [label, args, code] of cases) {
    const before = box.tree().map((p) => [p, statSync(join(box.root, p)).isFile() ? sha(join(box.root, p)) : 'dir']);
    const run = box.run(args);
    t.equal(run.status, 1, `${label}: exit 1`);
    t.match(run.stderr, new RegExp(`^factlane: ${code}: \\S[^\\n]*\\n$`), `${label}: exactly one line naming ${code}`);
    // The path the operator gave: with the default one, the user would not know which file it is about.
    t.ok(run.stderr.endsWith(` (database ${args[1]})\n`), `${label}: names the database path`);
    t.equal(run.stdout, '', `${label}: no MCP output`);
    t.same(
      box.tree().map((p) => [p, statSync(join(box.root, p)).isFile() ? sha(join(box.root, p)) : 'dir']), before,
      `${label}: files unchanged, nothing created`,
    );
  }
  const underFile = box.run(['--db', join(text, 'x.sqlite3'), '--host-id', 'h']);
  t.match(underFile.stderr, /cannot be opened \(ENOTDIR\); check the path/, 'the cause is named by its code');
});

t.test('a database that cannot be written while it is made: one governed line, no stack, no file left', async (t) => {
  // A file size limit stands in for a full disk: the new database's writes fail part way through its migrations,
  // where sqlite-vec reports a refused write as a plain SQLITE_ERROR. That came out as a stack with internal paths.
  const box = launchSandbox(t.testdir());
  const dbPath = join(box.root, 'limited', 'x.sqlite3');
  const launch = `ulimit -f 48; exec "${process.execPath}" "${FACTLANE_BIN}" --db "${dbPath}" --host-id h`;
  const env = { PATH: process.env.PATH ?? '', ...box.env };
  const run = spawnSync('bash', ['-c', launch], { encoding: 'utf8', input: '', env });
  t.equal(run.status, 1, 'exit 1');
  const line =
    /^factlane: BACKEND_UNAVAILABLE: the database could not be created \(SQLITE_ERROR\); check the disk[^\n]*\n$/;
  t.match(run.stderr, line, 'exactly one line naming BACKEND_UNAVAILABLE');
  t.notOk(run.stderr.includes('node_modules') || run.stderr.includes('    at '), 'no stack, no internal path');
  t.same(['', '-wal', '-shm', '-journal'].filter((suffix) => existsSync(dbPath + suffix)), [], 'no database file left');
});

t.test('a database file with two names (hard links) is refused at start, each name left as it was', async (t) => {
  const box = launchSandbox(t.testdir());
  const dbPath = join(box.root, 'one.sqlite3');
  t.equal(box.run(['--db', dbPath, '--host-id', 'h']).status, 0, 'a database is made');
  const alias = join(box.root, 'two.sqlite3');
  linkSync(dbPath, alias);
  const bytes = sha(dbPath);
  for (const name of [dbPath, alias]) {
    const run = box.run(['--db', name, '--host-id', 'h']);
    t.equal(run.status, 1, `${name}: exit 1`);
    t.match(run.stderr, /^factlane: BACKEND_UNAVAILABLE: the database file has another name \(a hard link\)[^\n]*\n$/);
    t.notOk(existsSync(`${name}-wal`), `${name}: no -wal made`);
  }
  t.equal(sha(dbPath), bytes, 'the file is unchanged');
  unlinkSync(alias);
  t.equal(box.run(['--db', dbPath, '--host-id', 'h']).status, 0, 'with one name again it starts');
});

t.test('a backup (its manifest beside it) is refused by the server and by housekeep, and stays '
  + 'restorable', async (t) => {
  const box = launchSandbox(t.testdir());
  const dbPath = join(box.root, 'live.sqlite3');
  t.equal(box.run(['--db', dbPath, '--host-id', 'h']).status, 0, 'a database is made');
  const backup = join(box.root, 'backup.sqlite3');
  t.equal(runBin(ADMIN_BIN, ['backup', '--db', dbPath, '--out', backup]).status, 0, 'a backup is taken');
  const bytes = sha(backup);
  const run = box.run(['--db', backup, '--host-id', 'h']);
  t.equal(run.status, 1, 'the server exits 1');
  t.match(
    run.stderr,
    /^factlane: BACKEND_UNAVAILABLE: the database is a backup \(its FILE\.manifest\.json lies beside it\)[^\n]*\n$/,
  );
  // Every writer opens through WriteConnection.open, which refuses it: housekeep stands for migrate up and reembed.
  const housekeep = runBin(ADMIN_BIN, ['housekeep', '--db', backup, '--scope', 'GLOBAL_USER', '--max-records', '1',
    '--required-free-bytes', '1']);
  t.equal(housekeep.status, 1, 'housekeep exits 1');
  t.match(housekeep.stderr, /^factlane-admin: BACKEND_UNAVAILABLE: the database is a backup/m);
  const promote = runBin(ADMIN_BIN, ['promote', '--db', backup, '--memory-id', randomUUID(), '--expected-revision', '1',
    '--expected-record-id', randomUUID(), '--source-timestamp', '2026-12-01T00:00:00Z']);
  t.match(promote.stderr,
    /BACKEND_UNAVAILABLE: the database is a backup.*\nfactlane-admin: hint: do what the message says/,
    'promote\'s hint does not blame the disk');
  t.equal(sha(backup), bytes, 'the backup is unchanged');
  t.notOk(existsSync(`${backup}-wal`), 'no -wal beside it');
  t.equal(runBin(ADMIN_BIN, ['verify', '--backup', backup]).status, 0, 'it still verifies');
  const restored = join(box.root, 'restored.sqlite3');
  t.equal(runBin(ADMIN_BIN, ['restore', '--from', backup, '--db', restored]).status, 0, 'and restores');
  t.equal(box.run(['--db', restored, '--host-id', 'h']).status, 0, 'the restored copy is served');

  // A backup taken before an upgrade (an older schema): named as a backup, not sent to factlane-migrate; and
  // `migrate up --backup` refuses it before it publishes a backup of it.
  const old = join(box.root, 'old.sqlite3');
  copyFileSync(backup, old);
  downgradeToSchemaOne(old);
  copyFileSync(`${backup}.manifest.json`, `${old}.manifest.json`);
  const oldBytes = sha(old);
  t.match(box.run(['--db', old, '--host-id', 'h']).stderr, /^factlane: BACKEND_UNAVAILABLE: the database is a backup/);
  const migrate = runBin(MIGRATE_BIN, ['up', '--db', old, '--backup', join(box.root, 'pre-up.sqlite3')]);
  t.equal(migrate.status, 1, 'migrate up exits 1');
  t.match(migrate.stderr, /BACKEND_UNAVAILABLE: the database is a backup/);
  t.notOk(existsSync(join(box.root, 'pre-up.sqlite3')), 'no backup of the backup was published');
  t.equal(sha(old), oldBytes, 'the old backup is unchanged');

  // No backup without a file: an absent or empty file beside a stray manifest is created as a database.
  for (const name of ['absent.sqlite3', 'empty.sqlite3']) {
    const path = join(box.root, name);
    if (name === 'empty.sqlite3') writeFileSync(path, '');
    writeFileSync(`${path}.manifest.json`, '{}');
    t.equal(box.run(['--db', path, '--host-id', 'h']).status, 0, `${name}: created and served`);
  }
});
