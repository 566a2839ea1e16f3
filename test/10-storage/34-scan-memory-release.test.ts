import t from 'tap';
import {
  CODE_BYTES, FREE_SLACK_BYTES, hammingDistances, heldSpan, releaseRun, RESIDENT_CODE_BYTES,
} from '../../src/storage/hamming-scan.js';
import { arePositionDistances, positionCodes } from '../helpers/position-codes.js';

// The places of the first pass's memory that released runs leave (decision 0056), in a process of its own: the
// memory starts empty. A commit replaces one shard's codes with a new array, and KeptCodes releases the old one.

const query = new Uint8Array(CODE_BYTES);

/** Whether every distance of `runs` from a query of zeros is that of their codes. */
function right(runs: readonly Uint8Array[]): boolean {
  return arePositionDistances(hammingDistances(runs, query), runs);
}

t.test('shards replaced one by one, the old arrays released: the memory spans at most twice the scope and the slack',
  (t) => {
  const shards = Array.from({ length: 10 }, (_, shard) => positionCodes(1000, shard));
  const scopeBytes = 10 * 1000 * CODE_BYTES;
  let widest = 0;
  let wrong = 0;
  for (let commit = 0; commit < 300; commit += 1) {
    const shard = commit % 10;
    const old = shards[shard]!;
    shards[shard] = positionCodes(1000 + (commit % 3), (commit * 7) & 0xff);
    releaseRun(old);
    if (!right(shards)) wrong += 1;
    widest = Math.max(widest, heldSpan());
  }
  t.equal(wrong, 0, '300 searches, each after a shard was replaced');
  t.ok(widest <= 2 * (scopeBytes + 3000 * CODE_BYTES) + FREE_SLACK_BYTES,
    `the widest span, ${widest} bytes, within twice the scope and the slack`);
  t.ok(widest >= scopeBytes, 'and at least the scope');
  t.end();
});

t.test('a run released is copied again when it is passed again', (t) => {
  const codes = positionCodes(50, 0x0f);
  t.ok(right([codes]), 'copied in');
  codes.fill(0);
  t.ok(right([codes]), 'served from the memory, not from the zeroed array');
  releaseRun(codes);
  t.strictSame([...new Set(hammingDistances([codes], query))], [0], 'released: copied again, from the array as it is');
  t.end();
});

t.test('shards replaced and never released: their places come back only at the bound', (t) => {
  const shards = Array.from({ length: 10 }, (_, shard) => positionCodes(1000, shard));
  let widest = 0;
  for (let commit = 0; commit < 400; commit += 1) {
    shards[commit % 10] = positionCodes(1000, commit & 0xff);
    hammingDistances(shards, query);
    widest = Math.max(widest, heldSpan());
  }
  t.ok(widest > RESIDENT_CODE_BYTES / 2 && widest <= RESIDENT_CODE_BYTES,
    `the widest span, ${widest} bytes, near the bound and not past it`);
  t.end();
});

t.test('a call whose own runs exceed the bound: every distance right, then and in the calls after it', (t) => {
  const count = 60_000;
  const [a, b, c] = [positionCodes(count, 0x11), positionCodes(count, 0x22), positionCodes(count, 0x33)];
  t.ok(right([a]) && right([b]) && right([c]), 'three runs of 5.76 MB held');
  const over = [a, b, c, positionCodes(count, 0x44), positionCodes(count, 0x55), positionCodes(count, 0x66)];
  t.ok(over.reduce((sum, codes) => sum + codes.length, 0) > RESIDENT_CODE_BYTES, 'six runs: more than the bound');
  t.ok(right(over), 'all six in one call, the three held kept in place of any other');
  t.ok(heldSpan() > RESIDENT_CODE_BYTES, 'the memory holds them all');
  const small = positionCodes(10, 0x77);
  t.ok(right([small]), 'a small run after it');
  t.ok(heldSpan() <= RESIDENT_CODE_BYTES, 'back within the bound');
  t.ok(right([a, small]) && right(over), 'and the large runs again');
  t.end();
});
