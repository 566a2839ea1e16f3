import t from 'tap';
import { AdapterError } from '../../src/core/adapter-error.js';
import { translateSqliteError } from '../../src/storage/sqlite-errors.js';

// STORAGE.md §6: foreign SQLite errors get their governed code once, at the storage floor.

const sqliteError = (code: string, message: string) => Object.assign(new Error(message), { name: 'SqliteError', code });

t.test('a vec0 chunk blob sqlite-vec cannot open is BACKEND_CORRUPT, other plain errors stay as they are', async (t) => {
  const damaged = translateSqliteError(sqliteError('SQLITE_ERROR', 'could not open vectors blob for chunk 1'));
  t.ok(damaged instanceof AdapterError && damaged.code === 'BACKEND_CORRUPT', 'a damaged vector chunk');
  const metadata = translateSqliteError(sqliteError('SQLITE_ERROR', 'Could not open metadata blob for chunk 3'));
  t.ok(metadata instanceof AdapterError && metadata.code === 'BACKEND_CORRUPT', 'a damaged metadata chunk');
  // The other messages of sqlite-vec 0.1.9 for a shadow table or row a raw writer deleted or dropped.
  for (const message of [
    'Could not fetch vector data for 1, opening blob failed', 'Could not extract metadata value for column is_current at rowid 1',
    'Could not find a row with rowid 7', 'Error preparing rowid scan: no such table: main.eligible_codes_rowids',
    'Error preparing stmtChunk: no such table: main.fact_vec_chunks', 'Internal sqlite-vec error', "rowids size doesn't match",
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
