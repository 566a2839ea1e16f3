import {
  ELIGIBLE_AUDIT_QUERY, ELIGIBLE_AUDIT_QUERY_SCHEMA_2, ELIGIBLE_AUDIT_QUERY_SINCE_SCHEMA, LINEAGE_AUDIT_QUERIES,
  TOKEN_COUNTS_AUDIT_QUERY,
} from '@factlane/schema';
import { searchText } from '../core/text.js';
import type { SqliteConnection } from './native.js';
import { onOneSnapshot } from './read-snapshot.js';
import { floatVector } from './eligible-vectors.js';
import { damagedVectorTables, vectorDamageText } from './schema-inspection.js';
import { simhashCode } from './simhash-projection.js';
import { sqliteCode } from './sqlite-errors.js';
import type { RecordRow } from './record-rows.js';
import type { RecordRecounter } from './token-count-repository.js';

/** One audit check: PASS/FAIL, how many violations, and up to 20 samples (record ids, or table:rowid). */
export interface AuditCheck {
  readonly name: string;
  readonly status: 'PASS' | 'FAIL';
  readonly count: number;
  readonly samples: readonly string[];
}

const MAX_SAMPLES = 20;

function checkOf(name: string, samples: readonly string[]): AuditCheck {
  const status = samples.length === 0 ? 'PASS' : 'FAIL';
  return { name, status, count: samples.length, samples: samples.slice(0, MAX_SAMPLES) };
}

/**
 * Runs the schema package's lineage queries on a read-only connection with sqlite-vec loaded; on a schema with the
 * eligible vector layout also `eligible_forms` (L10 for that layout), which recomputes every SimHash code from its
 * float vector besides ELIGIBLE_AUDIT_QUERY (from schema 3 on; the schema-2 rule for a database at schema 2); on a
 * schema with stored token counts also `token_counts` (TOKEN_COUNTS_AUDIT_QUERY), which with `recount` also
 * recounts every stored count (decision 0036). `progress` hears each check's name as it begins and the check as it
 * is done, with how many are done.
 */
export function runLineageAudit(
  connection: SqliteConnection, schemaVersion: number, recount?: RecordRecounter, progress: LineageProgress = {},
): AuditCheck[] {
  const unsafe = unsafeToQuery(connection);
  const samplesOf = (query: string) =>
    unsafe(query) ?? readSamples(() => connection.prepare(query).pluck().all() as string[]);
  const checks: AuditCheck[] = [];
  const done = (check: AuditCheck) => {
    checks.push(check);
    progress.checked?.(check, checks.length);
  };
  for (const [name, query] of Object.entries(LINEAGE_AUDIT_QUERIES)) {
    progress.starting?.(name);
    const samples = samplesOf(query);
    if (name !== 'derived_state') {
      done(checkOf(name, samples));
      continue;
    }
    // STORAGE.md §4.4 and §5: fact_fts holds search_text(fact), and a raw writer's change to it is found here. Both
    // name record ids: one sorted list, each id once.
    const text = readSamples(() => wrongSearchText(connection));
    done(checkOf(name, [...new Set([...samples, ...text])].sort()));
  }
  const table = connection.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  if (table.get('eligible_vectors') !== undefined) {
    progress.starting?.('eligible_forms');
    const since = schemaVersion >= ELIGIBLE_AUDIT_QUERY_SINCE_SCHEMA;
    const rule = since ? ELIGIBLE_AUDIT_QUERY : ELIGIBLE_AUDIT_QUERY_SCHEMA_2;
    // The rule reads every table wrongCodes reads: when it cannot be run, neither can wrongCodes.
    const samples = samplesOf(rule);
    const unreadable = samples[0]?.startsWith(UNREADABLE) === true;
    const codes = unreadable ? [] : readSamples(() => wrongCodes(connection));
    done(checkOf('eligible_forms', [...samples, ...codes]));
  }
  if (table.get('record_token_counts') !== undefined) {
    progress.starting?.('token_counts');
    const counts = recount === undefined ? [] : readSamples(() => wrongTokenCounts(connection, recount));
    done(checkOf('token_counts', [...samplesOf(TOKEN_COUNTS_AUDIT_QUERY), ...counts]));
  }
  return checks;
}

/** What runLineageAudit tells as it goes: a check's name as it begins, and the check once done. */
export interface LineageProgress {
  readonly starting?: (name: string) => void;
  readonly checked?: (check: AuditCheck, done: number) => void;
}

/** How a sample that is an SQLite error, not a violation, begins (readSamples). */
const UNREADABLE = 'unreadable: ';

/**
 * For a query text, the one sample that says it cannot be run, when it names a vec0 table that lost a shadow table
 * (damagedVectorTables: sqlite-vec could crash the process on it); undefined when the query is safe to run.
 */
function unsafeToQuery(connection: SqliteConnection): (query: string) => string[] | undefined {
  const damaged = damagedVectorTables(connection);
  return (query) => {
    const hit = damaged.filter((d) => new RegExp(`\\b${d.table}\\b`).test(query));
    return hit.length === 0 ? undefined : [`${UNREADABLE}${vectorDamageText(hit)}`];
  };
}

/**
 * What `read` finds; or, when SQLite cannot run it (a raw writer deleted rows of a vec0 shadow table, or dropped one),
 * one sample naming the error: the check FAILs, and the audit goes on to report every other check (exit 3, not 1).
 */
