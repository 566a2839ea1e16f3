import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { AdapterError } from '../../src/core/adapter-error.js';
import { auditDatabase } from '../../src/maintenance/audit-operation.js';
import { housekeep, type HousekeepProbes, type HousekeepRequest } from '../../src/maintenance/housekeep-operation.js';
import { compactRecord } from '../../src/storage/compaction-repository.js';
import { readHealth } from '../../src/storage/lineage-audit.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import { readCapacity } from '../../src/storage/status-repository.js';
import { WriteConnection } from '../../src/storage/write-connection.js';
import { openLocalHashEngine } from '../helpers/mcp.js';
import {
  ADMIN_BIN, damageFirstPage, migrationsDir, nextMigration, RawDatabase, REPO_ROOT, runBin, sqliteVec, TS_IMPORT,
  withRaw, writeInterlock,
} from '../helpers/storage.js';
import {
  currentRequest, derivedRows, diskState, openWriteBench, reverifyRequest, store, update, type Json, type WriteBench,
} from '../helpers/writes.js';

// OPERATIONS.md §3 (housekeeping) and STORAGE.md §8 (compaction of one record).

const admin = (...args: string[]) => runBin(ADMIN_BIN, args);
const GLOBAL = { scope: 'GLOBAL_USER', project_id: null, worktree_id: null, workflow_id: null,
  agent_id: null } as const;
const NEVER_ENOUGH = Number.MAX_SAFE_INTEGER;
const REPORT_KEYS = [
  'outcome', 'next_action', 'mutation', 'required_free_bytes', 'max_records', 'filesystem_free_bytes_before',
  'filesystem_free_bytes_after', 'capacity_requirement_met_before', 'capacity_requirement_met_after',
  'compaction_ready_before', 'compaction_ready_after', 'selected_records', 'compacted_records',
  'compaction_blocked_partial', 'historical_total_before', 'historical_total_after', 'vector_orphans_after',
  'current_lineage_forks_after', 'quick_check_after', 'integrity_check_after', 'physical_file_shrink_claimed',
  'automatic_housekeeping',
].sort();

/**
 * Three current memories in GLOBAL_USER, each reverified twice, so six SUPERSEDED predecessors are ready; their
 * created_at values are distinct and not in record_id order. Returns the superseded record ids oldest first.
 */
async function supersededHistory(bench: WriteBench): Promise<string[]> {
  const at = (minute: number) => () => new Date(Date.UTC(2026, 10, 30, 9, minute));
  const created: [string, number][] = [];
  const minutes = [[50, 20, 5], [40, 30, 10], [45, 25, 15]];
  for (const [first, second, third] of minutes) {
    const owner = (minute: number) => bench.adapter('owner-current', { clock: at(minute) });
    const root = ((await store(owner(first!),
      currentRequest({ fact: `fact created at minute ${first}` }))).results as Json[])[0]!;
    const next = ((await update(owner(second!), reverifyRequest(root))).results as Json[])[0]!;
    await update(owner(third!), reverifyRequest(next));
    created.push([root.record_id, first!], [next.record_id, second!]);
  }
  return created.sort((a, b) => a[1] - b[1]).map(([id]) => id);
}

async function openTarget(t: Test, dbPath: string): Promise<MaintenanceTarget> {
  const target = MaintenanceTarget.open({ dbPath, lease: 'shared' });
  t.teardown(() => target.close());
  return target;
}

const request = (maxRecords: number, requiredFreeBytes: number): HousekeepRequest =>
  ({ scope: GLOBAL, maxRecords, requiredFreeBytes });
const tableRows = (dbPath: string) => withRaw(dbPath, (db) => ({
  records: db.prepare('SELECT * FROM adapter_records ORDER BY row_id').all() as Json[],
  fts: db.prepare('SELECT rowid, search_text FROM fact_fts ORDER BY rowid').all() as Json[],
  vectors: db.prepare('SELECT rowid, scope_key, is_current, embedding FROM fact_vec ORDER BY rowid').all() as Json[],
}));

