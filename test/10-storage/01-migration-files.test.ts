import t from 'tap';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MIGRATIONS_DIR } from '../../src/core/package-info.js';
import { RELEASED_MIGRATIONS } from '@factlane/schema';
import {
  assertMigrationStatementsAllowed, loadMigrationFiles, renderMigration, MigrationFileError,
} from '../../src/storage/migration-files.js';

t.test('shipped migrations load in order with the SHA-256 of their bytes', async (t) => {
  const files = loadMigrationFiles(MIGRATIONS_DIR);
  t.equal(files[0]!.version, 1);
  t.equal(files[0]!.name, 'initial');
  const bytes = readFileSync(join(MIGRATIONS_DIR, '0001_initial.sql'));
  t.equal(files[0]!.checksum, createHash('sha256').update(bytes).digest('hex'));
  t.match(files[0]!.sql, /\{\{VECTOR_DIMENSION\}\}/, 'placeholder kept in the shipped text');
  t.match(renderMigration(files[0]!, 384), /float\[384\]/);
  t.throws(() => renderMigration(files[0]!, 0), RangeError);
});

t.test('trigger bodies are allowed; transaction control, PRAGMA, VACUUM, ATTACH, DETACH are refused', async (t) => {
  t.doesNotThrow(() => assertMigrationStatementsAllowed('x.sql',
    "CREATE TRIGGER a BEFORE INSERT ON t BEGIN SELECT RAISE(ABORT, 'x; BEGIN'); END;\n-- COMMIT in a comment\n" +
      "CREATE TABLE u (a TEXT DEFAULT 'PRAGMA');"));
  for (const statement of ['BEGIN', 'begin immediate', 'COMMIT', 'END TRANSACTION', 'ROLLBACK', 'SAVEPOINT s',
    'RELEASE s', 'PRAGMA foreign_keys=OFF', 'VACUUM', "ATTACH 'x' AS y", 'DETACH y']) {
    t.throws(() => assertMigrationStatementsAllowed('bad.sql', `CREATE TABLE a (b TEXT);\n${statement};`),
      MigrationFileError, statement);
  }
  // A table named trigger with a column named begin is not a trigger body: the END after it would commit the runner's
  // transaction half way through the file.
  const tableNamedTrigger = 'CREATE TABLE trigger (x, begin INT);\nEND;\nCREATE TABLE y (a);';
  t.throws(() => assertMigrationStatementsAllowed('bad.sql', tableNamedTrigger), { message: /contains END/ });
  t.doesNotThrow(() => assertMigrationStatementsAllowed('x.sql',
    "CREATE TEMP TRIGGER a AFTER DELETE ON t BEGIN SELECT CASE WHEN 1 THEN 2 END; END;\nCREATE TABLE v (a TEXT);"));
});

t.test('misnamed files and version gaps are refused', async (t) => {
  const dir = t.testdir();
  const source = readFileSync(join(MIGRATIONS_DIR, '0001_initial.sql'));
  mkdirSync(join(dir, 'gap'));
  writeFileSync(join(dir, 'gap', '0001_initial.sql'), source);
  writeFileSync(join(dir, 'gap', '0003_later.sql'), 'CREATE TABLE x (a TEXT);');
  t.throws(() => loadMigrationFiles(join(dir, 'gap')), /without gaps/);
  mkdirSync(join(dir, 'name'));
  writeFileSync(join(dir, 'name', '0001_Initial.sql'), source);
  t.throws(() => loadMigrationFiles(join(dir, 'name')), /NNNN_snake_case/);
  mkdirSync(join(dir, 'empty'));
  t.throws(() => loadMigrationFiles(join(dir, 'empty')), /no migration files/);
});

t.test('a released migration whose file changed is refused; a version past the released list is unreleased',
  async (t) => {
  const dir = t.testdir();
  const shipped = loadMigrationFiles(MIGRATIONS_DIR);
  t.same(shipped.map(({ version, name, checksum }) => ({ version, name, checksum })), RELEASED_MIGRATIONS,
    'the files shipped are exactly the released list (STORAGE.md §12.5)');
  type File = (typeof shipped)[number];
  const copy = (name: string, change: (file: File) => [fileName: string, sql: string]) => {
    mkdirSync(join(dir, name));
    for (const file of shipped) {
      const [fileName, sql] = change(file);
      writeFileSync(join(dir, name, fileName), sql);
    }
    return join(dir, name);
  };
  const last = shipped.at(-1)!;
  const isLast = (file: File) => file.version === last.version;
  const sneaky = `${last.sql}\nCREATE TABLE sneaky (a);\n`;
  const altered = copy('altered', (file) => [file.fileName, isLast(file) ? sneaky : file.sql]);
  t.throws(() => loadMigrationFiles(altered),
    { name: 'MigrationFileError', message: new RegExp(`${last.fileName} is not the file this release shipped`) });
  const renamedFile = last.fileName.replace(last.name, 'renamed');
  const renamed = copy('renamed', (file) => [isLast(file) ? renamedFile : file.fileName, file.sql]);
  t.throws(() => loadMigrationFiles(renamed), MigrationFileError, 'a released version under another name');
  const next = copy('next', (file) => [file.fileName, file.sql]);
  const unreleased = `${String(last.version + 1).padStart(4, '0')}_add_note.sql`;
  writeFileSync(join(next, unreleased), 'CREATE TABLE note (a TEXT);\n');
  t.equal(loadMigrationFiles(next).length, shipped.length + 1, 'an unreleased version after the list loads');
});
