import { Kysely, type Transaction } from 'kysely';
import { AdapterError } from '../core/adapter-error.js';
import { WRITER_FUNCTION_NAME } from '@factlane/schema';
import type { DB } from '../../generated/db.js';
import { ImmediateSqliteDialect } from './immediate-sqlite-driver.js';
import { DEFAULT_BUSY_RETRY, isRetryableBusy, withBusyRetry, type BusyRetryPolicy } from './busy-retry.js';
import { assertNotABackup } from './durable-files.js';
import { Database, loadSqliteVec, type SqliteConnection } from './native.js';
import { onOneSnapshot } from './read-snapshot.js';
import { translateSqliteError } from './sqlite-errors.js';
import { WriterQueue, type WriterQueueTurns } from './writer-queue.js';
import type { Logger } from '../core/logger.js';

/** The busy timeout every FactLane connection sets; weaker effective values are refused. */
export const BUSY_TIMEOUT_MS = 5000;

/** Work run inside one write transaction: the Kysely transaction and, for multi-statement SQL, the same connection. */
export type WriteWork<T> = (trx: Transaction<DB>, connection: SqliteConnection) => Promise<T>;

/** Options of WriteConnection.open. */
export interface WriteConnectionOptions {
  readonly path: string;
  readonly retry?: BusyRetryPolicy;
  /** The cross-process writer queue (STORAGE.md §6); on by default. */
  readonly writerQueue?: WriterQueueSettings;
  /** Receives the one warning when the writer queue cannot be used; default silent. */
  readonly logger?: Logger;
}

/** How writes of a connection queue across processes, frozen. */
export interface WriterQueueSettings {
  /** Default true. Off, every write goes straight to BEGIN IMMEDIATE and SQLite's busy handling. */
  readonly enabled?: boolean;
  /** How long a write waits for its turn before it goes on without it; default WRITER_QUEUE_WAIT_MS. */
  readonly waitMs?: number;
}

/**
 * The process's one read-write connection (STORAGE.md §3): sqlite-vec loaded, the writer function
 * registered, WAL + synchronous FULL + busy_timeout 5000 + foreign keys, read back and enforced.
 * All writes go through `write`, one BEGIN IMMEDIATE transaction with bounded busy retries.
 */
export class WriteConnection {
  readonly #connection: SqliteConnection;
  readonly #kysely: Kysely<DB>;
  readonly #gate = { open: false };
  readonly #retry: BusyRetryPolicy;
  readonly #queue: WriterQueue | undefined;
  /** Set by stopWaiting (performance.now() ms): no busy wait or retry of a stopping server goes past it. */
  #stopBy = Infinity;
  readonly #stopByNow = () => this.#stopBy;
  /** Writes waiting for their group, in call order (write). */
  readonly #gathered: GatheredWrite[] = [];
  /** #runGathered is running: a new write only joins the list. */
  #gathering = false;
  /** The latest attempt, when it met a busy database: it may have held the event loop from start to end. */
  #busyAttempt: { readonly start: number; readonly end: number } | undefined;

