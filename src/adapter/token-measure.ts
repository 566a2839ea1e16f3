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
