import t from 'tap';
import { join } from 'node:path';
import { REBUILD_REPORT_ROWS, rebuildEligibleVectors } from '../../src/storage/eligible-vectors.js';
import { insertRecordUnchecked } from '../../src/storage/record-repository.js';
import { candidateRow, openEngine, unitVector, withRaw } from '../helpers/storage.js';

// The eligible-forms rebuild reports its progress (decision 0023): every REBUILD_REPORT_ROWS vectors and at its end.

t.test('a rebuild reports done/total every REBUILD_REPORT_ROWS vectors and once at the end', async (t) => {
  const dbPath = join(t.testdir(), 'db.sqlite3');
  const engine = await openEngine(dbPath);
  t.teardown(() => engine.close());
  const currentRows = 2 * REBUILD_REPORT_ROWS + 7;
  await engine.write(async (trx) => {
    for (let i = 0; i < currentRows + 3; i += 1) {
      // Three candidates: not CURRENT, so not rebuilt and not counted.
      const row = candidateRow({
        lifecycle_state: i < currentRows ? 'VALIDATED_CURRENT' : 'CANDIDATE', scope_key: `scope-${i % 3}`,
      });
      await insertRecordUnchecked(trx, row, { searchText: row.fact, embedding: unitVector(i) });
    }
  });
  const reports: [number, number][] = [];
  const added = await engine.write((trx) => rebuildEligibleVectors(trx, (done, total) => reports.push([done, total])));
  t.equal(added, currentRows);
  t.strictSame(reports,
    [[REBUILD_REPORT_ROWS, currentRows], [2 * REBUILD_REPORT_ROWS, currentRows], [currentRows, currentRows]]);
  t.equal(withRaw(dbPath, (db) => db.prepare('SELECT count(*) FROM eligible_vectors').pluck().get()), currentRows,
    'all rebuilt');

});

t.test('a rebuild with no CURRENT vector reports 0/0 once', async (t) => {
  const engine = await openEngine(join(t.testdir(), 'db.sqlite3'));
  t.teardown(() => engine.close());
  await engine.write((trx) => insertRecordUnchecked(trx, candidateRow(),
    { searchText: 'x', embedding: unitVector(1) }));
  const reports: [number, number][] = [];
  t.equal(
    await engine.write((trx) => rebuildEligibleVectors(trx, (done, total) => reports.push([done, total]))), 0);
  t.strictSame(reports, [[0, 0]]);
});
