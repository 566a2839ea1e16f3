import { foldKey } from '../core/text.js';
import type { SqliteConnection } from './native.js';
import type { RecordRow } from './record-rows.js';

// Where a recovery's target content still is (OPERATIONS.md §5.4-§5.6): whole-database reads for copies of the
// targets' facts, texts and blobs, before the purge commits and again after it.

/** What recovery looks for in rows other than the targets: folded facts, byte strings and vector blobs. */
export interface ContentNeedles {
  /** fold_key(fact) of each target: another record whose fact folds alike is a copy. */
  readonly foldKeys: ReadonlySet<string>;
  /** Target facts and search_text forms of 16 bytes or more, looked for inside text values. */
  readonly texts: readonly string[];
  /** Target float vectors and SimHash codes, looked for as whole blobs. */
  readonly blobs: readonly Buffer[];
}

/**
 * Every row holding target content (OPERATIONS.md §5.4 completeness, §5.5 and §5.6 verification): a record whose
 * fact folds to a target's, or any of whose text values contains a target text; an FTS row containing one; a vector,
 * eligible vector or code equal to a target blob. Rows of records `skip` names (by row_id) are left out. Returns
 * `table:rowid` samples; reads every row, so it costs one pass over the database.
 * §5.4 names the fact, search_text, tags, provenance and freshness; every text value is read, the `idempotency_key`
 * and the scope's ids too, because the residual byte scan of §5.6 reads the whole file: a target text in another
 * record's key passed the checks before the commit and failed that scan after it, on every rerun.
 */
export function rowsHoldingContent(
  connection: SqliteConnection, needles: ContentNeedles, skip: ReadonlySet<number> = new Set(),
): string[] {
  const found: string[] = [];
  const containsText = (value: string) => needles.texts.some((text) => value.includes(text));
  const records = connection.prepare('SELECT * FROM adapter_records').iterate() as Iterable<RecordRow>;
  for (const row of records) {
    if (skip.has(row.row_id)) continue;
    if (needles.foldKeys.has(foldKey(row.fact)) || textValues(row).some(containsText)) {
      found.push(`adapter_records:${row.row_id}`);
    }
  }
  const ftsRows = connection.prepare('SELECT rowid AS id, search_text AS text FROM fact_fts').iterate() as
    Iterable<{ id: number; text: string }>;
  for (const row of ftsRows) {
    if (!skip.has(row.id) && containsText(row.text)) found.push(`fact_fts:${row.id}`);
  }
  for (const doc of docsWithTermsHolding(connection, needles.texts)) {
    if (!skip.has(doc)) found.push(`fact_fts:${doc}`);
  }
  const blobTables = [
    ['fact_vec', 'SELECT rowid AS id, embedding AS blob FROM fact_vec'],
    ['eligible_vectors', 'SELECT row_id AS id, embedding AS blob FROM eligible_vectors'],
    ['eligible_codes', 'SELECT rowid AS id, simhash_v1 AS blob FROM eligible_codes'],
  ] as const;
  for (const [table, query] of blobTables) {
    for (const row of connection.prepare(query).iterate() as Iterable<{ id: number; blob: Buffer }>) {
      if (!skip.has(Number(row.id)) && needles.blobs.some((blob) => blob.equals(row.blob))) {
        found.push(`${table}:${row.id}`);
      }
    }
  }
  return [...new Set(found)];
}

/**
 * The FTS rows whose indexed terms hold one of `texts`. The index keeps the tokenizer's terms, not search_text:
 * unicode61 removes diacritics, so another record's "…nümmer" is indexed as a target's "…nummer", and the residual
 * byte scan of §5.6 finds that term in the file after the commit, on every rerun. Read through temporary fts5vocab
 * tables (one pass over the distinct terms, then the rows of those that hold a text), dropped again.
 */
function docsWithTermsHolding(connection: SqliteConnection, texts: readonly string[]): Set<number> {
  const docs = new Set<number>();
  if (texts.length === 0) return docs;
  connection.exec('CREATE VIRTUAL TABLE temp.recovery_fts_terms USING fts5vocab(main, fact_fts, row)');
  connection.exec('CREATE VIRTUAL TABLE temp.recovery_fts_places USING fts5vocab(main, fact_fts, instance)');
  try {
    // Each distinct term once, then the rows of the few that hold a text.
    const terms = connection.prepare('SELECT term FROM temp.recovery_fts_terms').pluck().iterate() as Iterable<string>;
    const holding = [...terms].filter((term) => texts.some((text) => term.includes(text)));
    const rowsOf = connection.prepare('SELECT DISTINCT doc FROM temp.recovery_fts_places WHERE term = ?').pluck();
    for (const term of holding) for (const doc of rowsOf.all(term) as number[]) docs.add(doc);
  } finally {
    connection.exec('DROP TABLE temp.recovery_fts_terms');
    connection.exec('DROP TABLE temp.recovery_fts_places');
  }
  return docs;
}

/**
 * Where a purge leaves `texts` (target texts the tombstones do not spell) although it removed every target row's
 * content: in the columns a tombstone keeps (its ids, scope and `idempotency_key`, §5.2) of the rows `targets` names,
 * in `adapter_meta`, and in the schema's text. Checked before the commit (§5.5): the residual byte scan of §5.6 would
 * find them in the file after it, on every rerun. Returns `table:rowid` (or `table:name`) samples.
 */
export function keptPlacesHoldingContent(
  connection: SqliteConnection, texts: readonly string[], targets: ReadonlySet<number>,
): string[] {
  const contains = (value: string) => texts.some((text) => value.includes(text));
  const found: string[] = [];
  const record = connection.prepare('SELECT * FROM adapter_records WHERE row_id = ?');
  for (const rowId of targets) {
    const row = record.get(rowId) as RecordRow | undefined;
    if (row !== undefined && textValues(row).some(contains)) found.push(`adapter_records:${rowId}`);
  }
  const named = (query: string, table: string) => {
    for (const row of connection.prepare(query).iterate() as Iterable<{ name: string; text: string | null }>) {
      if (row.text !== null && jsonStrings(row.text).some(contains)) found.push(`${table}:${row.name}`);
    }
  };
  named('SELECT key AS name, value AS text FROM adapter_meta', 'adapter_meta');
  named('SELECT name, sql AS text FROM sqlite_master', 'sqlite_master');
  return found;
}

/** Every text value of a record row, with the strings inside its JSON columns (stored there escaped). */
function textValues(row: RecordRow): string[] {
  return Object.values(row).flatMap((value) => (typeof value === 'string' ? jsonStrings(value) : []));
}

/** Every string value (and key) inside a JSON text, with the text itself; the text alone when it is not JSON. */
function jsonStrings(text: string): string[] {
  const strings = [text];
  const walk = (value: unknown): void => {
    if (typeof value === 'string') strings.push(value);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value !== null && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) {
        strings.push(key);
        walk(inner);
      }
    }
  };
  try {
    walk(JSON.parse(text));
  } catch {
    // Not JSON: the raw text was searched.
  }
  return strings;
}
