/** Nearest-rank percentile of an ascending array (p in 0-100). */
export function percentile(sortedAscending: readonly number[], p: number): number {
  if (sortedAscending.length === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * sortedAscending.length));
  return sortedAscending[rank - 1]!;
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/**
 * Summarises latency samples given in milliseconds as count, mean, p50, p99 and max in the asked unit;
 * keys carry the unit (`p50_us`, `p99_ms`) so the JSON reads without a legend.
 */
export function summarizeLatencies(samplesMs: readonly number[], unit: 'us' | 'ms'): Record<string, number> {
  const scale = unit === 'us' ? 1000 : 1;
  const digits = unit === 'us' ? 1 : 3;
  const sorted = samplesMs.map((sample) => sample * scale).sort((a, b) => a - b);
  const mean = sorted.reduce((sum, value) => sum + value, 0) / Math.max(1, sorted.length);
  return {
    count: sorted.length,
    [`mean_${unit}`]: round(mean, digits),
    [`p50_${unit}`]: round(percentile(sorted, 50), digits),
    [`p99_${unit}`]: round(percentile(sorted, 99), digits),
    [`max_${unit}`]: round(sorted[sorted.length - 1] ?? Number.NaN, digits),
  };
}

/** Mean of samples, NaN when empty. */
export function mean(samples: readonly number[]): number {
  return samples.length === 0 ? Number.NaN : samples.reduce((sum, value) => sum + value, 0) / samples.length;
}

/** Rounds a ratio or rate for the report. */
export function roundTo(value: number, digits: number): number {
  return round(value, digits);
}
