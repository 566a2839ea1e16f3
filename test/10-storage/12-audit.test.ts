import t, { type Test } from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { auditFile } from '../../src/maintenance/audit-operation.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import {
  ADMIN_BIN, candidateRow, damageFirstPage, downgradeToSchemaOne, openEngine, RawDatabase, runBin, sqliteVec,
  storeRow, writeInterlock,
} from '../helpers/storage.js';
import { fixtureRow, insertFixtures, padScope, scopeTuple } from '../helpers/reads.js';
import {
  currentRequest, openWriteBench, replaceRequest, reverifyRequest, store, storeRequest, update, type Json,
} from '../helpers/writes.js';

// factlane-admin audit (OPERATIONS.md §4.4): the lineage invariants of STORAGE.md §7.4, read-only.

const admin = (...args: string[]) => runBin(ADMIN_BIN, args);

/** A database with a real lineage: a promoted Candidate, a REPLACE, a contradiction Candidate, a REVERIFY. */
type LineageRecord = 'candidate' | 'promoted' | 'replaced' | 'conflicting' | 'shell' | 'reverified';

async function lineage(t: Test): Promise<{ dbPath: string; close: () => Promise<void>;
  records: Record<LineageRecord, Json>; }> {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  const delegated = bench.adapter('delegated-candidate');
  const candidate = (await store(delegated,
    storeRequest({ fact: 'The build uses Node 20', subject: 'node' }))).results[0];
  const promoted = (await update(owner, reverifyRequest(candidate, { expected_record_id: candidate.record_id,
    verification: { source_timestamp: '2026-11-01T00:00:00Z' } }))).results[0];
  const replaced = (await update(owner,
    replaceRequest(promoted, { fact: 'The build uses Node 22', subject: 'node' }))).results[0];
  const conflicting = (await store(delegated,
    storeRequest({ fact: 'The build uses Node 18', subject: 'node' }))).results[0];
  const shell = (await store(owner, currentRequest({ fact: 'The shell is zsh', subject: 'shell' }))).results[0];
  const reverified = (await update(owner, reverifyRequest(shell))).results[0];
  return { dbPath: bench.dbPath, close: () => bench.engine.close(),
    records: { candidate, promoted, replaced, conflicting, shell, reverified } };
}

/** A raw connection that passes the fences, as a careless tool with the writer function would. */
function tamper(dbPath: string, work: (db: InstanceType<typeof RawDatabase>) => void): void {
  const db = new RawDatabase(dbPath);
  try {
    sqliteVec.load(db);
    db.function('factlane_contract_v2_writer', { deterministic: false }, () => 1);
    work(db);
  } finally {
    db.close();
  }
}

const shipped = () => MaintenanceTarget.shippedMigrations();
/**
 * The checks of a database at the shipped version; one without the eligible vector layout (schema 1)
 * has no eligible_forms.
 */
const ALL_CHECKS = ['no_current_forks', 'single_successor', 'superseded_have_successor', 'revisions_consecutive',
  'lineage_shape', 'current_metadata', 'contradiction_exclusive', 'derived_state', 'no_orphans', 'eligible_forms',
  'token_counts', 'fences_present', 'schema_current', 'interlock_absent', 'quick_check'];
const failing = (dbPath: string) => Object.fromEntries(
  auditFile(dbPath, shipped()).checks.filter((c) => c.status === 'FAIL').map((c) => [c.name, c.samples]));

t.test('a database written through the product passes every check', async (t) => {
  const { dbPath, close } = await lineage(t);
  await close();
  const report = auditFile(dbPath, shipped());
  t.same(report.checks.map((c) => c.name), ALL_CHECKS);
  t.same(report.checks.filter((c) => c.status === 'FAIL'), []);
  t.equal(report.ok, true);
  const cli = admin('audit', '--db', dbPath, '--json');
  t.equal(cli.status, 0, cli.stderr);
  t.equal(JSON.parse(cli.stdout).ok, true);
});

