// Contract timestamps (CONTRACT.md §2.3): accepted input forms, normalised UTC output.
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2})$/;
const MAX_TIMESTAMP_CHARS = 64;

/** A parsed timestamp: microseconds since the epoch and the contract's UTC text. */
export interface ContractTime {
  readonly epochMicros: bigint;
  readonly text: string;
}

/** Formats epoch microseconds as `YYYY-MM-DDTHH:MM:SSZ`, with six fraction digits only when non-zero. */
function formatMicros(epochMicros: bigint): string {
  // Floor (not truncating) division, so instants before 1970 land in the right second.
  const micros = Number(((epochMicros % 1_000_000n) + 1_000_000n) % 1_000_000n);
  const millis = (epochMicros - BigInt(micros)) / 1000n;
  const base = new Date(Number(millis)).toISOString().slice(0, 19);
  return micros === 0 ? `${base}Z` : `${base}.${String(micros).padStart(6, '0')}Z`;
}

/** The current time as ContractTime. */
export function contractNow(date: Date): ContractTime {
  const epochMicros = BigInt(date.getTime()) * 1000n;
  return { epochMicros, text: formatMicros(epochMicros) };
}

/**
 * Parses a contract timestamp, or returns null for any other shape, an invalid date or time, a leap
 * second, a missing offset or more than 64 characters. Fractions beyond 6 digits are truncated.
 */
export function parseTimestamp(value: string): ContractTime | null {
  if (value.length > MAX_TIMESTAMP_CHARS) return null;
  const m = TIMESTAMP.exec(value);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? '00'].map(Number) as [number,
    number, number, number, number, number];
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return null;
  const monthEnd = new Date(0);
  monthEnd.setUTCFullYear(year, month, 0);
  const daysInMonth = monthEnd.getUTCDate();
  if (day < 1 || day > daysInMonth) return null;
  let offsetMinutes = 0;
  if (m[8] !== 'Z') {
    const sign = m[8]!.startsWith('-') ? -1 : 1;
    const [oh, om] = m[8]!.slice(1).split(':').map(Number) as [number, number];
    if (oh > 23 || om > 59) return null;
    offsetMinutes = sign * (oh * 60 + om);
  }
  // setUTCFullYear keeps years 0-99 as they are (Date.UTC would read them as 1900-1999).
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, 0);
  date.setTime(date.getTime() - offsetMinutes * 60_000);
  // An offset can move the instant outside years 0000-9999, which the output format cannot show.
  if (date.getUTCFullYear() < 0 || date.getUTCFullYear() > 9999) return null;
  const micros = BigInt((m[7] ?? '').padEnd(6, '0').slice(0, 6) || '0');
  const epochMicros = BigInt(date.getTime()) * 1000n + micros;
  return { epochMicros, text: formatMicros(epochMicros) };
}
