import t from 'tap';
import type { ChangeState } from '../../src/storage/read-snapshot.js';
import { CODE_BYTES } from '../../src/storage/hamming-scan.js';
import { KeptCodes, type ScopeCodes } from '../../src/storage/scope-codes.js';

// What a connection keeps of its scopes' codes between searches (decision 0053): served while the database's state is
// the one they were read in, dropped all at once when it moves, and at most a bound of bytes, the scope asked for
// longest ago dropped first. The bound here is a few codes; the server's is KEPT_CODE_BYTES.

/** A scope of `count` codes: CODE_BYTES + 8 bytes each (the code and its row id). */
function scopeOf(count: number): ScopeCodes {
  const runs = new Map([[0, [0, count] as const]]);
  return { codes: new Uint8Array(count * CODE_BYTES), rowIds: new BigInt64Array(count), runs };
}

const S1: ChangeState = { changes: 1, version: 1 };

/** A KeptCodes bound to `codes` codes' bytes; `ask` asks it for a scope of `size` codes and records each read. */
function keeper(codes: number) {
  const kept = new KeptCodes(codes * (CODE_BYTES + 8));
  const reads: string[] = [];
  const ask = (connection: object, scope: string, size: number, state = S1, during?: () => Promise<unknown>) =>
    kept.codes(connection, state, scope, async () => {
      reads.push(scope);
      await during?.();
      return scopeOf(size);
    });
  /** Which of `scopes` (name, size) are read when asked for in turn, in `state`. */
  const readsOf = async (connection: object, scopes: readonly [string, number][], state = S1) => {
    reads.length = 0;
    for (const [scope, size] of scopes) await ask(connection, scope, size, state);
    return [...reads];
  };
  return { kept, reads, ask, readsOf };
}

t.test('a scope asked for again in the same state is served as it was read, and read once', async (t) => {
  const { ask, reads } = keeper(100);
  const connection = {};
  const first = await ask(connection, 'a', 10);
  t.equal(await ask(connection, 'a', 10), first, 'the same codes');
  t.equal(await ask(connection, 'a', 10, { changes: 1, version: 1 }), first, 'in an equal state');
  t.strictSame(reads, ['a']);
  t.not(await ask({}, 'a', 10), first, 'another connection keeps its own');
  t.strictSame(reads, ['a', 'a']);
});

t.test('when either number of the state moves, every scope kept is read again', async (t) => {
  const { readsOf } = keeper(100);
  const connection = {};
  t.strictSame(await readsOf(connection, [['a', 10], ['b', 10]]), ['a', 'b']);
  t.strictSame(await readsOf(connection, [['a', 10], ['b', 10]]), [], 'kept');
  const changed = { changes: 2, version: 1 };
  t.strictSame(await readsOf(connection, [['a', 10]], changed), ['a'], 'a commit of this connection');
  t.strictSame(await readsOf(connection, [['b', 10]], changed), ['b'], 'every scope, not only the one asked for');
  t.strictSame(await readsOf(connection, [['a', 10], ['b', 10]], { changes: 2, version: 2 }), ['a', 'b'],
    'a commit of another connection');
});

t.test('at most the bound is kept, the scope asked for longest ago dropped first', async (t) => {
  const { readsOf } = keeper(100);
  const connection = {};
  t.strictSame(await readsOf(connection, [['a', 40], ['b', 40], ['a', 40], ['c', 40]]), ['a', 'b', 'c'],
    'c takes the place of b, asked for longer ago than a');
  t.strictSame(await readsOf(connection, [['a', 40], ['c', 40]]), [], 'a and c are kept');
  t.strictSame(await readsOf(connection, [['b', 40]]), ['b'], 'b was dropped, and now drops a');
  t.strictSame(await readsOf(connection, [['c', 40], ['b', 40], ['a', 40]]), ['a']);
  t.strictSame(await readsOf(connection, [['small', 20]]), ['small']);
  t.strictSame(await readsOf(connection, [['b', 40], ['a', 40], ['small', 20]]), [],
    'two of 40 and one of 20 fill the bound exactly');
});

t.test('a scope above the bound is read at each search and drops nothing kept', async (t) => {
  const { readsOf } = keeper(100);
  const connection = {};
  await readsOf(connection, [['a', 50], ['b', 50]]);
  t.strictSame(await readsOf(connection, [['huge', 101], ['huge', 101]]), ['huge', 'huge']);
  t.strictSame(await readsOf(connection, [['a', 50], ['b', 50]]), [], 'a and b are still kept');
});

t.test('a read that fails keeps nothing and leaves the count of bytes kept as it was', async (t) => {
  const { kept, readsOf } = keeper(100);
  const connection = {};
  await readsOf(connection, [['a', 60]]);
  await t.rejects(kept.codes(connection, S1, 'broken', async () => {
    throw new Error('a damaged chunk');
  }), /a damaged chunk/);
  t.strictSame(await readsOf(connection, [['b', 40], ['a', 60], ['b', 40]]), ['b'], 'a and b fill the bound together');
});

t.test('codes read while the state moved under them are served once and not kept', async (t) => {
  const { ask, reads, readsOf } = keeper(100);
  const connection = {};
  const S2 = { changes: 2, version: 1 };
  await ask(connection, 'a', 10, S1, () => ask(connection, 'b', 10, S2));
  t.strictSame(reads, ['a', 'b']);
  t.strictSame(await readsOf(connection, [['b', 10], ['a', 10]], S2), ['a'],
    'a, read in the older state, is read again');
});