t.test('a run compacts at most N ready records, oldest first; every other row stays byte-identical', async (t) => {
  const bench = await openWriteBench(t);
  const oldestFirst = await supersededHistory(bench);
  const target = await openTarget(t, bench.dbPath);

  const before = tableRows(bench.dbPath);
  const enough = await housekeep(target, request(4, 0));
  t.match(enough, { outcome: 'NO_ACTION_CAPACITY_REQUIREMENT_ALREADY_MET', next_action: 'NO_ACTION_REQUIRED',
    mutation: 'NONE', compacted_records: 0, capacity_requirement_met_before: true });
  t.same(tableRows(bench.dbPath), before, 'free space already met: nothing changes');

  // The four oldest are compacted: their FTS text is read before, to show the compaction keeps it.
  const searchTextBefore = new Map(oldestFirst.slice(0, 4).map((id) => [id, derivedRows(bench.dbPath, id).searchText]));
  const report = await housekeep(target, request(4, NEVER_ENOUGH));
  t.same(Object.keys(report).sort(), REPORT_KEYS, 'exactly the report keys of OPERATIONS.md §3');
  t.match(report, {
    outcome: 'HOUSEKEEPING_COMPLETE_CAPACITY_REQUIREMENT_NOT_MET',
    next_action: 'ADDITIONAL_CAPACITY_OR_OPERATOR_ACTION_REQUIRED', mutation: 'BOUNDED_COMPACTION',
    required_free_bytes: NEVER_ENOUGH, max_records: 4, selected_records: 4, compacted_records: 4,
    compaction_ready_before: 6, compaction_ready_after: 2, historical_total_before: 0, historical_total_after: 4,
    compaction_blocked_partial: 0, capacity_requirement_met_before: false, capacity_requirement_met_after: false,
    vector_orphans_after: 0, current_lineage_forks_after: 0, quick_check_after: 'PASS', integrity_check_after: 'PASS',
    physical_file_shrink_claimed: false, automatic_housekeeping: false,
  });
  t.type(report.filesystem_free_bytes_before, 'number');

  const after = tableRows(bench.dbPath);
  const compacted = new Set(oldestFirst.slice(0, 4));
  const lifecycles = diskState(bench.dbPath).lifecycles;
  t.same(Object.keys(lifecycles).filter((id) => lifecycles[id] === 'HISTORICAL').sort(), [...compacted].sort(),
    'the four oldest by created_at');
  t.same(after.records.map((row) =>
    (compacted.has(row.record_id) ? { ...row, lifecycle_state: 'SUPERSEDED' } : row)), before.records,
    'apart from lifecycle_state of the compacted records, every record row (current successors included) is unchanged');
  t.same(after.fts, before.fts, 'every FTS row is unchanged: the fact is not erased');
  const compactedRowIds = new Set(before.records.filter((row) => compacted.has(row.record_id))
    .map((row) => Number(row.row_id)));
  t.same(after.vectors, before.vectors.filter((row) => !compactedRowIds.has(Number(row.rowid))),
    'only the compacted records lost their vector rows');
  for (const id of compacted) {
    t.type(searchTextBefore.get(id), 'string', 'a compacted record had its FTS text');
    t.same(derivedRows(bench.dbPath, id), { searchText: searchTextBefore.get(id), isCurrent: undefined,
      vectorBytes: undefined }, 'and keeps it, without a vector');
  }
  t.equal(auditDatabase(target).ok, true, 'the lineage audit passes afterwards');

  const rest = await housekeep(target, request(10, NEVER_ENOUGH));
  t.match(rest, { selected_records: 2, compacted_records: 2, compaction_ready_after: 0, historical_total_after: 6 });
  const none = await housekeep(target, request(10, NEVER_ENOUGH));
  t.match(none, { outcome: 'NO_ELIGIBLE_RECORDS_CAPACITY_REQUIREMENT_NOT_MET',
    next_action: 'ADDITIONAL_CAPACITY_OR_OPERATOR_ACTION_REQUIRED', mutation: 'NONE', selected_records: 0 });
});

t.test('oldest first means created_at as a time (whole seconds before fractions), then record_id; only the exact scope',
  async (t) => {
  const bench = await openWriteBench(t);
  const at = (iso: string) => () => new Date(iso);
  /** A memory stored at `createdAt` and reverified once: returns the superseded record's id. */
  let stored = 0;
  const supersede = async (createdAt: string, scope: Json = {}) => {
    const owner = bench.adapter('owner-current', { clock: at(createdAt) });
    stored += 1;
    const root = ((await store(owner,
      currentRequest({ fact: `fact number ${stored}`, ...scope }))).results as Json[])[0]!;
    t.equal(root.created_at, createdAt.replace('.000Z', 'Z').replace('.500Z', '.500000Z'),
      'stored as a new memory at its own time');
    await update(bench.adapter('owner-current', { clock: at('2026-11-30T09:30:00Z') }), reverifyRequest(root));
    return root.record_id as string;
  };
  const fraction = await supersede('2026-11-30T09:00:00.500Z');
  const whole = await supersede('2026-11-30T09:00:00.000Z');
  const tieA = await supersede('2026-11-30T09:10:00Z');
  const tieB = await supersede('2026-11-30T09:10:00Z');
  const otherScopes = [await supersede('2026-11-30T08:00:00Z', { scope: 'PROJECT', project_id: 'p1' }),
    await supersede('2026-11-30T08:00:00Z', { agent_id: 'agent-1' })];
  const target = await openTarget(t, bench.dbPath);
  const order: string[] = [];
  for (let i = 0; i < 4; i += 1) {
    const lifecyclesBefore = diskState(bench.dbPath).lifecycles;
    t.match(await housekeep(target, request(1, NEVER_ENOUGH)), { compacted_records: 1 });
    const lifecycles = diskState(bench.dbPath).lifecycles;
    order.push(...Object.keys(lifecycles)
      .filter((id) => lifecycles[id] === 'HISTORICAL' && lifecyclesBefore[id] !== 'HISTORICAL'));
  }
  t.same(order, [whole, fraction, ...[tieA, tieB].sort()],
    'one at a time: whole second, its fraction, then the tie by record_id');
  t.match(await housekeep(target, request(10, NEVER_ENOUGH)),
    { outcome: 'NO_ELIGIBLE_RECORDS_CAPACITY_REQUIREMENT_NOT_MET' },
    'the other scopes\' ready records are not this scope\'s');
  const lifecycles = diskState(bench.dbPath).lifecycles;
  t.same(otherScopes.map((id) => lifecycles[id]), ['SUPERSEDED', 'SUPERSEDED'],
    'a PROJECT record and a GLOBAL_USER record with an agent_id stay as they were');
  t.match(await housekeep(target, { scope: { ...GLOBAL, agent_id: 'agent-1' }, maxRecords: 10,
    requiredFreeBytes: NEVER_ENOUGH }), { compacted_records: 1 }, 'its own scope compacts it');
});

