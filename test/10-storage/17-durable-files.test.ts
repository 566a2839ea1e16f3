import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  chmodDirectory, createPrivateParents, fileDigest, keepOwner, removeDirectories, writePrivateFileAtomic,
} from '../../src/storage/durable-files.js';
import { deadPid, spawnTsHelper, waitForLine } from '../helpers/storage.js';

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

/** node:fs whose writeSync takes at most 7 bytes a call, and throws ENOSPC once `room` bytes are written. */
function fillingDisk(room: number) {
  let written = 0;
  const writeSync = (fd: number, data: Buffer, offset = 0, length = data.length - offset) => {
    if (written >= room) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    const n = fs.writeSync(fd, data, offset, Math.min(length, 7, room - written));
    written += n;
    return n;
  };
  return { 'node:fs': { ...fs, writeSync } };
}

t.test('a write the disk takes in parts is finished; a disk that fills is an error, never a file cut short',
  async (t) => {
    type Module = typeof import('../../src/storage/durable-files.js');
    const text = `${'a fact, '.repeat(40)}ü`;
    const partial = await t.mockImport<Module>('../../src/storage/durable-files.js', fillingDisk(Infinity));
    const whole = join(t.testdir(), 'whole');
    partial.createPrivateFile(whole, text);
    t.equal(readFileSync(whole, 'utf8'), text, 'every part written');
    const full = await t.mockImport<Module>('../../src/storage/durable-files.js', fillingDisk(100));
    const dir = t.testdir();
    writeFileSync(join(dir, 'kept'), 'the old text');
    t.throws(() => full.writePrivateFileAtomic(join(dir, 'kept'), text), { code: 'ENOSPC' });
    t.equal(readFileSync(join(dir, 'kept'), 'utf8'), 'the old text', 'the file keeps its old text');
    t.same(readdirSync(dir), ['kept'], 'and no temporary file is left');
  });

t.test('a host config file on a disk that fills is BACKEND_UNAVAILABLE and keeps its old text (factlane setup)',
  async (t) => {
    // The config writer writes through durable-files' writeAll: that module, on the filling disk.
    const durable = await t.mockImport('../../src/storage/durable-files.js', fillingDisk(100));
    type Module = typeof import('../../src/cli/host-config-files.js');
    const files = await t.mockImport<Module>('../../src/cli/host-config-files.js',
      { '../../src/storage/durable-files.js': durable });
    const dir = t.testdir();
    const path = join(dir, 'config.toml');
    writeFileSync(path, '[mcp_servers.other]\ncommand = "other"\n');
    const file = files.readConfigFile(path);
    t.throws(() => files.writeConfigAtomically(file, `${file.text}${'# a long comment\n'.repeat(20)}`),
      { code: 'BACKEND_UNAVAILABLE', message: /\(ENOSPC\)/ });
    t.equal(readFileSync(path, 'utf8'), '[mcp_servers.other]\ncommand = "other"\n', 'the config as it was');
    t.same(readdirSync(dir), ['config.toml'], 'no temporary file left');
  });

t.test('a file replaced atomically goes through a temporary name no one can plant a link at beforehand', async (t) => {
  const dir = t.testdir({ 'target.json': 'old\n', elsewhere: 'not to be written\n' });
  // What the name was before stop 45 (`.NAME.<pid>.tmp`): a link planted there no longer decides anything.
  fs.symlinkSync(join(dir, 'elsewhere'), join(dir, `.target.json.${process.pid}.tmp`));
  // What a killed run left (recover killed while writing its state or receipt): removed, as backup removes its own.
  const dead = deadPid();
  const stale = [`.target.json.${dead}.0123456789abcdef.tmp`, `.target.json.${dead}.tmp`];
  for (const name of stale) writeFileSync(join(dir, name), '{"phase":"old"}\n');
  writePrivateFileAtomic(join(dir, 'target.json'), 'new\n');
  t.equal(readFileSync(join(dir, 'target.json'), 'utf8'), 'new\n');
  t.equal(statSync(join(dir, 'target.json')).mode & 0o777, 0o600);
  t.equal(readFileSync(join(dir, 'elsewhere'), 'utf8'), 'not to be written\n', 'the link\'s target untouched');
  t.same(readdirSync(dir).sort(), [`.target.json.${process.pid}.tmp`, 'elsewhere', 'target.json'].sort(),
    'the planted link (a running pid\'s name) stays; a dead run\'s temporaries and this run\'s are gone');
});

// Commands run as root (recover, OPERATIONS.md §5; setup, backup and restore often) make files and directories in a
// directory a user controls, who can rename a symbolic link over a name the command has just made. What the command
// then does to that file goes through its descriptor, never its name.
const asRoot = process.geteuid?.() === 0;

/** A symbolic link to `target` renamed over `name`, as the user's racing loop would do. */
function swapForLink(name: string, target: string): void {
  fs.symlinkSync(target, `${name}.link`);
  fs.renameSync(`${name}.link`, name);
}

t.test('keepOwner gives the open file its original\'s owner, not the target of a link swapped over its name',
  { skip: asRoot ? false : 'needs root' }, async (t) => {
  const dir = t.testdir();
  const original = join(dir, 'db.sqlite3');
  writeFileSync(original, '');
  fs.chownSync(original, 65534, 65534);
  const rootFile = join(dir, 'root-only');
  writeFileSync(rootFile, 'root only\n', { mode: 0o644 });
  const image = join(dir, 'db.sqlite3.sanitized');
  const fd = fs.openSync(image, 'wx', 0o600);
  try {
    swapForLink(image, rootFile);
    keepOwner(original, fd);
    t.same([fs.fstatSync(fd).uid, fs.fstatSync(fd).gid], [65534, 65534], 'the file made takes the owner');
  } finally {
    fs.closeSync(fd);
  }
  t.same([statSync(rootFile).uid, statSync(rootFile).mode & 0o777], [0, 0o644], 'the link\'s target is untouched');
  t.equal(readFileSync(rootFile, 'utf8'), 'root only\n');
});

t.test('chmodDirectory refuses a directory name swapped for a link: the link\'s target keeps its mode', async (t) => {
  const dir = t.testdir();
  const elsewhere = join(dir, 'elsewhere');
  fs.mkdirSync(elsewhere, { mode: 0o755 });
  fs.chmodSync(elsewhere, 0o755);
  const made = join(dir, 'made');
  fs.mkdirSync(made);
  fs.renameSync(made, `${made}.away`); // a directory is moved away, then the link put at its name
  fs.symlinkSync(elsewhere, made);
  t.throws(() => chmodDirectory(made, 0o700), { code: 'ENOTDIR' }, 'a link is not a directory to O_NOFOLLOW');
  t.equal(statSync(elsewhere).mode & 0o777, 0o755, 'not followed');
  fs.rmSync(made);
  fs.mkdirSync(made, { mode: 0o755 });
  chmodDirectory(made, 0o700);
  t.equal(statSync(made).mode & 0o777, 0o700, 'a real directory is set');
});
