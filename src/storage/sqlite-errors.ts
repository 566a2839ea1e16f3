import { AdapterError, REREAD_AND_RETRY } from '../core/adapter-error.js';

/** The SQLite result code of a better-sqlite3 error (`SQLITE_BUSY_SNAPSHOT`, ...), or undefined. */
export function sqliteCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined;
}

/** True for SQLITE_BUSY* and SQLITE_LOCKED*: the operation may succeed when retried (STORAGE.md §6). */
export function isBusyError(error: unknown): boolean {
  const code = sqliteCode(error);
  return code !== undefined && /^SQLITE_(BUSY|LOCKED)(_|$)/.test(code);
}

/** True for SQLITE_CORRUPT*: SQLite found the file damaged. */
export function isCorruptionError(error: unknown): boolean {
  const code = sqliteCode(error);
  return code !== undefined && /^SQLITE_CORRUPT(_|$)/.test(code);
}

// SQLite names the columns of a violated unique index, not the index (STORAGE.md §6 table).
const LINEAGE_UNIQUE_COLUMNS = new Set([
  'adapter_records.memory_id',
  'adapter_records.memory_id, adapter_records.revision',
  'adapter_records.parent_record_id',
]);

/** True when `error` is the UNIQUE violation of `adapter_records.idempotency_key`. */
export function isIdempotencyKeyViolation(error: unknown): boolean {
  return sqliteCode(error) === 'SQLITE_CONSTRAINT_UNIQUE' &&
    String((error as Error).message).endsWith('adapter_records.idempotency_key');
}

/**
 * The messages sqlite-vec (0.1.9) gives when a vec0 shadow table, or a row of one it needs, is missing or unreadable:
 * a chunk, rowids, vector or metadata blob it cannot open or read, a rowid it cannot find, a shadow table it cannot
 * prepare a statement on; and SQLite's when a virtual table cannot be constructed (FTS5 without `fact_fts_config`).
 */
const VIRTUAL_TABLE_DAMAGE = new RegExp([
  '^vtable constructor failed: ', '^could not (open|fetch|extract|find|write to|mark) ',
  '^error (preparing (rowid scan|stmtchunk)|opening vector blob)',
  '^vectors blob read error', '^chunks iter error', '^internal sqlite-vec error',
  '^(chunk )?(validity|rowids) size doesn\'t match',
].join('|'), 'i');

/**
 * sqlite-vec's messages for a write of a sound table that SQLite refused: a new chunk it could not insert, a blob it
 * opened but could not write or close, a shadow table it could not create. It reports them as a plain SQLITE_ERROR and
 * drops SQLite's code; a full disk (seen during `factlane-migrate up`) or an I/O error is the cause, not damage.
 * Checked before VIRTUAL_TABLE_DAMAGE.
 */
const VECTOR_WRITE_REFUSED = new RegExp([
  '^internal sqlite-vec error: (could not insert a new vector chunk',
  'could not (write|close) (vector|rowids) blob', 'could not update rowids position)',
  // A vec0 table created (a migration): its shadow tables on a full disk.
  '^could not create \'[^\']+\' shadow table: (database or disk is full|disk I/O error)',
].join('|'), 'i');

/**
 * Translates a foreign SQLite error into its governed code (STORAGE.md §6), once, at the storage floor.
 * Busy errors must be retried by the caller first; this maps them to BACKEND_BUSY. Errors with no
 * governed meaning (other constraint failures, the fence marker, programming errors) are returned as they
 * are, so they surface as internal faults rather than being relabelled.
 */
export function translateSqliteError(error: unknown): unknown {
  if (error instanceof AdapterError) return error;
  const code = sqliteCode(error);
  if (code === undefined) return error;
  if (isBusyError(error)) {
    return new AdapterError('BACKEND_BUSY', 'the database stayed busy after bounded retries; retry the request later', {
      cause: error,
    });
  }
  if (code === 'SQLITE_FULL') {
    return new AdapterError('BACKEND_UNAVAILABLE', 'the database or its disk is full; nothing was written', {
      cause: error,
    });
  }
  if (VECTOR_WRITE_REFUSED.test(String((error as Error).message))) {
    return new AdapterError('BACKEND_UNAVAILABLE',
      'a write to the vector tables failed: the disk is full or failing; nothing was written', { cause: error });
  }
  if (code === 'SQLITE_READONLY_ROLLBACK') {
    return new AdapterError('BACKEND_UNAVAILABLE', 'a -journal beside the database holds a transaction a process '
      + 'killed midway left, which only a read-write open rolls back (a FactLane server start does so for a database '
      + 'whose creation was killed); this connection cannot read the file until then', { cause: error });
  }
  if (/^SQLITE_(IOERR|CANTOPEN|READONLY)(_|$)/.test(code) || code === 'SQLITE_PERM') {
    return new AdapterError('BACKEND_UNAVAILABLE',
      'the database file cannot be read or written; check the file, that its directory is writable (SQLite keeps '
        + 'the -wal and -shm there, for readers too) and its disk', { cause: error });
  }
  // sqlite-vec reports a damaged shadow table (a chunk blob it cannot open) as a plain SQLITE_ERROR, and so does SQLite
  // for a virtual table whose shadow table went.
  const damage = VIRTUAL_TABLE_DAMAGE.test(String((error as Error).message));
  if (isCorruptionError(error) || code === 'SQLITE_NOTADB' || damage) {
    return new AdapterError('BACKEND_CORRUPT', 'the database file is damaged or is not an SQLite database', {
      cause: error,
    });
  }
  if (code === 'SQLITE_CONSTRAINT_UNIQUE') {
    const columns = String((error as Error).message).replace(/^UNIQUE constraint failed: /, '');
    if (LINEAGE_UNIQUE_COLUMNS.has(columns)) {
      return new AdapterError('VERSION_CONFLICT',
        `a concurrent writer changed this memory first; ${REREAD_AND_RETRY}`, { cause: error });
    }
  }
  return error;
}
