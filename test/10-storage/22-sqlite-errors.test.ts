import t, { type Test } from 'tap';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { AdapterError } from '../../src/core/adapter-error.js';
import { copyFailure } from '../../src/storage/online-backup.js';
import { translateSqliteError } from '../../src/storage/sqlite-errors.js';

// STORAGE.md §6: foreign SQLite errors get their governed code once, at the storage floor.

const sqliteError = (code: string, message: string) => Object.assign(new Error(message), { name: 'SqliteError', code });

t.test('a vec0 chunk blob sqlite-vec cannot open is BACKEND_CORRUPT, other plain errors stay as they are',
  async (t) => {
  const damaged = translateSqliteError(sqliteError('SQLITE_ERROR', 'could not open vectors blob for chunk 1'));
  t.ok(damaged instanceof AdapterError && damaged.code === 'BACKEND_CORRUPT', 'a damaged vector chunk');
  const metadata = translateSqliteError(sqliteError('SQLITE_ERROR', 'Could not open metadata blob for chunk 3'));
  t.ok(metadata instanceof AdapterError && metadata.code === 'BACKEND_CORRUPT', 'a damaged metadata chunk');
  // The other messages of sqlite-vec 0.1.9 for a shadow table or row a raw writer deleted or dropped.
  for (const message of [
    'Could not fetch vector data for 1, opening blob failed',
    'Could not extract metadata value for column is_current at rowid 1',
    'Could not find a row with rowid 7', 'Error preparing rowid scan: no such table: main.eligible_codes_rowids',
    'Error preparing stmtChunk: no such table: main.fact_vec_chunks', 'Internal sqlite-vec error',
    "rowids size doesn't match",
    'vtable constructor failed: fact_fts',
  ]) {
    const translated = translateSqliteError(sqliteError('SQLITE_ERROR', message));
    t.ok(translated instanceof AdapterError && translated.code === 'BACKEND_CORRUPT', message);
  }
  const plain = sqliteError('SQLITE_ERROR', 'no such table: fact_vec');
  t.equal(translateSqliteError(plain), plain, 'a programming error is not relabelled');
  const corrupt = translateSqliteError(sqliteError('SQLITE_CORRUPT', 'database disk image is malformed'));
  t.ok(corrupt instanceof AdapterError && corrupt.code === 'BACKEND_CORRUPT');
});

t.test('sqlite-vec refused a write of a sound table (a full disk): BACKEND_UNAVAILABLE, retryable, not damage',
  async (t) => {
  // The real error: a vec0 table whose next chunk does not fit under max_page_count, as on a full disk.
  const db = new Database(':memory:');
  t.teardown(() => db.close());
  sqliteVec.load(db);
  db.exec('CREATE VIRTUAL TABLE v USING vec0(embedding float[384], chunk_size=1024)');
  db.pragma(`max_page_count = ${Number(db.pragma('page_count', { simple: true })) + 20}`);
  const full = (() => {
    try {
      db.prepare('INSERT INTO v(rowid, embedding) VALUES (1, ?)').run(new Float32Array(384).fill(0.5));
      return null;
    } catch (error) {
      return error;
    }
  })();
  t.match(full, { code: 'SQLITE_ERROR', message: /^Internal sqlite-vec error: Could not insert a new vector chunk/ },
    'sqlite-vec drops SQLITE_FULL');
  const messages = [(full as Error).message,
    'Internal sqlite-vec error: could not write vector blob on main.fact_vec.3',
    'Internal sqlite-vec error: could not close rowids blob on main.fact_vec.3',
    'Internal sqlite-vec error: could not update rowids position for rowid=1, chunk_rowid=1, chunk_offset=0'];
  for (const message of messages) {
    const translated = translateSqliteError(sqliteError('SQLITE_ERROR', message));
    t.match(translated, { code: 'BACKEND_UNAVAILABLE', retryable: true, message: /disk is full or failing/ }, message);
  }
  const mismatch = 'Internal sqlite-vec error: vector blob size mismatch on main.fact_vec.3, expected 12288, actual 7';
  t.match(translateSqliteError(sqliteError('SQLITE_ERROR', mismatch)), { code: 'BACKEND_CORRUPT' },
    'a wrong size is damage');
});

t.test('a file SQLite cannot open or write names the directory as well: a reader of a WAL database writes there',
  async (t) => {
    const named = /^the database file cannot be read or written; check the file, that its directory is writable/;
    for (const [code, message] of [['SQLITE_CANTOPEN', 'unable to open database file'],
      ['SQLITE_READONLY_DIRECTORY', 'attempt to write a readonly database'], ['SQLITE_IOERR_WRITE', 'disk I/O error'],
      ['SQLITE_PERM', 'access permission denied']] as const) {
      t.match(translateSqliteError(sqliteError(code, message)), { code: 'BACKEND_UNAVAILABLE', message: named }, code);
    }
  });

