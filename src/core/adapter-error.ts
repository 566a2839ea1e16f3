import { ERROR_CODES, type ErrorCode } from '@factlane/schema';

/**
 * The one governed error type. Carries a catalogue code, a safe message (no SQL, paths, fact text or
 * stack) and whether retrying the same request can succeed. The retry flag defaults to the catalogue's.
 */
export class AdapterError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  /** Trusted audit metadata the gateway attaches (request_id, host and context bindings) for the BLOCKED envelope. */
  readonly audit: Readonly<Record<string, unknown>> | undefined;

  constructor(
    code: ErrorCode, safeMessage: string,
    options: { retryable?: boolean; cause?: unknown; audit?: Readonly<Record<string, unknown>> } = {},
  ) {
    super(safeMessage, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AdapterError';
    this.code = code;
    this.retryable = options.retryable ?? ERROR_CODES[code].retryable;
    this.audit = options.audit;
  }

  /** The same governed error carrying the gateway's audit metadata. */
  withAudit(audit: Readonly<Record<string, unknown>>): AdapterError {
    return new AdapterError(this.code, this.message, { retryable: this.retryable, cause: this.cause, audit });
  }
}

/**
 * What a VERSION_CONFLICT asks of the agent: memory_get with REVIEW_HISTORY lists the memory's records newest first,
 * the live one included when it is stale or a Candidate (CURRENT returns neither), with its revision and record_id.
 */
export const REREAD_AND_RETRY = 'read the memory again with memory_get retrieval_mode REVIEW_HISTORY (its newest '
  + 'record is the live one) and retry with that record\'s revision';
