// Qualification: the cross-process writer queue (STORAGE.md §6, docs/decisions/0018) with real processes.
// Several built servers store at once with several calls in flight each, while an "older build" (a raw
// connection that registers the writer function and never takes the queue) commits its own records and the
// Debian sqlite3 CLI tries to write. Every acknowledged write is on disk exactly once, nothing answers
// BACKEND_BUSY, the CLI is refused by the fences with nothing written, and the audit is clean.
import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { auditFile } from '../../src/maintenance/audit-operation.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import { LOCAL_HASH, startLauncher } from '../helpers/mcp.js';
import { spawnTsHelper, tableCounts, waitForLine, withRaw } from '../helpers/storage.js';

const SERVERS = 4;
const IN_FLIGHT = 4;
const STORES_EACH = 24;
const RAW_RECORDS = 30;
const SCOPE = { scope: 'PROJECT', project_id: 'queue-project' } as const;

type Envelope = { status: string; error_code?: string; results: { memory_id: string }[] };

function storeRequest(host: string, n: number): Record<string, unknown> {
  return {
    ...SCOPE, fact: `${host} store ${n}: queue shard ${n} belongs to ${host}`, memory_type: 'PROJECT_LEARNED_FACT',
    idempotency_key: `${host}-${n}`, freshness_policy: { kind: 'never' },
    source_provenance: {
      source_class: 'repo', source_ref: `queue/${host}/${n}.md`, source_hash: 'ab'.repeat(32),
      review_ref: 'queue-review', extraction_method: 'manual',
    },
  };
}

async function startServer(t: Test, dbPath: string, hostId: string) {
  const args = ['--db', dbPath, '--host-id', hostId, '--write-profile', 'delegated-candidate'];
  return { hostId, ...(await startLauncher(t, args, `factlane-queue-${hostId}`)) };
}
type Server = Awaited<ReturnType<typeof startServer>>;

/** STORES_EACH stores through one server, IN_FLIGHT at a time; every answer kept. */
async function storeAll(server: Server): Promise<Envelope[]> {
  const answers: Envelope[] = [];
  let next = 0;
  const lane = async () => {
    while (next < STORES_EACH) {
      const n = next;
      next += 1;
      const request = storeRequest(server.hostId, n);
      const result = (await server.client.callTool({ name: 'memory_store', arguments: { request } })) as CallToolResult;
      if (result.isError)
        throw new Error(`memory_store on ${server.hostId}: isError ${JSON.stringify(result.content)}`);
      answers.push(result.structuredContent as Envelope);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return answers;
}

const hasSqlite3 = spawnSync('sqlite3', ['-version'], { encoding: 'utf8' }).status === 0;

t.test(`${SERVERS} servers × ${IN_FLIGHT} calls in flight, an older build and the sqlite3 CLI on one `
  + `database`, async (t) => {
  const dbPath = join(t.testdir(), 'queue.sqlite3');
  const servers: Server[] = [];
  for (let s = 0; s < SERVERS; s += 1) servers.push(await startServer(t, dbPath, `queue-${s}`));
  t.equal(statSync(`${dbPath}-writer`).mode & 0o777, 0o600, 'the servers created the sidecar 0600 beside the database');

  const rawArgs = ['raw-writer', dbPath, String(RAW_RECORDS), String(LOCAL_HASH.outputDimension)];
  const rawWriter = spawnTsHelper('engine-process.ts', rawArgs);
  t.teardown(() => { rawWriter.kill('SIGKILL'); });
  const rawCommitted: string[] = [];
  let rawOutput = '';
  rawWriter.stdout!.on('data', (chunk) => { rawOutput += chunk; });
  const rawDone = waitForLine(rawWriter, /^done$/, 120_000);

  const cli: { status: number | null; stderr: string }[] = [];
  const cliAttempts = async () => {
    if (!hasSqlite3) return;
    for (let i = 0; i < 3; i += 1) {
      const insert = `INSERT INTO adapter_meta (key, value) VALUES ('cli-${i}', 'x');`
        + ` INSERT INTO adapter_records (record_id) VALUES ('cli-${i}');`;
      const run = spawnSync('sqlite3', ['-cmd', '.timeout 5000', dbPath, insert], { encoding: 'utf8' });
      cli.push({ status: run.status, stderr: run.stderr });
      await new Promise((resolve) => setImmediate(resolve));
    }
  };

  const [answers] = await Promise.all([Promise.all(servers.map(storeAll)), rawDone, cliAttempts()]);
  for (const line of rawOutput.split('\n')) if (line.startsWith('raw ')) rawCommitted.push(line.slice(4));
  const envelopes = answers.flat();
  t.equal(envelopes.length, SERVERS * STORES_EACH, 'every store was answered');
  const notOk = envelopes.filter((e) => e.status !== 'OK').map((e) => e.error_code ?? e.status);
  t.same(notOk, [], 'every store is OK: no BACKEND_BUSY, nothing blocked');
  t.equal(rawCommitted.length, RAW_RECORDS, 'the older-build writer committed every record alongside the queue');
  if (hasSqlite3) {
    t.equal(cli.length, 3);
    const refused =
      cli.every((run) => run.status !== 0 && /no such function: factlane_contract_v2_writer/.test(run.stderr));
    t.ok(refused, 'the sqlite3 CLI is refused by the fences');
  } else {
    t.comment('sqlite3 is not on PATH: the CLI part is skipped');
  }

  for (const server of servers) await server.client.close();
  for (const server of servers) t.same(await server.exited, { code: 0, signal: null }, `${server.hostId} exits 0`);
  t.equal(servers.map((s) => s.stderr()).join(''), '', 'nothing on any server stderr');

  const acknowledged = envelopes.map((e) => e.results[0]!.memory_id);
  const disk = withRaw(dbPath, (db) => ({
    memories: db.prepare("SELECT memory_id FROM adapter_records WHERE idempotency_key NOT LIKE "
      + "'raw-%'").pluck().all() as string[],
    rawKeys: db.prepare("SELECT idempotency_key FROM adapter_records WHERE idempotency_key LIKE "
      + "'raw-%'").pluck().all() as string[],
    cliRows: (db.prepare("SELECT count(*) FROM adapter_meta WHERE key LIKE 'cli-%'").pluck().get() as number)
      + (db.prepare("SELECT count(*) FROM adapter_records WHERE record_id LIKE 'cli-%'").pluck().get() as number),
    quickCheck: db.prepare('PRAGMA quick_check').pluck().all(),
  }));
  t.same([...disk.memories].sort(), [...acknowledged].sort(), 'every acknowledged store is on disk exactly once, '
    + 'nothing else');
  t.same([...disk.rawKeys].sort(), [...rawCommitted].sort(), 'every older-build commit is on disk exactly once');
  t.equal(disk.cliRows, 0, 'nothing of the CLI was written');
  t.same(disk.quickCheck, ['ok'], 'PRAGMA quick_check is ok');
  const counts = tableCounts(dbPath);
  t.equal(counts.records, SERVERS * STORES_EACH + RAW_RECORDS, 'no lost and no duplicated write');
  t.equal(counts.fts, counts.records, 'one fact_fts row per record');
  t.equal(counts.vec, counts.records, 'one fact_vec row per record');
  const failed = auditFile(dbPath, MaintenanceTarget.shippedMigrations()).checks.filter((c) => c.status === 'FAIL');
  t.same(failed, [], 'factlane-admin audit: every check passes');
});
