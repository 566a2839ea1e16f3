import { AdapterError } from '../core/adapter-error.js';
import { isJsonObject } from '../core/canonical-json.js';
import { isSecretLike } from '../core/identifiers.js';
import { collapse, foldKey, isWellFormedText, strip, utf8Bytes } from '../core/text.js';
import { parseTimestamp } from '../core/timestamps.js';
import { FRESHNESS_KINDS, MEMORY_TYPES, VERIFIED_BY } from '@factlane/schema';
import { requireEnum } from './request-scope.js';

// Field rules shared by memory_store and the payloads of memory_update (CONTRACT.md §5.3, §5.6, §9.4).

/** Stored `source_provenance`: all six keys, hex in lower case. */
export interface SourceProvenance {
  readonly source_class: string;
  readonly source_ref: string;
  readonly source_hash: string;
  readonly review_ref: string;
  readonly extraction_method: string;
  readonly source_fingerprint: string | null;
}

/** Stored `freshness_policy`: exactly four keys. */
export interface FreshnessPolicy {
  readonly kind: (typeof FRESHNESS_KINDS)[number];
  readonly recheck_ref: string | null;
  readonly source_fingerprint: string | null;
  readonly ttl_seconds: number | null;
}

const MAX_FACT_BYTES = 2000;
const MAX_TAGS = 12;
const MAX_TAG_BYTES = 48;
const MAX_SUBJECT_BYTES = 96;
const MAX_TTL_SECONDS = 31_536_000;
const HEX64 = /^[0-9a-fA-F]{64}$/;
const RAW_PHRASES = ['full transcript', 'hidden reasoning', 'whole repository'];
const present = (value: unknown) => value !== undefined && value !== null;

// The messages say which rule refused the value, never the value itself (CONTRACT.md §6.3).
function sensitive(field: string, why = 'looks like a secret (a key, token or password); send it without the secret')
  : AdapterError {
  return new AdapterError('RAW_OR_SENSITIVE_CONTENT', `${field} ${why}`);
}

/**
 * The fact as stored: collapse(fact), 1-2000 bytes, no secrets, transcripts, hidden reasoning or whole repositories.
 */
export function normalizeFact(value: unknown, field = 'fact'): string {
  if (typeof value !== 'string') throw new AdapterError('INVALID_ENVELOPE', `${field} must be a string`);
  // Stored as UTF-8 text: a lone surrogate has no UTF-8 form, and SQLite would keep bytes that never read back.
  if (!isWellFormedText(value))
    throw new AdapterError('INVALID_ENVELOPE', `${field} must be well-formed Unicode (it holds a lone surrogate)`);
  const fact = collapse(value);
  if (isSecretLike(fact)) {
    throw sensitive(field, 'looks like it holds a secret (a key, token or password); state the fact without it');
  }
  const folded = foldKey(fact);
  const phrase = RAW_PHRASES.find((raw) => folded.includes(raw));
  if (phrase !== undefined) {
    throw sensitive(field, `says "${phrase}", which marks raw content; store a short fact in your own words, without `
      + 'that phrase');
  }
  if (fact === '' || utf8Bytes(fact) > MAX_FACT_BYTES)
    throw new AdapterError('INVALID_ENVELOPE',
      `${field} must be 1-${MAX_FACT_BYTES} bytes after collapsing whitespace`);
  return fact;
}

export function normalizeMemoryType(value: unknown, field = 'memory_type'): (typeof MEMORY_TYPES)[number] {
  return requireEnum(field, value, MEMORY_TYPES);
}

type FieldCode = 'PROVENANCE_REQUIRED' | 'INVALID_ENVELOPE';

/** A stripped string with no CR/LF and nothing secret-like. */
function cleanString(field: string, value: unknown, code: FieldCode): string {
  if (typeof value !== 'string') throw new AdapterError(code, `${field} must be a string`);
  const text = strip(value);
  if (/[\r\n]/.test(text)) throw sensitive(field, 'holds a line break; send it on a single line');
  if (isSecretLike(text)) throw sensitive(field);
  return text;
}

/** A stripped provenance string: no CR/LF or secret, 1-`maxBytes` bytes. */
function provenanceString(field: string, value: unknown, maxBytes: number, code: FieldCode): string {
  const text = cleanString(field, value, code);
  if (text === '' || utf8Bytes(text) > maxBytes) throw new AdapterError(code, `${field} must be 1-${maxBytes} bytes`);
  return text;
}

function hex64(field: string, value: unknown, code: FieldCode): string {
  const text = cleanString(field, value, code);
  if (!HEX64.test(text)) throw new AdapterError(code, `${field} must be 64 hex digits`);
  return text.toLowerCase();
}

/** source_provenance: five required keys (PROVENANCE_REQUIRED lists missing ones), optional fingerprint. */
export function normalizeProvenance(value: unknown, field = 'source_provenance'): SourceProvenance {
  if (!isJsonObject(value))
    throw new AdapterError('PROVENANCE_REQUIRED',
      `${field} must be an object with source_class, source_ref, source_hash, review_ref, extraction_method`);
  const required = ['source_class', 'source_ref', 'source_hash', 'review_ref', 'extraction_method'];
  const missing = required.filter((key) => !present(value[key]));
  if (missing.length > 0)
    throw new AdapterError('PROVENANCE_REQUIRED',
      `${field} is missing ${missing.map((key) => `${field}.${key}`).join(', ')}`);
  const code = 'PROVENANCE_REQUIRED';
  return {
    source_class: provenanceString(`${field}.source_class`, value.source_class, 96, code),
    source_ref: provenanceString(`${field}.source_ref`, value.source_ref, 256, code),
    source_hash: hex64(`${field}.source_hash`, value.source_hash, code),
    review_ref: provenanceString(`${field}.review_ref`, value.review_ref, 256, code),
    extraction_method: provenanceString(`${field}.extraction_method`, value.extraction_method, 96, code),
    source_fingerprint: present(value.source_fingerprint)
      ? hex64(`${field}.source_fingerprint`, value.source_fingerprint, code)
      : null,
  };
}

