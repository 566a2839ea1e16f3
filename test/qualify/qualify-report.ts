// The shape every part of `npm run qualify` returns (issue 13): its figures, and the counts that must be zero.

/** quick: the CI profile (all parts under 4 minutes); full: the published figures (at most 30 minutes). */
export type QualifyProfile = 'quick' | 'full';

/** What one part reports: its figures (JSON), and which of its keys count losses, crashes or failures. */
export interface PartReport {
  /** The part's keys (at least those the issue names for it), JSON-able, no fact text and no paths. */
  readonly figures: Readonly<Record<string, unknown>>;
  /** The names of the keys in `figures` that must be 0 for the run to pass (lost_writes, failures, ...). */
  readonly mustBeZero: readonly string[];
  /** Lines for report.md: what was run and what each figure means, in a sentence or two each. */
  readonly notes: readonly string[];
}

/** A part of the qualification: bounded in count and time, stops by itself, cleans up its temporary files. */
export type QualifyPart = (profile: QualifyProfile, workDir: string) => Promise<PartReport>;

/** The non-zero must-be-zero figures of a part, as `key=value`. */
export function failuresOf(report: PartReport): string[] {
  return report.mustBeZero.filter((key) => report.figures[key] !== 0).map(
    (key) => `${key}=${String(report.figures[key])}`,
  );
}