t.test('a token count without its record, or on a tombstone, fails token_counts (schema 5)', async (t) => {
  const { dbPath, close, records } = await lineage(t);
  await close();
  let shellRow = 0;
  tamper(dbPath, (db) => {
    t.equal(db.prepare('SELECT count(*) FROM record_token_counts').pluck().get(),
      db.prepare('SELECT count(*) FROM adapter_records').pluck().get(), 'every record written has its count');
    db.prepare('INSERT INTO record_token_counts (row_id, fixed_tokens) VALUES (9999, 300)').run();
    shellRow = db.prepare('SELECT row_id FROM adapter_records WHERE record_id = ?').pluck()
      .get(records.shell!.record_id) as number;
    db.prepare("UPDATE adapter_records SET lifecycle_state = 'QUARANTINED' WHERE row_id = ?").run(shellRow);
  });
  const samples = failing(dbPath).token_counts;
  t.same(samples, [records.shell!.record_id, 'record_token_counts:9999'], 'the tombstone by its record id, the orphan');
  tamper(dbPath, (db) => db.prepare('DELETE FROM record_token_counts WHERE row_id IN (9999, ?)').run(shellRow));
  t.notOk('token_counts' in failing(dbPath), 'a record may lack a count: it is counted whole when read');
});

t.test('a database without the eligible vector layout (schema 1) is audited without eligible_forms', async (t) => {
  const dbPath = join(t.testdir(), 'old.sqlite3');
  const engine = await openEngine(dbPath);
  await storeRow(engine, candidateRow());
  await engine.close();
  downgradeToSchemaOne(dbPath);
  const report = auditFile(dbPath, shipped());
  t.same(report.checks.map((c) => c.name),
    ALL_CHECKS.filter((name) => name !== 'eligible_forms' && name !== 'token_counts'));
  t.same(report.checks.filter((c) => c.status === 'FAIL'), [], 'an older ledger is still a sound one');
});

t.test('each broken invariant fails its check and names the records', async (t) => {
  const { dbPath, close, records } = await lineage(t);
  await close();
  const { shell, reverified, replaced, promoted } = records;
  tamper(dbPath, (db) => {
    // L8: a current record that claims no verifier.
    db.prepare("UPDATE adapter_records SET verified_by = 'UNVERIFIED' WHERE record_id = ?").run(reverified.record_id);
    // L6: a successor moved to another scope.
    db.prepare("UPDATE adapter_records SET agent_id = 'elsewhere' WHERE record_id = ?").run(replaced.record_id);
    // L10: a record that lost its FTS row, and an FTS row without a record.
    const rowId = (db.prepare('SELECT row_id FROM adapter_records WHERE record_id = ?')
      .get(promoted.record_id) as { row_id: number }).row_id;
    db.prepare('DELETE FROM fact_fts WHERE rowid = ?').run(rowId);
    db.prepare("INSERT INTO fact_fts (rowid, search_text) VALUES (999999, 'stray')").run();
  });
  const failures = failing(dbPath);
  t.same(failures.current_metadata, [reverified.record_id]);
  t.same(failures.lineage_shape, [replaced.record_id]);
  t.same(failures.derived_state, [promoted.record_id]);
  t.same(failures.no_orphans, ['fact_fts:999999']);
  t.notOk('no_current_forks' in failures, 'untouched invariants still pass');
  void shell;
  const cli = admin('audit', '--db', dbPath);
  t.equal(cli.status, 3, 'problems found → exit 3');
  t.match(cli.stdout, /FAIL {2}current_metadata/);
});

t.test('an FTS row that does not hold search_text(fact) fails derived_state: a keyword search would find the wrong '
  + 'record', async (t) => {
  const { dbPath, close, records } = await lineage(t);
  await close();
  const rowOf = (db: InstanceType<typeof RawDatabase>, recordId: string) =>
    (db.prepare('SELECT row_id FROM adapter_records WHERE record_id = ?').get(recordId) as { row_id: number }).row_id;
  t.notOk('derived_state' in failing(dbPath), 'as stored, every FTS row holds its folded text');
  // The index rewritten (FTS5 has no fence), and a fact rewritten behind its index by a writer that passed the fences.
  tamper(dbPath, (db) => {
    db.prepare("UPDATE fact_fts SET search_text = 'zebra unicorn' WHERE rowid = ?")
      .run(rowOf(db, records.shell.record_id));
    db.prepare("UPDATE adapter_records SET fact = 'The build uses Node 16' WHERE record_id = ?")
      .run(records.candidate.record_id);
  });
  t.same(failing(dbPath).derived_state, [records.candidate.record_id, records.shell.record_id].sort());
  // The TEXT column takes a BLOB from a raw writer: a finding (exit 3), not a fault of the audit, nor of a backup's.
  tamper(dbPath, (db) => db.prepare("UPDATE adapter_records SET fact = X'41424344' WHERE record_id = ?")
    .run(records.promoted.record_id));
  t.ok(failing(dbPath).derived_state?.includes(records.promoted.record_id), 'a fact that is no text');
  t.equal(admin('audit', '--db', dbPath).status, 3, 'audit reports it');
});