t.test('compacted history stays readable through memory_get and keyword search, and survives a restart', async (t) => {
  const bench = await openWriteBench(t);
  const oldestFirst = await supersededHistory(bench);
  const target = await openTarget(t, bench.dbPath);
  await housekeep(target, request(6, NEVER_ENOUGH));
  const memoryId = withRaw(bench.dbPath, (db) =>
    (db.prepare('SELECT memory_id FROM adapter_records WHERE record_id = ?').get(oldestFirst[0]) as Json).memory_id);
  const reader = bench.adapter('read-only');
  const history = (await reader.execute('memory_get',
    { scope: 'GLOBAL_USER', memory_id: memoryId, retrieval_mode: 'REVIEW_HISTORY' })) as Json;
  t.same((history.results as Json[]).map((r) => r.lifecycle_state), ['VALIDATED_CURRENT', 'HISTORICAL', 'HISTORICAL'],
    'REVIEW_HISTORY returns every revision');
  const search = (kind: string) => reader.execute('memory_search', {
    scope: 'GLOBAL_USER', query: 'fact created at minute', intent_class: 'HISTORICAL_QUESTION',
    retrieval_mode: 'REVIEW_HISTORY', retrieval_mode_kind: kind,
  }) as Promise<Json>;
  const keyword = await search('KEYWORD');
  t.ok((keyword.results as Json[]).some((r) => r.lifecycle_state === 'HISTORICAL'), 'KEYWORD finds compacted records');
  t.match(await search('SEMANTIC'), { status: 'DEGRADED', degradation: 'HISTORY_SEMANTIC_PARTIAL' },
    'vector history reports the gap');

  await bench.engine.close();
  const reopened = await openLocalHashEngine(bench.dbPath);
  t.teardown(() => reopened.close());
  t.equal(Object.values(diskState(bench.dbPath).lifecycles).filter((state) => state === 'HISTORICAL').length, 6,
    'still HISTORICAL after a restart');
});

