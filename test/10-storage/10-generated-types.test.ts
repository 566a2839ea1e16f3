import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/storage.js';

// The codegen script reads migrations through the built package; the build is part of `npm ci`.
const built = existsSync(join(REPO_ROOT, 'dist/src/storage/migration-files.js'));
t.test('generated/db.ts matches migrations/', { skip: built ? false : 'run npm run build first' }, async (t) => {
  const result = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts/codegen.mjs'), '--check'],
    { encoding: 'utf8', cwd: REPO_ROOT });
  t.equal(result.status, 0, result.stderr);
  t.match(result.stderr, /matches/);
});
