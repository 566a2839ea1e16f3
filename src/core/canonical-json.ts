/**
 * Canonical JSON (CONTRACT.md §2.2): keys sorted by UTF-16 code units at every depth, no whitespace,
 * strings and numbers as ECMAScript prints them. Throws TypeError on non-finite numbers and on values
 * JSON cannot carry, since a canonical form of those does not exist.
 */
export function canonicalJson(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('canonical JSON has no form for a non-finite number');
      return JSON.stringify(value);
    case 'object': {
      if (Object.isFrozen(value)) {
        const known = FROZEN_TEXT.get(value);
        if (known !== undefined) return known;
      }
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i += 1) out += (i === 0 ? '' : ',') + canonicalJson(value[i]);
        return `${out}]`;
      }
      const object = value as Record<string, unknown>;
      // Array.prototype.sort without a comparator orders by UTF-16 code units: the canonical order.
      const keys = Object.keys(object).sort();
      let out = '{';
      let first = true;
      for (const key of keys) {
        const item = object[key];
        if (item === undefined) continue;
        out += (first ? '' : ',') + quotedKey(key) + canonicalJson(item);
        first = false;
      }
      return `${out}}`;
    }
    default:
      throw new TypeError(`canonical JSON has no form for a ${typeof value}`);
  }
}

// Values passed through freezeCanonical: immutable, so their text never changes.
const FROZEN_TEXT = new WeakMap<object, string>();

/**
 * Deep-freezes a JSON value and remembers its canonical JSON, so canonicalJson copies the text wherever
 * the value appears instead of walking it again. For values that envelopes repeat unchanged (the stored
 * binding, the launch profile). Throws TypeError as canonicalJson does.
 */
export function freezeCanonical<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  // Already passed through here: deep-frozen, its text kept.
  if (FROZEN_TEXT.has(value)) return value;
  for (const item of Object.values(value)) freezeCanonical(item);
  Object.freeze(value);
  FROZEN_TEXT.set(value, canonicalJson(value));
  return value;
}

/** True for a value passed through freezeCanonical: deep-frozen, so equal to itself for as long as it lives. */
export function isFrozenCanonical(value: unknown): boolean {
  return typeof value === 'object' && value !== null && FROZEN_TEXT.has(value);
}

// Envelopes repeat the same few hundred keys: quoting each once makes canonicalJson about 1.7x faster.
const QUOTED_KEYS = new Map<string, string>();
const QUOTED_KEYS_MAX = 4096;

function quotedKey(key: string): string {
  let quoted = QUOTED_KEYS.get(key);
  if (quoted === undefined) {
    quoted = `${JSON.stringify(key)}:`;
    if (QUOTED_KEYS.size < QUOTED_KEYS_MAX) QUOTED_KEYS.set(key, quoted);
  }
  return quoted;
}

/** True for a plain JSON object: not null, not an array. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A deep copy of a parsed JSON value, made without recursion: structuredClone overflows the stack a few thousand
 * levels down, and a request can nest that deep in a few kilobytes. A key `__proto__` stays an ordinary key.
 */
export function copyJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  const container = (of: object): Record<string, unknown> => (Array.isArray(of) ? [] : {}) as Record<string, unknown>;
  const root = container(value);
  const stack: [Record<string, unknown>, Record<string, unknown>][] = [[value as Record<string, unknown>, root]];
  while (stack.length > 0) {
    const [from, to] = stack.pop()!;
    for (const key of Object.keys(from)) {
      const child = from[key];
      const copy = typeof child === 'object' && child !== null ? container(child) : child;
      if (key !== '__proto__') to[key] = copy;
      else Object.defineProperty(to, key, { value: copy, writable: true, enumerable: true, configurable: true });
      if (copy !== child) stack.push([child as Record<string, unknown>, copy as Record<string, unknown>]);
    }
  }
  return root as T;
}

/** How deep a tool request may nest: the contract's own fields take a few levels (source_provenance, tags). */
export const MAX_REQUEST_DEPTH = 32;

/**
 * Whether a parsed JSON value nests deeper than `maxDepth` levels, walked without recursion (a request can nest
 * thousands of levels in a few kilobytes).
 */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (typeof item !== 'object' || item === null) continue;
    if (depth >= maxDepth) return true;
    for (const child of Object.values(item)) stack.push([child, depth + 1]);
  }
  return false;
}