t.test('each precondition, in table order, ends the run before anything is compacted', async (t) => {
  const bench = await openWriteBench(t);
  await supersededHistory(bench);
  const target = await openTarget(t, bench.dbPath);
  const unchanged = async (name: string, probes: Partial<HousekeepProbes>, outcome: string, nextAction: string,
    extra: Json = {}) => {
    const before = tableRows(bench.dbPath);
    const report = await housekeep(target, request(4, NEVER_ENOUGH),
      { capacity: readCapacity, health: readHealth, compact: failCompact, ...probes });
    t.match(report, { outcome, next_action: nextAction, mutation: 'NONE', selected_records: 0, compacted_records: 0,
      ...extra }, name);
    t.same(tableRows(bench.dbPath), before, `${name}: nothing changed`);
  };
  const failCompact = async () => { throw new Error('no compaction may run'); };
  const unknownFree: typeof readCapacity = (pages, path) =>
    ({ ...readCapacity(pages, path), filesystemFreeBytes: null });
  await unchanged('unknown capacity', { capacity: unknownFree }, 'BLOCKED_UNKNOWN_CAPACITY',
    'RESTORE_CAPACITY_OBSERVABILITY_BEFORE_MEMORY_MUTATION',
    { capacity_requirement_met_before: null, filesystem_free_bytes_before: null, quick_check_after: null });
  const health = (edit: Json): typeof readHealth => (connection) => ({ ...readHealth(connection), ...edit });
  await unchanged('a lineage fork', { health: health({ currentLineageForks: 2 }) }, 'BLOCKED_PREEXISTING_CURRENT_FORK',
    'REPAIR_CURRENT_LINEAGE_FORK_BEFORE_MEMORY_MUTATION', { current_lineage_forks_after: 2 });
  await unchanged('quick_check', { health: health({ quickCheck: 'FAIL' }) }, 'BLOCKED_DATABASE_INTEGRITY',
    'REPAIR_DATABASE_INTEGRITY_BEFORE_MEMORY_MUTATION', { quick_check_after: 'FAIL' });
  await unchanged('integrity_check', { health: health({ integrityCheck: 'FAIL' }) }, 'BLOCKED_DATABASE_INTEGRITY',
    'REPAIR_DATABASE_INTEGRITY_BEFORE_MEMORY_MUTATION');

  // A real vector row without its record (raw writer, sqlite-vec loaded): step 4.
  const raw = new RawDatabase(bench.dbPath);
  sqliteVec.load(raw);
  const dimension = (raw.prepare("SELECT sql FROM sqlite_schema WHERE name = 'fact_vec'")
    .get() as { sql: string }).sql.match(/float\[(\d+)\]/)![1];
  raw.prepare('INSERT INTO fact_vec (rowid, scope_key, is_current, embedding) VALUES (?, ?, ?, ?)')
    .run(999_999n, 'orphan', 0n, Buffer.from(new Float32Array(Number(dimension)).fill(0.1).buffer));
  raw.close();
  await unchanged('an orphan vector', {}, 'BLOCKED_PREEXISTING_VECTOR_ORPHAN',
    'REPAIR_VECTOR_ORPHANS_BEFORE_MEMORY_MUTATION', { vector_orphans_after: 1 });
  // An eligible form (schema 2) without its record counts as a vector orphan too.
  const eligible = new RawDatabase(bench.dbPath);
  eligible.function('factlane_contract_v2_writer', { deterministic: false }, () => 1);
  eligible.prepare('INSERT INTO eligible_vectors (row_id, scope_key, shard, embedding) VALUES (?, ?, 0, ?)')
    .run(999_998n, 'orphan', Buffer.alloc(8));
  eligible.close();
  await unchanged('an orphan eligible form', {}, 'BLOCKED_PREEXISTING_VECTOR_ORPHAN',
    'REPAIR_VECTOR_ORPHANS_BEFORE_MEMORY_MUTATION',
    { vector_orphans_after: 2 });

  // A SUPERSEDED record of the scope without its FTS row: step 3, before the health checks.
  const victim = withRaw(bench.dbPath,
    (db) => (db.prepare("SELECT row_id FROM adapter_records WHERE lifecycle_state = 'SUPERSEDED' LIMIT 1")
      .get() as Json).row_id);
  const fts = new RawDatabase(bench.dbPath);
  fts.prepare('DELETE FROM fact_fts WHERE rowid = ?').run(victim);
  fts.close();
  await unchanged('a partial record', {}, 'BLOCKED_PARTIAL_RECLAIM_STATE',
    'REPAIR_PARTIAL_RECLAIM_STATE_BEFORE_MEMORY_MUTATION',
    { compaction_blocked_partial: 1, compaction_ready_before: 5, vector_orphans_after: null });

  // Earlier rows win over later ones.
  const enough = await housekeep(target, request(4, 0),
    { capacity: readCapacity, health: readHealth, compact: failCompact });
  t.match(enough, { outcome: 'NO_ACTION_CAPACITY_REQUIREMENT_ALREADY_MET', compaction_blocked_partial: 1 },
    'row 2 before row 3');
  const forkedAndDamaged = health({ vectorOrphans: 0, currentLineageForks: 1, integrityCheck: 'FAIL' });
  const partialRepaired = new RawDatabase(bench.dbPath);
  partialRepaired.prepare('INSERT INTO fact_fts (rowid, search_text) SELECT row_id, fact FROM adapter_records WHERE ' +
    'row_id = ?').run(victim);
  partialRepaired.close();
  await unchanged('a fork and a failing integrity_check', { health: forkedAndDamaged },
    'BLOCKED_PREEXISTING_CURRENT_FORK', 'REPAIR_CURRENT_LINEAGE_FORK_BEFORE_MEMORY_MUTATION',
    { integrity_check_after: 'FAIL' });
});

