import { ERROR_CODES, type ErrorCode } from '../../schema/error-codes.js';

/**
 * The one governed error type. Carries a catalogue code, a safe message (no SQL, paths, fact text or
 * stack) and whether retrying the same request can succeed. The retry flag defaults to the catalogue's.
 */
export class AdapterError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;

  constructor(code: ErrorCode, safeMessage: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(safeMessage, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AdapterError';
    this.code = code;
    this.retryable = options.retryable ?? ERROR_CODES[code].retryable;
  }
}

/** True when `error` is an AdapterError, optionally with the given code. */
export function isAdapterError(error: unknown, code?: ErrorCode): error is AdapterError {
  return error instanceof AdapterError && (code === undefined || error.code === code);
}
