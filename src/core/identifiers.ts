import { randomBytes, randomUUID } from 'node:crypto';
import { WHITESPACE_CLASS } from './text.js';

const IDENTIFIER = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;
const HOST_LABEL = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

// CONTRACT.md §9.4: what makes a value secret-like; whitespace as §2.1 defines it (provenance strings are only
// stripped, so a U+0085 or U+001F between `bearer` and its token reaches this check). "Contains a prefix and N or
// more characters" is "contains the prefix and exactly N": the counts are bounded, because an open `{20,}` over a
// run of a few million such characters overflows the regular expression engine's stack (an internal error).
const SECRET_PATTERNS: readonly RegExp[] = [
  /sk-[A-Za-z0-9]{20}/,
  /gh[pousr]_\w{20}/,
  new RegExp(`bearer[${WHITESPACE_CLASS}]+[A-Za-z0-9\\-._~+/=]{20}`, 'i'),
  /AIza[A-Za-z0-9_-]{30}/,
  new RegExp(`(?:api_key|api-key|apikey|password|secret|token) *[:=] *[^${WHITESPACE_CLASS}]{12}`, 'i'),
];
const PEM_BEGIN = '-----BEGIN';

/**
 * True for a PEM header `-----BEGIN` … `PRIVATE KEY-----`. Two scans, not `/-----BEGIN[\s\S]*?PRIVATE KEY-----/`:
 * the lazy regex rescans the rest of the string from every `-----BEGIN`, so a few MB of them held the server for
 * minutes. A terminator after any `-----BEGIN` is also after the first one, so the meaning is the same.
 */
function hasPrivateKeyHeader(value: string): boolean {
  const begin = value.indexOf(PEM_BEGIN);
  return begin !== -1 && value.indexOf('PRIVATE KEY-----', begin + PEM_BEGIN.length) !== -1;
}

/** True when `value` contains an API key, token, password assignment or private-key header (CONTRACT.md §9.4). */
export function isSecretLike(value: string): boolean {
  return hasPrivateKeyHeader(value) || SECRET_PATTERNS.some((pattern) => pattern.test(value));
}

/** True for a contract identifier (CONTRACT.md §2.4); the secret-like check is separate and comes first. */
export function isIdentifierFormat(value: string): boolean {
  return IDENTIFIER.test(value);
}

/** True for a host label: an identifier without `/`, not secret-like. */
export function isHostLabel(value: string): boolean {
  return HOST_LABEL.test(value) && !isSecretLike(value);
}

/** True for a contract identifier that is not secret-like. */
export function isIdentifier(value: string): boolean {
  return IDENTIFIER.test(value) && !isSecretLike(value);
}

/** True for a UUID in 8-4-4-4-12 hex groups, any case. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** A new random version-4 UUID, lower case. */
export function mintUuid(): string {
  return randomUUID();
}

/** 32 random lower-case hex digits (a gateway instance id). */
export function mintInstanceId(): string {
  return randomBytes(16).toString('hex');
}