t.test('after compacting, health and capacity are read again', async (t) => {
  const bench = await openWriteBench(t);
  await supersededHistory(bench);
  const target = await openTarget(t, bench.dbPath);
  let healthCalls = 0;
  const sickAfter: typeof readHealth = (connection) =>
    ({ ...readHealth(connection), ...(++healthCalls > 1 ? { vectorOrphans: 3 } : {}) });
  const compact: HousekeepProbes['compact'] = (connection, id) => connection.write((trx) => compactRecord(trx, id));
  t.match(await housekeep(target, request(1, NEVER_ENOUGH), { capacity: readCapacity, health: sickAfter, compact }),
    { outcome: 'BLOCKED_POST_MAINTENANCE_HEALTH', next_action: 'REPAIR_POST_MAINTENANCE_HEALTH_BEFORE_MEMORY_MUTATION',
      mutation: 'BOUNDED_COMPACTION', compacted_records: 1, vector_orphans_after: 3 });
  let capacityCalls = 0;
  const lostAfter: typeof readCapacity = (pages, path) =>
    ({ ...readCapacity(pages, path), ...(++capacityCalls > 1 ? { databaseFileBytes: null } : {}) });
  t.match(await housekeep(target, request(1, NEVER_ENOUGH), { capacity: lostAfter, health: readHealth, compact }),
    { outcome: 'BLOCKED_POST_MAINTENANCE_UNKNOWN_CAPACITY',
      next_action: 'RESTORE_CAPACITY_OBSERVABILITY_BEFORE_MEMORY_MUTATION', compacted_records: 1,
      capacity_requirement_met_after: null });
  let freeCalls = 0;
  const freedAfter: typeof readCapacity = (pages, path) =>
    ({ ...readCapacity(pages, path), filesystemFreeBytes: ++freeCalls > 1 ? 2000 : 1000 });
  t.match(await housekeep(target, request(1, 1500), { capacity: freedAfter, health: readHealth, compact }),
    { outcome: 'HOUSEKEEPING_COMPLETE_CAPACITY_REQUIREMENT_MET', next_action: 'NO_ACTION_REQUIRED',
      filesystem_free_bytes_before: 1000, filesystem_free_bytes_after: 2000,
      capacity_requirement_met_before: false, capacity_requirement_met_after: true, compacted_records: 1 });
  const declined: HousekeepProbes['compact'] = async () => false;
  t.match(await housekeep(target, request(2, NEVER_ENOUGH),
    { capacity: readCapacity, health: readHealth, compact: declined }),
    { selected_records: 2, compacted_records: 0, mutation: 'NONE',
      outcome: 'HOUSEKEEPING_COMPLETE_CAPACITY_REQUIREMENT_NOT_MET' },
    'records another run compacted first are not counted');
  let compactions = 0;
  const breaksSecond: HousekeepProbes['compact'] = async (connection, id) => {
    if (++compactions === 2) throw new Error('disk unplugged');
    return compact(connection, id);
  };
  await t.rejects(housekeep(target, request(3, NEVER_ENOUGH),
    { capacity: readCapacity, health: readHealth, compact: breaksSecond }), /disk unplugged/);
  t.equal(Object.values(diskState(bench.dbPath).lifecycles).filter((state) => state === 'HISTORICAL').length, 4,
    'an error stops the run; the compaction before it stays');
  // A governed failure (a full disk) after compactions committed: its "nothing was written" is about that compaction.
  compactions = 0;
  const fullAtSecond: HousekeepProbes['compact'] = async (connection, id) => {
    if (++compactions === 2) throw new AdapterError('BACKEND_UNAVAILABLE',
      'the database or its disk is full; nothing was written');
    return compact(connection, id);
  };
  const full = await housekeep(target, request(3, NEVER_ENOUGH),
    { capacity: readCapacity, health: readHealth, compact: fullAtSecond })
    .then(() => undefined, (error: unknown) => error);
  t.ok(full instanceof AdapterError && full.code === 'BACKEND_UNAVAILABLE' && full.retryable,
    'the same code, still retryable');
  t.match((full as Error).message,
    /^compaction 2 of \d+ failed: the database or its disk is full; nothing was written; the 1 compacted before it stay$/);
  const first: HousekeepProbes['compact'] = async () => { throw new AdapterError('BACKEND_UNAVAILABLE',
    'the database or its disk is full; nothing was written'); };
  await t.rejects(
    housekeep(target, request(3, NEVER_ENOUGH), { capacity: readCapacity, health: readHealth, compact: first }),
    { message: 'the database or its disk is full; nothing was written' },
    'before any compaction, the message as it was');
});

