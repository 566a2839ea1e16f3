// Qualification: two separate server processes (the built binary) race compare-and-swap updates on one
// database (CONTRACT.md §13.4, STORAGE.md §6-§7). Exactly one writer of each pair wins, the loser gets
// VERSION_CONFLICT, and the lineage on disk keeps every invariant of STORAGE.md §7.4.
import t, { type Test } from 'tap';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { auditFile } from '../../src/maintenance/audit-operation.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import { startLauncher } from '../helpers/mcp.js';
import { RawDatabase, sqliteVec, tableCounts } from '../helpers/storage.js';

const ROUNDS = 50;
const SCOPE = { scope: 'PROJECT', project_id: 'race-project' } as const;
const LIVE = ['CANDIDATE', 'VALIDATED_CURRENT'];

type Envelope = { status: string; error_code?: string; idempotent_replay?: boolean; results: PublicRecord[] };
type PublicRecord = {
  memory_id: string; record_id: string; revision: number; parent_record_id: string | null; fact: string;
  supersedes: string[]; lifecycle_state: string;
};

/** Now, as a contract timestamp (whole seconds), so every write is fresh at admission. */
const nowText = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const provenance = (ref: string) => ({
  source_class: 'repo', source_ref: ref, source_hash: 'ab'.repeat(32), review_ref: 'race-review',
  extraction_method: 'manual',
});

/** The built launcher as an owner-current server on `dbPath`, through the SDK stdio client. */
async function startServer(t: Test, dbPath: string, hostId: string) {
  return { hostId, ...(await startLauncher(
    t, ['--db', dbPath, '--host-id', hostId, '--write-profile', 'owner-current'], `factlane-race-${hostId}`,
  )) };
}
type Server = Awaited<ReturnType<typeof startServer>>;

/** One tool call; a tool error (isError) fails the test loudly rather than passing as a status. */
async function callTool(server: Server, name: string, request: Record<string, unknown>): Promise<Envelope> {
  const result = (await server.client.callTool({ name, arguments: { request } })) as CallToolResult;
  if (result.isError)
    throw new Error(`${name} on ${server.hostId} returned isError: ${JSON.stringify(result.content)}`);
  return result.structuredContent as Envelope;
}

/** The lineage on disk, read on a raw read-only connection after both servers exited. */
function readDisk(dbPath: string) {
  const db = new RawDatabase(dbPath, { readonly: true });
  try {
    sqliteVec.load(db);
    const rows = db.prepare('SELECT row_id, record_id, memory_id, revision, parent_record_id, supersedes, ' +
      'lifecycle_state, idempotency_key FROM adapter_records ORDER BY row_id').all() as {
      row_id: number; record_id: string; memory_id: string; revision: number; parent_record_id: string | null;
      supersedes: string; lifecycle_state: string; idempotency_key: string;
    }[];
    const quickCheck = (db.prepare('PRAGMA quick_check').all() as { quick_check: string }[]).map((r) => r.quick_check);
    const currentVectors =
      (
        db.prepare('SELECT rowid AS row_id FROM fact_vec WHERE is_current = 1').all() as { row_id: number }[]
      ).map((r) => Number(r.row_id));
    return { rows, quickCheck, currentVectors };
  } finally {
    db.close();
  }
}

