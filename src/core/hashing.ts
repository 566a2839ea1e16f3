import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';

/** SHA-256 of a UTF-8 string or bytes, as 64 lower-case hex digits. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** SHA-256 of the canonical JSON of `value`. */
export function canonicalDigest(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
