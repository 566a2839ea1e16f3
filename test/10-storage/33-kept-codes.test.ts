import t, { type Test } from 'tap';
import { CODE_BYTES } from '../../src/storage/hamming-scan.js';
import {
  KeptCodes, type ScopeCodes, type ShardCodes, type ShardGeneration,
} from '../../src/storage/scope-codes.js';

// What a connection keeps of its scopes' codes between searches (decisions 0053 and 0054): a shard's codes are served
// while its generation is the one they were read in, only the shards whose generation moved are read again, and at
// most a bound of bytes is kept, the scope asked for longest ago dropped first. The bound here is a few codes; the
// server's is KEPT_CODE_BYTES. A scope here is a map of shards to their generation and number of codes, and a read
// lays out the codes of the shards asked for as vec0's chunks give them, each code and row id telling its shard,
// generation and place.

type Shards = Map<number, { generation: number; count: number }>;

/** The code bytes and row id of code `i` of `shard` in `generation`. */
const codeByte = (shard: number, generation: number, i: number) => (shard * 31 + generation * 7 + i) & 0xff;
const rowIdOf = (shard: number, generation: number, i: number) => BigInt(shard * 1_000_000 + generation * 1000 + i);

/**
 * What a read of `asked` gives in a scope of `shards`: each shard's codes, in the text order of their partition keys
 * (shard 10 before shard 2), as vec0's chunks come.
 */
function readOf(shards: Shards, asked: readonly number[]): ScopeCodes {
  const read = new Map<number, ShardCodes>();
  for (const shard of [...asked].sort((x, y) => String(x).localeCompare(String(y)))) {
    const { generation, count } = shards.get(shard)!;
    const codes = new Uint8Array(count * CODE_BYTES);
    const rowIds = new BigInt64Array(count);
    for (let i = 0; i < count; i += 1) {
      codes.fill(codeByte(shard, generation, i), i * CODE_BYTES, (i + 1) * CODE_BYTES);
      rowIds[i] = rowIdOf(shard, generation, i);
    }
    read.set(shard, { codes, rowIds });
  }
  return read;
}

/** A KeptCodes bound to `codes` codes' bytes; `ask` asks it for a scope, records the shards each read asks for. */
function keeper(codes: number) {
  const released: Uint8Array[] = [];
  const kept = new KeptCodes(codes * (CODE_BYTES + 8), (array) => released.push(array));
  const reads: string[] = [];
  const ask = (connection: object, scope: string, shards: Shards) => {
    const list: ShardGeneration[] = [...shards].sort(([a], [b]) => a - b)
      .map(([shard, { generation }]) => ({ shard, generation }));
    return kept.codes(connection, scope, list, async (asked) => {
      reads.push(`${scope}:${asked.join(',')}`);
      return readOf(shards, asked);
    });
  };
  /** The reads asking for `scopes` (name, shards) in turn makes. */
  const readsOf = async (connection: object, scopes: readonly [string, Shards][]) => {
    reads.length = 0;
    for (const [scope, shards] of scopes) await ask(connection, scope, shards);
    return [...reads];
  };
  return { kept, reads, released, ask, readsOf };
}

/** A scope of one shard of `count` codes, in generation 1. */
const oneShard = (count: number): Shards => new Map([[0, { generation: 1, count }]]);

/** Checks that `served` holds exactly the codes of `shards` in their generations, in shard order. */
function holds(t: Test, served: ScopeCodes, shards: Shards, label: string): void {
  const problems: string[] = [];
  for (const [shard, { generation, count }] of shards) {
    const { codes, rowIds } = served.get(shard) ?? { codes: new Uint8Array(0), rowIds: new BigInt64Array(0) };
    if (rowIds.length !== count || codes.length !== count * CODE_BYTES)
      problems.push(`shard ${shard}: ${rowIds.length} codes, not ${count}`);
    for (let i = 0; i < Math.min(count, rowIds.length); i += 1) {
      const code = codes.subarray(i * CODE_BYTES, (i + 1) * CODE_BYTES);
      const same = code.every((byte) => byte === codeByte(shard, generation, i))
        && rowIds[i] === rowIdOf(shard, generation, i);
      if (!same) problems.push(`shard ${shard}: code ${i} is not that of generation ${generation}`);
    }
  }
  if ([...served.keys()].some((shard) => !shards.has(shard))) problems.push('codes of no shard');
  t.strictSame([...served.keys()], [...shards.keys()].sort((a, b) => a - b), `${label}: in shard order`);
  t.strictSame(problems, [], label);
}

