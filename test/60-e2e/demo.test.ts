// `factlane demo`: the guided first run over real stdio (issue 14), its story, its exit codes, the database it
// leaves with --keep, and how it reports a step that did not answer as the contract says.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runDemo, summarise } from '../../src/cli/factlane-demo.js';
import { StdioSession } from '../../src/cli/stdio-session.js';
import { FACTLANE_BIN } from '../helpers/mcp.js';
import { withRaw } from '../helpers/storage.js';

const runBuilt = (args: string[], tmp: string) => spawnSync(process.execPath, [FACTLANE_BIN, ...args], {
  encoding: 'utf8', env: { ...process.env, TMPDIR: tmp }, timeout: 60_000,
});

t.test('factlane demo tells the lifecycle step by step, exits 0 and removes its database', async (t) => {
  const tmp = t.testdir();
  const run = runBuilt(['demo'], tmp);
  t.equal(run.status, 0, run.stderr);
  t.equal(run.stderr, '', 'the servers\' stderr is not mixed into the story');
  const steps = [
    /1\. .*\n  agent -> memory_store .*\n  agent <- OK: 1 result\(s\)\n +revision 1 CANDIDATE, verified_by UNVERIFIED/,
    /2\. .*\n  agent -> memory_search .*retrieval_mode CURRENT.*\n  agent <- OK: no results/,
    /3\. .*\n  owner -> memory_update \{mode REVERIFY, expected_revision 1.*\n  owner <- OK: 1 result\(s\)\n +revision 2 VALIDATED_CURRENT, verified_by OWNER/,
    /4\. .*\n  agent -> memory_search .*\n  agent <- OK: 1 result\(s\)\n +revision 2 VALIDATED_CURRENT/,
    /5\. .*\n  owner -> memory_update .*\(stale\)\n  owner <- BLOCKED VERSION_CONFLICT: /,
    /6\. .*\n  agent -> memory_get .*REVIEW_HISTORY.*\n  agent <- OK: 2 result\(s\)\n +revision 2 VALIDATED_CURRENT.*\n +revision 1 SUPERSEDED/,
  ];
  for (const step of steps) t.match(run.stdout, step);
  t.match(run.stdout, /Done: every step answered as the contract says\.\n$/);
  t.same(readdirSync(tmp).filter((name) => name.startsWith('factlane-demo-')), [], 'temporary database removed');
});

t.test('factlane demo --keep leaves the database with both revisions of the memory', async (t) => {
  const tmp = t.testdir();
  const run = runBuilt(['demo', '--keep'], tmp);
  t.equal(run.status, 0, run.stderr);
  const dbPath = /The database is kept at (\S+)\n$/.exec(run.stdout)?.[1];
  t.ok(dbPath?.startsWith(tmp), 'kept under the temporary directory');
  const rows = withRaw(dbPath!, (db) => db.prepare(
    'SELECT revision, lifecycle_state, verified_by FROM adapter_records ORDER BY revision').all());
  t.same(rows, [
    { revision: 1, lifecycle_state: 'SUPERSEDED', verified_by: 'UNVERIFIED' },
    { revision: 2, lifecycle_state: 'VALIDATED_CURRENT', verified_by: 'OWNER' },
  ]);
});

t.test('factlane demo refuses an unknown flag with exit 2 and touches nothing', async (t) => {
  const tmp = t.testdir();
  const run = runBuilt(['demo', '--db', '/tmp/x'], tmp);
  t.equal(run.status, 2);
  t.match(run.stderr, /^factlane: demo takes only --keep, not --db\nusage: factlane/);
  t.equal(run.stdout, '');
  t.same(readdirSync(tmp), []);
  const secret = `sk-${'Qzxv'.repeat(6)}`;
  const leaky = runBuilt(['demo', secret], tmp);
  t.equal(leaky.status, 2);
  t.match(leaky.stderr, /^factlane: demo takes only --keep, not \[redacted\]\n/, 'a secret-like argument is redacted');
  t.notOk(leaky.stderr.includes(secret));
  const help = runBuilt(['demo', '--help'], tmp);
  t.equal(help.status, 0, 'demo --help is help, not a usage error');
  t.match(help.stdout, /^usage: factlane demo \[--keep\]\n\nTakes a temporary database through the fact lifecycle/);
  t.same(readdirSync(tmp), [], 'and runs nothing');
});

t.test('Ctrl-C during the demo closes its servers and removes its temporary database', async (t) => {
  const tmp = t.testdir();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    const child = spawn(process.execPath, [FACTLANE_BIN, 'demo'], {
      env: { ...process.env, TMPDIR: tmp }, stdio: 'ignore',
    });
    let gone = false;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => {
      gone = true;
      resolve(code);
    }));
    const started = () => readdirSync(tmp).some((name) => existsSync(join(tmp, name, 'demo.sqlite3')));
    while (!started() && !gone) await new Promise((resolve) => setTimeout(resolve, 5));
    if (gone) t.fail(`${signal}: the demo ended before its database was seen`);
    child.kill(signal);
    t.equal(await exited, signal === 'SIGINT' ? 130 : 143, `${signal}: the exit code of the signal`);
    t.same(readdirSync(tmp), [], `${signal}: nothing left in the temporary directory`);
  }
});

