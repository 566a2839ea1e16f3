import { closeSync, constants, fchmodSync, fstatSync, openSync } from 'node:fs';
import { setImmediate as nextLoopTurn } from 'node:timers/promises';
import { SILENT_LOGGER, type Logger } from '../core/logger.js';
import { keepOwner, WRITER_SIDECAR_SUFFIX } from './durable-files.js';
import { loadAsyncFlock, loadFlock } from './native.js';

/**
 * How long a writer waits for its turn before it goes on to BEGIN IMMEDIATE without the queue, where
 * busy_timeout and the retries still order it (docs/decisions/0018). As long as busy_timeout: a writer that goes
 * past the queue meets the busy handler's sleeps while queued writers keep committing, which is the tail the queue
 * removes (with 1 s, 8 processes x 4 in flight gave write p99 1.3-1.5 s; with 5 s, 0.6-0.9 s). A bound, so a stuck
 * holder delays writers but never stops them.
 */
export const WRITER_QUEUE_WAIT_MS = 5000;

/**
 * How long after it last met another writer a process stops trying the lock without blocking first. A try that
 * finds the lock free between a release and the kernel's hand-over to a waiter takes it ahead of every waiter:
 * under contention that starved waiters up to WRITER_QUEUE_WAIT_MS (write p99 above 1 s with 8 processes).
 */
export const WRITER_QUEUE_CONTENDED_MS = 2000;

/** Options of a WriterQueue, frozen. */
export interface WriterQueueOptions {
  /** The resolved database path; the sidecar is this path plus WRITER_SIDECAR_SUFFIX. */
  readonly databasePath: string;
  /** Where the one warning goes when the sidecar cannot be used; default silent. */
  readonly logger?: Logger;
  /** Default WRITER_QUEUE_WAIT_MS. */
  readonly waitMs?: number;
}

/** How the attempts of one queue went so far: with the lock, past it after the wait, or with no queue at all. */
export interface WriterQueueTurns {
  readonly locked: number;
  /** Of the locked ones, those that waited in the kernel's queue instead of taking the lock without blocking. */
  readonly queued: number;
  readonly bypassed: number;
  /** Of the bypassed ones, those that did not wait: the lock's holder had already kept an earlier writer waiting. */
  readonly passedStalled: number;
  readonly unqueued: number;
}

/**
 * The cooperative cross-process writer queue of STORAGE.md §6: an exclusive `flock` on the sidecar
 * `<db>-writer`, held only around one write attempt, behind an in-process FIFO (flock belongs to the open
 * file description, so two writes of one process on one descriptor would both "hold" it). The lock is
 * tried without blocking, then waited for on the libuv threadpool, never on the event loop. A writer
 * that waited WRITER_QUEUE_WAIT_MS goes on without it, and a sidecar that cannot be opened turns the
 * queue off with one warning: SQLite's busy handling stays the safety net either way, so the queue
 * changes only latency, never an outcome. The kernel drops the lock of a process that dies.
 */
export class WriterQueue {
  /** The sidecar lock file's path. */
  readonly sidecarPath: string;
  readonly #logger: Logger;
  readonly #waitMs: number;
  readonly #flockSync = loadFlock();
  readonly #flockAsync = loadAsyncFlock();
  #state: 'UNOPENED' | 'OPEN' | 'OFF' | 'CLOSED' = 'UNOPENED';
  #fd: number | undefined;
  /** Settles when the last writer that entered the in-process FIFO leaves it. */
  #tail: Promise<void> = Promise.resolve();
  /** Writers of this process in the FIFO, the running one included. */
  #entered = 0;
  /** A writer of this process is between its lock request and its release. */
  #active = false;
  #holding = false;
  /** The one outstanding threadpool flock of this process; a later writer inherits it. */
  #pending: Promise<void> | undefined;
  /** The last release left writers of this process queued: the next one lets other processes go first. */
  #yieldBeforeNext = false;
  readonly #turns = { locked: 0, queued: 0, bypassed: 0, passedStalled: 0, unqueued: 0 };
  /**
   * A writer waited WRITER_QUEUE_WAIT_MS for the outstanding request in vain: the lock's holder is stalled (stopped,
   * or itself waiting on a writer outside the queue). Until that request returns, writers go on without waiting:
   * each would otherwise pay the whole wait again for as long as the holder stays stalled.
   */
  #stalled = false;
  /** Until this time (ms, performance clock) writers go straight to the kernel's queue: another writer was met. */
  #contendedUntil = 0;
  /** A stopping server's end (stopWaitingAt, ms, performance clock): no writer waits for its turn past it. */
  #stopEnd = Number.POSITIVE_INFINITY;
  /**
   * Wakes the writers waiting for their turn when the stop's end comes. One entry per waiting writer, removed when its
   * wait ends: a race against one never-settling promise kept two promises of every slow-path write alive for the life
   * of the process (about 300 bytes a write).
   */
  readonly #stopWakers = new Set<() => void>();

