import t from 'tap';
import {
  currentRequest, HASH_A, hex64, openWriteBench, provenance, refused, replaceRequest, reverifyRequest, store, update,
  type Json,
} from '../helpers/writes.js';

// CONTRACT.md §4.4 for CROSS_PROJECT_WORKFLOW, every freshness kind, on store and on update's merged successor
// (REVERIFY with a verification payload, REPLACE with a replacement). The table refuses `manual` without recheck_ref
// and source_fingerprint, and `on_change` whose fingerprint is the source hash (which §5.6 requires of every
// on_change, so on_change never passes here); it does not refuse `ttl` or `never` (docs/decisions/0020).

type Kind = { name: string; policy: Json; refusedWith: string | null };

const KINDS: readonly Kind[] = [
  { name: 'manual, bare', policy: { kind: 'manual' }, refusedWith: 'INVALID_FRESHNESS' },
  { name: 'manual, blank recheck_ref', policy: { kind: 'manual', recheck_ref: ' ' }, refusedWith: 'INVALID_FRESHNESS' },
  { name: 'manual, recheck_ref', policy: { kind: 'manual', recheck_ref: 'docs/review.md' }, refusedWith: null },
  { name: 'manual, fingerprint', policy: { kind: 'manual', source_fingerprint: hex64('doc') }, refusedWith: null },
  { name: 'on_change following the source',
    policy: { kind: 'on_change', recheck_ref: 'ci', source_fingerprint: HASH_A },
    refusedWith: 'INVALID_FRESHNESS' },
  { name: 'on_change, other fingerprint',
    policy: { kind: 'on_change', recheck_ref: 'ci', source_fingerprint: hex64('x') },
    refusedWith: 'INVALID_FRESHNESS' },
  { name: 'on_change, no recheck_ref', policy: { kind: 'on_change', source_fingerprint: HASH_A },
    refusedWith: 'INVALID_FRESHNESS' },
  { name: 'ttl', policy: { kind: 'ttl', ttl_seconds: 31_536_000 }, refusedWith: null },
  { name: 'never', policy: { kind: 'never' }, refusedWith: null },
];

const CPW = { scope: 'CROSS_PROJECT_WORKFLOW', memory_type: 'WORKFLOW_RULE' };

t.test('store: each freshness kind in CROSS_PROJECT_WORKFLOW', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  for (const [index, kind] of KINDS.entries()) {
    const request = currentRequest({
      ...CPW, fact: `Rule ${index}: every change gets a review`, freshness_policy: kind.policy,
    });
    if (kind.refusedWith) {
      await refused(t, bench, () => store(owner, request), kind.refusedWith, undefined, `store, ${kind.name}`);
    } else {
      const envelope = await store(owner, request);
      t.match(envelope, { status: 'OK', results: [{ freshness_policy: { kind: kind.policy.kind } }] },
        `store, ${kind.name}`);
    }
  }
});

t.test('update: each freshness kind on the merged successor, by REVERIFY and by REPLACE', async (t) => {
  const bench = await openWriteBench(t);
  const owner = bench.adapter('owner-current');
  for (const [index, kind] of KINDS.entries()) {
    const stored = await store(owner, currentRequest({ ...CPW, fact: `Rule ${index}: squash before merge`,
      freshness_policy: { kind: 'manual', recheck_ref: 'docs/merge.md' } }));
    const rule = stored.results[0] as Json;
    const reverify = () => update(owner, reverifyRequest(rule, { verification: { freshness_policy: kind.policy } }));
    const replace = () => update(owner, replaceRequest(rule, {
      memory_type: 'WORKFLOW_RULE', fact: `Rule ${index}: rebase before merge`,
      source_provenance: provenance(), freshness_policy: kind.policy }));
    for (const [mode, run] of [['REVERIFY', reverify], ['REPLACE', replace]] as const) {
      if (kind.refusedWith) {
        await refused(t, bench, run, kind.refusedWith, undefined, `${mode}, ${kind.name}`);
      }
    }
    if (!kind.refusedWith) {
      const reverified = await reverify();
      t.match(reverified, { status: 'OK', results: [{ revision: 2, freshness_policy: { kind: kind.policy.kind } }] },
        `REVERIFY, ${kind.name}`);
      const replaced = await update(owner, replaceRequest(reverified.results[0], { memory_type: 'WORKFLOW_RULE',
        fact: `Rule ${index}: rebase before merge`, source_provenance: provenance(), freshness_policy: kind.policy }));
      t.match(replaced, { status: 'OK', results: [{ freshness_policy: { kind: kind.policy.kind } }] },
        `REPLACE, ${kind.name}`);
    }
  }
});
