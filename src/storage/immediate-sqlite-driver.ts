import {
  CompiledQuery, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler,
  type DatabaseConnection, type DatabaseIntrospector, type Dialect, type DialectAdapter, type Driver, type Kysely,
  type QueryCompiler, type QueryResult,
} from 'kysely';
import type { SqliteConnection } from './native.js';

/** How many prepared statements one connection keeps; FactLane issues a few dozen distinct statements. */
const STATEMENT_CACHE_SIZE = 256;

// better-sqlite3 binds an array argument as the positional parameter list, as Kysely's own driver relies on.
interface Statement {
  readonly reader: boolean;
  all(parameters: readonly unknown[]): unknown[];
  run(parameters: readonly unknown[]): { changes: number; lastInsertRowid: number | bigint };
}

/**
 * Every value a statement binds is written `+?`, never a bare `?` (docs/decisions/0052-values-are-not-planned-on.md).
 * SQLite reads a bare parameter's bound value while it plans in some places: a LIMIT or OFFSET (decision 0051), an
 * equality on an indexed column once `ANALYZE` has written `sqlite_stat4`, a LIKE pattern. It then marks the
 * statement, and prepares it again whenever another value is bound, that is at every run. A unary plus makes the
 * parameter an expression SQLite evaluates when the statement runs, with the same value, affinity and collation, and
 * it still drives an index.
 */
class PlusParameterCompiler extends SqliteQueryCompiler {
  protected override getCurrentParameterPlaceholder(): string {
    return '+?';
  }
}

// A parameter outside the compiler's `+?`, once quoted strings and identifiers are set aside: raw SQL text with a `?`.
const QUOTED = /'(?:[^']|'')*'|"(?:[^"]|"")*"|`(?:[^`]|``)*`|\[[^\]]*\]/g;
const BARE_PARAMETER = /(?<!\+)\?/;

/**
 * A Kysely connection over better-sqlite3 that reuses prepared statements by SQL text. Preparing an
 * adapter_records insert (a 32-column table with a fence trigger and seven indexes) costs about as much
 * as running it, and Kysely's own SQLite connection prepares on every call.
 */
class CachingConnection implements DatabaseConnection {
  readonly #connection: SqliteConnection;
  readonly #statements = new Map<string, Statement>();

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
  }

  #prepare(sqlText: string): Statement {
    let statement = this.#statements.get(sqlText);
    if (statement) {
      // Refresh recency: Map iteration order is insertion order, so the first key is the least recent.
      this.#statements.delete(sqlText);
    } else {
      if (BARE_PARAMETER.test(sqlText.replace(QUOTED, '')))
        throw new TypeError(`a value bound as a bare parameter may be prepared again at every run: bind it through `
          + `Kysely, which writes +?: ${sqlText.replace(/\s+/g, ' ').slice(0, 200)}`);
      statement = this.#connection.prepare(sqlText) as unknown as Statement;
      if (this.#statements.size >= STATEMENT_CACHE_SIZE) this.#statements.delete(this.#statements.keys().next().value!);
    }
    this.#statements.set(sqlText, statement);
    return statement;
  }

  executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const statement = this.#prepare(compiledQuery.sql);
    const parameters = compiledQuery.parameters as unknown[];
    if (statement.reader) return Promise.resolve({ rows: statement.all(parameters) as R[] });
    const { changes, lastInsertRowid } = statement.run(parameters);
    return Promise.resolve({ numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] });
  }

  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not used by FactLane storage');
  }
}

/** A hold of the connection longer than this may have kept the event loop from polling (acquireConnection). */
const LONG_HOLD_MS = 20;

/** Resolves once the event loop has polled: a stop signal or stdin's end that came meanwhile is then dispatched. */
const pastPoll = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));

/** Serialises use of the one connection, as Kysely's SQLite driver does. */
class ConnectionMutex {
  #held: Promise<void> | undefined;
  #release: (() => void) | undefined;

  async lock(): Promise<void> {
    while (this.#held) await this.#held;
    this.#held = new Promise((resolve) => { this.#release = resolve; });
  }

  unlock(): void {
    const release = this.#release;
    this.#held = undefined;
    this.#release = undefined;
    release?.();
  }
}

/**
 * The storage driver: one better-sqlite3 connection, statements cached, every transaction `begin
 * immediate`, and the writer gate open exactly while a transaction is (STORAGE.md §5, §6).
 */
class ImmediateSqliteDriver implements Driver {
  readonly #sqlite: SqliteConnection;
  readonly #gate: { open: boolean };
  readonly #mutex = new ConnectionMutex();
  readonly #connection: CachingConnection;
  readonly #onAcquire: () => void;
  #heldSince = 0;
  #heldUntil = 0;

  constructor(sqlite: SqliteConnection, gate: { open: boolean }, onAcquire: () => void) {
    this.#sqlite = sqlite;
    this.#gate = gate;
    this.#connection = new CachingConnection(sqlite);
    this.#onAcquire = onAcquire;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.#mutex.lock();
    // The holder before may have held the event loop as long (a busy wait is synchronous): let the loop poll first,
    // so that what came meanwhile (a stop signal, stdin's end) is seen before this holder's statements.
    if (this.#heldUntil - this.#heldSince > LONG_HOLD_MS) await pastPoll();
    this.#heldSince = performance.now();
    this.#onAcquire();
    return this.#connection;
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    // IMMEDIATE takes the write lock up front: a deferred read-then-write transaction would fail with
    // SQLITE_BUSY_SNAPSHOT when another process commits in between.
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    this.#gate.open = true;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await connection.executeQuery(CompiledQuery.raw('commit'));
    } finally {
      if (!this.#sqlite.inTransaction) this.#gate.open = false;
    }
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      // SQLite may already have rolled back by itself (SQLITE_FULL, SQLITE_IOERR); a second rollback
      // would hide the original error behind "no transaction is active".
      if (this.#sqlite.inTransaction) await connection.executeQuery(CompiledQuery.raw('rollback'));
    } finally {
      this.#gate.open = false;
    }
  }

  async releaseConnection(): Promise<void> {
    this.#heldUntil = performance.now();
    this.#mutex.unlock();
  }

  async destroy(): Promise<void> {
    if (this.#sqlite.open) this.#sqlite.close();
  }
}

/** Kysely dialect for the storage connection: SQLite's compiler writing `+?`, its adapter, and the driver above. */
export class ImmediateSqliteDialect implements Dialect {
  readonly #driver: ImmediateSqliteDriver;

  /** `onAcquire` runs each time a query or transaction gets the connection, before its first statement. */
  constructor(sqlite: SqliteConnection, gate: { open: boolean }, onAcquire: () => void = () => {}) {
    this.#driver = new ImmediateSqliteDriver(sqlite, gate, onAcquire);
  }

  createDriver(): Driver {
    return this.#driver;
  }

  createQueryCompiler(): QueryCompiler {
    return new PlusParameterCompiler();
  }

  createAdapter(): DialectAdapter {
    return new SqliteAdapter();
  }

  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}
