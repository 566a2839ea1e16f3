import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RELEASED_MIGRATIONS } from '@factlane/schema';
import { sha256Hex } from '../core/hashing.js';

/** One shipped migration file (STORAGE.md §12.1). */
export interface MigrationFile {
  readonly version: number;
  readonly name: string;
  readonly fileName: string;
  /** The file's text as shipped, before `{{VECTOR_DIMENSION}}` is substituted. */
  readonly sql: string;
  /** SHA-256 of the file's bytes as shipped. */
  readonly checksum: string;
}

/** Thrown for a migrations folder that breaks the file rules; a packaging defect, not a governed outcome. */
export class MigrationFileError extends Error {
  override name = 'MigrationFileError';
}

const FILE_NAME = /^(\d{4})_([a-z0-9]+(?:_[a-z0-9]+)*)\.sql$/;
const DIMENSION_PLACEHOLDER = '{{VECTOR_DIMENSION}}';
// Statements a migration may not contain: the runner owns the transaction and the connection settings.
const FORBIDDEN_STATEMENTS = new Set([
  'BEGIN', 'COMMIT', 'END', 'ROLLBACK', 'SAVEPOINT', 'RELEASE', 'PRAGMA', 'VACUUM', 'ATTACH', 'DETACH',
]);

/** Splits SQL into its statements' leading keywords, skipping comments, strings and trigger bodies. */
function statementKeywords(sql: string): string[] {
  const blanked = sql
    .replace(/--[^\n]*/g, ' ')
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/'(?:[^']|'')*'/g, "''")
    .replace(/"(?:[^"]|"")*"/g, '""');
  const keywords: string[] = [];
  let inTrigger = false;
  for (const raw of blanked.split(';')) {
    const words = raw.trim().toUpperCase().split(/\s+/).filter(Boolean);
    if (words.length === 0) continue;
    if (inTrigger) {
      // A trigger body ends at the `END` that follows one of its statements.
      if (words[0] === 'END') inTrigger = false;
      continue;
    }
    keywords.push(words[0]!);
    // CREATE [TEMP | TEMPORARY] TRIGGER: only then does a BEGIN open a body (a table named "trigger" does not).
    const kind = words[1] === 'TEMP' || words[1] === 'TEMPORARY' ? words[2] : words[1];
    const createsTrigger = words[0] === 'CREATE' && kind === 'TRIGGER';
    if (createsTrigger && words.includes('BEGIN')) inTrigger = true;
  }
  return keywords;
}

/** Throws MigrationFileError when `sql` contains transaction control, PRAGMA, VACUUM, ATTACH or DETACH. */
export function assertMigrationStatementsAllowed(fileName: string, sql: string): void {
  const forbidden = statementKeywords(sql).filter((keyword) => FORBIDDEN_STATEMENTS.has(keyword));
  if (forbidden.length > 0) {
    throw new MigrationFileError(`migration ${fileName} contains ${[...new Set(forbidden)].join(', ')}; migrations may `
      + `not control transactions or connections`);
  }
}

/**
 * Reads the shipped migrations from `dir`, in version order. Throws MigrationFileError for a misnamed
 * file, a gap or duplicate in the versions (they run 1…n), a forbidden statement, or a released version whose file
 * is not the released one (RELEASED_MIGRATIONS); a version past that list is one not released yet.
 */
export function loadMigrationFiles(dir: string): readonly MigrationFile[] {
  const files = readdirSync(dir).filter((name) => name.endsWith('.sql')).sort();
  const migrations = files.map((fileName, index) => {
    const match = FILE_NAME.exec(fileName);
    if (!match) throw new MigrationFileError(`migration file ${fileName} is not named NNNN_snake_case.sql`);
    const version = Number(match[1]);
    if (version !== index + 1)
      throw new MigrationFileError(`migration versions must run 1…n without gaps; found ${fileName} at position `
        + `${index + 1}`);
    const bytes = readFileSync(join(dir, fileName));
    const sql = bytes.toString('utf8');
    assertMigrationStatementsAllowed(fileName, sql);
    const checksum = sha256Hex(bytes);
    const released = RELEASED_MIGRATIONS[version - 1];
    if (released && (released.name !== match[2] || released.checksum !== checksum)) {
      throw new MigrationFileError(`migration ${fileName} is not the file this release shipped (its name or SHA-256 `
        + `differs from the released list, STORAGE.md §12.1); reinstall FactLane`);
    }
    return Object.freeze({ version, name: match[2]!, fileName, sql, checksum });
  });
  if (migrations.length === 0) throw new MigrationFileError('no migration files shipped');
  return Object.freeze(migrations);
}

/** The file's SQL with the vector dimension substituted (after the checksum, STORAGE.md §12.1). */
export function renderMigration(file: MigrationFile, vectorDimension: number): string {
  if (!Number.isInteger(vectorDimension) || vectorDimension < 1)
    throw new RangeError('vector dimension must be a positive integer');
  return file.sql.replaceAll(DIMENSION_PLACEHOLDER, String(vectorDimension));
}
