import { CompiledQuery, type Kysely, type QueryResult, type Transaction } from 'kysely';
import type { DB } from '../../generated/db.js';

// Statements compiled once per shape (docs/decisions/0012-statements-compiled-once.md). Kysely builds an
// operation tree, freezes it and compiles it to SQL on every call: about a quarter of a millisecond of a
// memory_store, whose statements differ from one call to the next only in their bound values.

/** Stands in for one argument while a shape is compiled. */
class Slot {
  constructor(readonly index: number) {}
}

interface Shape {
  readonly sql: string;
  /** Per compiled parameter: the index of the argument bound there, or a constant the statement itself binds. */
  readonly sources: readonly ({ readonly index: number } | { readonly constant: unknown })[];
}

// Keyed by the caller's shape name: a pure function of the code, so it never goes stale (decision 0010).
const SHAPES = new Map<string, Shape>();

/** The SQL of every shape compiled so far, by key: for checking their query plans. */
export function compiledShapes(): ReadonlyMap<string, string> {
  return new Map([...SHAPES].map(([key, shape]) => [key, shape.sql]));
}

/**
 * Runs the statement `compile` describes with `args` bound, and returns its result. The first call for `key`
 * compiles it with a slot standing in for each argument; later calls bind their arguments to that SQL and skip
 * Kysely's builder and compiler. `compile` may use a slot only as a bound value, never to decide what the
 * statement looks like: whatever decides that (an operator, an optional clause, a list length) belongs in `key`.
 * A null argument is passed to `compile` as null, not as a slot, and which arguments are null is part of the
 * shape: Kysely writes `is null` into the SQL for it, which SQLite plans better than `is ?` bound to null.
 * A slot that does not come back as a parameter of its own is a mistake and throws TypeError.
 */
export async function runShape<const Args extends readonly unknown[], R>(
  reader: Kysely<DB> | Transaction<DB>, key: string, args: Args, compile: (slots: Args) => CompiledQuery<R>,
): Promise<QueryResult<R>> {
  let nulls = '';
  for (const arg of args) nulls += arg === null ? '0' : '1';
  const shapeKey = `${key}:${nulls}`;
  let shape = SHAPES.get(shapeKey);
  if (shape === undefined) {
    const compiled = compile(args.map((arg, index) => (arg === null ? null : new Slot(index))) as unknown as Args);
    const sources = compiled.parameters.map((parameter) =>
      (parameter instanceof Slot ? { index: parameter.index } : { constant: parameter }));
    const bound = new Set(sources.flatMap((source) => ('index' in source ? [source.index] : [])));
    const expected = args.filter((arg) => arg !== null).length;
    if (bound.size !== expected)
      throw new TypeError(`statement shape ${key}: ${expected - bound.size} argument(s) are not bound values`);
    shape = { sql: compiled.sql, sources };
    SHAPES.set(shapeKey, shape);
  }
  const parameters = shape.sources.map((source) => ('index' in source ? args[source.index] : source.constant));
  return reader.executeQuery(CompiledQuery.raw(shape.sql, parameters) as CompiledQuery<R>);
}
