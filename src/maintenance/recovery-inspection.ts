import { searchText, foldKey, utf8Bytes } from '../core/text.js';
import type { SqliteConnection } from '../storage/native.js';
import { rowsHoldingContent, type ContentNeedles } from '../storage/recovery-content.js';
import {
  memoryForked, memoryIdsOfRows, quarantinedRecords, readDerivedRows, readRecordsById, unattributableDerivedRows,
  type DerivedRows,
} from '../storage/recovery-repository.js';
import type { RecordRow } from '../storage/record-rows.js';
import { RecoveryHold } from './recovery-hold.js';
import {
  isAnyTombstone, isTombstoneOf, type MaterializationClass, type RecoveryPlan, type RecoveryTarget,
} from './recovery-plan.js';

// OPERATIONS.md §5.4: target inspection, without mutation.

/** A target as found in the database, with the content recovery must make disappear. */
export interface InspectedTarget {
  readonly target: RecoveryTarget;
  readonly row: RecordRow;
  readonly derived: DerivedRows;
  readonly materialization: MaterializationClass;
}

/** The targets' content to look for, and whether a target fact is too short to look for as bytes. */
export type RecoveryNeedles = ContentNeedles & { readonly short: boolean };

/** What inspection found: every target untouched and classified, or every target already tombstoned by this plan. */
export type Inspection =
  | { readonly kind: 'UNTOUCHED'; readonly targets: readonly InspectedTarget[]; readonly needles: RecoveryNeedles }
  | { readonly kind: 'ALL_TOMBSTONED'; readonly rows: readonly RecordRow[] };

/** Texts shorter than this are not looked for inside other values (§5.4). */
export const MIN_SCANNED_TEXT_BYTES = 16;

const SCOPE_COLUMNS = ['project_id', 'worktree_id', 'workflow_id', 'agent_id'] as const;
/** How many memories a HOLD_TARGET_SET_INCOMPLETE message names before it counts the rest. */
const MEMORIES_NAMED = 8;

function sameScope(row: RecordRow, target: RecoveryTarget): boolean {
  return row.scope === target.scope.scope && SCOPE_COLUMNS.every((column) => row[column] === target.scope[column]);
}

/** The needles of a set of records: fold keys, facts and search_text forms of 16 bytes or more, vectors and codes. */
function contentNeedles(targets: readonly { row: RecordRow; derived: DerivedRows }[]): RecoveryNeedles {
  const texts = new Set<string>();
  const blobs: Buffer[] = [];
  for (const { row, derived } of targets) {
    for (const text of [row.fact, searchText(row.fact)]) if (utf8Bytes(text) >= MIN_SCANNED_TEXT_BYTES) texts.add(text);
    const targetBlobs = [derived.vector?.embedding, derived.eligibleVector?.embedding, derived.eligibleCode?.code];
    for (const blob of targetBlobs) if (blob) blobs.push(blob);
  }
  const short = targets.some(({ row }) => utf8Bytes(row.fact) < MIN_SCANNED_TEXT_BYTES);
  return { foldKeys: new Set(targets.map(({ row }) => foldKey(row.fact))), texts: [...texts], blobs, short };
}

/** The class of §5.4 the derived rows of `row` fall in. */
export function materializationOf(row: RecordRow, derived: DerivedRows): MaterializationClass {
  const state = row.lifecycle_state;
  const eligible = derived.eligibleVector !== null || derived.eligibleCode !== null;
  if (state === 'HISTORICAL') {
    if (derived.vector !== null || eligible) return 'PM4_UNEXPECTED_DERIVED_STATE';
    return derived.ftsText === null ? 'PM2_DERIVED_ROW_MISSING_OR_MISMATCHED' : 'PM0_HISTORICAL_RECORD_AND_FTS';
  }
  const current = state === 'VALIDATED_CURRENT';
  // Eligible forms belong to current records of coded scopes only (STORAGE.md §4.5, schema 3).
  const formsExpected = current && derived.scopeCoded;
  if (!formsExpected && eligible) return 'PM4_UNEXPECTED_DERIVED_STATE';
  const vector = derived.vector;
  const vectorMatches = vector !== null && vector.scopeKey === row.scope_key && vector.isCurrent === (current ? 1 : 0);
  const eligibleMatches = !formsExpected || (derived.eligibleVector !== null && derived.eligibleCode !== null
    && derived.eligibleVector.scopeKey === row.scope_key && vector !== null
    && derived.eligibleVector.embedding.equals(vector.embedding)
    && derived.eligibleCode.shardKey === `${row.scope_key}/${derived.eligibleVector.shard}`);
  return derived.ftsText !== null && vectorMatches && eligibleMatches
    ? 'PM1_FULL_MATERIALIZATION'
    : 'PM2_DERIVED_ROW_MISSING_OR_MISMATCHED';
}

