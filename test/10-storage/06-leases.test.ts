import t from 'tap';
import { once } from 'node:events';
import * as fs from 'node:fs';
import { existsSync, linkSync, readdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseLease } from '../../src/storage/database-lease.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import {
  candidateRow, deadPid, openEngine, spawnTsHelper, storeRow, tableCounts, waitForLine,
} from '../helpers/storage.js';

t.test('two engine processes share one database and both write', async (t) => {
  const dbPath = join(t.testdir(), 'shared.sqlite3');
  const local = await openEngine(dbPath);
  const child = spawnTsHelper('engine-process.ts', ['engine', dbPath]);
  t.teardown(() => { child.kill('SIGKILL'); });
  await waitForLine(child, /^ready$/);
  const wrote = waitForLine(child, /^wrote \d+$/);
  child.stdin!.write('write\n');
  await wrote;
  await storeRow(local, candidateRow({ fact: 'from the test process' }));
  const closed = waitForLine(child, /^closed$/);
  child.stdin!.write('close\n');
  await closed;
  await local.close();
  t.equal(tableCounts(dbPath).records, 2, 'both writes landed');
});

t.test('an exclusive lease holder makes open() fail with MAINTENANCE_IN_PROGRESS until it dies', async (t) => {
  const dbPath = join(t.testdir(), 'maint.sqlite3');
  await (await openEngine(dbPath)).close();
  const holder = spawnTsHelper('engine-process.ts', ['exclusive', dbPath]);
  t.teardown(() => { holder.kill('SIGKILL'); });
  await waitForLine(holder, /^ready$/);
  await t.rejects(openEngine(dbPath), { code: 'MAINTENANCE_IN_PROGRESS' });
  holder.kill('SIGKILL');
  await once(holder, 'exit');
  const engine = await openEngine(dbPath);
  t.equal(engine.created, false, 'opens once the holder is gone');
  await engine.close();
});

t.test('a running engine makes an exclusive lease fail, including through a hard-link alias', async (t) => {
  const dir = t.testdir();
  const dbPath = join(dir, 'live.sqlite3');
  const engine = await openEngine(dbPath);
  const alias = join(dir, 'alias.sqlite3');
  linkSync(dbPath, alias);
  t.throws(() => MaintenanceTarget.open({ dbPath, lease: 'exclusive' }), { code: 'MAINTENANCE_IN_PROGRESS' });
  t.throws(() => MaintenanceTarget.open({ dbPath: alias, lease: 'exclusive' }), { code: 'MAINTENANCE_IN_PROGRESS' },
    'same inode, same lock');
  await engine.close();
  // With the lease free, a file with two names is refused by every opener: each name would get its own -wal.
  const twoNames = { code: 'BACKEND_UNAVAILABLE', message: /has another name \(a hard link\)/ };
  t.throws(() => MaintenanceTarget.open({ dbPath: alias, lease: 'exclusive' }), twoNames, 'a maintenance command');
  t.throws(() => MaintenanceTarget.open({ dbPath, lease: 'shared' }), twoNames, 'either name');
  await t.rejects(openEngine(dbPath), twoNames, 'the server');
  unlinkSync(alias);
  const exclusive = MaintenanceTarget.open({ dbPath, lease: 'exclusive' });
  t.pass('exclusive lease available after close, with one name again');
  exclusive.close();
});

t.test('the second name a killed restore left (a dead pid\'s temporary name) goes at the next start; a live one\'s '
  + 'is refused', async (t) => {
  const dir = t.testdir();
  const dbPath = join(dir, 'restored.sqlite3');
  const engine = await openEngine(dbPath);
  await storeRow(engine, candidateRow());
  await engine.close();
  // Restore publishes by linking its temporary name to the target, then removes the temporary name: killed between.
  const dead = deadPid();
  const leftover = join(dir, `.restored.sqlite3.${dead}.0123456789abcdef.tmp`);
  linkSync(dbPath, leftover);
  const reopened = await openEngine(dbPath);
  t.equal(reopened.created, false, 'the server starts on it');
  t.notOk(existsSync(leftover), 'the dead run\'s name is gone');
  t.equal(tableCounts(dbPath).records, 1, 'the database, its record included');
  await reopened.close();
  const running = join(dir, `.restored.sqlite3.${process.pid}.0123456789abcdef.tmp`);
  linkSync(dbPath, running);
  await t.rejects(openEngine(dbPath), { code: 'BACKEND_UNAVAILABLE', message: /has another name/ },
    'a running restore\'s name is not the server\'s to remove');
  t.ok(existsSync(running));
});

