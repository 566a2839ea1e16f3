import type { AdapterError } from '../core/adapter-error.js';

/**
 * The BLOCKED envelope of a governed failure (CONTRACT.md §6.3): exactly `status`, `error_code`,
 * `message`, `results`, `degradation` and `audit` (host binding, request_id, retryable, raw_content_logged,
 * and the context binding when bound).
 */
export function blockedEnvelope(error: AdapterError): Record<string, unknown> {
  const audit = error.audit ?? { raw_content_logged: false, request_id: null, retryable: error.retryable };
  return {
    status: 'BLOCKED', error_code: error.code, message: error.message, results: [], degradation: null,
    audit: { ...audit },
  };
}
