import { basename } from 'node:path';

// SIGINT and SIGTERM during a long operator run that stops between steps: a recovery run (OPERATIONS.md §5.8) stops at
// its next step, and after the commit it fails closed (the state says sealing is incomplete); reembed stops before its
// next batch or its switch, and the database keeps serving its old vectors.

/**
 * How a long operator run hears signals by default: the first is said on stderr at once (`first`: the run stops at its
 * next step, which may first wait), a second stops the process at once, exit 1, saying what it left (`second`).
 */
export function sayThenStopAtOnce(
  first: (signal: string) => string, second: (signal: string) => string,
): (signal: string, repeated: boolean) => void {
  return (signal, repeated) => {
    if (repeated) stopAtOnce(second(signal));
    say(first(signal));
  };
}

/** Who shows the run's progress: told before a line is said, and before the process stops at once. */
export interface SignalAudience {
  /** A line is about to be said: a progress line still open on a terminal ends first. */
  readonly lineComing: () => void;
  /** The process stops at once, without returning to the run: its progress says the run failed. */
  readonly stoppingNow: () => void;
}

let audience: SignalAudience | null = null;

/** Sets (or, with null, clears) the audience of say and stopAtOnce: the command line's progress reporter. */
export function setSignalAudience(next: SignalAudience | null): void {
  audience = next;
}

/** One line on stderr in the command's name (`factlane-admin: …`), as its refusals are. */
export function say(line: string): void {
  audience?.lineComing();
  process.stderr.write(`${basename(process.argv[1] ?? 'factlane-admin', '.js')}: ${line}\n`);
}

/** Stops the process at once, exit 1, saying `line` last, after the progress said the run failed. */
export function stopAtOnce(line: string): never {
  audience?.stoppingNow();
  say(line);
  process.exit(1);
}

/** SIGINT or SIGTERM arrived: the run stops at its next step; its message says what the stop left. */
export class Interrupted extends Error {
  override name = 'Interrupted';

  constructor(readonly signal: string, message = `interrupted by ${signal}`) {
    super(message);
  }
}

/**
 * Watches SIGINT and SIGTERM for the run; `check` throws once one arrived, and `onSignal` hears each as it comes
 * (`repeated` from the second on). Node hands a signal to its listener on a
 * turn of the event loop, and the run's SQLite work is synchronous, so `check` first lets the loop turn once: without
 * that, a Ctrl-C during target inspection or the purge was only seen after the run had finished.
 */
export function watchSignals(
  emitter: NodeJS.EventEmitter, onSignal?: (signal: string, repeated: boolean) => void,
) {
  let received: string | null = null;
  const handler = (signal: string) => {
    const repeated = received !== null;
    received = signal;
    onSignal?.(signal, repeated);
  };
  emitter.on('SIGINT', handler);
  emitter.on('SIGTERM', handler);
  return {
    async check() {
      await new Promise<void>((resolve) => { setImmediate(resolve); });
      if (received !== null) throw new Interrupted(received);
    },
    /** Lets the loop turn once, then says which signal arrived, if any, without stopping anything. */
    async heard(): Promise<string | null> {
      await new Promise<void>((resolve) => { setImmediate(resolve); });
      return received;
    },
    stop() {
      emitter.off('SIGINT', handler);
      emitter.off('SIGTERM', handler);
    },
  };
}
