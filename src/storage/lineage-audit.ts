import { LINEAGE_AUDIT_QUERIES } from '../../schema/lineage-audit.js';
import type { SqliteConnection } from './native.js';

/** One audit check: PASS/FAIL, how many violations, and up to 20 samples (record ids, or table:rowid). */
export interface AuditCheck {
  readonly name: string;
  readonly status: 'PASS' | 'FAIL';
  readonly count: number;
  readonly samples: readonly string[];
}

const MAX_SAMPLES = 20;

/** Runs the schema package's lineage queries on a read-only connection with sqlite-vec loaded. */
export function runLineageAudit(connection: SqliteConnection): AuditCheck[] {
  return Object.entries(LINEAGE_AUDIT_QUERIES).map(([name, query]) => {
    const samples = connection.prepare(query).pluck().all() as string[];
    return { name, status: samples.length === 0 ? 'PASS' : 'FAIL', count: samples.length, samples: samples.slice(0, MAX_SAMPLES) };
  });
}

/** The health readings housekeeping takes before and after compaction (OPERATIONS.md §3 steps 4-6). */
export interface HealthReading {
  /** FTS and vector rows without their record (`no_orphans`). */
  readonly vectorOrphans: number;
  /** Records in a memory with two live records, plus records with two successors (`no_current_forks`, `single_successor`). */
  readonly currentLineageForks: number;
  readonly quickCheck: 'PASS' | 'FAIL';
  readonly integrityCheck: 'PASS' | 'FAIL';
}

/** Reads the health of a whole database on a connection with sqlite-vec loaded; read-only. */
export function readHealth(connection: SqliteConnection): HealthReading {
  const violations = (query: string) => connection.prepare(query).pluck().all().length;
  const answersOk = (pragma: string) => {
    const rows = connection.prepare(pragma).pluck().all();
    return rows.length === 1 && rows[0] === 'ok' ? 'PASS' : 'FAIL';
  };
  return {
    vectorOrphans: violations(LINEAGE_AUDIT_QUERIES.no_orphans),
    currentLineageForks: violations(LINEAGE_AUDIT_QUERIES.no_current_forks) + violations(LINEAGE_AUDIT_QUERIES.single_successor),
    quickCheck: answersOk('PRAGMA quick_check'),
    integrityCheck: answersOk('PRAGMA integrity_check'),
  };
}
