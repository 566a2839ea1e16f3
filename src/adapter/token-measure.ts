import { BoundedMap } from '../core/bounded-map.js';
import { canonicalJson } from '../core/canonical-json.js';

// Token counts with the bundled offline o200k_base encoding (CONTRACT.md §12.5). The encoder's tables
// take ~140 ms to load: the server loads them before it answers initialize (warmUpTokenizer), so no request
// waits for them; other callers load them on first use.
type Count = (text: string) => number;
type LibraryCount = (text: string, options: { allowedSpecial: Set<string>; disallowedSpecial: Set<string> }) => number;
// Special-token strings count as ordinary text: nothing is allowed or disallowed as special.
const AS_TEXT = { allowedSpecial: new Set<string>(), disallowedSpecial: new Set<string>() };
let counter: Promise<Count> | undefined;
let loaded = false;

function load(): Promise<Count> {
  counter ??= Promise.all([
    import('gpt-tokenizer/encoding/o200k_base'), import('gpt-tokenizer/encodingParams/constants'),
  ]).then(([module, params]) => {
    // The encoder keeps a cache of its own, keyed by chunk (100,000 entries by default): bounded like ours.
    module.setMergeCacheSize(ENCODER_MERGE_CACHE_MAX);
    loaded = true;
    return chunkCounter(module.countTokens as unknown as LibraryCount, params.O200K_TOKEN_SPLIT_REGEX);
  });
  return counter;
}

// Chunks (docs/decisions/0037-token-counts-by-chunk.md). The encoder splits a text into chunks with its expression
// and counts each chunk alone: one lookup in its 200k-entry table, or byte-pair merges when the chunk is not one
// token. Between two requests that table falls out of the CPU caches, so a record's new text (ids, hashes,
// timestamps, the fact) cost about 1 µs a token inside the server. Split with the same expression, the chunks repeat
// (hex runs, digit groups, words), and a small table of their counts answers most of them.
const CHUNK_COUNTS = new BoundedMap<string, number>(16_384);
const CHUNK_REMEMBERED_MAX_LENGTH = 32;
/** Entries of the encoder's own merge cache (gpt-tokenizer's default is 100,000), each a chunk of its own. */
export const ENCODER_MERGE_CACHE_MAX = 16_384;

function chunkCounter(countText: LibraryCount, split: RegExp): Count {
  const chunks = new RegExp(split.source, split.flags);
  return (text) => {
    let total = 0;
    chunks.lastIndex = 0;
    for (let match = chunks.exec(text); match !== null; match = chunks.exec(text)) {
      const chunk = match[0];
      let tokens = CHUNK_COUNTS.get(chunk);
      if (tokens === undefined) {
        // A copy of its own: the match is a slice of the whole text, and the encoder's merge cache keeps what it is
        // given as a key, so a slice kept every record text it came from alive (1.5 KB an entry with CJK records).
        const own = flatCopy(chunk);
        tokens = countText(own, AS_TEXT);
        if (chunk.length <= CHUNK_REMEMBERED_MAX_LENGTH) CHUNK_COUNTS.set(own, tokens);
      }
      total += tokens;
    }
    return total;
  };
}

/** True once the encoder's tables are loaded in this process. */
export function tokenizerLoaded(): boolean {
  return loaded;
}

/**
 * Loads the encoder, then counts one short text: the first count compiles the encoder's split expression (about
 * 15 ms), and V8 compiles it again for the first text outside Latin-1 (about 2 ms), hence the `中`. Resolves when
 * both are done, never rejects: a tokenizer that fails to load fails the first count instead.
 */
export async function warmUpTokenizer(): Promise<void> {
  await load().then((count) => count('{"warm_up":"Ünïcode text, 123 中"}')).catch(() => {});
}

