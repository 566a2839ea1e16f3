// Text normalisation of CONTRACT.md §2.1.
/** The characters of a regular-expression class that are whitespace: ECMAScript \s plus U+001C-U+001F and U+0085. */
export const WHITESPACE_CLASS = '\\s\\u001C-\\u001F\\u0085';
const WHITESPACE_RUN = new RegExp(`[${WHITESPACE_CLASS}]+`, 'u');
// Every character of the class is one UTF-16 unit, so strip can test the units at either end one by one.
const WHITESPACE_UNIT = new RegExp(`^[${WHITESPACE_CLASS}]$`, 'u');

/** Length of the UTF-8 encoding. */
export function utf8Bytes(value: string): number {
  return Buffer.byteLength(value, 'utf8');
}

/** Removes leading and trailing whitespace. */
export function strip(value: string): string {
  // Two scans from the ends. The expression /^\s+|\s+$/ was quadratic: from every whitespace character inside the
  // text its second branch ran to the end of that run and failed, so a query of 100,000 spaces between two letters
  // held the server for minutes before its length was checked.
  let start = 0;
  let end = value.length;
  while (start < end && WHITESPACE_UNIT.test(value[start]!)) start += 1;
  while (end > start && WHITESPACE_UNIT.test(value[end - 1]!)) end -= 1;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

/** A lone (unpaired) UTF-16 surrogate: a string holding one has no UTF-8 encoding. */
// In unicode mode a paired surrogate is one code point above U+FFFF, so the class meets only lone halves.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** True when `value` is well-formed Unicode: no lone surrogate (String.prototype.isWellFormed, before ES2024). */
export function isWellFormedText(value: string): boolean {
  return !LONE_SURROGATE.test(value);
}

/** Splits on whitespace runs, drops empty pieces, joins with one space. */
export function collapse(value: string): string {
  return value.split(WHITESPACE_RUN).filter(Boolean).join(' ');
}

/** NFKC, then full upper-case, then full lower-case mapping (locale-independent): `ß`, `SS`, `ss` fold alike. */
export function fold(value: string): string {
  return value.normalize('NFKC').toUpperCase().toLowerCase();
}

/** collapse(fold(s)). */
export function foldKey(value: string): string {
  return collapse(fold(value));
}

/** fold_key(s) with Arabic normalisation: tatweel and harakat removed, alef/yeh/teh marbuta forms unified. */
export function searchText(value: string): string {
  return foldKey(value)
    .replace(/[\u0640\u064B-\u065F\u0670]/gu, '')
    .replace(/[\u0622\u0623\u0625\u0671]/gu, '\u0627')
    .replace(/\u0649/gu, '\u064A')
    .replace(/\u0629/gu, '\u0647');
}

/** Maximal runs of letters, numbers, marks and private-use characters: the FTS5 token categories (STORAGE.md §4.4). */
export const TOKEN_RUN = /[\p{L}\p{N}\p{M}\p{Co}]+/gu;

/** The token runs of `value` (TOKEN_RUN), in order. */
export function tokenRuns(value: string): string[] {
  return value.match(TOKEN_RUN) ?? [];
}

/** Control, line-separator and bidirectional-override characters, and a surrogate that is not half of a pair. */
const UNPRINTABLE = new RegExp('[\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u2028-\\u202e\\u2066-\\u2069]'
  + '|[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]', 'g');

/** `text` with each unprintable character written `\uXXXX`, so a name echoed in a message cannot break a log line. */
export function escapeUnprintable(text: string): string {
  return text.replace(UNPRINTABLE, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The first `max` UTF-16 units of `text`, one fewer where the cut would split a surrogate pair. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}
