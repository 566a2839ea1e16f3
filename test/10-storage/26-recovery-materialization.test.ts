import t from 'tap';
import { materializationOf } from '../../src/maintenance/recovery-inspection.js';
import type { DerivedRows } from '../../src/storage/recovery-repository.js';
import type { RecordRow } from '../../src/storage/record-rows.js';

// Recovery's materialisation classes (OPERATIONS.md §5.4) under the schema-3 layout (decision 0027): a current record
// has eligible forms exactly when its scope is coded, so a form in a small scope is unexpected (PM4) and a missing form
// in a coded scope is a missing derived row (PM2).

const SCOPE_KEY = 'a'.repeat(64);
const VECTOR = Buffer.from(new Float32Array([0.6, 0.8]).buffer);

function row(lifecycle: string): RecordRow {
  return { row_id: 7, scope_key: SCOPE_KEY, lifecycle_state: lifecycle } as RecordRow;
}

function derived(current: boolean, edit: Partial<DerivedRows>): DerivedRows {
  return {
    ftsText: 'the build uses node 20',
    vector: { scopeKey: SCOPE_KEY, isCurrent: current ? 1 : 0, embedding: VECTOR },
    eligibleVector: null, eligibleCode: null, scopeCoded: false,
    ...edit,
  };
}

const FORMS = {
  eligibleVector: { scopeKey: SCOPE_KEY, shard: 0, embedding: VECTOR },
  eligibleCode: { shardKey: `${SCOPE_KEY}/0`, code: Buffer.alloc(96) },
};

t.test('a current record: forms exactly in a coded scope', async (t) => {
  t.equal(materializationOf(row('VALIDATED_CURRENT'), derived(true, {})), 'PM1_FULL_MATERIALIZATION',
    'small scope, no forms: fully materialised');
  t.equal(materializationOf(row('VALIDATED_CURRENT'), derived(true, { ...FORMS })), 'PM4_UNEXPECTED_DERIVED_STATE',
    'small scope with forms: unexpected');
  t.equal(materializationOf(row('VALIDATED_CURRENT'), derived(true, { ...FORMS, scopeCoded: true })),
    'PM1_FULL_MATERIALIZATION', 'coded scope with its forms: fully materialised');
  t.equal(materializationOf(row('VALIDATED_CURRENT'), derived(true, { scopeCoded: true })),
    'PM2_DERIVED_ROW_MISSING_OR_MISMATCHED', 'coded scope without forms: a derived row is missing');
  t.equal(
    materializationOf(row('VALIDATED_CURRENT'), derived(true, { ...FORMS, eligibleCode: null, scopeCoded: true })),
    'PM2_DERIVED_ROW_MISSING_OR_MISMATCHED', 'coded scope with half its forms: missing');
});

t.test('a Candidate or SUPERSEDED record never has forms, coded scope or not', async (t) => {
  for (const lifecycle of ['CANDIDATE', 'SUPERSEDED']) {
    for (const scopeCoded of [false, true]) {
      t.equal(materializationOf(row(lifecycle), derived(false, { scopeCoded })), 'PM1_FULL_MATERIALIZATION',
        `${lifecycle}, coded ${scopeCoded}`);
      t.equal(materializationOf(row(lifecycle), derived(false, { ...FORMS, scopeCoded })),
        'PM4_UNEXPECTED_DERIVED_STATE', `${lifecycle} with forms, coded ${scopeCoded}: unexpected`);
    }
  }
});