// Segments (docs/decisions/0011-token-counts-by-segment.md). o200k_base splits text into chunks with one
// expression and merges bytes inside each chunk only. Two of the punctuation marks " , : { } [ ] in a row
// can only be inside a punctuation-run chunk, and that run stops at the ASCII letter or digit after them:
// a chunk always ends there, whatever comes before or after. A text's count is therefore the sum of the
// counts of the segments cut at those places, and canonical JSON repeats most of its segments
// (`memory_type":"PROJECT_LEARNED_FACT","`), so they are counted once and remembered.
// A search returns records counted before, by the store that wrote them or by an earlier search, and each record
// brings a handful of segments of its own (its ids, timestamps, source_ref): SEGMENT_COUNTS holds those of about
// 10,000 records, at most about 6 MB, evicted first in, first out (BoundedMap, in constant time).
const SEGMENT_COUNTS = new BoundedMap<string, number>(65_536);
const SEGMENT_REMEMBERED_MAX_LENGTH = 256;
// Longer segments are mostly a record's fact (`fact text","freshness_policy":{"`): counted when it is stored and again
// in every search that returns it. The latest 2,048 of them are remembered too, at most about 8 MB.
const LONG_COUNTS = new BoundedMap<string, number>(2048);
const LONG_REMEMBERED_MAX_LENGTH = 2048;

function isPunctuation(code: number): boolean {
  // " , : [ ] { }
  return code === 0x22 || code === 0x2c || code === 0x3a || code === 0x5b || code === 0x5d || code === 0x7b
    || code === 0x7d;
}

function isAsciiAlphanumeric(code: number): boolean {
  return (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);
}

// A flat copy of its own (a JSON round trip): a slice would keep its whole source text alive.
function flatCopy(text: string): string {
  return JSON.parse(JSON.stringify(text)) as string;
}

function segmentTokens(count: Count, segment: string): number {
  if (segment.length > LONG_REMEMBERED_MAX_LENGTH) return count(segment);
  const long = segment.length > SEGMENT_REMEMBERED_MAX_LENGTH;
  const counts = long ? LONG_COUNTS : SEGMENT_COUNTS;
  let tokens = counts.get(segment);
  if (tokens === undefined) {
    tokens = count(segment);
    counts.set(flatCopy(segment), tokens);
  }
  return tokens;
}

/** The o200k_base token count of `text`. */
export async function countTokens(text: string): Promise<number> {
  return countSegments(await load(), text);
}

function countSegments(count: Count, text: string): number {
  let total = 0;
  let start = 0;
  for (let p = 2; p < text.length; p += 1) {
    if (isAsciiAlphanumeric(text.charCodeAt(p)) && isPunctuation(text.charCodeAt(p - 1))
      && isPunctuation(text.charCodeAt(p - 2))) {
      total += segmentTokens(count, text.slice(start, p));
      start = p;
    }
  }
  return start === text.length ? total : total + segmentTokens(count, text.slice(start));
}

// Lists of canonical JSON objects (docs/decisions/0009-token-counts-by-object.md). o200k_base splits text
// into chunks before merging bytes and encodes each chunk alone. An object text `{"` + core + `"}` whose
// core starts and ends with a letter splits into: the punctuation run `{"`, the chunks of the core, the
// run `"}`. In a list the runs merge into `[{"`, `"},{"` and `"}]`, while the core's chunks stay the same.
// So a list costs the cores' counts plus fixed joints, and a core counted once serves every prefix of a
// list being fitted and the record-size check of the same record. Other texts are counted whole.
const LETTER = /\p{L}/u;
const CORE_COUNTS = new BoundedMap<string, number>(64);
const JOINTS = ['{"', '"}', '[{"', '"},{"', '"}]', '[]'] as const;
let joints: Promise<Record<(typeof JOINTS)[number], number>> | undefined;

function jointCounts(): Promise<Record<(typeof JOINTS)[number], number>> {
  joints ??= load()
    .then((count) =>
      Object.fromEntries(JOINTS.map((joint) => [joint, count(joint)])) as Record<(typeof JOINTS)[number],
        number>);
  return joints;
}

/** The core of an object text `{"` + core + `"}` when the core starts and ends with a letter, else null. */
function coreOf(text: string): string | null {
  if (text.length < 6 || !text.startsWith('{"') || !text.endsWith('"}')) return null;
  // One code unit each side is enough for the test: a letter outside the BMP ends in a low surrogate,
  // which is not \p{L}, so such a text is simply counted whole.
  return LETTER.test(text[2]!) && LETTER.test(text[text.length - 3]!) ? text.slice(2, -2) : null;
}

async function coreTokens(core: string): Promise<number> {
  const known = CORE_COUNTS.get(core);
  if (known !== undefined) return known;
  const count = await countTokens(core);
  CORE_COUNTS.set(core, count);
  return count;
}