t.test('forks, successors, revisions and contradictions', async (t) => {
  const { dbPath, close, records } = await lineage(t);
  await close();
  const { shell, reverified, conflicting, replaced } = records;
  tamper(dbPath, (db) => {
    db.exec('DROP INDEX ux_adapter_live_memory');
    // L2 and L7: the superseded revision of `shell` comes back to life beside its successor.
    db.prepare("UPDATE adapter_records SET lifecycle_state = 'VALIDATED_CURRENT' WHERE record_id = ?")
      .run(shell.record_id);
    // L9: the conflicting Candidate becomes current beside the fact it contradicts.
    db.prepare("UPDATE adapter_records SET lifecycle_state = 'VALIDATED_CURRENT', verified_by = 'OWNER', " +
      "authority_role = 'OWNER_CURRENT', contradiction_state = 'NONE', source_timestamp = '2026-11-01T00:00:00Z', " +
      "last_verified_at = '2026-11-01T00:00:00Z' WHERE record_id = ?").run(conflicting.record_id);
  });
  const failures = failing(dbPath);
  t.same(failures.no_current_forks, [shell.record_id, reverified.record_id].sort());
  t.same(failures.superseded_have_successor, [shell.record_id]);
  t.same(failures.contradiction_exclusive, [conflicting.record_id, replaced.record_id].sort());
  t.ok(failures.derived_state?.includes(shell.record_id), 'its vector still says not current');
  tamper(dbPath, (db) =>
    db.prepare('UPDATE adapter_records SET revision = 7 WHERE record_id = ?').run(reverified.record_id));
  t.ok(failing(dbPath).revisions_consecutive?.includes(reverified.record_id), 'L4: a gap in the revisions');
});

t.test('fences, schema and the interlock', async (t) => {
  const { dbPath, close } = await lineage(t);
  await close();
  tamper(dbPath, (db) => db.exec('DROP TRIGGER factlane_v2_adapter_update_fence'));
  writeInterlock(dbPath);
  const failures = failing(dbPath);
  t.ok('fences_present' in failures);
  t.ok('interlock_absent' in failures);
  t.notOk('schema_current' in failures);
});

