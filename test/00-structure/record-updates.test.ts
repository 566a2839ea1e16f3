import t from 'tap';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT, typeScriptFiles } from '../helpers/storage.js';

// A record's stored token count (docs/decisions/0036-record-token-counts.md) covers every public field but four, and is
// right only while no update rewrites a covered field of a record in place. This test pins the in-place updates of
// adapter_records that the product has: a new one that writes a public field fails here, and its author decides whether
// the count must go (as the purge deletes it) or the field joins the changing pieces of token-measure.ts.

/** Where each in-place update is, and what it may write. */
const ALLOWED: Record<string, RegExp> = {
  // A supersede and a compaction move the lifecycle: a changing piece, added by the reader.
  'src/storage/record-repository.ts': /^\{ lifecycle_state: 'SUPERSEDED' \}$/,
  'src/storage/compaction-repository.ts': /^\{ lifecycle_state: 'HISTORICAL' \}$/,
  // The recovery tombstone: purgeRecord deletes the count in the same transaction.
  'src/storage/recovery-repository.ts': /^tombstone$/,
};
/** The one raw-SQL update: reembed's embedding provenance, which is not public. */
const RAW_UPDATE = new RegExp('UPDATE adapter_records SET embedding_profile_id = \\$\\{[^}]+\\},\\s*'
  + 'embedding_model_digest = \\$\\{[^}]+\\},\\s*embedding_output_dimension = \\$\\{[^}]+\\}');

t.test('every in-place update of adapter_records writes only what the stored token counts allow', async (t) => {
  const found: string[] = [];
  for (const file of typeScriptFiles(join(REPO_ROOT, 'src'))) {
    const rel = relative(REPO_ROOT, file);
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/updateTable\('adapter_records'\)\s*\.set\(([^)]*)\)/g)) {
      found.push(rel);
      t.match(match[1]!.trim(), ALLOWED[rel] ?? /^(?!)/, `${rel}: .set(${match[1]!.trim()})`);
    }
    for (const match of text.matchAll(/UPDATE adapter_records\b[^`]*/gi)) {
      found.push(`${rel} (raw)`);
      t.match(match[0], RAW_UPDATE, `${rel}: raw ${match[0].slice(0, 60)}…`);
    }
  }
  t.strictSame(found.sort(), [
    'src/storage/compaction-repository.ts', 'src/storage/record-repository.ts', 'src/storage/recovery-repository.ts',
    'src/storage/reembed-repository.ts (raw)',
  ], 'the in-place updates the product has');
});