/** freshness_policy: kind, ttl_seconds only (and always) for ttl, optional recheck_ref and fingerprint. */
export function normalizeFreshness(value: unknown, field = 'freshness_policy'): FreshnessPolicy {
  if (!isJsonObject(value)) throw new AdapterError('INVALID_ENVELOPE', `${field} must be an object with kind`);
  if (typeof value.kind !== 'string') {
    const absent = value.kind === undefined || value.kind === null;
    throw new AdapterError('INVALID_ENVELOPE', `${field}.kind ${absent ? 'is required' : 'must be a string'}`);
  }
  const kind = requireEnum(`${field}.kind`, value.kind, FRESHNESS_KINDS);
  const ttl = value.ttl_seconds;
  if (kind === 'ttl' && !(Number.isInteger(ttl) && (ttl as number) >= 1 && (ttl as number) <= MAX_TTL_SECONDS)) {
    throw new AdapterError('INVALID_ENVELOPE',
      `${field}.ttl_seconds must be an integer 1-${MAX_TTL_SECONDS} for kind ttl`);
  }
  if (kind !== 'ttl' && present(ttl))
    throw new AdapterError('INVALID_ENVELOPE', `${field}.ttl_seconds is only for kind ttl`);
  let recheckRef: string | null = null;
  if (present(value.recheck_ref)) {
    const text = cleanString(`${field}.recheck_ref`, value.recheck_ref, 'INVALID_ENVELOPE');
    if (utf8Bytes(text) > 256)
      throw new AdapterError('INVALID_ENVELOPE', `${field}.recheck_ref must be at most 256 bytes`);
    recheckRef = text === '' ? null : text;
  }
  return {
    kind, recheck_ref: recheckRef, ttl_seconds: kind === 'ttl' ? (ttl as number) : null,
    source_fingerprint: present(value.source_fingerprint)
      ? hex64(`${field}.source_fingerprint`, value.source_fingerprint, 'INVALID_ENVELOPE')
      : null,
  };
}

/** The on_change rule (any scope): a non-blank recheck_ref and a fingerprint equal to the source hash. */
export function checkOnChange(freshness: FreshnessPolicy, provenance: SourceProvenance): void {
  if (freshness.kind === 'on_change'
    && (freshness.recheck_ref === null || freshness.source_fingerprint !== provenance.source_hash)) {
    throw new AdapterError('INVALID_FRESHNESS',
      'on_change freshness needs freshness_policy.recheck_ref and a source_fingerprint equal to '
        + 'source_provenance.source_hash');
  }
}

/** A timestamp field: null when absent, else the normalised UTC text (INVALID_TIMESTAMP). */
export function normalizeTimestamp(field: string, value: unknown): string | null {
  if (!present(value)) return null;
  const parsed = typeof value === 'string' ? parseTimestamp(value) : null;
  if (!parsed)
    throw new AdapterError('INVALID_TIMESTAMP',
      `${field} must look like 2026-01-31T12:00:00Z (date, T or space, time, Z or ±HH:MM)`);
  return parsed.text;
}

/** verified_by, when stated; null is not absent (its default is UNVERIFIED, CONTRACT.md §3.5). */
export function normalizeVerifiedBy(value: unknown, field = 'verified_by'): string | null {
  return value === undefined ? null : requireEnum(field, value, VERIFIED_BY);
}

/**
 * confidence 0-1 when stated; null, non-numbers and out-of-range values are INVALID_ENVELOPE (a nested bound is
 * governed; at the top level the schema refuses them first).
 */
export function normalizeConfidence(value: unknown, field = 'confidence'): number | null {
  if (value === undefined) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1)
    throw new AdapterError('INVALID_ENVELOPE', `${field} must be a number 0-1`);
  return value;
}

/**
 * tags when stated (null is not absent): at most 12, each collapsed, non-blank, at most 48 bytes, not secret-like;
 * duplicates dropped.
 */
export function normalizeTags(value: unknown, field = 'tags'): string[] | null {
  if (value === undefined) return null;
  if (!Array.isArray(value) || value.length > MAX_TAGS)
    throw new AdapterError('INVALID_ENVELOPE', `${field} must be an array of at most ${MAX_TAGS} strings`);
  const tags: string[] = [];
  for (const item of value) {
    if (typeof item !== 'string') throw new AdapterError('INVALID_ENVELOPE', `${field} must hold strings`);
    const tag = collapse(item);
    if (isSecretLike(tag)) throw sensitive(field);
    if (tag === '' || utf8Bytes(tag) > MAX_TAG_BYTES)
      throw new AdapterError('INVALID_ENVELOPE', `each of ${field} must be 1-${MAX_TAG_BYTES} bytes`);
    if (!tags.includes(tag)) tags.push(tag);
  }
  return tags;
}

/** subject: collapsed, at most 96 bytes, not secret-like; "" means absent. */
export function normalizeSubject(value: unknown, field = 'subject'): string | null {
  if (!present(value)) return null;
  if (typeof value !== 'string') throw new AdapterError('INVALID_ENVELOPE', `${field} must be a string`);
  const subject = collapse(value);
  if (isSecretLike(subject)) throw sensitive(field);
  if (utf8Bytes(subject) > MAX_SUBJECT_BYTES)
    throw new AdapterError('INVALID_ENVELOPE', `${field} must be at most ${MAX_SUBJECT_BYTES} bytes`);
  return subject === '' ? null : subject;
}