t.test('a scope asked for again with the same generations is served as it was read, and read once', async (t) => {
  const { ask, reads } = keeper(100);
  const connection = {};
  const shards: Shards = new Map([[0, { generation: 5, count: 4 }], [1, { generation: 9, count: 3 }]]);
  const first = await ask(connection, 'a', shards);
  holds(t, first, shards, 'both shards');
  t.equal(await ask(connection, 'a', new Map(shards)), first, 'the same codes');
  t.strictSame(reads, ['a:0,1']);
  t.not(await ask({}, 'a', shards), first, 'another connection keeps its own');
  t.strictSame(reads, ['a:0,1', 'a:0,1']);
});

t.test('only the shards whose generation moved are read again, and the others served as kept', async (t) => {
  const { ask, readsOf } = keeper(100);
  const connection = {};
  const shards: Shards = new Map([0, 1, 2, 3].map((shard) => [shard, { generation: 1, count: 5 }]));
  const before = await ask(connection, 'a', shards);
  shards.set(2, { generation: 2, count: 6 });
  t.strictSame(await readsOf(connection, [['a', shards]]), ['a:2'], 'a code added to shard 2');
  const after = await ask(connection, 'a', shards);
  holds(t, after, shards, 'shard 2 in its new generation, the others as kept');
  t.ok([0, 1, 3].every((shard) => after.get(shard) === before.get(shard)) && after.get(2) !== before.get(2),
    'the shards kept are served as the same arrays (the first pass\'s memory keeps them), shard 2 as new ones');
  shards.set(0, { generation: 3, count: 4 });
  shards.set(3, { generation: 4, count: 0 });
  t.strictSame(await readsOf(connection, [['a', shards]]), ['a:0,3']);
  holds(t, await ask(connection, 'a', shards), shards, 'a shard emptied serves no code');
  shards.set(4, { generation: 1, count: 2 });
  t.strictSame(await readsOf(connection, [['a', shards]]), ['a:4'], 'a new shard');
  holds(t, await ask(connection, 'a', shards), shards, 'five shards');
  const rebuilt: Shards = new Map([0, 1].map((shard) => [shard, { generation: 7 + shard, count: 9 }]));
  t.strictSame(await readsOf(connection, [['a', rebuilt]]), ['a:0,1'], 'a rebuild: fewer shards, all moved');
  holds(t, await ask(connection, 'a', rebuilt), rebuilt, 'the rebuilt shards only');
  t.strictSame(await readsOf(connection, [['b', oneShard(3)], ['a', rebuilt]]), ['b:0'],
    'another scope\'s codes move nothing kept');
});

t.test('a scope of more than ten shards is served in shard order, whatever order its reads give', async (t) => {
  const { ask, readsOf } = keeper(100);
  const connection = {};
  const shards: Shards = new Map(Array.from({ length: 12 }, (_, shard) => [shard, { generation: 1, count: 2 }]));
  holds(t, await ask(connection, 'a', shards), shards, 'twelve shards read at once');
  shards.set(10, { generation: 2, count: 3 });
  shards.set(2, { generation: 2, count: 1 });
  t.strictSame(await readsOf(connection, [['a', shards]]), ['a:2,10']);
  holds(t, await ask(connection, 'a', shards), shards, 'shards 2 and 10 read again, each in its place');
});

