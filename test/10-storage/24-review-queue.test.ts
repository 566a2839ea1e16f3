import t from 'tap';
import { listCandidates } from '../../src/maintenance/review-queue-operation.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import { findMemoryWhereabouts, readReviewQueue } from '../../src/storage/review-repository.js';
import {
  currentRequest, fixedClock, openWriteBench, reverifyRequest, store, storeRequest, update, type Json,
} from '../helpers/writes.js';

// The review queue's reads (docs/decisions/0022): which records are pending, in which order, what a Candidate would
// contradict, and where a memory lives.

const GLOBAL = { scope: 'GLOBAL_USER', project_id: null, worktree_id: null, workflow_id: null,
  agent_id: null } as const;

t.test('pending Candidates: oldest first by created_at then record_id, bounded, counted in full', async (t) => {
  const bench = await openWriteBench(t);
  // Whole-second created_at prints without a fraction and must still sort before a later fraction of that second.
  const at = (iso: string) => bench.adapter('delegated-candidate', { clock: fixedClock(iso) });
  const late = await store(at('2026-11-30T10:00:00.500000Z'), storeRequest({ fact: 'late fact' }));
  const early = await store(at('2026-11-30T10:00:00Z'), storeRequest({ fact: 'early fact' }));
  const tieA = await store(at('2026-11-30T11:00:00Z'), storeRequest({ fact: 'tie fact one' }));
  const tieB = await store(at('2026-11-30T11:00:00Z'), storeRequest({ fact: 'tie fact two' }));
  await store(bench.adapter('owner-current'), currentRequest({ fact: 'a current fact' }));
  const ties = [tieA, tieB].map((envelope) => envelope.results[0].record_id as string).sort();
  const expected = [early.results[0].record_id, late.results[0].record_id, ...ties];

  const all = await readReviewQueue(bench.dbPath, { scope: null, limit: 10 });
  t.equal(all.total, 4, 'the current fact is not pending');
  t.same(all.candidates.map(({ candidate }) => candidate.record_id), expected);
  const bounded = await readReviewQueue(bench.dbPath, { scope: null, limit: 2 });
  t.equal(bounded.total, 4, 'the total counts every match');
  t.same(bounded.candidates.map(({ candidate }) => candidate.record_id), expected.slice(0, 2));
  t.equal((await readReviewQueue(bench.dbPath, { scope: { ...GLOBAL, agent_id: 'a1' }, limit: 10 })).total,
    0, 'exact tuple');
});

t.test('a promoted Candidate leaves the queue; the report names the conflicting current fact and the age',
  async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  const delegated = bench.adapter('delegated-candidate');
  const recordOf = (envelope: Json): Json => envelope.results[0];
  const current = recordOf(await store(owner, currentRequest({ fact: 'The build uses Node 20', subject: 'runtime' })));
  const conflicting = recordOf(
    await store(delegated, storeRequest({ fact: 'The build uses Node 22', subject: 'runtime' })));
  const plain = recordOf(
    await store(delegated, storeRequest({ fact: 'Releases are tagged', source_timestamp: '2026-11-01T00:00:00Z' })));
  await update(owner, reverifyRequest(plain, { expected_record_id: plain.record_id }));

  const target = MaintenanceTarget.open({ dbPath: bench.dbPath, lease: 'shared' });
  t.teardown(() => target.close());
  const report = await listCandidates(target, { scope: GLOBAL, limit: 5, clock: fixedClock('2026-11-30T12:30:05Z') });
  t.match(report, { total: 1, shown: 1, more: 0, limit: 5, listed_at: '2026-11-30T12:30:05Z', scope_filter: GLOBAL });
  t.match(report.candidates[0], {
    memory_id: conflicting.memory_id, contradiction_state: 'UNRESOLVED', age_seconds: 2 * 3600 + 30 * 60 + 5,
    equivalent_current: null,
    contradicts: [{ memory_id: current.memory_id, record_id: current.record_id, fact: 'The build uses Node 20',
      verified_by: 'OWNER' }],
  });
  const behind = await listCandidates(target, { scope: null, limit: 5, clock: fixedClock('2026-11-29T00:00:00Z') });
  t.equal(behind.candidates[0]!.age_seconds, 0, 'a clock behind created_at gives age 0');

  const promoted = await bench.engine.read((db) => findMemoryWhereabouts(db, plain.memory_id));
  t.match(promoted, { scope: GLOBAL, live: { revision: 2, lifecycle_state: 'VALIDATED_CURRENT' } });
  t.equal(await bench.engine.read((db) =>
    findMemoryWhereabouts(db, '00000000-0000-4000-8000-000000000000')), undefined);
});
