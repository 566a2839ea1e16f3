// Token counts with the bundled offline o200k_base encoding (CONTRACT.md §12.5). The encoder's tables
// take ~140 ms to load, so they load on first use (or when warmUp() is called after startup), never on
// the path to the initialize response.
type Encode = (text: string, options: { allowedSpecial: Set<string>; disallowedSpecial: Set<string> }) => number[];
let encoder: Promise<Encode> | undefined;

function load(): Promise<Encode> {
  encoder ??= import('gpt-tokenizer/encoding/o200k_base').then((module) => module.encode as unknown as Encode);
  return encoder;
}

/** Starts loading the encoder without waiting for it. */
export function warmUpTokenizer(): void {
  void load().catch(() => {});
}

// Special-token strings count as ordinary text: nothing is allowed or disallowed as special.
const AS_TEXT = { allowedSpecial: new Set<string>(), disallowedSpecial: new Set<string>() };

/** The o200k_base token count of `text`. */
export async function countTokens(text: string): Promise<number> {
  return (await load())(text, AS_TEXT).length;
}

// Lists of canonical JSON objects (docs/decisions/0009-token-counts-by-object.md). o200k_base splits text
// into chunks before merging bytes and encodes each chunk alone. An object text `{"` + core + `"}` whose
// core starts and ends with a letter splits into: the punctuation run `{"`, the chunks of the core, the
// run `"}`. In a list the runs merge into `[{"`, `"},{"` and `"}]`, while the core's chunks stay the same.
// So a list costs the cores' counts plus fixed joints, and a core counted once serves every prefix of a
// list being fitted and the record-size check of the same record. Other texts are counted whole.
const LETTER = /\p{L}/u;
const CORE_COUNTS = new Map<string, number>();
const CORE_COUNTS_MAX = 64;
const JOINTS = ['{"', '"}', '[{"', '"},{"', '"}]', '[]'] as const;
let joints: Promise<Record<(typeof JOINTS)[number], number>> | undefined;

function jointCounts(): Promise<Record<(typeof JOINTS)[number], number>> {
  joints ??= load().then((encode) => Object.fromEntries(JOINTS.map((joint) => [joint, encode(joint, AS_TEXT).length])) as Record<(typeof JOINTS)[number], number>);
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
  if (CORE_COUNTS.size >= CORE_COUNTS_MAX) CORE_COUNTS.delete(CORE_COUNTS.keys().next().value!);
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

/** The o200k_base token count of `[` + objects joined by `,` + `]`, given canonical JSON object texts. */
export async function countListTokens(objects: readonly string[]): Promise<number> {
  const j = await jointCounts();
  if (objects.length === 0) return j['[]'];
  const cores = objects.map(coreOf);
  if (cores.some((core) => core === null)) return countTokens(`[${objects.join(',')}]`);
  let total = j['[{"'] + j['"}]'] + (objects.length - 1) * j['"},{"'];
  for (const core of cores) total += await coreTokens(core!);
  return total;
}
