/** The signals that stop the server cleanly (CONTRACT.md §16.2). */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

type StopSignalState = {
  held: NodeJS.Signals | null;
  stop: (() => unknown) | null;
  readonly listener: (signal: NodeJS.Signals) => void;
};

// One state for the process, though this module is in two bundles: the entry point holds the signals, and the
// launcher's CommonJS bundle, which it loads, takes them over (decision 0047).
const STATE_KEY = Symbol.for('factlane.stop-signals');
const shared = globalThis as typeof globalThis & { [STATE_KEY]?: StopSignalState };
const state: StopSignalState = shared[STATE_KEY] ??= {
  held: null,
  stop: null,
  listener: (signal) => {
    state.held ??= signal;
    state.stop?.();
  },
};

/**
 * Catches SIGINT and SIGTERM from the launcher's first line, before the rest of it loads (100-200 ms): a host that
 * starts and at once stops the server saw it killed by the signal instead of exiting 0. One listener for the life of
 * the process: removing a signal's last listener closes Node's handle for it, and a signal caught but not yet
 * dispatched to JavaScript is then lost (the server hung instead of stopping).
 */
export function holdStopSignals(): void {
  for (const signal of STOP_SIGNALS) process.on(signal, state.listener);
}

/** The server's stop: called for every stop signal, and at once for one that came while the launcher loaded. */
export function onStopSignal(handler: () => unknown): void {
  state.stop = handler;
  if (state.held !== null) handler();
}

/**
 * For every command but the server: Node's default again, so Ctrl-C ends a demo or a setup; a signal held while the
 * launcher loaded ends the process by that signal, as it would have without the hold.
 */
export function releaseStopSignals(): void {
  for (const signal of STOP_SIGNALS) process.off(signal, state.listener);
  if (state.held !== null) process.kill(process.pid, state.held);
}