function readSamples(read: () => string[]): string[] {
  try {
    return read();
  } catch (error) {
    if (sqliteCode(error) === undefined) throw error;
    return [`${UNREADABLE}${(error as Error).message}`];
  }
}

/** The record id of every record whose FTS row does not hold search_text(fact): the normalisation is not SQL. */
function wrongSearchText(connection: SqliteConnection): string[] {
  const wrong: string[] = [];
  const rows = connection.prepare(`SELECT r.record_id, r.fact, f.search_text FROM adapter_records r
    JOIN fact_fts f ON f.rowid = r.row_id ORDER BY r.row_id`);
  for (const row of rows.iterate() as Iterable<{ record_id: string; fact: unknown; search_text: unknown }>) {
    // A raw writer can store a BLOB in the TEXT column: a finding, not a fault of the audit.
    if (typeof row.fact !== 'string' || row.search_text !== searchText(row.fact)) wrong.push(row.record_id);
  }
  return wrong;
}

/** `eligible_codes:ROWID` for every stored code that is not the SimHash of its eligible float vector. */
function wrongCodes(connection: SqliteConnection): string[] {
  const code = connection.prepare('SELECT simhash_v1 FROM eligible_codes WHERE rowid = ?').pluck();
  const wrong: string[] = [];
  const rows = connection.prepare('SELECT row_id, embedding FROM eligible_vectors ORDER BY row_id').iterate();
  for (const row of rows as Iterable<{ row_id: number; embedding: Buffer }>) {
    const stored = code.get(BigInt(row.row_id)) as Buffer | undefined;
    const expected = Buffer.from(simhashCode(floatVector(row.embedding)));
    // A missing code is named by ELIGIBLE_AUDIT_QUERY already.
    if (stored !== undefined && !expected.equals(stored)) wrong.push(`eligible_codes:${row.row_id}`);
  }
  return wrong;
}

/**
 * The record id of every record whose stored count is not `recount` of its row: a wrong number, or a count stored
 * for a record whose text does not count by pieces. QUARANTINED records are named by TOKEN_COUNTS_AUDIT_QUERY.
 */
function wrongTokenCounts(connection: SqliteConnection, recount: RecordRecounter): string[] {
  const wrong: string[] = [];
  const rows = connection.prepare(`SELECT r.*, t.fixed_tokens AS stored_fixed_tokens FROM adapter_records r
    JOIN record_token_counts t ON t.row_id = r.row_id WHERE r.lifecycle_state != 'QUARANTINED' ORDER BY r.row_id`);
  for (const row of rows.iterate() as Iterable<RecordRow & { stored_fixed_tokens: number }>) {
    if (recount(row) !== row.stored_fixed_tokens) wrong.push(row.record_id);
  }
  return wrong;
}

/** Eligible forms (schema 2) whose record is gone: vector orphans of the eligible tables. */
const ELIGIBLE_ORPHANS_QUERY = `SELECT 'eligible_vectors:' || e.row_id FROM eligible_vectors e
    WHERE e.row_id NOT IN (SELECT row_id FROM adapter_records)
  UNION ALL SELECT 'eligible_codes:' || c.rowid FROM eligible_codes c
    WHERE c.rowid NOT IN (SELECT row_id FROM adapter_records)`;

/** The health readings housekeeping takes before and after compaction (OPERATIONS.md §3 steps 4-6). */
export interface HealthReading {
  /** FTS, vector and eligible-form rows without their record (`no_orphans` and the eligible tables). */
  readonly vectorOrphans: number;
  /**
   * Records in a memory with two live records, plus records with two successors (`no_current_forks`,
   * `single_successor`).
   */
  readonly currentLineageForks: number;
  readonly quickCheck: 'PASS' | 'FAIL';
  readonly integrityCheck: 'PASS' | 'FAIL';
}

/**
 * Reads the health of a whole database on a connection with sqlite-vec loaded; read-only. A reading SQLite cannot
 * take (a raw writer dropped or emptied a vec0 shadow table) fails integrity, so housekeeping blocks on it
 * (BLOCKED_DATABASE_INTEGRITY) instead of stopping with an internal error.
 */
export function readHealth(connection: SqliteConnection): HealthReading {
  return onOneSnapshot(connection, () => healthOf(connection));
}

function healthOf(connection: SqliteConnection): HealthReading {
  let unreadable = false;
  const unsafe = unsafeToQuery(connection);
  const violations = (query: string) => {
    const samples = unsafe(query) ?? readSamples(() => connection.prepare(query).pluck().all() as string[]);
    if (!samples[0]?.startsWith(UNREADABLE)) return samples.length;
    unreadable = true;
    return 0;
  };
  const answersOk = (pragma: string) => {
    const rows = readSamples(() => connection.prepare(pragma).pluck().all() as string[]);
    return rows.length === 1 && rows[0] === 'ok' ? 'PASS' : 'FAIL';
  };
  const vectorOrphans = violations(LINEAGE_AUDIT_QUERIES.no_orphans) + violations(ELIGIBLE_ORPHANS_QUERY);
  const currentLineageForks = violations(LINEAGE_AUDIT_QUERIES.no_current_forks)
    + violations(LINEAGE_AUDIT_QUERIES.single_successor);
  const integrityCheck = answersOk('PRAGMA integrity_check');
  const quickCheck = answersOk('PRAGMA quick_check');
  return { vectorOrphans, currentLineageForks, quickCheck, integrityCheck: unreadable ? 'FAIL' : integrityCheck };
}