t.test('two server processes racing REVERIFY and REPLACE on one memory: exactly one wins each round', async (t) => {
  const dbPath = join(t.testdir(), 'race.sqlite3');
  const a = await startServer(t, dbPath, 'race-a');
  const b = await startServer(t, dbPath, 'race-b');
  const envelopes: Envelope[] = [];
  const wins: Record<string, number> = { 'race-a': 0, 'race-b': 0 };
  const winningKeys = new Set<string>();

  const started = nowText();
  const stored = await callTool(a, 'memory_store', {
    ...SCOPE, fact: 'round 0: the release branch is cut from main', memory_type: 'PROJECT_LEARNED_FACT',
    source_provenance: provenance('docs/release.md'),
    freshness_policy: { kind: 'never' }, idempotency_key: 'race-store-0',
    requested_lifecycle_state: 'VALIDATED_CURRENT', source_timestamp: started, last_verified_at: started,
  });
  envelopes.push(stored);
  t.match(stored, { status: 'OK' }, 'the first current fact is stored');
  winningKeys.add('race-store-0');
  let live = stored.results[0]!;
  t.equal(live.lifecycle_state, 'VALIDATED_CURRENT', 'as a current record');

  /** Fires both requests at once; returns the winner's record after checking one OK and one VERSION_CONFLICT. */
  const race =
    async (label: string, build: (server: Server) => Record<string, unknown>): Promise<PublicRecord | undefined> => {
    const requests = [build(a), build(b)];
    const outcomes =
      await Promise.all([callTool(a, 'memory_update', requests[0]!), callTool(b, 'memory_update', requests[1]!)]);
    envelopes.push(...outcomes);
    const ok = outcomes.filter((o) => o.status === 'OK');
    const blocked = outcomes.filter((o) => o.status === 'BLOCKED');
    if (
      ok.length !== 1
        || blocked.length !== 1 || blocked[0]!.error_code !== 'VERSION_CONFLICT' || ok[0]!.idempotent_replay
    ) {
      t.fail(`${label}: expected one OK and one BLOCKED VERSION_CONFLICT`, {
        found: outcomes.map((o) => [o.status, o.error_code ?? null, o.idempotent_replay ?? false]),
      });
      return undefined;
    }
    const winner = outcomes[0] === ok[0] ? 0 : 1;
    wins[[a, b][winner]!.hostId]! += 1;
    winningKeys.add(requests[winner]!.idempotency_key as string);
    return ok[0]!.results[0]!;
  };

  let clean = 0;
  for (let round = 1; round <= ROUNDS; round += 1) {
    const next = await race(`REVERIFY round ${round}`, (server) => ({
      ...SCOPE, memory_id: live.memory_id, expected_revision: live.revision, mode: 'REVERIFY',
      idempotency_key: `race-rv-${round}-${server.hostId}`, verification: { source_timestamp: nowText() },
    }));
    if (!next) break;
    if (
      next.memory_id !== live.memory_id || next.revision !== live.revision + 1
        || next.parent_record_id !== live.record_id || next.lifecycle_state !== 'VALIDATED_CURRENT'
    ) {
      t.fail(`REVERIFY round ${round}: the winner is not revision + 1 of the same memory`, { live, next });
      break;
    }
    live = next;
    clean += 1;
  }
  t.equal(clean, ROUNDS, `${ROUNDS} REVERIFY rounds: one OK and one VERSION_CONFLICT each, revision advancing by one`);
  const reverifiedMemory = live.memory_id;

  clean = 0;
  const replacedChain: string[] = [live.memory_id];
  for (let round = 1; round <= ROUNDS; round += 1) {
    const previous = live;
    const next = await race(`REPLACE round ${round}`, (server) => ({
      ...SCOPE, memory_id: previous.memory_id, expected_revision: previous.revision, mode: 'REPLACE',
      idempotency_key: `race-rp-${round}-${server.hostId}`,
      replacement: {
        fact: `round ${round}: the release branch is cut by ${server.hostId}`,
        source_provenance: provenance(`docs/release-${round}.md`), freshness_policy: { kind: 'never' },
        source_timestamp: nowText(),
      },
    }));
    if (!next) break;
    if (
      next.memory_id === previous.memory_id || next.revision !== 1 || next.parent_record_id !== previous.record_id
        || JSON.stringify(next.supersedes) !== JSON.stringify([previous.memory_id])
    ) {
      t.fail(`REPLACE round ${round}: the winner is not a new memory superseding the old one`, { previous, next });
      break;
    }
    live = next;
    replacedChain.push(live.memory_id);
    clean += 1;
  }
  t.equal(clean, ROUNDS, `${ROUNDS} REPLACE rounds: one OK and one VERSION_CONFLICT each, a new memory each time`);
  t.comment(`wins by process: ${JSON.stringify(wins)}`);

  const busy = envelopes.filter((e) => e.error_code === 'BACKEND_BUSY').length;
  t.equal(busy, 0, 'no BACKEND_BUSY in any answer');
  t.equal(envelopes.length, 1 + 4 * ROUNDS, 'every request was answered');

  await a.client.close();
  await b.client.close();
  t.same(await a.exited, { code: 0, signal: null }, 'server a exits 0');
  t.same(await b.exited, { code: 0, signal: null }, 'server b exits 0');
  t.equal(a.stderr() + b.stderr(), '', 'nothing on either stderr (no busy retries logged, no faults)');

  // On disk, on a raw read-only connection.
  const { rows, quickCheck, currentVectors } = readDisk(dbPath);
  t.same(quickCheck, ['ok'], 'PRAGMA quick_check is ok');
  t.same(
    auditFile(dbPath, MaintenanceTarget.shippedMigrations()).checks.filter((c) => c.status === 'FAIL'), [],
    'factlane-admin audit: every lineage invariant holds',
  );
  t.equal(rows.length, 1 + 2 * ROUNDS, 'one record per winning write, none from a loser');
  t.same(new Set(rows.map((r) => r.idempotency_key)), winningKeys, 'exactly the winners’ idempotency keys are used');

  const byMemory = new Map<string, typeof rows>();
  for (const row of rows) byMemory.set(row.memory_id, [...(byMemory.get(row.memory_id) ?? []), row]);
  const byRecord = new Map(rows.map((r) => [r.record_id, r]));
  t.equal(byMemory.size, 1 + ROUNDS, 'one memory reverified plus one memory per REPLACE');
  t.equal(byMemory.get(reverifiedMemory)?.length, 1 + ROUNDS, 'the reverified memory holds revisions 1..51');

  const forks = [...byMemory].filter(
    ([, revisions]) => revisions.filter((r) => LIVE.includes(r.lifecycle_state)).length > 1,
  ).map(([id]) => id);
  t.same(forks, [], 'at most one live record per memory_id');
  const current = rows.filter((r) => r.lifecycle_state === 'VALIDATED_CURRENT');
  t.same(
    current.map((r) => r.record_id), [live.record_id], 'exactly one VALIDATED_CURRENT in the lineage: the last winner',
  );
  t.same(currentVectors, current.map((r) => r.row_id), 'only its vector is flagged is_current');
  t.same(
    rows.filter((r) => r.lifecycle_state !== 'VALIDATED_CURRENT' && r.lifecycle_state !== 'SUPERSEDED'), [],
    'every other record is SUPERSEDED',
  );

  const gaps: string[] = [];
  for (const [memoryId, revisions] of byMemory) {
    const sorted = [...revisions].sort((x, y) => x.revision - y.revision);
    sorted.forEach((row, index) => {
      if (row.revision !== index + 1) gaps.push(`${memoryId}: revision ${row.revision} at position ${index + 1}`);
      if (index > 0 && row.parent_record_id !== sorted[index - 1]!.record_id)
        gaps.push(`${memoryId}: revision ${row.revision} does not follow revision ${index}`);
    });
    const root = sorted[0]!;
    const parent = root.parent_record_id === null ? undefined : byRecord.get(root.parent_record_id);
    const rootOk = root.parent_record_id === null ? root.supersedes === '[]'
      : parent !== undefined && parent.memory_id !== memoryId && root.supersedes === JSON.stringify([parent.memory_id]);
    if (!rootOk) gaps.push(`${memoryId}: revision 1 is neither a root nor a REPLACE successor`);
  }
  t.same(gaps, [], 'revisions 1..n contiguous per memory, each the successor of the previous one; every revision 1 a ' +
    'root or a REPLACE successor');

  const successors = new Map<string, number>();
  for (const row of rows) if (row.parent_record_id !== null) successors.set(
    row.parent_record_id, (successors.get(row.parent_record_id) ?? 0) + 1,
  );
  t.same(
    rows.filter((r) => r.lifecycle_state === 'SUPERSEDED' && successors.get(r.record_id) !== 1).map((r) => r.record_id),
    [], 'every SUPERSEDED record has exactly one successor',
  );
  t.notOk(successors.has(live.record_id), 'the live record has no successor');
  t.same(
    rows.filter((r) => r.revision === 1 && r.parent_record_id !== null).map((r) => r.memory_id), replacedChain.slice(1),
    'the REPLACE chain on disk is the chain of winners',
  );

  const counts = tableCounts(dbPath);
  t.equal(counts.fts, counts.records, 'one fact_fts row per record');
  t.equal(counts.vec, counts.records, 'one fact_vec row per record');
});
