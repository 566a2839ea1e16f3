import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { otherOpeners } from '../../src/storage/quiescence-inventory.js';
import { RawDatabase, REPO_ROOT } from '../helpers/storage.js';

// OPERATIONS.md §5.3 check 8: other processes that hold the database, seen through /proc.

t.test('a process whose descriptors cannot be followed counts when /proc/locks shows it locking the database',
  async (t) => {
  const dir = t.testdir();
  const dbPath = join(dir, 'x.sqlite3');
  const raw = new RawDatabase(dbPath);
  raw.pragma('journal_mode = WAL');
  raw.exec('CREATE TABLE t (x)');
  raw.close();
  // A real SQLite connection in another process: in WAL mode it holds a lock on the -shm while it is open.
  const script = `const db = new (require('better-sqlite3'))(process.argv[1]); ` +
    `db.prepare('SELECT count(*) FROM t').get();
    process.stdout.write('ready\\n'); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['-e', script, dbPath],
    { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => { child.kill('SIGKILL'); });
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
  const pid = child.pid!;
  t.equal(otherOpeners(dbPath), 1, 'the real /proc sees it by its descriptors');

  // A /proc where that process's descriptors cannot be followed (a link that loops stands for EACCES, which root
  // never meets), with the kernel's real lock table beside it.
  const procRoot = join(dir, 'proc');
  mkdirSync(join(procRoot, String(pid), 'fd'), { recursive: true });
  symlinkSync(join(procRoot, String(pid), 'fd', '3'), join(procRoot, String(pid), 'fd', '3'));
  writeFileSync(join(procRoot, 'locks'), readFileSync('/proc/locks', 'utf8'));
  t.match(readFileSync(join(procRoot, 'locks'), 'utf8'), new RegExp(`\\s${pid}\\s`),
    'the lock table names the process');
  t.equal(otherOpeners(dbPath, { procRoot }), 1, 'counted: it locks the database');
  writeFileSync(join(procRoot, 'locks'), '');
  t.equal(otherOpeners(dbPath, { procRoot }), 0, 'without a lock on the database it is not known to hold it');
  writeFileSync(join(procRoot, 'locks'), readFileSync('/proc/locks', 'utf8'));
  t.equal(otherOpeners(dbPath, { procRoot, ownerUid: 12345 + (process.geteuid?.() ?? 0) }),
    process.geteuid?.() === 0 ? 1 : 0,
    'a process of another user than the owner counts only when it is root\'s');
});
