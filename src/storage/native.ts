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

/** The `flock(2)` operations fs-ext accepts. */
export type FlockFlags = 'sh' | 'ex' | 'shnb' | 'exnb' | 'un';

/** The `flock(2)` binding, or the load error when the native build is missing. */
export function loadFlock(): ((fd: number, flags: FlockFlags) => void) {
  return (require('fs-ext') as { flockSync(fd: number, flags: string): void }).flockSync;
}

/**
 * The asynchronous `flock(2)` binding: the call runs on the libuv threadpool, so a blocking `ex` waits
 * there and never stalls the event loop; `callback` gets the errno error or null.
 */
export function loadAsyncFlock(): AsyncFlock {
  return (require('fs-ext') as { flock: AsyncFlock }).flock;
}

/** fs-ext's callback form of `flock(2)`. */
export type AsyncFlock = (fd: number, flags: FlockFlags, callback: FlockCallback) => void;

/** Called with the errno error of an asynchronous flock, or null once it is done. */
export type FlockCallback = (error: NodeJS.ErrnoException | null) => void;
