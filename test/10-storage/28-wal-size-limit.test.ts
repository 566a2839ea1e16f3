import t from 'tap';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { openReadOnlyConnection, WAL_SIZE_LIMIT_BYTES, WriteConnection } from '../../src/storage/write-connection.js';
import { openEngine } from '../helpers/storage.js';

// A long reader (a backup or verify while servers write) holds the WAL from restarting, so it grows past its usual
// 1,000 pages. Once the reader is gone and the WAL restarts, the writer cuts the file back to WAL_SIZE_LIMIT_BYTES
// (decision 0030); before, it kept its high-water mark on disk until every server exited.

t.test('a WAL grown behind a long reader is cut back once it restarts', async (t) => {
  const dbPath = join(t.testdir(), 'wal.sqlite3');
  await (await openEngine(dbPath)).close();
  const connection = WriteConnection.open({ path: dbPath });
  t.teardown(() => connection.close());
  const walBytes = () => statSync(`${dbPath}-wal`).size;
  /** `count` commits of 4 MiB each. */
  const writeChunks = async (count: number) => {
    for (let i = 0; i < count; i += 1) {
      await connection.write(async (_trx, raw) => {
        raw.prepare("INSERT OR REPLACE INTO adapter_meta (key, value) VALUES ('wal_test', ?)")
          .run(`${i}`.padEnd(4 * 1024 * 1024, 'x'));
      });
    }
  };
  const reader = openReadOnlyConnection(dbPath);
  reader.exec('BEGIN');
  reader.prepare('SELECT count(*) FROM adapter_meta').get();
  const chunks = Math.ceil(WAL_SIZE_LIMIT_BYTES / (4 * 1024 * 1024)) + 4;
  await writeChunks(chunks);
  t.ok(walBytes() > WAL_SIZE_LIMIT_BYTES, `the WAL grew past the limit behind the reader (${walBytes()} bytes)`);
  reader.exec('COMMIT');
  reader.close();
  // The next commits checkpoint the whole WAL; the one after restarts it and truncates the file.
  await writeChunks(3);
  t.ok(walBytes() <= WAL_SIZE_LIMIT_BYTES, `the WAL is cut back (${walBytes()} bytes)`);
  await connection.write(
    async (_trx, raw) => { raw.prepare("DELETE FROM adapter_meta WHERE key = 'wal_test'").run(); });
});