t.test('at most the bound is kept, the scope asked for longest ago dropped first', async (t) => {
  const { readsOf } = keeper(100);
  const connection = {};
  const [a, b, c] = [oneShard(40), oneShard(40), oneShard(40)];
  t.strictSame(await readsOf(connection, [['a', a], ['b', b], ['a', a], ['c', c]]), ['a:0', 'b:0', 'c:0'],
    'c takes the place of b, asked for longer ago than a');
  t.strictSame(await readsOf(connection, [['a', a], ['c', c]]), [], 'a and c are kept');
  t.strictSame(await readsOf(connection, [['b', b]]), ['b:0'], 'b was dropped, and now drops a');
  t.strictSame(await readsOf(connection, [['c', c], ['b', b], ['a', a]]), ['a:0']);
  const small = oneShard(20);
  t.strictSame(await readsOf(connection, [['small', small]]), ['small:0']);
  t.strictSame(await readsOf(connection, [['b', b], ['a', a], ['small', small]]), [],
    'two of 40 and one of 20 fill the bound exactly');
  a.set(1, { generation: 1, count: 10 });
  t.strictSame(await readsOf(connection, [['a', a], ['b', b], ['small', small]]), ['a:1', 'b:0', 'small:0'],
    'a scope that grows counts its new size: b, asked for longest ago, makes room for it, then small for b');
});

t.test('a scope above the bound is read at each search and drops nothing kept', async (t) => {
  const { readsOf } = keeper(100);
  const connection = {};
  const [a, b, huge] = [oneShard(50), oneShard(50), oneShard(101)];
  await readsOf(connection, [['a', a], ['b', b]]);
  t.strictSame(await readsOf(connection, [['huge', huge], ['huge', huge]]), ['huge:0', 'huge:0']);
  t.strictSame(await readsOf(connection, [['a', a], ['b', b]]), [], 'a and b are still kept');
});

t.test('a read that fails serves nothing of the scope afterwards and keeps the count of bytes right', async (t) => {
  const { kept, readsOf } = keeper(100);
  const connection = {};
  const [a, b] = [oneShard(60), oneShard(40)];
  await readsOf(connection, [['a', a]]);
  await t.rejects(kept.codes(connection, 'a', [{ shard: 0, generation: 2 }], async () => {
    throw new Error('a damaged chunk');
  }), /a damaged chunk/);
  t.strictSame(await readsOf(connection, [['b', b], ['a', a], ['b', b]]), ['b:0', 'a:0'],
    'a is read whole again, and a and b fill the bound together');
});

t.test('a scope kept by another search while it was read is replaced, its bytes counted once', async (t) => {
  const { kept, readsOf } = keeper(100);
  const connection = {};
  const [older, newer] = [oneShard(40), new Map([[0, { generation: 2, count: 40 }]]) as Shards];
  // A connection serves one snapshot at a time, so this does not happen in a server; the class holds on its own.
  await kept.codes(connection, 'a', [{ shard: 0, generation: 1 }], async (asked) => {
    await kept.codes(connection, 'a', [{ shard: 0, generation: 2 }], async (inner) => readOf(newer, inner));
    return readOf(older, asked);
  });
  t.strictSame(await readsOf(connection, [['b', oneShard(60)], ['a', older]]), ['b:0'],
    'a (40 codes, the last read) and b (60) fill the bound together');
});

t.test('the code arrays let go are released: a shard read again, a shard gone, a scope dropped', async (t) => {
  const { ask, released } = keeper(100);
  const connection = {};
  const shards: Shards = new Map([0, 1, 2].map((shard) => [shard, { generation: 1, count: 5 }]));
  const first = await ask(connection, 'a', shards);
  await ask(connection, 'a', shards);
  t.strictSame(released, [], 'nothing while the generations hold');
  shards.set(1, { generation: 2, count: 6 });
  const second = await ask(connection, 'a', shards);
  t.ok(released.length === 1 && released[0] === first.get(1)!.codes, 'shard 1\'s old codes, read again');
  shards.delete(2);
  await ask(connection, 'a', shards);
  t.ok(released.length === 2 && released[1] === second.get(2)!.codes, 'shard 2\'s, gone from the scope');
  released.length = 0;
  // a holds 11 codes, b and c 30 each: d's 40 leave room for all but a.
  const b = await ask(connection, 'b', oneShard(30));
  await ask(connection, 'c', oneShard(30));
  await ask(connection, 'd', oneShard(40));
  t.ok(released.length === 2 && released.includes(second.get(0)!.codes) && released.includes(second.get(1)!.codes)
    && !released.includes(b.get(0)!.codes), 'd makes room: a, asked for longest ago, is dropped and released');
});
