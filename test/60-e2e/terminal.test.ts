import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { FACTLANE_BIN } from '../helpers/mcp.js';

// util-linux `script` gives the launcher a real terminal on stdin, as when a person runs it by hand.
const hasScript = spawnSync('script', ['--version']).status === 0;

t.test('run by hand from a terminal it says what it is on stderr and quits on Ctrl-D', {
  skip: hasScript ? false : 'util-linux script not installed',
}, async (t) => {
  const dbPath = join(t.testdir(), 'x.sqlite3');
  const child = spawn(
    'script', ['-qec', `${process.execPath} ${FACTLANE_BIN} --db ${dbPath} --host-id me`, '/dev/null'],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk) => { output += chunk; });
  // Send Ctrl-D once the notice is on screen.
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no notice; saw: ${output}`)), 20_000);
    child.stdout.on('data', () => {
      if (output.includes('Ctrl-D')) { clearTimeout(timer); resolve(); }
    });
  });
  child.stdin.write('\u0004');
  const [code] = await once(child, 'exit');
  t.equal(code, 0, 'exit 0 on Ctrl-D');
  t.match(output, /speaks MCP on stdio/);
  t.match(output, /profile local-hash-384/);
  t.match(output, /factlane --help for a host configuration/);
  t.notMatch(output, /"jsonrpc"/, 'no MCP frame was written');
  t.ok(existsSync(dbPath));
});