/** How a hold names a target: by its place in the plan's `targets`, counted from 1 as an operator reads the file. */
function ordinal(index: number, count: number): string {
  return `target ${index + 1} of ${count}`;
}

/**
 * Inspects the plan's targets (OPERATIONS.md §5.4) in order: drift (each target as the plan describes it, no lineage
 * fork), the partial-application check, completeness (no other live copy of target content), unattributable
 * derived rows, then each target's materialisation class. Throws the hold of the first failure.
 */
export function inspectTargets(connection: SqliteConnection, plan: RecoveryPlan): Inspection {
  const rows = readRecordsById(connection, plan.targets.map((t) => t.record_id));
  let tombstoned = 0;
  for (const target of plan.targets) {
    const row = rows.get(target.record_id);
    const drift = () => new RecoveryHold('HOLD_TARGET_DRIFT_NO_MUTATION',
      `${ordinal(plan.targets.indexOf(target), plan.targets.length)} is not in the database as the plan describes it `
        + '(changed since the plan was written): write a new plan');
    if (!row || row.memory_id !== target.memory_id || row.revision !== target.revision || !sameScope(row, target)) {
      throw drift();
    }
    if (isTombstoneOf(row, plan.operation_id)) {
      tombstoned += 1;
      continue;
    }
    if (row.lifecycle_state !== target.expected_lifecycle || row.native_content_hash !== target.expected_content_hash
      || memoryForked(connection, row.memory_id)) throw drift();
  }
  if (tombstoned === plan.targets.length) {
    return { kind: 'ALL_TOMBSTONED', rows: plan.targets.map((t) => rows.get(t.record_id)!) };
  }
  if (tombstoned > 0) {
    throw new RecoveryHold('HOLD_TARGET_SET_PARTIALLY_APPLIED',
      `${tombstoned} of ${plan.targets.length} targets are already tombstoned by this operation`);
  }

  const found = plan.targets.map((target) => {
    const row = rows.get(target.record_id)!;
    return { target, row, derived: readDerivedRows(connection, row.row_id) };
  });
  const needles = contentNeedles(found);
  const skip = new Set(found.map(({ row }) => row.row_id));
  for (const row of quarantinedRecords(connection)) if (isAnyTombstone(row)) skip.add(row.row_id);
  const copies = rowsHoldingContent(connection, needles, skip);
  if (copies.length > 0) {
    // Every copy's table and row id is `table:rowid`, and a derived row's rowid is its record's row id.
    const memories = memoryIdsOfRows(connection, copies.map((copy) => Number(copy.slice(copy.indexOf(':') + 1))));
    const named = memories.length > MEMORIES_NAMED ? `${memories.slice(0, MEMORIES_NAMED).join(', ')} and `
      + `${memories.length - MEMORIES_NAMED} more` : memories.join(', ');
    throw new RecoveryHold('HOLD_TARGET_SET_INCOMPLETE_NO_MUTATION',
      `${copies.length} row(s) outside the target set hold target content`
        + (memories.length > 0 ? `, in memory ${named}; write a new plan with their --memory-id too` : '')
        + '; nothing was changed');
  }
  const orphans = unattributableDerivedRows(connection);
  if (orphans.length > 0) {
    throw new RecoveryHold('HOLD_UNATTRIBUTABLE_VECTOR_NO_MUTATION',
      `${orphans.length} FTS or vector row(s) have no record (PM3_UNATTRIBUTABLE_DERIVED_ROW)`);
  }
  const targets = found.map((entry) => ({ ...entry, materialization: materializationOf(entry.row, entry.derived) }));
  for (const [index, { target, materialization }] of targets.entries()) {
    if (materialization !== target.expected_materialization) {
      throw new RecoveryHold('HOLD_MATERIALIZATION_DRIFT_NO_MUTATION',
        `${ordinal(index, targets.length)} is ${materialization}, the plan expects ${target.expected_materialization}`);
    }
    if (materialization === 'PM2_DERIVED_ROW_MISSING_OR_MISMATCHED') {
      throw new RecoveryHold('HOLD_PARTIAL_MATERIALIZATION_NO_MUTATION',
        `${ordinal(index, targets.length)} misses a derived row or has one that disagrees with it`);
    }
    if (materialization === 'PM4_UNEXPECTED_DERIVED_STATE') {
      throw new RecoveryHold('HOLD_UNEXPECTED_DERIVED_STATE_NO_MUTATION',
        `${ordinal(index, targets.length)} has derived rows its lifecycle forbids`);
    }
  }
  return { kind: 'UNTOUCHED', targets, needles };
}
