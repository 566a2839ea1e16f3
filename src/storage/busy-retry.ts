import { AdapterError } from '../core/adapter-error.js';
import { isBusyError, translateSqliteError } from './sqlite-errors.js';

/** How busy or locked operations are retried (STORAGE.md §6). */
export interface BusyRetryPolicy {
  /** Retries after the first attempt before BACKEND_BUSY. */
  readonly retries: number;
  /** Pause before retry n is `baseDelayMs × 2ⁿ`, ± `jitterRatio`. */
  readonly baseDelayMs: number;
  readonly jitterRatio: number;
}

/** The contract's policy: 5 retries, 200 ms × 2ⁿ with ±10 % jitter. */
export const DEFAULT_BUSY_RETRY: BusyRetryPolicy = Object.freeze({ retries: 5, baseDelayMs: 200, jitterRatio: 0.1 });

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Busy or locked: as SQLite threw it, or already translated to BACKEND_BUSY with SQLite's error as its cause. */
export function isRetryableBusy(error: unknown): boolean {
  return isBusyError(error)
    || (error instanceof AdapterError && error.code === 'BACKEND_BUSY' && isBusyError(error.cause));
}

/** A busy attempt that is not retried because the server is stopping (CONTRACT.md §16.2). */
function stoppingWhileBusy(error: unknown): AdapterError {
  return new AdapterError('BACKEND_BUSY', 'the database is busy with another writer and the server is stopping: the '
    + 'request was not carried out; retry it once the server runs again', { cause: error });
}

/**
 * Runs `attempt` until it succeeds, fails with something other than busy/locked, or the retries are
 * used up. The attempt must be a whole transaction (from BEGIN IMMEDIATE) or a read on one snapshot, already
 * ended when it throws. Every failure leaves through translateSqliteError, so a final busy becomes BACKEND_BUSY.
 * `stopBy` (a performance.now() time, Infinity while the server runs) ends the retries of a stopping server: a retry
 * whose pause would reach it is not made, and a busy attempt fails at once with BACKEND_BUSY naming the stop.
 */
export async function withBusyRetry<T>(
  policy: BusyRetryPolicy, attempt: () => Promise<T>, stopBy: () => number = () => Infinity,
): Promise<T> {
  for (let n = 0; ; n += 1) {
    try {
      return await attempt();
    } catch (error) {
      if (!isRetryableBusy(error) || n >= policy.retries) throw translateSqliteError(error);
      const jitter = 1 + policy.jitterRatio * (Math.random() * 2 - 1);
      const pause = policy.baseDelayMs * 2 ** n * jitter;
      if (performance.now() + pause >= stopBy()) throw stoppingWhileBusy(error);
      await sleep(pause);
      if (performance.now() >= stopBy()) throw stoppingWhileBusy(error);
    }
  }
}