t.test('SIGINT or SIGTERM stops the run before its next compaction: the ones before stay, and it says how many',
  async (t) => {
  // Nothing watched the signals: the run ended with the signal's exit code (130 or 143) and no word of what it kept.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    const bench = await openWriteBench(t);
    await supersededHistory(bench);
    const target = await openTarget(t, bench.dbPath);
    const signals = new EventEmitter();
    let compactions = 0;
    const signalledAtSecond: HousekeepProbes['compact'] = async (connection, id) => {
      if (++compactions === 2) signals.emit(signal, signal); // during the second compaction's transaction
      return connection.write((trx) => compactRecord(trx, id));
    };
    const heard: [string, boolean, number][] = [];
    const onSignal = (name: string, repeated: boolean, compacted: number) => heard.push([name, repeated, compacted]);
    await t.rejects(housekeep(target, { ...request(5, NEVER_ENOUGH), signals, onSignal },
      { capacity: readCapacity, health: readHealth, compact: signalledAtSecond }),
      { name: 'Interrupted', message: `housekeep stopped by ${signal} before compaction 3 of 5; the 2 compacted before `
        + 'it stay' });
    t.equal(Object.values(diskState(bench.dbPath).lifecycles).filter((state) => state === 'HISTORICAL').length, 2,
      `${signal}: the two compactions before the signal's check stay`);
    t.equal(signals.listenerCount(signal), 0, `${signal}: no listener left`);
    t.same(heard, [[signal, false, 1]], `${signal}: heard at once, during the second compaction`);
  }
});

t.test('by default the first signal is said, and a second stops the process at once, exit 1, saying what stays',
  async (t) => {
  const run = (repeated: boolean) => spawnSync(process.execPath, ['--import', TS_IMPORT, '--input-type=module', '-e',
    `const m = await import(process.argv[1]); m.SAY_AND_STOP_AT_ONCE_ON_REPEAT('SIGINT', ${repeated}, 3);`,
    join(REPO_ROOT, 'src/maintenance/housekeep-operation.ts')], { encoding: 'utf8' });
  const first = run(false);
  t.equal(first.status, 0, first.stderr);
  t.match(first.stderr, /: SIGINT: housekeep stops before its next compaction; send it again to stop at once\n$/);
  const second = run(true);
  t.equal(second.status, 1, second.stderr);
  t.match(second.stderr, /: housekeep stopped at once by a second SIGINT; the 3 compacted before it stay\n$/);
});

t.test('compacting one record follows the STORAGE.md §8 table and rolls back on refusal', async (t) => {
  const bench = await openWriteBench(t);
  const [oldest] = await supersededHistory(bench);
  const connection = WriteConnection.open({ path: bench.dbPath });
  t.teardown(() => connection.close());
  const compactOne = (id: string) => connection.write((trx) => compactRecord(trx, id));
  const refuse = async (id: string, code: string, name: string) => {
    const before = tableRows(bench.dbPath);
    await t.rejects(compactOne(id), { code }, name);
    t.same(tableRows(bench.dbPath), before, `${name}: rolled back`);
  };
  await refuse('00000000-0000-4000-8000-000000000000', 'NOT_FOUND', 'unknown record_id');
  const current = withRaw(bench.dbPath,
    (db) => (db.prepare("SELECT record_id FROM adapter_records WHERE lifecycle_state = 'VALIDATED_CURRENT' LIMIT 1")
      .get() as Json).record_id);
  await refuse(current, 'COMPACTION_NOT_ELIGIBLE', 'a current record');
  t.equal(await compactOne(oldest!), true, 'a ready SUPERSEDED record is compacted');
  t.equal(await compactOne(oldest!), false, 'a HISTORICAL record without a vector: nothing to do');

  const rows = withRaw(bench.dbPath, (db) =>
    db.prepare("SELECT record_id, row_id FROM adapter_records WHERE lifecycle_state = 'SUPERSEDED' ORDER BY row_id")
      .all() as Json[]);
  const raw = new RawDatabase(bench.dbPath);
  sqliteVec.load(raw);
  raw.prepare('UPDATE fact_vec SET is_current = 1 WHERE rowid = ?').run(BigInt(rows[0]!.row_id));
  raw.prepare('DELETE FROM fact_fts WHERE rowid = ?').run(rows[1]!.row_id);
  raw.prepare('DELETE FROM fact_vec WHERE rowid = ?').run(BigInt(rows[2]!.row_id));
  const oldestRow = withRaw(bench.dbPath,
    (db) => (db.prepare('SELECT row_id FROM adapter_records WHERE record_id = ?').get(oldest) as Json).row_id);
  raw.prepare('INSERT INTO fact_vec (rowid, scope_key, is_current, embedding) SELECT ?, scope_key, 0, embedding FROM ' +
    'fact_vec WHERE rowid = ?').run(BigInt(oldestRow), BigInt(rows[3]!.row_id));
  raw.close();
  await refuse(rows[0]!.record_id, 'COMPACTION_STATE_INVALID', 'a SUPERSEDED record whose vector is still current');
  await refuse(rows[1]!.record_id, 'COMPACTION_STATE_INVALID', 'a SUPERSEDED record without its FTS row');
  await refuse(rows[2]!.record_id, 'COMPACTION_STATE_INVALID', 'a SUPERSEDED record without its vector row');
  await refuse(oldest!, 'COMPACTION_STATE_INVALID', 'a HISTORICAL record that holds a vector again');
});

