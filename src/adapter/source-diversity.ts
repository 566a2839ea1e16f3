/** A scored candidate with its provenance source. */
export interface DiversityCandidate {
  readonly source: { readonly source_class: string; readonly source_ref: string; readonly source_hash: string };
}

/**
 * Source-diverse selection (CONTRACT.md §12.4): from candidates in score order, take the first of each
 * distinct source (source_class, source_ref, source_hash) until `max` are chosen, fill remaining slots
 * with the skipped ones in score order, and return the chosen set in the original order. The top
 * candidate is always kept; scores are never changed.
 */
export function selectDiverse<T extends DiversityCandidate>(ranked: readonly T[], max: number): T[] {
  if (ranked.length <= max) return [...ranked];
  const seen = new Set<string>();
  const chosen = new Set<number>();
  // A source is read only until `max` are chosen: candidates past that point change nothing.
  for (let index = 0; index < ranked.length && chosen.size < max; index += 1) {
    const { source } = ranked[index]!;
    const key = JSON.stringify([source.source_class, source.source_ref, source.source_hash]);
    if (!seen.has(key)) {
      seen.add(key);
      chosen.add(index);
    }
  }
  for (let index = 0; index < ranked.length && chosen.size < max; index += 1) chosen.add(index);
  return ranked.filter((_, index) => chosen.has(index));
}
