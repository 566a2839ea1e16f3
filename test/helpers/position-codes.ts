// Codes that carry their own position, for the first pass's memory (decisions 0055 and 0056): code j of a run holds j
// in its first two bytes and the run's own byte in the other 94, so its Hamming distance from a query of zeros is the
// bit count of j plus 94 times that of the byte. A run read from the wrong place in the memory, or shifted, gives
// other distances.
import { CODE_BYTES } from '../../src/storage/hamming-scan.js';

/** The byte each run was made with. A Map: a run stays alive while a test may pass it again. */
const byteOf = new Map<Uint8Array, number>();

/** The number of bits set in `value`. */
export function bitCount(value: number): number {
  let bits = 0;
  for (let rest = value; rest !== 0; rest &= rest - 1) bits += 1;
  return bits;
}

/** `count` codes (at most 65,536) whose first two bytes are their position and the others `byte`. */
export function positionCodes(count: number, byte: number): Uint8Array {
  const codes = new Uint8Array(count * CODE_BYTES).fill(byte);
  for (let j = 0; j < count; j += 1) [codes[j * CODE_BYTES], codes[j * CODE_BYTES + 1]] = [j & 0xff, j >> 8];
  byteOf.set(codes, byte);
  return codes;
}

/** Whether `distances` from a query of zeros are those of `runs` (each made by positionCodes), run after run. */
export function arePositionDistances(distances: Uint16Array, runs: readonly Uint8Array[]): boolean {
  let at = 0;
  for (const codes of runs) {
    const byteBits = (CODE_BYTES - 2) * bitCount(byteOf.get(codes)!);
    for (let j = 0; j < codes.length / CODE_BYTES; j += 1, at += 1)
      if (distances[at] !== bitCount(j) + byteBits) return false;
  }
  return at === distances.length;
}
