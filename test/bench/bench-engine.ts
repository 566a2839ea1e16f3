import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';
import { WRITER_FUNCTION_NAME } from '@factlane/schema';
import { BENCH_VECTOR_DIMENSION } from './bench-records.js';

// better-sqlite3 and sqlite-vec are CommonJS native packages; createRequire loads the same builds the engine uses.
const require = createRequire(import.meta.url);
const Database: typeof BetterSqlite3 = require('better-sqlite3');
const sqliteVec = require('sqlite-vec') as { load(connection: BetterSqlite3.Database): void };

/** Opens (creating when absent) a FactLane database bound to a 384-dimension profile. */
export function openBenchEngine(dbPath: string): Promise<SQLiteVecEngine> {
  return SQLiteVecEngine.open({
    dbPath,
    newDatabaseBinding: async () =>
      ({ vectorDimension: BENCH_VECTOR_DIMENSION, bindingJson: `{"vector_dimension":${BENCH_VECTOR_DIMENSION}}` }),
  });
}

/**
 * Opens a plain better-sqlite3 connection set up like the engine's writer (sqlite-vec, WAL, synchronous
 * FULL, busy_timeout 5000, foreign keys) with a writer function that always answers 1, so the fence
 * triggers cost the same call but no gate logic or Kysely sits in between: the raw baseline.
 * The database must already exist and no engine may hold it open.
 */
export function openRawBaselineConnection(dbPath: string): BetterSqlite3.Database {
  const connection = new Database(dbPath, { fileMustExist: true });
  sqliteVec.load(connection);
  connection.function(WRITER_FUNCTION_NAME, { deterministic: false }, () => 1);
  connection.pragma('busy_timeout = 5000');
  connection.pragma('journal_mode = WAL');
  connection.pragma('synchronous = FULL');
  connection.pragma('foreign_keys = ON');
  return connection;
}
