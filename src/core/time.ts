/**
 * Formats a time as the contract's UTC timestamp (CONTRACT.md §2.3): `2026-01-01T00:00:00Z`, with
 * exactly six fraction digits only when the fraction is non-zero.
 */
export function formatTimestamp(date: Date): string {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  const millis = iso.slice(20, 23);
  return millis === '000' ? `${iso.slice(0, 19)}Z` : `${iso.slice(0, 19)}.${millis}000Z`;
}

/** `20261202T044845Z`: the UTC second, sortable, with no character a shell or a file manager trips on. */
export function compactUtcStamp(date: Date): string {
  return date.toISOString().replace(/[-:]|\.\d+/g, '');
}

/** A source of the current time; injected so tests can pin it. */
export type Clock = () => Date;

/** The system clock. */
export const SYSTEM_CLOCK: Clock = () => new Date();
