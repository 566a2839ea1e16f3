import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { openLocalHashEngine } from '../helpers/mcp.js';
import { REPO_ROOT } from '../helpers/storage.js';

// An operator pipes a report into a reader that stops early (`factlane-admin audit --db x | head -3`). The pipe is
// closed before the report is written: the command ends with its own exit code and prints nothing on stderr, where it
// used to die of an unhandled EPIPE with a stack trace.

const commands = [
  ['factlane-admin', ['audit']],
  ['factlane-admin', ['verify']],
  ['factlane-migrate', ['status']],
] as const;

for (const [bin, args] of commands) {
  t.test(`${bin} ${args.join(' ')} into a closed pipe: its exit code, a quiet stderr`, async (t) => {
    const dbPath = join(t.testdir(), 'db.sqlite3');
    await (await openLocalHashEngine(dbPath)).close();
    const child = spawn(process.execPath, [join(REPO_ROOT, 'dist/bin', `${bin}.js`), ...args, '--db', dbPath],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    // The reader goes away before the command writes a byte.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    const [code] = await once(child, 'exit');
    t.equal(code, 0, 'the exit code of a healthy, up-to-date database');
    t.equal(stderr, '', 'nothing on stderr');
  });
}
