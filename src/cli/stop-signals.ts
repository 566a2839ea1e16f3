/** The signals that stop the server cleanly (CONTRACT.md §16.2). */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

let held: NodeJS.Signals | null = null;
let stop: (() => unknown) | null = null;
const listener = (signal: NodeJS.Signals) => {
  held ??= signal;
  stop?.();
};

/**
 * Catches SIGINT and SIGTERM from the launcher's first line, before the rest of it loads (100-200 ms): a host that
 * starts and at once stops the server saw it killed by the signal instead of exiting 0. One listener for the life of
 * the process: removing a signal's last listener closes Node's handle for it, and a signal caught but not yet
 * dispatched to JavaScript is then lost (the server hung instead of stopping).
 */
export function holdStopSignals(): void {
  for (const signal of STOP_SIGNALS) process.on(signal, listener);
}

/** The server's stop: called for every stop signal, and at once for one that came while the launcher loaded. */
export function onStopSignal(handler: () => unknown): void {
  stop = handler;
  if (held !== null) handler();
}

/**
 * For every command but the server: Node's default again, so Ctrl-C ends a demo or a setup; a signal held while the
 * launcher loaded ends the process by that signal, as it would have without the hold.
 */
export function releaseStopSignals(): void {
  for (const signal of STOP_SIGNALS) process.off(signal, listener);
  if (held !== null) process.kill(process.pid, held);
}
