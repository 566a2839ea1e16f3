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
