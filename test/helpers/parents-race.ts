// Child of test/10-storage/17-durable-files.test.ts: waits for a shared start time, then creates the parents of many
// deep paths as fast as it can, beside other children doing the same; prints `ok` or the first error's code.
import { join } from 'node:path';
import { createPrivateParents } from '../../src/storage/durable-files.js';

const [root, startAt, count] = process.argv.slice(2);
while (Date.now() < Number(startAt)) { /* the start line */ }
try {
  for (let i = 0; i < Number(count); i += 1) {
    createPrivateParents(join(root!, `p${i}`, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'x.sqlite3'));
  }
  process.stdout.write('ok\n');
} catch (error) {
  process.stdout.write(`${(error as Error).message}\n`);
}