/** How many file descriptors this process has open. */
const descriptors = () => readdirSync('/proc/self/fd').length;

t.test('a refused upgrade to exclusive keeps the shared lease: Linux drops the old flock before it tries',
  async (t) => {
  const dbPath = join(t.testdir(), 'upgrade.sqlite3');
  const mine = DatabaseLease.acquire(dbPath, 'shared', { create: true });
  const other = DatabaseLease.acquire(dbPath, 'shared', { create: false }); // its own descriptor: another holder
  t.teardown(() => { mine.release(); other.release(); });
  t.equal(mine.tryUpgradeToExclusive(), false, 'another shared holder refuses the upgrade');
  t.ok(mine.held, 'the lease is still held');
  other.release();
  t.throws(() => DatabaseLease.acquire(dbPath, 'exclusive', { create: false }), { code: 'MAINTENANCE_IN_PROGRESS' },
    'and still shared: an exclusive lease is refused while it stands');
  t.equal(mine.tryUpgradeToExclusive(), true, 'alone, it upgrades');
});

t.test('a new file that cannot be made 0600 is closed and removed: no descriptor, no empty database left',
  async (t) => {
  const dbPath = join(t.testdir(), 'nochmod.sqlite3');
  type Lease = typeof import('../../src/storage/database-lease.js');
  const { DatabaseLease: Refusing } = await t.mockImport<Lease>('../../src/storage/database-lease.js', {
    'node:fs': { ...fs, fchmodSync: () => { throw Object.assign(new Error('EPERM: fchmod'), { code: 'EPERM' }); } },
  });
  const before = descriptors();
  t.throws(() => Refusing.acquire(dbPath, 'shared', { create: true }),
    { code: 'BACKEND_UNAVAILABLE', message: /cannot be opened \(EPERM\)/ });
  t.notOk(existsSync(dbPath), 'the file it created is gone');
  t.equal(descriptors(), before, 'and its descriptor closed');
});

t.test('a flock the filesystem refuses (not a conflict) is BACKEND_UNAVAILABLE, and the descriptor is closed',
  async (t) => {
  // Some FUSE, SMB or NFS `nolock` mounts fail flock with ENOLCK or EOPNOTSUPP rather than EWOULDBLOCK.
  const dbPath = join(t.testdir(), 'nolock.sqlite3');
  const native = await import('../../src/storage/native.js');
  type Lease = typeof import('../../src/storage/database-lease.js');
  const { DatabaseLease: NoLocks } = await t.mockImport<Lease>('../../src/storage/database-lease.js', {
    '../../src/storage/native.js': {
      ...native,
      loadFlock: () => () => { throw Object.assign(new Error('ENOLCK: no locks available'), { code: 'ENOLCK' }); },
    },
  });
  const before = descriptors();
  t.throws(() => NoLocks.acquire(dbPath, 'shared', { create: true }),
    { code: 'BACKEND_UNAVAILABLE', message: 'the database lease cannot be taken on this filesystem' });
  t.equal(descriptors(), before, 'no descriptor left open');
});

t.test('a database path that names another file than the one locked is BACKEND_UNAVAILABLE, retryable', async (t) => {
  const dir = t.testdir();
  const dbPath = join(dir, 'moved.sqlite3');
  const lease = DatabaseLease.acquire(dbPath, 'shared', { create: true });
  t.teardown(() => lease.release());
  lease.assertSameInode();
  fs.renameSync(dbPath, join(dir, 'elsewhere.sqlite3'));
  fs.writeFileSync(dbPath, '');
  t.throws(() => lease.assertSameInode(), {
    code: 'BACKEND_UNAVAILABLE', retryable: true, message: 'the database path changed while it was being opened; retry',
  }, 'replaced by another file');
  fs.rmSync(dbPath);
  t.throws(() => lease.assertSameInode(), { code: 'BACKEND_UNAVAILABLE' }, 'or removed');
});