  constructor(options: WriterQueueOptions) {
    this.sidecarPath = options.databasePath + WRITER_SIDECAR_SUFFIX;
    this.#logger = options.logger ?? SILENT_LOGGER;
    this.#waitMs = options.waitMs ?? WRITER_QUEUE_WAIT_MS;
  }

  /**
   * Runs `attempt` (one whole write transaction, from BEGIN IMMEDIATE to commit or rollback) in this
   * process's turn, holding the cross-process lock when it got it within the wait; releases it as soon
   * as the attempt settles. `attempt` learns how long it waited for the lock (ms; the wait behind writers of this
   * process not counted). What it returns or throws passes through unchanged. `moreQueued`, asked at the release,
   * tells whether writes of this process wait outside the FIFO (a caller that gathers them), so that the next turn
   * lets other processes go first as it does for writes queued in the FIFO.
   */
  async run<T>(attempt: (waitedMs: number) => Promise<T>, moreQueued: () => boolean = () => false): Promise<T> {
    const previous = this.#tail;
    let leave!: () => void;
    this.#tail = new Promise<void>((resolve) => { leave = resolve; });
    this.#entered += 1;
    await previous;
    try {
      const start = performance.now();
      await this.#lock();
      return await attempt(performance.now() - start);
    } finally {
      this.#unlock(moreQueued());
      this.#entered -= 1;
      leave();
    }
  }