t.test('fences that could not be checked fail: a schema version this release does not know, or a foreign file',
  async (t) => {
    const { dbPath, close } = await lineage(t);
    await close();
    tamper(dbPath, (db) => {
      for (const name of db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").pluck().all())
        db.exec(`DROP TRIGGER "${String(name)}"`);
      db.exec("INSERT INTO schema_migrations SELECT max(version) + 1, 'future', 'x', max(applied_at), 'test' "
        + 'FROM schema_migrations');
    });
    const unknown = 'not checked: no reference schema for this version, or no vector table';
    t.same(failing(dbPath).fences_present, [unknown], 'no fence left, at a version with no reference');
    const foreign = join(dirname(dbPath), 'foreign.sqlite3');
    const other = new RawDatabase(foreign);
    other.exec('CREATE TABLE notes (body TEXT)');
    other.close();
    t.same(failing(foreign).fences_present, [unknown], 'an SQLite file that is not FactLane\'s');
  });

t.test('a vec0 shadow table a raw writer damaged fails a check; the audit still reports every check', async (t) => {
  for (const [damage, statement] of [
    ['a chunk row deleted', 'DELETE FROM fact_vec_chunks WHERE rowid = (SELECT max(rowid) FROM fact_vec_chunks)'],
    ['the codes\' chunk table dropped', 'DROP TABLE eligible_codes_chunks'],
    // sqlite-vec ends the process on a point lookup without `_rowids`: such tables are named, not queried.
    ['the vectors\' rowid table dropped', 'DROP TABLE fact_vec_rowids'],
    ['the codes\' rowid table dropped', 'DROP TABLE eligible_codes_rowids'],
  ] as const) {
    await t.test(damage, async (t) => {
      const { dbPath, close } = await lineage(t);
      await close();
      // A coded scope too (eligible codes), so every vec0 table is read.
      const engine = await openEngine(dbPath);
      const scope = scopeTuple('PROJECT', { project_id: 'coded' });
      await padScope(engine, scope);
      await insertFixtures(engine, [{ row: fixtureRow(scope, 'The coded scope holds one current fact') }]);
      await engine.close();
      // As the sqlite3 CLI would: no sqlite-vec, no writer function; shadow tables carry no fence.
      const raw = new RawDatabase(dbPath);
      raw.exec(statement);
      raw.close();
      const report = auditFile(dbPath, shipped());
      t.same(report.checks.map((c) => c.name), ALL_CHECKS, 'every check reported');
      const unreadable = report.checks.filter((c) => c.samples.some((sample) => sample.startsWith('unreadable: ')));
      t.ok(unreadable.length > 0 && unreadable.every((c) => c.status === 'FAIL'),
        `failed: ${unreadable.map((c) => c.name)}`);
      const dropped = /^DROP TABLE (\w+)$/.exec(statement)?.[1];
      if (dropped !== undefined) {
        const named = new RegExp(`^unreadable: \\w+ \\(${dropped} missing\\)$`);
        t.ok(unreadable.every((c) => c.count === 1 && named.test(c.samples[0]!)), `${dropped} named once per check`);
      }
      const cli = admin('audit', '--db', dbPath, '--json');
      t.equal(cli.status, 3, cli.stderr);
      t.equal(JSON.parse(cli.stdout).ok, false);
    });
  }
});

t.test('a damaged page of adapter_records fails the checks reading it; the audit still reports, exit 3', async (t) => {
  const { dbPath, close } = await lineage(t);
  await close();
  damageFirstPage(dbPath, 'adapter_records');
  const before = readFileSync(dbPath);
  const report = auditFile(dbPath, shipped());
  t.same(report.checks.map((c) => c.name), ALL_CHECKS, 'every check reported');
  const failed = report.checks.filter((c) => c.status === 'FAIL').map((c) => c.name);
  t.ok(failed.includes('quick_check') && failed.includes('revisions_consecutive'), `failed: ${failed}`);
  const cli = admin('audit', '--db', dbPath, '--json');
  t.equal(cli.status, 3, cli.stderr);
  t.equal(JSON.parse(cli.stdout).ok, false);
  t.ok(readFileSync(dbPath).equals(before), 'the file is unchanged');
});

t.test('a file SQLite cannot read is reported, not refused: the checks of any file FAIL, exit 3', async (t) => {
  const { dbPath, close } = await lineage(t);
  await close();
  const dir = dirname(dbPath);
  const text = join(dir, 'notes.sqlite3');
  writeFileSync(text, 'these are notes, not a database\n'.repeat(200));
  // An SQLite file whose schema page is garbage: the header stays, the schema behind it does not.
  const raw = new RawDatabase(dbPath);
  raw.pragma('wal_checkpoint(TRUNCATE)');
  raw.close();
  const header = join(dir, 'garbled.sqlite3');
  writeFileSync(header, Buffer.concat([readFileSync(dbPath).subarray(0, 100), Buffer.alloc(3000, 0x55),
    readFileSync(dbPath).subarray(3100)]));
  for (const [file, reason] of [[text, 'not an SQLite database'], [header, 'the schema cannot be read']] as const) {
    const before = readFileSync(file);
    const cli = admin('audit', '--db', file, '--json');
    t.equal(cli.status, 3, cli.stderr);
    const report = JSON.parse(cli.stdout);
    t.match(report, { ok: false, db_identity: /^[0-9a-f]+$/ });
    t.same(report.checks.map((c: Json) => [c.name, c.status, c.samples]),
      ['fences_present', 'schema_current', 'interlock_absent', 'quick_check'].map((name) =>
        [name, 'FAIL', [`unreadable: ${reason}`]]), reason);
    t.ok(readFileSync(file).equals(before), `${reason}: the file unchanged`);
  }
});

t.test('a backup manifest records the audit', async (t) => {
  const { dbPath, close } = await lineage(t);
  await close();
  const out = join(dirname(dbPath), 'backup.sqlite3');
  const result = admin('backup', '--db', dbPath, '--out', out, '--json');
  t.equal(result.status, 0, result.stderr);
  const manifest = JSON.parse(result.stdout).manifest;
  t.equal(manifest.audit.ok, true);
  t.same(manifest.audit.checks.map((c: { name: string }) => c.name), ALL_CHECKS);
});

t.test('a backup whose checks failed says so, and names them', async (t) => {
  const { dbPath, close } = await lineage(t);
  await close();
  const raw = new RawDatabase(dbPath);
  raw.exec('DROP INDEX idx_fact_vec_chunks_partition');
  raw.close();
  const out = join(dirname(dbPath), 'backup.sqlite3');
  const result = admin('backup', '--db', dbPath, '--out', out);
  t.equal(result.status, 0, 'recorded, not fatal (OPERATIONS.md 4.1 step 3)');
  t.match(result.stdout,
    /^backup written; its checks FAILED: verify schema_objects \(restore refuses a copy that fails verify\): \d+ bytes/);
  t.notMatch(result.stdout, /verified/);
});