/** The o200k_base token count of one canonical JSON object text (the same as countTokens, usually cheaper). */
export async function countObjectTokens(text: string): Promise<number> {
  const core = coreOf(text);
  if (core === null) return countTokens(text);
  const j = await jointCounts();
  return j['{"'] + (await coreTokens(core)) + j['"}'];
}

/**
 * The o200k_base token count of `[` + objects joined by `,` + `]`, given canonical JSON object texts. `knownCores[i]`,
 * when given, is the count of object i's core (recordCoreTokens), used instead of counting it.
 */
export async function countListTokens(
  objects: readonly string[], knownCores: readonly (number | undefined)[] = [],
): Promise<number> {
  const j = await jointCounts();
  if (objects.length === 0) return j['[]'];
  const cores = objects.map(coreOf);
  if (cores.some((core) => core === null)) return countTokens(`[${objects.join(',')}]`);
  let total = j['[{"'] + j['"}]'] + (objects.length - 1) * j['"},{"'];
  for (const [i, core] of cores.entries()) total += knownCores[i] ?? await coreTokens(core!);
  return total;
}

// Stored counts (docs/decisions/0036-record-token-counts.md). A public record's canonical JSON starts a segment at
// each key, so its core's count is the sum of its key pieces' counts (`key":value,"`). Of these four pieces,
// lifecycle_state changes in place after the write (supersede, compaction) and the score and rank from one search to
// the next; contradiction_state is a state no update writes in place today, kept here so that one may; none is the
// first or the last key, so each is followed by `,"`. The other pieces' count is stored with the record.
const CHANGING_KEYS = ['contradiction_state', 'lifecycle_state', 'relevance_score', 'retrieval_rank'] as const;

/**
 * A record's core and the count of its changing pieces as its canonical text holds them, or null when the text does
 * not count by pieces: not an object whose core counts by segments, or a changing piece not in it as a whole piece.
 */
async function changingTokens(
  record: Readonly<Record<string, unknown>>, text: string,
): Promise<{ core: string; changing: number } | null> {
  const split = changingPieces(record, text);
  if (split === null) return null;
  const count = await load();
  return { core: split.core, changing: split.pieces.reduce((total, piece) => total + countSegments(count, piece), 0) };
}

/** A record's core and its changing pieces (`key":value,"`) as its canonical text holds them; null as above. */
function changingPieces(
  record: Readonly<Record<string, unknown>>, text: string,
): { core: string; pieces: string[] } | null {
  const core = coreOf(text);
  if (core === null) return null;
  const pieces: string[] = [];
  for (const key of CHANGING_KEYS) {
    if (record[key] === undefined) return null;
    const piece = `${key}":${canonicalJson(record[key])},"`;
    if (!text.includes(`,"${piece}`)) return null;
    pieces.push(piece);
  }
  return { core, pieces };
}

/**
 * The o200k_base count of a public record's core without its changing pieces: what `record_token_counts` stores.
 * `text` is the record's canonical JSON. Null when the text is not an object whose core counts by pieces.
 */
export async function fixedRecordTokens(
  record: Readonly<Record<string, unknown>>, text: string,
): Promise<number | null> {
  const split = await changingTokens(record, text);
  return split === null ? null : (await coreTokens(split.core)) - split.changing;
}

/**
 * The count of a public record's core from its stored fixed count (fixedRecordTokens) and its changing pieces as they
 * are now; undefined when the text does not count by pieces (then the core is counted whole).
 */
export async function recordCoreTokens(
  record: Readonly<Record<string, unknown>>, text: string, fixedTokens: number,
): Promise<number | undefined> {
  const split = await changingTokens(record, text);
  return split === null ? undefined : fixedTokens + split.changing;
}

/**
 * Loads the encoder and resolves with a synchronous fixedRecordTokens for a caller that counts many records inside
 * one read (audit's recount, decision 0036). It encodes the core and each changing piece whole, not as the sum of
 * remembered segments (decision 0011), so a stored count is checked against the encoder itself.
 */
export async function fixedTokensRecounter(): Promise<
  (record: Readonly<Record<string, unknown>>, text: string) => number | null
> {
  const count = await load();
  return (record, text) => {
    const split = changingPieces(record, text);
    return split === null ? null : split.pieces.reduce((total, piece) => total - count(piece), count(split.core));
  };
}
