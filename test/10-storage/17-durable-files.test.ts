import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPrivateParents, fileDigest, removeDirectories } from '../../src/storage/durable-files.js';
import { spawnTsHelper, waitForLine } from '../helpers/storage.js';

// STORAGE.md §2: parent directories of a new database are created 0700, whatever the umask.

t.test('processes creating the same new parents at once all go on (STORAGE.md §10 step 4)', async (t) => {
  // Two hosts started together on a fresh machine create $XDG_DATA_HOME/factlane at the same moment: whoever makes a
  // directory second must take it as made, not fail with EEXIST.
  const root = t.testdir();
  const startAt = Date.now() + 4000;
  const children = Array.from({ length: 4 }, () => spawnTsHelper('parents-race.ts', [root, String(startAt), '40']));
  const lines = await Promise.all(children.map((child) => waitForLine(child, /./)));
  t.same(lines, ['ok', 'ok', 'ok', 'ok'], lines.join(' | '));
  t.equal(statSync(join(root, 'p39', 'a', 'b', 'c', 'd', 'e', 'f', 'g')).mode & 0o777, 0o700);
});

t.test('missing parents are created 0700 under any umask, outermost first, and can be removed again', async (t) => {
  const dir = t.testdir();
  const previous = process.umask(0o022);
  t.teardown(() => process.umask(previous));
  const created = createPrivateParents(join(dir, 'a', 'b', 'c', 'x.sqlite3'));
  t.same(created, [join(dir, 'a'), join(dir, 'a', 'b'), join(dir, 'a', 'b', 'c')]);
  for (const path of created) t.equal(statSync(path).mode & 0o777, 0o700, `${path} is 0700`);
  t.same(createPrivateParents(join(dir, 'a', 'b', 'c', 'y.sqlite3')), [], 'nothing to create the second time');
  writeFileSync(join(dir, 'a', 'keep.txt'), 'x');
  removeDirectories(created);
  t.same(readdirSync(join(dir, 'a')), ['keep.txt'], 'empty ones removed, a non-empty one kept');
});

t.test('a parent that cannot be created is BACKEND_UNAVAILABLE without the path, and the ones made before are removed',
  async (t) => {
  const dir = t.testdir();
  writeFileSync(join(dir, 'file.txt'), 'not a directory');
  t.throws(() => createPrivateParents(join(dir, 'file.txt', 'sub', 'x.sqlite3')),
    { code: 'BACKEND_UNAVAILABLE', message: /\(ENOTDIR\)$/ });
  let error: Error | undefined;
  try {
    createPrivateParents(join(dir, 'made', 'n'.repeat(300), 'x.sqlite3'));
  } catch (caught) {
    error = caught as Error;
  }
  t.match(error, { code: 'BACKEND_UNAVAILABLE', message: /ENAMETOOLONG/ });
  t.notMatch(error?.message ?? '', dir, 'no path in the message');
  t.notOk(existsSync(join(dir, 'made')), 'the directory created before the failure is removed');
});

t.test('fileDigest reads a file in chunks: the size and SHA-256 of the whole, past a chunk boundary', async (t) => {
  // Chunks, not one buffer: Node cannot read a file over 2 GiB at once, and a backup may be larger.
  const dir = t.testdir();
  for (const size of [0, 1, (1 << 20) - 1, 1 << 20, 3 * (1 << 20) + 17]) {
    const bytes = randomBytes(size);
    const path = join(dir, `f${size}`);
    writeFileSync(path, bytes);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    t.same(fileDigest(path), { bytes: size, sha256 }, `${size} bytes`);
  }
});
