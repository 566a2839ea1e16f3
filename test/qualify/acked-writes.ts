import { auditFile } from '../../src/maintenance/audit-operation.js';
import { RawDatabase, SHIPPED_MIGRATIONS, sqliteVec } from '../helpers/storage.js';
import type { PublicRecord } from './server-fleet.js';

// The ledger of acknowledged writes and the checks a part runs on a database file: every acknowledged write at its
// revision, PRAGMA integrity_check, the FTS5 integrity-check, and the lineage audit.

/** One acknowledged write: the record an OK envelope named. */
export interface AckedWrite {
  readonly record_id: string;
  readonly memory_id: string;
  readonly revision: number;
  readonly fact: string;
}

/** Every write an OK envelope acknowledged, in order. */
export class AckedWrites {
  readonly #writes: AckedWrite[] = [];

  /** Records the first result of an OK write envelope. */
  add(record: PublicRecord): void {
    this.#writes.push(
      { record_id: record.record_id, memory_id: record.memory_id, revision: record.revision, fact: record.fact },
    );
  }

  get size(): number {
    return this.#writes.length;
  }

  /** The writes acknowledged so far (a copy): what a backup or copy taken now must hold. */
  snapshot(): readonly AckedWrite[] {
    return [...this.#writes];
  }

  all(): readonly AckedWrite[] {
    return this.#writes;
  }
}

/**
 * The acknowledged writes missing from `dbPath` (read on a raw read-only connection): no row with the record_id,
 * or one with another memory_id, revision or fact.
 */
export function lostWrites(dbPath: string, writes: readonly AckedWrite[]): number {
  const db = new RawDatabase(dbPath, { readonly: true });
  try {
    const find = db.prepare('SELECT memory_id, revision, fact FROM adapter_records WHERE record_id = ?');
    let lost = 0;
    for (const write of writes) {
      const row = find.get(write.record_id) as { memory_id: string; revision: number; fact: string } | undefined;
      if (
        row === undefined
          || row.memory_id !== write.memory_id || row.revision !== write.revision || row.fact !== write.fact
      ) lost += 1;
    }
    return lost;
  } finally {
    db.close();
  }
}

/** What the integrity checks of one file found: failures (0 or more) and the names of the failing checks. */
export interface IntegrityResult {
  readonly failures: number;
  readonly failed: readonly string[];
}

/**
 * PRAGMA integrity_check on a read-only connection, then the FTS5 `integrity-check` command, which SQLite runs as
 * an INSERT and so needs a read-write connection: run it only while no FactLane process writes the file (it
 * writes nothing, and no fence fires, since fact_fts is a virtual table).
 */
export function integrityOf(dbPath: string): IntegrityResult {
  const failed: string[] = [];
  const db = new RawDatabase(dbPath);
  try {
    sqliteVec.load(db);
    const rows = db.prepare('PRAGMA integrity_check').pluck().all() as string[];
    if (rows.length !== 1 || rows[0] !== 'ok') failed.push('integrity_check');
    try {
      db.prepare("INSERT INTO fact_fts (fact_fts, rank) VALUES ('integrity-check', 1)").run();
    } catch {
      failed.push('fts_integrity_check');
    }
  } finally {
    db.close();
  }
  return { failures: failed.length, failed };
}

/** What the lineage audit of one file found: the sum of the failing checks' counts, and their names. */
export interface AuditResult {
  readonly findings: number;
  readonly failed: readonly string[];
}

/**
 * `factlane-admin audit` in process (auditFile against the shipped migrations): lineage L1-L10, fences, schema,
 * quick_check.
 */
export function auditOf(dbPath: string): AuditResult {
  const report = auditFile(dbPath, SHIPPED_MIGRATIONS);
  const failing = report.checks.filter((check) => check.status === 'FAIL');
  return {
    findings: failing.reduce((sum, check) => sum + Math.max(1, check.count), 0),
    failed: failing.map((check) => check.name),
  };
}
