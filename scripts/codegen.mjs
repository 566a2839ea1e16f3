// Regenerates generated/db.ts from migrations/ with kysely-codegen's programmatic API (its CLI cannot
// introspect vec0 tables). With --check, fails when the committed file differs. Runs against dist/.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { Kysely, SqliteDialect } from 'kysely';
import { generate, SqliteDialect as CodegenSqliteDialect } from 'kysely-codegen';
import { loadMigrationFiles, renderMigration } from '../dist/src/storage/migration-files.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const outFile = join(root, 'generated', 'db.ts');
const check = process.argv.includes('--check');

const scratchDir = mkdtempSync(join(tmpdir(), 'factlane-codegen-'));
const connection = new Database(join(scratchDir, 'scratch.sqlite3'));
sqliteVec.load(connection);
for (const file of loadMigrationFiles(join(root, 'migrations'))) connection.exec(renderMigration(file, 384));

const db = new Kysely({ dialect: new SqliteDialect({ database: connection }) });
const generated = await generate({
  db,
  dialect: new CodegenSqliteDialect(),
  // Shadow tables of fact_fts, fact_vec and eligible_codes and SQLite's own tables are internal to their modules.
  excludePattern: '(fact_fts_*|fact_vec_*|eligible_codes_*|sqlite_*)',
  overrides: {
    columns: {
      'fact_fts.search_text': 'string',
      'fact_vec.scope_key': 'string',
      // vec0 refuses REAL for rowid and is_current: bind BigInt.
      'fact_vec.rowid': 'bigint',
      'fact_vec.is_current': 'bigint',
      'fact_vec.embedding': 'Uint8Array | Float32Array',
      'eligible_codes.shard_key': 'string',
      'eligible_codes.rowid': 'bigint',
      // vec_bit(...) of the 96-byte SimHash code.
      'eligible_codes.simhash_v1': 'Uint8Array',
      'eligible_vectors.embedding': 'Uint8Array',
    },
  },
  outFile: null,
  print: false,
  logger: { debug() {}, error: console.error, info() {}, log() {}, success() {}, warn: console.error },
});
await db.destroy();
rmSync(scratchDir, { recursive: true, force: true });

if (check) {
  const committed = readFileSync(outFile, 'utf8');
  if (committed !== generated) {
    console.error('generated/db.ts is out of date with migrations/: run `npm run codegen` and commit the result');
    process.exit(1);
  }
  console.error('generated/db.ts matches migrations/');
} else {
  writeFileSync(outFile, generated);
  console.error('wrote generated/db.ts');
}
