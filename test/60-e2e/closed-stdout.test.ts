import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { openLocalHashEngine } from '../helpers/mcp.js';
import { REPO_ROOT } from '../helpers/storage.js';

// An operator pipes a report into a reader that stops early (`factlane-admin audit --db x | head -3`). The pipe is
// closed before the report is written: the command ends with its own exit code and prints nothing on stderr, where it
// used to die of an unhandled EPIPE with a stack trace.

const commands = [
  ['factlane-admin', ['audit']],
  ['factlane-admin', ['verify']],
  ['factlane-migrate', ['status']],
] as const;

for (const [bin, args] of commands) {
  t.test(`${bin} ${args.join(' ')} into a closed pipe: its exit code, a quiet stderr`, async (t) => {
    const dbPath = join(t.testdir(), 'db.sqlite3');
    await (await openLocalHashEngine(dbPath)).close();
    const child = spawn(process.execPath, [join(REPO_ROOT, 'dist/bin', `${bin}.js`), ...args, '--db', dbPath],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    // The reader goes away before the command writes a byte.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    const [code] = await once(child, 'exit');
    t.equal(code, 0, 'the exit code of a healthy, up-to-date database');
    t.equal(stderr, '', 'nothing on stderr');
  });
}

// A host that exits closes both of the server's pipes, often with calls still in flight: the session ends as a closed
// stdin ends it (CONTRACT.md §16.2), exit 0, every write whole. The server died of an unhandled EPIPE with a stack
// trace.
t.test('the server whose host goes away mid-session: exit 0, a quiet stderr, the file whole', async (t) => {
  const dbPath = join(t.testdir(), 'db.sqlite3');
  const child = spawn(process.execPath, [
    join(REPO_ROOT, 'dist/bin/factlane.js'), '--db', dbPath, '--host-id', 'gone', '--write-profile', 'owner-current',
  ],
    { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const frame =
    (id: number, method: string, params: object) => `${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`;
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const store = (i: number) => frame(i, 'tools/call', { name: 'memory_store', arguments: { request: {
    scope: 'PROJECT', project_id: 'gone', fact: `fact number ${i} of a host that goes away`,
    memory_type: 'PROJECT_LEARNED_FACT',
    requested_lifecycle_state: 'VALIDATED_CURRENT', idempotency_key: `gone-${i}`, source_timestamp: now,
    last_verified_at: now,
    source_provenance: {
      source_class: 'doc', source_ref: `gone/${i}`, source_hash: 'ab'.repeat(32), review_ref: 'r',
      extraction_method: 'manual',
    },
    freshness_policy: { kind: 'manual' },
  } } });
  child.stdin.write(frame(
    0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'gone', version: '1' } },
  ));
  await once(child.stdout, 'data');
  child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  child.stdin.write(Array.from({ length: 20 }, (_, i) => store(i + 1)).join(''));
  // The host goes away while the stores are in flight.
  child.stdout.destroy();
  child.stdin.end();
  const [code, signal] = await once(child, 'exit');
  t.equal(code, 0, `exit 0 (signal ${signal}; stderr: ${stderr})`);
  t.notMatch(stderr, /EPIPE|Unhandled|\n\s+at /, 'no unhandled error, no stack trace');
  const engine = await openLocalHashEngine(dbPath);
  const rows = await engine.read(
    (db) => db.selectFrom('adapter_records').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  );
  await engine.close();
  t.ok(Number(rows.n) <= 20, `${rows.n} of the 20 stores were read before the end, each written whole`);
});
