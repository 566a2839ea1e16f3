// A child process for multi-process storage tests. Usage: engine-process.ts MODE DB_PATH
//   engine     open an engine (shared lease), print "ready"; on stdin "write" store a row and print "wrote <row_id>";
//              "close" closes and exits
//   exclusive  hold the exclusive maintenance lease, print "ready", wait until killed
//   lock [MS]  hold the SQLite write lock through a raw connection (BEGIN IMMEDIATE), print "ready", wait until killed
//              or, given MS, let go after MS milliseconds and exit
//   exclusive-lock MS  lock the whole file as another SQLite user may (locking_mode EXCLUSIVE: readers get busy too),
//              print "ready", let go after MS milliseconds and exit
//   hold-writer  open an engine, start a write that never ends (holding the writer queue's lock), print "holding"
//   raw-writer COUNT DIM  an "older build": COUNT records, each in its own BEGIN IMMEDIATE on a raw connection
//              that registers the writer function as 1 and never takes the writer queue; prints
//              "raw <idempotency_key>" per commit, then "done"
import { createInterface } from 'node:readline';
import { Kysely, SqliteDialect, type Transaction } from 'kysely';
import type { DB } from '../../generated/db.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import { insertRecordUnchecked } from '../../src/storage/record-repository.js';
import { candidateRow, openEngine, RawDatabase, sqliteVec, storeRow, unitVector } from './storage.js';

const [mode, dbPath, ...rest] = process.argv.slice(2);
if (!dbPath) throw new Error('usage: engine-process.ts MODE DB_PATH');

if (mode === 'engine') {
  const engine = await openEngine(dbPath);
  process.stdout.write('ready\n');
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'write')
      process.stdout.write(`wrote ${await storeRow(engine, candidateRow({ fact: `from pid ${process.pid}` }))}\n`);
    if (line === 'close') {
      await engine.close();
      process.stdout.write('closed\n');
      process.exit(0);
    }
  }
} else if (mode === 'exclusive') {
  const target = MaintenanceTarget.open({ dbPath, lease: 'exclusive' });
  process.stdout.write('ready\n');
  // Keep the lease descriptor reachable for the life of the process.
  setInterval(() => target.path, 1 << 30);
} else if (mode === 'lock') {
  const raw = new RawDatabase(dbPath);
  raw.exec('BEGIN IMMEDIATE');
  process.stdout.write('ready\n');
  // The timer keeps a reference to the connection: a collected connection would close and drop the lock.
  setInterval(() => raw.inTransaction, 1 << 30);
  if (rest[0] !== undefined) {
    setTimeout(() => {
      raw.exec('ROLLBACK');
      raw.close();
      process.exit(0);
    }, Number(rest[0]));
  }
} else if (mode === 'exclusive-lock') {
  const raw = new RawDatabase(dbPath);
  raw.pragma('locking_mode = EXCLUSIVE');
  raw.exec('BEGIN EXCLUSIVE');
  raw.prepare('SELECT count(*) FROM adapter_meta').get();
  process.stdout.write('ready\n');
  setTimeout(() => {
    raw.exec('COMMIT');
    raw.close();
    process.exit(0);
  }, Number(rest[0]));
} else if (mode === 'hold-writer') {
  const engine = await openEngine(dbPath);
  // Awaiting something else inside a write breaks the storage rules on purpose: the write stays open.
  void engine.write(async () => {
    process.stdout.write('holding\n');
    await new Promise(() => {});
  });
  setInterval(() => engine.path, 1 << 30);
} else if (mode === 'raw-writer') {
  const count = Number(rest[0]);
  const dimension = Number(rest[1]);
  const raw = new RawDatabase(dbPath);
  sqliteVec.load(raw);
  raw.pragma('busy_timeout = 5000');
  raw.function('factlane_contract_v2_writer', { deterministic: false }, () => 1);
  // Kysely's own SQLite dialect over the raw connection, only to reuse the row layout of insertRecordUnchecked;
  // the transaction is the raw connection's own BEGIN IMMEDIATE.
  const kysely = new Kysely<DB>({ dialect: new SqliteDialect({ database: raw }) });
  for (let n = 0; n < count; n += 1) {
    const row = candidateRow({
      fact: `raw writer ${process.pid} record ${n}`, idempotency_key: `raw-${process.pid}-${n}`,
      embedding_output_dimension: dimension,
    });
    for (let attempt = 0; ; attempt += 1) {
      try {
        raw.exec('BEGIN IMMEDIATE');
        break;
      } catch (error) {
        if ((error as { code?: string }).code !== 'SQLITE_BUSY' || attempt >= 5) throw error;
      }
    }
    try {
      const derived = { searchText: row.fact, embedding: unitVector(n, dimension) };
      await insertRecordUnchecked(kysely as unknown as Transaction<DB>, row, derived);
      raw.exec('COMMIT');
    } catch (error) {
      if (raw.inTransaction) raw.exec('ROLLBACK');
      throw error;
    }
    process.stdout.write(`raw ${row.idempotency_key}\n`);
  }
  await kysely.destroy();
  process.stdout.write('done\n');
} else {
  throw new Error(`unknown mode ${mode}`);
}