  private constructor(connection: SqliteConnection, retry: BusyRetryPolicy, queue: WriterQueue | undefined) {
    this.#connection = connection;
    this.#retry = retry;
    this.#queue = queue;
    // A stopping server bounds each busy wait when its statement gets the connection: an attempt queued on the
    // connection behind another would otherwise wait with what was left when it began (stopWaiting).
    const bound = () => {
      if (this.#stopBy !== Infinity && connection.open) connection.pragma(`busy_timeout = ${this.#leftMs()}`);
    };
    this.#kysely = new Kysely<DB>({ dialect: new ImmediateSqliteDialect(connection, this.#gate, bound) });
  }

  /**
   * Opens and configures the connection. Errors: BACKEND_UNAVAILABLE for a backup (assertNotABackup: a read-write
   * open switches it to WAL); BACKEND_COMPATIBILITY_MISMATCH when the effective pragmas are weaker than WAL / FULL /
   * 5000 ms; storage codes from translateSqliteError otherwise.
   */
  static open(options: WriteConnectionOptions): WriteConnection {
    assertNotABackup(options.path);
    let connection: SqliteConnection | undefined;
    try {
      connection = new Database(options.path, { fileMustExist: true });
      loadSqliteVec(connection);
      const queue = options.writerQueue?.enabled === false
        ? undefined
        : new WriterQueue({ databasePath: options.path, logger: options.logger, waitMs: options.writerQueue?.waitMs });
      const writeConnection = new WriteConnection(connection, options.retry ?? DEFAULT_BUSY_RETRY, queue);
      const gate = writeConnection.#gate;
      // Not deterministic and not direct-only: triggers must be able to call it (STORAGE.md §5).
      connection.function(WRITER_FUNCTION_NAME, { deterministic: false, directOnly: false }, () => (gate.open ? 1 : 0));
      connection.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      connection.pragma('journal_mode = WAL');
      connection.pragma('synchronous = FULL');
      connection.pragma('foreign_keys = ON');
      // Memory-mapped reads: a vec0 KNN reads every vector chunk of the partition, and through mmap it
      // takes about half the time of copying pages through the cache (docs/decisions/0008).
      connection.pragma(`mmap_size = ${MMAP_SIZE_BYTES}`);
      // A long reader (a backup, verify) keeps checkpoints from restarting the WAL, which then grows with every
      // write; once it restarts, the file is cut back to this size instead of keeping its high-water mark.
      connection.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
      assertEffectivePragmas(connection);
      return writeConnection;
    } catch (error) {
      connection?.close();
      throw translateSqliteError(error);
    }
  }

  /** Kysely handle for reads outside a transaction; use `read` to get busy retries. */
  get db(): Kysely<DB> {
    return this.#kysely;
  }

  /** The underlying connection, for storage code that needs better-sqlite3 features (backup, exec). */
  get connection(): SqliteConnection {
    return this.#connection;
  }

  /**
   * Runs `work` in one BEGIN IMMEDIATE transaction with the writer gate open, beside the other writes of this
   * connection gathered with it (#runGathered); retries on busy/locked (STORAGE.md §6) and ends in BACKEND_BUSY.
   * Governed errors thrown by `work` pass through; SQLite errors are translated once. Nothing is left half-written.
   * Each attempt first waits its turn in the writer queue, before the transaction takes the connection
   * (reads of this process go on meanwhile), and gives the turn back when it commits or rolls back, so
   * the backoff pause between attempts holds nothing.
   */
  async write<T>(work: WriteWork<T>): Promise<T> {
    this.#assertOpen();
    return new Promise<T>((resolve, reject) => {
      this.#gathered.push({ work, resolve, reject } as GatheredWrite);
      if (!this.#gathering) void this.#runGathered();
    });
  }

  /**
   * Runs the gathered writes, in call order, a group at a time: each group takes one turn of the writer queue and is
   * one BEGIN IMMEDIATE transaction, taken from what is gathered once the turn came, so the writes that arrived while
   * the first one waited share its lock, its commit and its fsync (docs/decisions/0045-writes-share-a-commit.md).
   * A group that meets a busy database is retried as a whole (withBusyRetry), with the writes gathered meanwhile
   * added to it: each write then waits the retries of STORAGE.md §6 once (about 36 s), where a retry of its own
   * also waited out, on the blocked event loop, the busy waits of every other write of the process (70-80 s with 4
   * calls in flight, stop 52).
   */
  async #runGathered(): Promise<void> {
    this.#gathering = true;
    try {
      while (this.#gathered.length > 0) {
        const queue = this.#queue;
        const group: GatheredWrite[] = [];
        const take = () => {
          group.push(...this.#gathered.splice(0, MAX_GROUP_WRITES - group.length));
          return group;
        };
        try {
          await withBusyRetry(this.#retry, async () => {
            if (queue) await queue.run((waitedMs) => this.#runGroup(take(), waitedMs), () => this.#gathered.length > 0);
            else await this.#runGroup(take(), 0);
          }, this.#stopByNow);
        } catch (error) {
          // #runGroup settles its writes but for a busy transaction, which gets here after the retries (BACKEND_BUSY),
          // as does the queue failing around it. No write may wait forever.
          for (const write of [...group, ...this.#gathered.splice(0)]) write.reject(error);
        }
      }
    } finally {
      this.#gathering = false;
    }
  }

  /**
   * One transaction for `group`. Every write of it is settled, except after a busy error, thrown for the group to try
   * again whole, and after an error that ended the transaction: then the others go back to the head of the gathered
   * writes and run in the next turn (the lock is held around one transaction, STORAGE.md §6). Errors are translated
   * once, here.
   */
  async #runGroup(group: GatheredWrite[], waitedMs: number): Promise<void> {
    const outcomes: (GroupOutcome | undefined)[] = [];
    try {
      await this.#attempt(() => this.#kysely.transaction().execute((trx) => this.#inGroup(trx, group, outcomes)),
        waitedMs);
    } catch (error) {
      if (isRetryableBusy(error)) throw error;
      if (!(error instanceof GroupInterrupted)) {
        // BEGIN or the commit failed: nothing of the group is written. A write refused under its savepoint gets this
        // error too: its refusal may rest on rows of the group that are gone now.
        for (const write of group) write.reject(translateSqliteError(error));
        return;
      }
      // SQLite rolled the whole transaction back on one write's error: that write fails, the others run again.
      const failed = outcomes.length - 1;
      group[failed]!.reject(translateSqliteError(error.cause));
      this.#gathered.unshift(...group.filter((_, i) => i !== failed));
      group.length = 0;
      return;
    }
    group.forEach((write, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) write.resolve(outcome.value);
      else write.reject(translateSqliteError(outcome.error));
    });
  }

  /**
   * The writes of a group inside its transaction. One write alone runs as it is: its error rolls the transaction back.
   * In a larger group each runs under a savepoint, so its error undoes its own part only and the others commit; a busy
   * error fails the group (tried again whole, #runGathered), and an error after which SQLite has no transaction open
   * any more (SQLITE_FULL, SQLITE_IOERR) interrupts it.
   */
  async #inGroup(trx: Transaction<DB>, group: GatheredWrite[], outcomes: (GroupOutcome | undefined)[]): Promise<void> {
    const connection = this.#connection;
    if (group.length === 1) {
      outcomes.push({ ok: true, value: await group[0]!.work(trx, connection) });
      return;
    }
    for (const write of group) {
      connection.exec('SAVEPOINT factlane_write');
      outcomes.push(undefined);
      try {
        outcomes[outcomes.length - 1] = { ok: true, value: await write.work(trx, connection) };
        // FTS5 holds a write's terms in memory and writes them out when the next savepoint opens: opened here, under
        // this write's savepoint, a full disk fails this write, not the next one's SAVEPOINT and the whole group.
        connection.exec('SAVEPOINT factlane_flush; RELEASE factlane_flush; RELEASE factlane_write');
      } catch (error) {
        if (isRetryableBusy(error)) throw error;
        if (!connection.inTransaction) throw new GroupInterrupted(error);
        connection.exec('ROLLBACK TO factlane_write');
        connection.exec('RELEASE factlane_write');
        outcomes[outcomes.length - 1] = { ok: false, error };
      }
    }
  }

  /**
   * For the server's shutdown (CONTRACT.md §16.2: in-flight calls get up to `graceMs`): from now on no busy wait or
   * retry goes past the end of that time less STOP_MARGIN_MS, so a call that finds another writer holding the
   * database past it ends with BACKEND_BUSY, and one that gets the database in time still finishes. better-sqlite3
   * waits out busy_timeout on the event loop, where the shutdown's timer cannot end it: a retry after the stop took the
   * exit to 8-9 s. A stop seen just after a busy attempt may have come at any moment of its wait: the time counts
   * from the attempt's start.
   */
  stopWaiting(graceMs: number): void {
    const now = performance.now();
    const busy = this.#busyAttempt;
    const since = busy !== undefined && now - busy.end < LOOP_TURN_MS ? busy.start : now;
    this.#stopBy = Math.min(this.#stopBy, since + graceMs - STOP_MARGIN_MS);
    this.#queue?.stopWaitingAt(this.#stopBy);
  }

  /**
   * Runs one attempt with busy_timeout shortened by the time it waited for the writer queue, so that an attempt waits
   * at most BUSY_TIMEOUT_MS in all and BACKEND_BUSY comes within the bound of STORAGE.md §6 (about 36 s): added to
   * the busy wait, the queue's wait made it up to 66 s, past a host's 60 s request timeout. A stopping server's
   * attempt waits at most until stopWaiting's end (the driver lets the event loop poll after a long hold of the
   * connection, so a stop that came during a busy wait is seen before the next statement).
   */
  async #attempt<T>(run: () => Promise<T>, waitedMs: number): Promise<T> {
    const budget = waitedMs < 1 ? BUSY_TIMEOUT_MS : Math.max(1, BUSY_TIMEOUT_MS - Math.floor(waitedMs));
    const timeout = Math.min(budget, this.#leftMs());
    const shortened = timeout < BUSY_TIMEOUT_MS;
    if (shortened && this.#connection.open) this.#connection.pragma(`busy_timeout = ${timeout}`);
    const start = performance.now();
    try {
      const result = await run();
      this.#busyAttempt = undefined;
      return result;
    } catch (error) {
      this.#busyAttempt = isRetryableBusy(error) ? { start, end: performance.now() } : undefined;
      throw error;
    } finally {
      // Stopping, the next attempt may already hold the connection: it keeps the bound, never the full wait.
      const next = Math.min(BUSY_TIMEOUT_MS, this.#leftMs());
      if (shortened && this.#connection.open) this.#connection.pragma(`busy_timeout = ${next}`);
    }
  }

  /** Whole milliseconds left until stopWaiting's end, at least 0; Infinity while the server runs. */
  #leftMs(): number {
    return Math.max(0, Math.floor(this.#stopBy - performance.now()));
  }

  /** How this connection's write attempts went through the writer queue; undefined when it is off. */
  get writerQueueTurns(): WriterQueueTurns | undefined {
    return this.#queue?.turns;
  }

  /** Runs a read with the same busy retries and error translation as writes. */
  async read<T>(work: (db: Kysely<DB>) => Promise<T>): Promise<T> {
    this.#assertOpen();
    return withBusyRetry(this.#retry, () => this.#attempt(() => work(this.#kysely), 0), this.#stopByNow);
  }

  /** Closes the connection; returns true when SQLite confirms it is closed. */
  async close(): Promise<boolean> {
    if (!this.#connection.open) {
      this.#queue?.close();
      return true;
    }
    // Kysely's destroy does not wait: a write still in flight fails and commits nothing (the server lets its calls
    // finish before it closes). The queue's lock goes after the connection.
    await this.#kysely.destroy();
    this.#queue?.close();
    if (this.#connection.open) this.#connection.close();
    return !this.#connection.open;
  }

  #assertOpen(): void {
    if (!this.#connection.open) throw new AdapterError('BACKEND_UNAVAILABLE', 'storage is closed');
  }
}

/** A write waiting for its group: its work, and how its attempt settles. */
interface GatheredWrite {
  readonly work: WriteWork<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/** What one write of a group gave inside the transaction. */
type GroupOutcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

/** One write's error ended the whole transaction (SQLite rolled it back): the other writes of the group run again. */
class GroupInterrupted extends Error {
  constructor(cause: unknown) {
    super('a write of the group ended its transaction', { cause });
  }
}

/**
 * The most writes one transaction takes: a group holds the writer lock for all of them (about 0.3-0.5 ms of SQL a
 * store), so this bounds how long other processes wait behind it.
 */
export const MAX_GROUP_WRITES = 16;

/** How much of a stopping server's grace is kept for answering and closing after the last busy wait (stopWaiting). */
const STOP_MARGIN_MS = 500;
/** A stop seen within this long after a busy attempt ended may have come during it (stopWaiting). */
const LOOP_TURN_MS = 100;

/** How much of the database file reads map into memory (docs/decisions/0008-memory-mapped-reads.md). */
export const MMAP_SIZE_BYTES = 1024 * 1024 * 1024;

/** The size a restarted WAL file is cut back to (decision 0030); a quiet WAL holds about 4 MiB (1,000 pages). */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/** Reads the pragmas back; anything weaker than the contract throws BACKEND_COMPATIBILITY_MISMATCH. */
export function assertEffectivePragmas(connection: SqliteConnection): void {
  const journalMode = String(connection.pragma('journal_mode', { simple: true })).toLowerCase();
  const synchronous = Number(connection.pragma('synchronous', { simple: true }));
  const busyTimeout = Number(connection.pragma('busy_timeout', { simple: true }));
  const problems: string[] = [];
  if (journalMode !== 'wal') problems.push(`journal_mode is ${journalMode}, not wal`);
  if (synchronous !== 2) problems.push(`synchronous is ${synchronous}, not 2 (FULL)`);
  if (busyTimeout < BUSY_TIMEOUT_MS) problems.push(`busy_timeout is ${busyTimeout}, below ${BUSY_TIMEOUT_MS}`);
  if (problems.length > 0) {
    throw new AdapterError('BACKEND_COMPATIBILITY_MISMATCH',
      `the database connection cannot run safely: ${problems.join('; ')}`);
  }
}

/**
 * Opens a short-lived read-only connection (STORAGE.md §3): read-only flag, query_only, busy_timeout
 * 5000, sqlite-vec loaded when asked, never the writer function. Errors are translated.
 */
export function openReadOnlyConnection(path: string, options: { loadVec?: boolean } = {}): SqliteConnection {
  let connection: SqliteConnection | undefined;
  try {
    connection = new Database(path, { readonly: true, fileMustExist: true });
    connection.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    connection.pragma('query_only = ON');
    if (options.loadVec) loadSqliteVec(connection);
    return connection;
  } catch (error) {
    connection?.close();
    throw translateSqliteError(error);
  }
}

/** Opens a read-only connection, runs `work` on one snapshot, closes it; SQLite errors are translated. */
export function withReadOnly<T>(
  path: string, work: (connection: SqliteConnection) => T, options: { loadVec?: boolean } = {},
): T {
  const connection = openReadOnlyConnection(path, options);
  try {
    return onOneSnapshot(connection, () => work(connection));
  } catch (error) {
    throw translateSqliteError(error);
  } finally {
    connection.close();
  }
}
