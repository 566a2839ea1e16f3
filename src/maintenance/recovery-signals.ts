// SIGINT and SIGTERM during a recovery run (OPERATIONS.md §5.8): the run stops at its next step, and after the commit
// it fails closed (the state says sealing is incomplete).

/** SIGINT or SIGTERM arrived: the run stops at its next step (and fails closed after the commit). */
export class Interrupted extends Error {
  override name = 'Interrupted';
}

/**
 * Watches SIGINT and SIGTERM for the run; `check` throws once one arrived. Node hands a signal to its listener on a
 * turn of the event loop, and the run's SQLite work is synchronous, so `check` first lets the loop turn once: without
 * that, a Ctrl-C during target inspection or the purge was only seen after the run had finished.
 */
export function watchSignals(emitter: NodeJS.EventEmitter) {
  let received: string | null = null;
  const handler = (signal: string) => {
    received = signal;
  };
  emitter.on('SIGINT', handler);
  emitter.on('SIGTERM', handler);
  return {
    async check() {
      await new Promise<void>((resolve) => { setImmediate(resolve); });
      if (received !== null) throw new Interrupted(`interrupted by ${received}`);
    },
    stop() {
      emitter.off('SIGINT', handler);
      emitter.off('SIGTERM', handler);
    },
  };
}
