import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/storage.js';

// dist/bin/ ships whole (package.json `files`), and chunk names carry a content hash: a build that left the chunks of
// earlier builds beside its own would ship them too. Every chunk must be reachable from an entry point.
t.test('every chunk in dist/bin is one the entry points load', async (t) => {
  const bin = join(REPO_ROOT, 'dist/bin');
  const chunks = readdirSync(join(bin, 'chunks'));
  const reached = new Set<string>();
  const visit = (text: string) => {
    for (const name of chunks) {
      if (!reached.has(name) && text.includes(`/${name}"`)) {
        reached.add(name);
        visit(readFileSync(join(bin, 'chunks', name), 'utf8'));
      }
    }
  };
  for (const entry of readdirSync(bin).filter((name) => name.endsWith('.js'))) {
    visit(readFileSync(join(bin, entry), 'utf8'));
  }
  t.ok(reached.size > 0, 'the entry points load chunks');
  t.same(chunks.filter((name) => !reached.has(name)), [], 'no chunk of an earlier build');
});
