import { performance } from 'node:perf_hooks';
import { AdapterError } from '../core/adapter-error.js';
import { setSignalAudience } from '../maintenance/operation-signals.js';
import type { OperationStep, StepListener } from '../maintenance/operation-steps.js';

/** Where progress goes: process.stderr, or a fake stream in tests. */
export interface ProgressStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

/** `json` with --json; `tty` when the stream is a terminal; `plain` otherwise (decision 0023). */
export type ProgressMode = 'json' | 'tty' | 'plain';

/** Options of a ProgressReporter, frozen by the caller. */
export interface ProgressReporterOptions {
  /** The JSON `operation` value: `backup`, `restore`, `housekeep`, `reembed`, `recover`, `migrate_up`. */
  readonly operation: string;
  readonly stream: ProgressStream;
  readonly json: boolean;
  /** The plain line of a step (no newline), written when the stream is not a terminal, or null; default none. */
  readonly plainLine?: (step: OperationStep) => string | null;
  /** The text of a step on a terminal, or null for describeStep's; default describeStep's. */
  readonly liveText?: (step: OperationStep) => string | null;
  /** Milliseconds of a monotonic clock; default performance.now. */
  readonly now?: () => number;
}

const CLEAR_TO_END = '\x1b[K';

/** The terminal text of a step: `<operation>: <step words> done/total (p%); field value, ...` (a lone count alone). */
export function describeStep(operation: string, step: OperationStep): string {
  const words = step.step.replaceAll('_', ' ');
  let counts = '';
  if (step.total !== undefined && step.done !== undefined) {
    counts = ` ${step.done}/${step.total} (${step.total === 0 ? 100 : Math.floor((step.done / step.total) * 100)}%)`;
  } else if (step.done !== undefined || step.total !== undefined) counts = ` ${step.done ?? step.total}`;
  const fields = Object.entries(step.fields ?? {})
    .map(([key, value]) => `${key.replaceAll('_', ' ')} ${value ?? 'none'}`);
  return `${operation.replaceAll('_', ' ')}: ${words}${counts}${fields.length > 0 ? `; ${fields.join(', ')}` : ''}`;
}

/** `850 ms`, `12.3 s`. */
const formatElapsed = (ms: number) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`);

/**
 * Shows an operator operation's steps on stderr, never on stdout (decision 0023). With --json: one JSON object
 * per step and line, `{operation, step, done?, total?, ...fields, elapsed_ms}`, and `{operation, step: "failed",
 * error_code?, elapsed_ms}` when the operation throws or stops at once. On a terminal: one line rewritten in place
 * (`\r`, the text, clear-to-end, cut to the terminal's width), ended with a newline when the operation ends, failed
 * or not, and before a line the run says (operation-signals' say), so an error line starts on a line of its own.
 * Otherwise the operation's plain lines, if it has any.
 */
export class ProgressReporter {
  readonly mode: ProgressMode;
  readonly #options: ProgressReporterOptions;
  readonly #now: () => number;
  readonly #started: number;
  #lineOpen = false;

  constructor(options: ProgressReporterOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
    this.#started = this.#now();
    this.mode = options.json ? 'json' : options.stream.isTTY === true ? 'tty' : 'plain';
  }

  /** Reports one step; a StepListener to hand to the operation. */
  readonly step: StepListener = (step) => {
    const elapsedMs = Math.round(this.#now() - this.#started);
    const { operation, stream, plainLine, liveText } = this.#options;
    if (this.mode === 'json') {
      const counts = {
        ...(step.done !== undefined ? { done: step.done } : {}),
        ...(step.total !== undefined ? { total: step.total } : {}),
      };
      stream.write(`${JSON.stringify({
        operation, step: step.step, ...counts, ...step.fields, elapsed_ms: elapsedMs,
      })}\n`);
      return;
    }
    if (this.mode === 'plain') {
      const line = plainLine?.(step) ?? null;
      if (line !== null) stream.write(`${line}\n`);
      return;
    }
    const text = `${liveText?.(step) ?? describeStep(operation, step)} [${formatElapsed(elapsedMs)}]`;
    const width = stream.columns !== undefined && stream.columns > 1 ? stream.columns - 1 : Number.POSITIVE_INFINITY;
    stream.write(`\r${text.length > width ? text.slice(0, width) : text}${CLEAR_TO_END}`);
    this.#lineOpen = true;
  };

  /**
   * Runs `work` with the step listener and ends the progress line however it ends; a thrown error is reported
   * as the `failed` step (--json) and rethrown unchanged.
   */
  async run<T>(work: (onStep: StepListener) => Promise<T>): Promise<T> {
    // A line said meanwhile (a signal heard) ends the live line first; a stop at once (a second Ctrl-C, a signal
    // during a copy) still gets its `failed` line.
    setSignalAudience({ lineComing: () => this.end(), stoppingNow: () => this.#failed(undefined) });
    try {
      return await work(this.step);
    } catch (error) {
      this.#failed(error);
      throw error;
    } finally {
      setSignalAudience(null);
      this.end();
    }
  }

  /** The `failed` step with --json (`error_code` for a governed error), and the live line ended. */
  #failed(error: unknown): void {
    if (this.mode === 'json') {
      const code = error instanceof AdapterError ? { error_code: error.code } : {};
      const elapsedMs = Math.round(this.#now() - this.#started);
      const failed = { operation: this.#options.operation, step: 'failed', ...code, elapsed_ms: elapsedMs };
      this.#options.stream.write(`${JSON.stringify(failed)}\n`);
    }
    this.end();
  }

  /** Ends the live line with a newline if one is showing; idempotent. */
  end(): void {
    if (!this.#lineOpen) return;
    this.#options.stream.write('\n');
    this.#lineOpen = false;
  }
}