t.test('a reader that closes the output (factlane demo | head -1) stops the demo as Ctrl-C does: exit 141, no stack',
  async (t) => {
    // Closed after the first line, or (--keep, whose clean-up writes one more line) after the last step's.
    for (const [keep, closeAfter, code] of [[false, '', 141], [true, '', 141], [true, 'Done:', 0]] as const) {
      const tmp = t.testdir();
      const child = spawn(process.execPath, [FACTLANE_BIN, 'demo', ...(keep ? ['--keep'] : [])], {
        env: { ...process.env, TMPDIR: tmp }, stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (status) => resolve(status)));
      let read = '';
      await new Promise<void>((resolve) => child.stdout.on('data', (chunk: Buffer) => {
        read += chunk.toString();
        if (read.includes(closeAfter)) resolve();
      }));
      child.stdout.destroy();
      const what = `keep ${keep}, closed after ${JSON.stringify(closeAfter || 'the first line')}`;
      t.equal(await exited, code, `${what}: exit ${code}`);
      t.equal(stderr, '', `${what}: nothing on stderr, no EPIPE stack`);
      t.equal(readdirSync(tmp).length, keep ? 1 : 0, keep ? 'kept with --keep' : 'the temporary database removed');
    }
  });

t.test('a step that does not answer as the contract says stops the demo with exit 1 and names the step', async (t) => {
  const dir = t.testdir();
  // A stand-in server that answers every tool call with a BLOCKED envelope.
  const fake = join(dir, 'blocked-server.mjs');
  writeFileSync(fake, `import { createInterface } from 'node:readline';
createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  const blocked = { status: 'BLOCKED', error_code: 'BACKEND_UNAVAILABLE', message: 'down', results: [] };
  const result = m.method === 'initialize' ? { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'x', version: '1' } }
    : { content: [], structuredContent: blocked };
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }) + '\\n');
});
`);
  const out: string[] = [];
  const code = await runDemo({ launcher: fake, keep: false, write: (text) => out.push(text) });
  t.equal(code, 1);
  t.match(
    out.join(''), /The demo stopped: step "1\. The agent stores .*" did not answer as expected:\n\{"status":"BLOCKED"/,
  );
});

t.test('a server that exits at once makes the demo fail with its stderr, not hang', async (t) => {
  const fake = join(t.testdir(), 'exits.mjs');
  writeFileSync(fake, "process.stderr.write('factlane: BACKEND_CORRUPT: not a database\\n'); process.exit(1);\n");
  await t.rejects(
    runDemo({ launcher: fake, keep: false, write: () => {} }), /factlane exited \(1\): factlane: BACKEND_CORRUPT/,
  );
});

t.test('a call after the server exited fails at once with its exit, not with EPIPE or a 30 s wait', async (t) => {
  const fake = join(t.testdir(), 'exits-after-initialize.mjs');
  writeFileSync(fake, `import { createInterface } from 'node:readline';
createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') {
    const result = { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'x', version: '1' } };
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }) + '\\n');
  } else {
    process.stderr.write('gone\\n');
    process.exit(3);
  }
});
`);
  const session = await StdioSession.open(fake, [], 5_000);
  const exited = await session.close().catch(() => null);
  t.equal(exited, 3, 'the server exited on its own');
  // Not the call's own timeout (5 s here, "no answer to tools/call"): the exit, at once.
  await t.rejects(session.callTool('memory_status', { scope: 'GLOBAL_USER' }), /factlane exited \(3\): gone/);
});

t.test('summarise prints status, degradation and records in one short block', async (t) => {
  t.equal(
    summarise({ status: 'BLOCKED', error_code: 'VERSION_CONFLICT', message: 'stale' }),
    'BLOCKED VERSION_CONFLICT: stale',
  );
  t.equal(
    summarise({ status: 'DEGRADED', degradation: 'STALE_ONLY', results: [] }), 'DEGRADED (STALE_ONLY): no results',
  );
  t.equal(summarise({ status: 'OK', degradation: null, results: [{ revision: 3, lifecycle_state: 'VALIDATED_CURRENT',
    verified_by: 'OWNER', fact: 'f' }] }), 'OK: 1 result(s)\n        revision 3 VALIDATED_CURRENT, verified_by ' +
      'OWNER, "f"');
});

t.test('a refused CURRENT search is not taken for "the Candidate is not shown"', async (t) => {
  const fake = join(t.testdir(), 'store-only-server.mjs');
  // Stores answer OK with a Candidate; every other call is BLOCKED, whose results are empty too.
  writeFileSync(fake, `import { createInterface } from 'node:readline';
createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  const record = { revision: 1, lifecycle_state: 'CANDIDATE', verified_by: 'UNVERIFIED', fact: 'f', memory_id: 'm', record_id: 'r' };
  const envelope = m.params?.name === 'memory_store' ? { status: 'OK', degradation: null, results: [record] }
    : { status: 'BLOCKED', error_code: 'BACKEND_UNAVAILABLE', message: 'down', results: [] };
  const result = m.method === 'initialize' ? { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'x', version: '1' } }
    : { content: [], structuredContent: envelope };
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }) + '\\n');
});
`);
  const out: string[] = [];
  t.equal(await runDemo({ launcher: fake, keep: false, write: (text) => out.push(text) }), 1);
  t.match(
    out.join(''), /The demo stopped: step "2\. CURRENT search .*" did not answer as expected:\n\{"status":"BLOCKED"/,
  );
});

t.test('a server that never answers initialize is killed, and the session fails instead of hanging', async (t) => {
  const dir = t.testdir();
  const fake = join(dir, 'silent.mjs');
  writeFileSync(fake, 'process.stdin.resume();\nsetInterval(() => {}, 1000);\n');
  await t.rejects(StdioSession.open(fake, [], 300), /no answer to initialize in 300 ms/);
  await new Promise((resolve) => setTimeout(resolve, 200));
  // Found by its command line, not by a pid it writes: on a loaded machine it may be killed before it runs a line.
  t.same(processesRunning(fake), [], 'the silent server is gone');
});

/** The pids whose command line names `script`. */
function processesRunning(script: string): number[] {
  return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(script);
    } catch {
      return false; // exited meanwhile
    }
  }).map(Number);
}
