// The full-disk fallback of the faults part, for a machine that cannot mount a small tmpfs: the write paths of the
// tools run in process on an engine whose connection is capped at its current size with SQLite's max_page_count
// (as test/10-storage/07-busy-and-full does). The operator commands have no such switch, so they are skipped there.
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { sql } from 'kysely';
import { MemoryAdapter } from '../../src/adapter/memory-adapter.js';
import { AdapterError } from '../../src/core/adapter-error.js';
import { SYSTEM_CLOCK, formatTimestamp } from '../../src/core/time.js';
import { freshBindingJson } from '../../src/embedding/embedding-binding.js';
import { EMBEDDING_PROFILES } from '../../src/embedding/embedding-profiles.js';
import { LocalHashProvider } from '../../src/embedding/local-hash-provider.js';
import { SQLiteVecEngine } from '../../src/storage/sqlite-vec-engine.js';

/** The tool write paths the fallback covers. */
export type PageCapWrite = 'memory_store' | 'memory_update_reverify' | 'memory_update_replace';

type Row = { memory_id: string; revision: number };
type Requests = {
  store: (key: string, current: boolean) => Record<string, unknown>;
  reverify: (record: Row, key: string) => Record<string, unknown>;
  replace: (record: Row, key: string) => Record<string, unknown>;
  digest: (dbPath: string) => string;
  integrityOk: (dbPath: string) => boolean;
};

/**
 * Seeds a database in `dir`, caps its connection at its current page count, runs `write` and returns what went
 * wrong (no paths, no fact text), or null when the write failed with BACKEND_UNAVAILABLE, nothing changed, reads
 * still answer and integrity_check is ok.
 */
export async function pageCapCase(dir: string, write: PageCapWrite, requests: Requests): Promise<string | null> {
  const profile = EMBEDDING_PROFILES['local-hash-384']!;
  const provider = new LocalHashProvider();
  const dbPath = join(dir, `${write}.sqlite3`);
  const engine = await SQLiteVecEngine.open({
    dbPath,
    newDatabaseBinding: async () => ({ vectorDimension: profile.outputDimension, bindingJson: freshBindingJson(
      profile, await provider.statusCheck(), formatTimestamp(SYSTEM_CLOCK()),
    ) }),
  });
  try {
    const adapter = new MemoryAdapter({ engine, provider, writeProfile: 'owner-current', hostId: 'faults-host' });
    const first = async (tool: 'memory_store' | 'memory_update', request: Record<string, unknown>) =>
      ((await adapter.execute(tool, request)) as { results: Row[] }).results[0]!;
    const tag = createHash('sha256').update(dbPath).digest('hex').slice(0, 8);
    const seeded: Row[] = [];
    for (let n = 0; n < 3; n += 1) seeded.push(await first('memory_store', requests.store(`cap-${tag}-${n}`, true)));
    const pages = await engine.read(
      async (db) => (await sql<{ page_count: number }>`PRAGMA page_count`.execute(db)).rows[0]!.page_count,
    );
    // max_page_count is connection-local: it caps this engine's connection only, at the file's current size.
    await engine.read(async (db) => sql`PRAGMA max_page_count = ${sql.raw(String(pages))}`.execute(db));
    const before = requests.digest(dbPath);
    const attempt = write === 'memory_store' ? adapter.execute('memory_store', requests.store(`cap-${tag}-new`, true))
      : write === 'memory_update_reverify'
        ? adapter.execute('memory_update', requests.reverify(seeded[1]!, `cap-${tag}-reverify`))
        : adapter.execute('memory_update', requests.replace(seeded[2]!, `cap-${tag}-replace`));
    const outcome = await attempt.then(
      () => 'OK',
      (error: unknown) => (error instanceof AdapterError ? error.code : 'unexpected exception (ungoverned)'),
    );
    if (outcome !== 'BACKEND_UNAVAILABLE') return `${write} on a capped database ended ${outcome}`;
    const read = await adapter.execute(
      'memory_get', { scope: 'PROJECT', project_id: 'faults-project', memory_id: seeded[0]!.memory_id },
    ).then(() => true, () => false);
    if (!read) return `reads stopped answering after ${write} hit the page cap`;
    if (requests.digest(dbPath) !== before) return 'the database digest changed';
    if (!requests.integrityOk(dbPath)) return 'integrity_check is not ok';
    return null;
  } finally {
    await engine.close();
  }
}