t.test('a damaged or empty file is refused before anything runs (BACKEND_CORRUPT, SCHEMA_MISMATCH), left as it was',
  async (t) => {
    // The capacity reading (step 1) queries fact_vec by rowid: without fact_vec_rowids sqlite-vec ended the process
    // (SIGSEGV); a dropped table gave an internal error; an empty file was given an SQLite header.
    const damages: [string, string][] = [
      ['DROP TABLE fact_vec_rowids', 'fact_vec \\(fact_vec_rowids missing\\)'],
      ['DROP TABLE eligible_codes_rowids', 'eligible_codes \\(eligible_codes_rowids missing\\)'],
      ['DROP TABLE eligible_vectors', 'fails verification \\(.*schema_objects'],
      ['DELETE FROM fact_vec_metadatachunks00 WHERE rowid = 1', 'the database file is damaged'],
    ];
    for (const [statement, message] of damages) {
      const bench = await openWriteBench(t, `${statement.split(' ').slice(0, 3).join('-')}.sqlite3`);
      await supersededHistory(bench);
      await bench.engine.close();
      const raw = new RawDatabase(bench.dbPath); // as the sqlite3 CLI would: shadow tables have no fence
      raw.exec(statement);
      raw.close();
      const before = readFileSync(bench.dbPath);
      const cli = admin('housekeep', '--db', bench.dbPath, '--scope', 'GLOBAL_USER', '--max-records', '2',
        '--required-free-bytes', String(NEVER_ENOUGH));
      t.equal(cli.status, 1, `${statement}: exit 1`);
      t.match(cli.stderr, new RegExp(`^factlane-admin: BACKEND_CORRUPT: .*${message}`), `${statement}: governed`);
      t.notMatch(cli.stderr, /internal error|\n\s+at /, `${statement}: no stack trace`);
      t.ok(readFileSync(bench.dbPath).equals(before), `${statement}: the file unchanged`);
    }
    const empty = join(t.testdir(), 'empty.sqlite3');
    writeFileSync(empty, '');
    const cli = admin('housekeep', '--db', empty, '--scope', 'GLOBAL_USER', '--max-records', '1',
      '--required-free-bytes', '0');
    t.equal(cli.status, 1);
    t.match(cli.stderr, /^factlane-admin: SCHEMA_MISMATCH: the file is not a FactLane database/);
    t.equal(statSync(empty).size, 0, 'the empty file stays empty');
  });

t.test('a damaged page is row 6 of the table, BLOCKED_DATABASE_INTEGRITY, once rows 1-5 do not match; nothing written',
  async (t) => {
    const bench = await openWriteBench(t);
    await supersededHistory(bench);
    await bench.engine.close();
    damageFirstPage(bench.dbPath, 'idx_adapter_scope_key');
    const before = readFileSync(bench.dbPath);
    const run = (requiredFreeBytes: number) => {
      const cli = admin('housekeep', '--db', bench.dbPath, '--scope', 'GLOBAL_USER', '--max-records', '2',
        '--required-free-bytes', String(requiredFreeBytes), '--json');
      t.equal(cli.status, 0, cli.stderr);
      return JSON.parse(cli.stdout) as Json;
    };
    t.match(run(NEVER_ENOUGH), { outcome: 'BLOCKED_DATABASE_INTEGRITY', mutation: 'NONE', compacted_records: 0,
      next_action: 'REPAIR_DATABASE_INTEGRITY_BEFORE_MEMORY_MUTATION', quick_check_after: 'FAIL' });
    t.match(run(0), { outcome: 'NO_ACTION_CAPACITY_REQUIREMENT_ALREADY_MET' }, 'row 2 comes first');
    t.ok(readFileSync(bench.dbPath).equals(before), 'the file unchanged');
  });

t.test('a binding the server can still open (UNPROVEN) does not stop housekeeping, which never reads it', async (t) => {
  const bench = await openWriteBench(t);
  await supersededHistory(bench);
  await bench.engine.close();
  const raw = new RawDatabase(bench.dbPath);
  raw.function('factlane_contract_v2_writer', () => 1);
  raw.exec("UPDATE adapter_meta SET value = 'not json' WHERE key = 'embedding_profile'");
  raw.close();
  const report = await housekeep(await openTarget(t, bench.dbPath), request(2, NEVER_ENOUGH));
  t.match(report, { outcome: 'HOUSEKEEPING_COMPLETE_CAPACITY_REQUIREMENT_NOT_MET', compacted_records: 2 });
});

