import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

// better-sqlite3, sqlite-vec and fs-ext are CommonJS native packages; they are loaded here once so the rest of
// storage/ imports typed handles and a missing native build surfaces as one probe failure.
const require = createRequire(import.meta.url);

/** The better-sqlite3 constructor. */
export const Database: typeof BetterSqlite3 = require('better-sqlite3');

/** A better-sqlite3 connection. */
export type SqliteConnection = BetterSqlite3.Database;

/** Loads sqlite-vec into a connection. */
export function loadSqliteVec(connection: SqliteConnection): void {
  (require('sqlite-vec') as { load(db: SqliteConnection): void }).load(connection);
}

/** The `flock(2)` binding, or the load error when the native build is missing. */
export function loadFlock(): ((fd: number, flags: 'sh' | 'ex' | 'shnb' | 'exnb' | 'un') => void) {
  return (require('fs-ext') as { flockSync(fd: number, flags: string): void }).flockSync;
}
