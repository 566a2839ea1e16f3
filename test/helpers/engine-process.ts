// A child process for multi-process storage tests. Usage: engine-process.ts MODE DB_PATH
//   engine     open an engine (shared lease), print "ready"; on stdin "write" store a row and print "wrote <row_id>"; "close" closes and exits
//   exclusive  hold the exclusive maintenance lease, print "ready", wait until killed
//   lock       hold the SQLite write lock through a raw connection (BEGIN IMMEDIATE), print "ready", wait until killed
import { createInterface } from 'node:readline';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import { candidateRow, openEngine, RawDatabase, storeRow } from './storage.js';

const [mode, dbPath] = process.argv.slice(2);
if (!dbPath) throw new Error('usage: engine-process.ts MODE DB_PATH');

if (mode === 'engine') {
  const engine = await openEngine(dbPath);
  process.stdout.write('ready\n');
  for await (const line of createInterface({ input: process.stdin })) {
    if (line === 'write') process.stdout.write(`wrote ${await storeRow(engine, candidateRow({ fact: `from pid ${process.pid}` }))}\n`);
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
} else {
  throw new Error(`unknown mode ${mode}`);
}