t.test('a backup or restore copy that cannot be written blames the copy\'s disk, never the database', async (t) => {
  const full = copyFailure(sqliteError('SQLITE_FULL', 'database or disk is full'));
  t.ok(full instanceof AdapterError && full.code === 'BACKEND_UNAVAILABLE');
  t.match((full as Error).message, /^the disk the copy is written to is full; nothing was published$/);
  // A full disk while the copy's journal mode is switched: SQLite grows its -shm first and reports an I/O error.
  const shm = copyFailure(sqliteError('SQLITE_IOERR_SHMSIZE', 'disk I/O error'), 'copy only');
  t.ok(shm instanceof AdapterError && shm.code === 'BACKEND_UNAVAILABLE');
  t.match((shm as Error).message,
    /^the copy could not be written \(SQLITE_IOERR_SHMSIZE\): check the disk it is written to/);
  t.notMatch((shm as Error).message, /database file|database or its disk/, 'the database is not blamed');
  // During the online backup an I/O error may be the source's: it keeps the storage floor's translation.
  const either = copyFailure(sqliteError('SQLITE_IOERR_READ', 'disk I/O error'));
  t.same(either, translateSqliteError(sqliteError('SQLITE_IOERR_READ', 'disk I/O error')));
});

t.test('integrity_check: an answer other than ok or damage on the way is false; a busy or I/O error is thrown',
  async (t) => {
  // A bare catch made every error a failed check: verify printed integrity_check FAIL, and backup refused "the
  // source may be damaged", for a file that was only busy or on a failing read.
  const failing = (code: string | null, answer: unknown[] = ['ok']) => ({
    prepare: () => ({ pluck: () => ({ all: () => {
      if (code) throw sqliteError(code, `${code} while checking`);
      return answer;
    } }) }),
    close: () => {},
  });
  const withConnection = async (connection: ReturnType<typeof failing>) => {
    type Backup = typeof import('../../src/storage/online-backup.js');
    const writes = await import('../../src/storage/write-connection.js');
    return t.mockImport<Backup>('../../src/storage/online-backup.js', {
      '../../src/storage/write-connection.js': { ...writes, openReadOnlyConnection: () => connection },
    });
  };
  t.equal((await withConnection(failing(null))).integrityOk('x'), true, 'ok');
  t.equal((await withConnection(failing(null, ['row 3 missing from index']))).integrityOk('x'), false, 'a finding');
  t.equal((await withConnection(failing('SQLITE_CORRUPT_INDEX'))).integrityOk('x'), false, 'damage on the way');
  t.equal((await withConnection(failing('SQLITE_NOTADB'))).integrityOk('x'), false, 'not a database');
  const busy = await withConnection(failing('SQLITE_BUSY'));
  t.throws(() => busy.integrityOk('x'), { code: 'BACKEND_BUSY' }, 'busy: thrown as BACKEND_BUSY');
  const io = await withConnection(failing('SQLITE_IOERR_READ'));
  t.throws(() => io.integrityOk('x'), { code: 'BACKEND_UNAVAILABLE' }, 'an I/O error: thrown as BACKEND_UNAVAILABLE');
});

/** online-backup.js with `Database` (the copy's connection) replaced. */
async function backupWithDatabase(t: Test, database: () => unknown) {
  const native = await import('../../src/storage/native.js');
  type Backup = typeof import('../../src/storage/online-backup.js');
  return t.mockImport<Backup>('../../src/storage/online-backup.js', {
    '../../src/storage/native.js': { ...native, Database: database },
  });
}

t.test('a copy SQLite cannot open is the copy\'s failure, governed: never a raw SqliteError', async (t) => {
  // The copy was opened before the try: SQLITE_CANTOPEN reached the operator as an unexpected fault.
  const backup = await backupWithDatabase(t,
    function refused() { throw sqliteError('SQLITE_CANTOPEN', 'unable to open database file'); });
  t.throws(() => backup.setWalMode('/nowhere/copy.sqlite3'), { name: 'AdapterError', code: 'BACKEND_UNAVAILABLE' },
    'switching a restored copy to WAL');
});

t.test('a restored copy that SQLite leaves out of WAL mode is VERIFY_FAILED, and the connection is closed',
  async (t) => {
  // journal_mode = WAL answers the mode it is in: a filesystem without shared memory (no mmap) keeps `delete`.
  let closed = false;
  const backup = await backupWithDatabase(t,
    function stays() { return { pragma: () => 'delete', close: () => { closed = true; } }; });
  t.throws(() => backup.setWalMode('/restored/copy.sqlite3'),
    { name: 'AdapterError', code: 'VERIFY_FAILED', message: 'the copy stayed in journal mode delete' });
  t.ok(closed, 'the copy\'s connection closed');
});