t.test('a database this release cannot write is refused before anything runs', async (t) => {
  const bench = await openWriteBench(t);
  await supersededHistory(bench);
  const newer = migrationsDir(dirname(bench.dbPath), 'newer-release',
    { [nextMigration('next')]: 'CREATE TABLE next_feature (id INTEGER);' });
  const target = MaintenanceTarget.open({ dbPath: bench.dbPath, lease: 'shared', migrationsDir: newer });
  t.teardown(() => target.close());
  const before = tableRows(bench.dbPath);
  await t.rejects(housekeep(target, request(4, NEVER_ENOUGH)),
    { code: 'SCHEMA_MISMATCH', message: /older than this release/ });
  t.same(tableRows(bench.dbPath), before);
});

t.test('housekeep refuses an interlocked database; the command line validates its flags', async (t) => {
  const bench = await openWriteBench(t);
  await supersededHistory(bench);
  const dbPath = bench.dbPath;
  const json = admin('housekeep', '--db', dbPath, '--scope', 'GLOBAL_USER', '--max-records', '2',
    '--required-free-bytes', String(NEVER_ENOUGH), '--json');
  t.equal(json.status, 0, json.stderr);
  t.match(JSON.parse(json.stdout),
    { outcome: 'HOUSEKEEPING_COMPLETE_CAPACITY_REQUIREMENT_NOT_MET', compacted_records: 2 });
  t.notMatch(json.stdout, dbPath, 'no path in the report');
  const text = admin('housekeep', '--db', dbPath, '--scope', 'GLOBAL_USER', '--max-records', '1',
    '--required-free-bytes', '0');
  t.equal(text.status, 0, text.stderr);
  t.match(text.stdout, /^housekeep: NO_ACTION_CAPACITY_REQUIREMENT_ALREADY_MET\n  next: NO_ACTION_REQUIRED\n/);

  const usage = [
    ['--scope', 'GLOBAL_USER', '--max-records', '1'], ['--max-records', '1', '--required-free-bytes', '0'],
    ['--scope', 'NOWHERE', '--max-records', '1', '--required-free-bytes', '0'],
    ['--scope', 'PROJECT', '--max-records', '1', '--required-free-bytes', '0'],
    ['--scope', 'GLOBAL_USER', '--project-id', 'p1', '--max-records', '1', '--required-free-bytes', '0'],
    ['--scope', 'PROJECT', '--project-id', 'sk-QzxvQzxvQzxvQzxvQzxvQzxv', '--max-records', '1',
      '--required-free-bytes', '0'],
    ...['0', '-1', '1.5', 'abc', '1e3',
      ''].map((n) => ['--scope', 'GLOBAL_USER', '--max-records', n, '--required-free-bytes', '0']),
    ...['-1', '0.5', 'lots',
      '99999999999999999999'].map((b) => ['--scope', 'GLOBAL_USER', '--max-records', '1', '--required-free-bytes', b]),
  ];
  for (const args of usage) {
    const result = admin('housekeep', '--db', dbPath, ...args);
    t.equal(result.status, 2, args.join(' '));
  }
  t.match(admin('housekeep', '--db', dbPath, '--scope', 'NOWHERE', '--max-records', '1', '--required-free-bytes',
    '0').stderr, /INVALID_ENUM|UNKNOWN_SCOPE/);
  // A number past 2^53 - 1 was refused as no "whole number of at least 0", which it is: the message gives the range.
  t.match(admin('housekeep', '--db', dbPath, '--scope', 'GLOBAL_USER', '--max-records', '1', '--required-free-bytes',
    '99999999999999999').stderr, '--required-free-bytes must be a whole number from 0 to 9007199254740991');
  t.equal(admin('audit', '--db', dbPath, '--scope', 'GLOBAL_USER').status, 2, 'housekeep flags belong to housekeep');
  t.equal(admin('housekeep', '--scope', 'GLOBAL_USER', '--max-records', '1', '--required-free-bytes', '0').status, 2,
    '--db is required');
  const missing = admin('housekeep', '--db', join(dirname(dbPath), 'absent.sqlite3'), '--scope', 'GLOBAL_USER',
    '--max-records', '1', '--required-free-bytes', '0');
  t.equal(missing.status, 1);
  t.match(missing.stderr, /^factlane-admin: SOURCE_NOT_FOUND: /m);

  await bench.engine.close();
  writeInterlock(dbPath);
  const before = tableRows(dbPath);
  const interlocked = admin('housekeep', '--db', dbPath, '--scope', 'GLOBAL_USER', '--max-records', '1',
    '--required-free-bytes', String(NEVER_ENOUGH));
  t.equal(interlocked.status, 1);
  t.match(interlocked.stderr, /^factlane-admin: MAINTENANCE_IN_PROGRESS: /m);
  t.same(tableRows(dbPath), before, 'nothing compacted');
});