  /**
   * The server is stopping: from `end` (ms, performance clock) no writer waits for its turn any more; it goes on
   * without the lock, where SQLite's busy handling (bounded by the same end) still orders it.
   */
  stopWaitingAt(end: number): void {
    this.#stopEnd = Math.min(this.#stopEnd, end);
    setTimeout(() => {
      for (const wake of this.#stopWakers) wake();
    }, Math.max(0, end - performance.now())).unref();
  }

  /** Counts of attempts by how they ran, for tests and benchmarks. */
  get turns(): WriterQueueTurns {
    return { ...this.#turns };
  }

  /** Closes the sidecar descriptor (after an outstanding threadpool request returns); later writes run unqueued. */
  close(): void {
    const wasOpen = this.#state === 'OPEN';
    this.#state = 'CLOSED';
    if (wasOpen && this.#pending === undefined) this.#closeDescriptor();
  }

  async #lock(): Promise<void> {
    this.#active = true;
    if (this.#state === 'UNOPENED') this.#open();
    if (this.#state !== 'OPEN') {
      this.#turns.unqueued += 1;
      return;
    }
    if (this.#yieldBeforeNext) {
      // This process just released with more of its writes queued. Taking the lock again at once would
      // win the race against the waiters the kernel has just woken in other processes, every time.
      this.#yieldBeforeNext = false;
      await nextLoopTurn();
    }
    if (this.#pending !== undefined && this.#stalled) {
      this.#turns.bypassed += 1;
      this.#turns.passedStalled += 1;
      return;
    }
    if (this.#pending === undefined) {
      // Alone, the lock is taken without a threadpool round trip; for WRITER_QUEUE_CONTENDED_MS after a try met another
      // writer, every request waits in the kernel, so a newcomer does not take the lock in the moment it passes from
      // its holder to a waiter. Only a try that failed starts that time: renewed by every queued write, it never ran
      // out while writes came less than that apart, and a process left alone kept paying the threadpool round trip.
      if (performance.now() >= this.#contendedUntil) {
        if (this.#tryLock()) {
          this.#turns.locked += 1;
          return;
        }
        if (this.#state !== 'OPEN') {
          this.#turns.unqueued += 1;
          return;
        }
        this.#contendedUntil = performance.now() + WRITER_QUEUE_CONTENDED_MS;
      }
      this.#pending = this.#request();
    }
    let timer: NodeJS.Timeout | undefined;
    let wake!: () => void;
    const waited = new Promise<void>((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, Math.max(0, Math.min(this.#waitMs, this.#stopEnd - performance.now())));
    });
    this.#stopWakers.add(wake);
    await Promise.race([this.#pending, waited]);
    clearTimeout(timer);
    this.#stopWakers.delete(wake);
    if (this.#holding) {
      this.#turns.locked += 1;
      this.#turns.queued += 1;
    } else {
      this.#turns.bypassed += 1;
      this.#stalled = this.#pending !== undefined;
    }
  }

  #tryLock(): boolean {
    try {
      this.#flockSync(this.#fd!, 'exnb');
      this.#holding = true;
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK') this.#turnOff(code);
      return false;
    }
  }

  /** Waits for the lock on the threadpool; resolves when the request returns, holding or not. */
  #request(): Promise<void> {
    const fd = this.#fd!;
    return new Promise<void>((resolve) => {
      this.#flockAsync(fd, 'ex', (error) => {
        this.#pending = undefined;
        this.#stalled = false;
        if (error) {
          // EINTR only ends this request; the next writer asks again.
          if (error.code !== 'EINTR') this.#turnOff(error.code);
        } else if (this.#active && this.#state === 'OPEN') {
          // The writer waiting for it, or one that went on without it and is still in its attempt.
          this.#holding = true;
        } else {
          // Nobody of this process is writing (the request was abandoned): hand the turn on at once.
          this.#release(fd);
        }
        if (this.#state !== 'OPEN') this.#closeDescriptor();
        resolve();
      });
    });
  }

  #unlock(moreQueued: boolean): void {
    this.#active = false;
    if (this.#holding) {
      this.#holding = false;
      this.#release(this.#fd!);
      this.#yieldBeforeNext = this.#entered > 1 || moreQueued;
    }
  }

  #release(fd: number): void {
    try {
      this.#flockSync(fd, 'un');
    } catch (error) {
      // Closing the only descriptor of the open file description drops its lock for certain.
      this.#turnOff((error as NodeJS.ErrnoException).code);
    }
  }

  #open(): void {
    try {
      let fd: number;
      try {
        // No symlink is followed: the sidecar is created where the database is, nowhere else.
        const createFlags = constants.O_RDONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
        fd = openSync(this.sidecarPath, createFlags, 0o600);
        this.#giveToDatabaseOwner(fd);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        // O_NONBLOCK: opening a FIFO planted under the name must not hang the write.
        fd = openSync(this.sidecarPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      }
      this.#fd = fd;
      if (!fstatSync(fd).isFile()) {
        this.#turnOff('ENOTREG');
        return;
      }
      try {
        fchmodSync(fd, 0o600); // independent of the umask; fails harmlessly on a sidecar of another owner
      } catch {
        // The lock still works; the mode is not ours to change.
      }
      this.#state = 'OPEN';
    } catch (error) {
      this.#turnOff((error as NodeJS.ErrnoException).code);
    }
  }

  /**
   * Made by root (an operator's command on a user's database), the new sidecar goes to the database file's owner, whose
   * servers open it too: a root-owned one turned their queue off. Through the descriptor, never by name.
   */
  #giveToDatabaseOwner(fd: number): void {
    try {
      keepOwner(this.sidecarPath.slice(0, -WRITER_SIDECAR_SUFFIX.length), fd);
    } catch {
      // The database's file is gone or unreadable: the sidecar stays root's, and the lock works for root.
    }
  }


  /** Turns the queue off for the life of this connection, with one warning; the descriptor (and any lock) goes. */
  #turnOff(code: string | undefined): void {
    if (this.#state === 'OFF' || this.#state === 'CLOSED') return;
    this.#state = 'OFF';
    this.#holding = false;
    if (this.#pending === undefined) this.#closeDescriptor();
    this.#logger.warn('writes go on without the cross-process writer queue: its lock file beside the database '
      + `cannot be used (${code ?? 'unknown error'}); SQLite busy handling still orders them`);
  }

  #closeDescriptor(): void {
    if (this.#fd === undefined) return;
    const fd = this.#fd;
    this.#fd = undefined;
    closeSync(fd);
  }
}
