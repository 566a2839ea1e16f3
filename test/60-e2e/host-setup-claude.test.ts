import t, { type Test } from 'tap';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LAUNCHER, backupsOf, installFakeClaude, launchEntry, setupSandbox } from '../helpers/host-setup.js';

const TOOL_ORDER = ['memory_search', 'memory_get', 'memory_store', 'memory_update', 'memory_status'];
type Entry = { command: string; args: string[] };
const userEntry = (path: string) =>
  (JSON.parse(readFileSync(path, 'utf8')) as { mcpServers: Record<string, Entry> }).mcpServers.factlane!;
const OWN_SETTINGS =
  `${JSON.stringify({ numStartups: 3, mcpServers: { other: { type: 'stdio', command: '/usr/bin/other', args: [] } } }, null, 2)}\n`;

function claudeBox(t: Test) {
  const box = setupSandbox(t.testdir());
  box.env.FAKE_CLAUDE_LOG = join(box.root, 'claude.log');
  const calls = installFakeClaude(box.bin, box.env.FAKE_CLAUDE_LOG);
  return { ...box, calls };
}

t.test('claude-code on the PATH: claude mcp add --scope user, a backup, a no-op rerun, and the entry starts ' +
  'FactLane', async (t) => {
  const box = claudeBox(t);
  writeFileSync(box.claudeConfig, OWN_SETTINGS);
  const result = box.run(['claude-code', '--write-profile', 'delegated-candidate']);
  t.equal(result.status, 0, result.stderr);
  const args = ['--db', box.defaultDb, '--host-id', 'claude-code', '--write-profile', 'delegated-candidate'];
  t.same(
    box.calls(), [['mcp', 'add', '--scope', 'user', 'factlane', '--', LAUNCHER, ...args]], 'exactly one claude call',
  );
  const [backup, ...more] = backupsOf(box.claudeConfig);
  t.same(more, []);
  t.equal(readFileSync(backup!, 'utf8'), OWN_SETTINGS, 'the backup is the file before claude changed it');
  t.equal(result.stdout, `factlane setup: claude-code configured through claude mcp add --scope user (user entry ` +
    `factlane in ${box.claudeConfig}); the previous file is kept as ${backup}\n`);
  t.same(userEntry(box.claudeConfig), { type: 'stdio', command: LAUNCHER, args, env: {} });

  const before = box.snapshot();
  const again = box.run(['claude-code', '--write-profile', 'delegated-candidate']);
  t.equal(again.status, 0);
  t.equal(again.stdout, `factlane setup: claude-code is already configured (user entry factlane ` +
    `in ${box.claudeConfig}); nothing changed\n`);
  t.equal(box.calls().length, 1, 'claude not run again');
  t.same(box.snapshot(), before, 'nothing changed, no backup');

  const server = await launchEntry(userEntry(box.claudeConfig), box.home);
  t.same(server.tools, TOOL_ORDER);
  t.match(server.status, {
    launcher: { write_profile: 'delegated-candidate' }, audit: { host_binding: { host_id: 'claude-code' } },
  });
  t.same(server.exit, { code: 0, signal: null });
  t.same(server.kills, []);
});

t.test('claude-code: a different entry is refused without --force; --force removes it, then adds it back with the ' +
  'keys the user added', async (t) => {
  const box = claudeBox(t);
  const oldEntry = {
    type: 'stdio', command: '/old/factlane', args: ['--host-id', 'x'], env: { OLLAMA_X: '1' }, timeout: 5000,
  };
  const old = `${JSON.stringify({ mcpServers: { factlane: oldEntry } }, null, 2)}\n`;
  writeFileSync(box.claudeConfig, old);
  const before = box.snapshot();
  const refused = box.run(['claude-code']);
  t.equal(refused.status, 1);
  t.equal(refused.stdout, '');
  t.equal(refused.stderr, `factlane setup: TARGET_EXISTS: ${box.claudeConfig} already has a different user-scope MCP ` +
    `server factlane; left as it was: rerun with --force to replace it\n`);
  t.same(box.calls(), [], 'claude never ran');
  t.same(box.snapshot(), before, 'untouched');

  const forced = box.run(['claude-code', '--force']);
  t.equal(forced.status, 0, forced.stderr);
  const args = ['--db', box.defaultDb, '--host-id', 'claude-code'];
  const replaced = { ...oldEntry, type: 'stdio', command: LAUNCHER, args };
  t.same(box.calls(), [
    ['mcp', 'remove', '--scope', 'user', 'factlane'],
    ['mcp', 'add-json', '--scope', 'user', 'factlane', JSON.stringify(replaced)],
  ]);
  t.match(
    forced.stdout,
    /^factlane setup: claude-code entry replaced through claude mcp add-json --scope user .*; the previous file is kept as /,
  );
  t.equal(readFileSync(backupsOf(box.claudeConfig)[0]!, 'utf8'), old, 'the backup is the old file');
  t.same(userEntry(box.claudeConfig), replaced, 'command and args replaced; env and timeout kept (docs/hosts.md)');
});

t.test('claude-code: a failing claude, a claude that wrote nothing, or an unreadable .claude.json exit ' +
  '1', async (t) => {
  const box = claudeBox(t);
  const failed = box.run(['claude-code'], { FAKE_CLAUDE_MODE: 'fail' });
  t.equal(failed.status, 1);
  t.equal(failed.stderr, 'factlane setup: VERIFY_FAILED: claude mcp add exited with 1: Error: the fake claude was ' +
    'told to fail\n');
  t.equal(failed.stdout, '');

  const silent = box.run(['claude-code'], { FAKE_CLAUDE_MODE: 'noop' });
  t.equal(silent.status, 1);
  t.match(
    silent.stderr,
    /^factlane setup: VERIFY_FAILED: claude mcp add succeeded but \S+\.claude\.json has no matching user entry factlane; check with claude mcp get factlane\n$/,
  );

  writeFileSync(box.claudeConfig, '{"mcpServers": {"secret-token-here": ');
  const before = box.snapshot();
  const calls = box.calls().length;
  const broken = box.run(['claude-code', '--force']);
  t.equal(broken.status, 1);
  t.equal(broken.stderr, `factlane setup: VERIFY_FAILED: ${box.claudeConfig} does not parse as JSON (not valid ` +
    `JSON); it was left as it was: fix it or move it away, then rerun\n`);
  t.notMatch(broken.stderr, /secret-token/, 'the file content is never quoted');
  t.equal(box.calls().length, calls, 'claude never ran');
  t.same(box.snapshot(), before, 'untouched');

  writeFileSync(box.claudeConfig, JSON.stringify({ mcpServers: { factlane: { command: '/old', args: [] } } }));
  const afterRemove = box.run(['claude-code', '--force'], { FAKE_CLAUDE_MODE: 'fail' });
  t.equal(afterRemove.status, 1);
  t.match(
    afterRemove.stderr,
    /^factlane setup: VERIFY_FAILED: claude mcp remove exited with 1: .*; the previous file is kept as \S+\.claude\.json\.factlane-backup-\d{8}T\d{6}Z\n$/,
  );
});

t.test('claude-code --force over an http entry: a stdio entry, without its url and headers, keeping env', async (t) => {
  const box = claudeBox(t);
  const old = { type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { 'X-Team': 'a' }, env: { K: 'v' } };
  writeFileSync(box.claudeConfig, JSON.stringify({ mcpServers: { factlane: old } }));
  const forced = box.run(['claude-code', '--force']);
  t.equal(forced.status, 0, forced.stderr);
  t.same(userEntry(box.claudeConfig), {
    type: 'stdio', env: { K: 'v' }, command: LAUNCHER, args: ['--db', box.defaultDb, '--host-id', 'claude-code'],
  });
});

t.test('claude-code --force: when the add fails after the remove, the previous entry is put back as it ' +
  'was', async (t) => {
  const box = claudeBox(t);
  const old = {
    type: 'stdio', command: '/old/factlane', args: ['--host-id', 'claude-code'], env: { TOKEN_FILE: '/x' },
  };
  writeFileSync(box.claudeConfig, JSON.stringify({ mcpServers: { factlane: old } }));
  const result = box.run(['claude-code', '--force'], { FAKE_CLAUDE_MODE: 'fail-add' });
  t.equal(result.status, 1);
  t.match(
    result.stderr,
    /^factlane setup: VERIFY_FAILED: claude mcp add-json exited with 1: .*; the previous entry was put back\n$/,
  );
  t.same(JSON.parse(readFileSync(box.claudeConfig, 'utf8')).mcpServers.factlane, old, 'the old entry, env included');
  // When the put-back fails too: the way back is named, without the entry's env values (tokens) on the terminal.
  const secret = { ...old, env: { API_TOKEN: 'tok-do-not-print' } };
  writeFileSync(box.claudeConfig, JSON.stringify({ mcpServers: { factlane: secret } }));
  const lost = box.run(['claude-code', '--force'], { FAKE_CLAUDE_MODE: 'fail-adds' });
  t.equal(lost.status, 1);
  t.match(lost.stderr, new RegExp('the previous entry could not be put back: restore it with claude mcp add-json '
    + "--scope user factlane '<its JSON>', taken from the kept file; the previous file is kept as .*factlane-backup-"));
  t.notMatch(lost.stderr, 'tok-do-not-print', 'no env value printed');
});

t.test('claude-code --print shows the remove line first when a different entry is there, and says the real run '
  + 'would refuse', async (t) => {
  const box = setupSandbox(t.testdir());
  writeFileSync(box.claudeConfig, JSON.stringify({ mcpServers: { factlane: { command: '/old', args: [] } } }));
  const before = box.snapshot();
  const printed = box.run(['claude-code', '--print']);
  t.equal(printed.status, 0, printed.stderr);
  t.match(printed.stdout, /^claude mcp remove --scope user factlane\nclaude mcp add --scope user factlane -- /);
  t.equal(printed.stderr, `factlane setup: ${box.claudeConfig} already has a different MCP server entry factlane: `
    + 'without --print this command would refuse; add --force to replace it (the remove line above drops its other '
    + 'keys, such as env; --force keeps them)\n');
  t.equal(box.run(['claude-code', '--print', '--force']).stderr, '', 'no note with --force');
  t.same(box.snapshot(), before, 'nothing changed');
  writeFileSync(box.claudeConfig, '{}');
  t.equal(box.run(['claude-code', '--print']).stderr, '', 'no note without an entry');
});

t.test('claude-code: a claude that cannot run, or a .claude.json of the wrong shape, exit 1 and change ' +
  'nothing', async (t) => {
  const box = setupSandbox(t.testdir());
  writeFileSync(join(box.bin, 'claude'), '#!/nonexistent/interpreter\n');
  chmodSync(join(box.bin, 'claude'), 0o755);
  const unrunnable = box.run(['claude-code']);
  t.equal(unrunnable.status, 1);
  t.equal(unrunnable.stderr, 'factlane setup: VERIFY_FAILED: claude mcp add could not run (ENOENT)\n');
  for (const [text, detail] of [
    ['[]', 'the top level is not an object'], ['{"mcpServers": []}', 'mcpServers is not an object'],
  ] as const) {
    writeFileSync(box.claudeConfig, text);
    const before = box.snapshot();
    const result = box.run(['claude-code', '--force']);
    t.equal(result.status, 1);
    t.equal(result.stderr, `factlane setup: VERIFY_FAILED: ${box.claudeConfig} does not parse as a Claude Code ` +
      `config (${detail}); it was left as it was: fix it or move it away, then rerun\n`);
    t.same(box.snapshot(), before, 'untouched');
  }
});

t.test('claude-code not on the PATH: the exact command is printed, exit 0, nothing changed', async (t) => {
  const box = setupSandbox(t.testdir());
  const before = box.snapshot();
  const result = box.run(['claude-code', '--db', '/data/my facts.sqlite3', '--project-id', 'proj-1']);
  t.equal(result.status, 0, result.stderr);
  t.equal(result.stderr, '');
  t.equal(result.stdout, [
    'factlane setup: claude is not on the PATH, so nothing was changed; to configure Claude Code, run:',
    `  claude mcp add --scope user factlane -- ${LAUNCHER} --db '/data/my facts.sqlite3' --host-id claude-code ` +
      `--project-id proj-1`,
    '',
  ].join('\n'));
  t.same(box.snapshot(), before, 'nothing created');

  writeFileSync(box.claudeConfig, JSON.stringify({ mcpServers: { factlane: { command: '/old', args: [] } } }));
  const kept = box.snapshot();
  // A different entry needs --force here too: the commands printed would remove it.
  const refused = box.run(['claude-code']);
  t.equal(refused.status, 1);
  t.match(
    refused.stderr,
    /^factlane setup: TARGET_EXISTS: .* already has a different user-scope MCP server factlane; left as it was: rerun with --force/,
  );
  t.equal(refused.stdout, '', 'no command to run');
  t.same(box.snapshot(), kept, 'untouched');
  const different = box.run(['claude-code', '--force']);
  t.equal(different.status, 0);
  t.match(
    different.stdout, /run:\n {2}claude mcp remove --scope user factlane\n {2}claude mcp add --scope user factlane -- /,
    'remove first',
  );

  writeFileSync(box.claudeConfig, JSON.stringify(
    { mcpServers: { factlane: { command: LAUNCHER, args: ['--db', box.defaultDb, '--host-id', 'claude-code'] } } },
  ));
  const same = box.run(['claude-code']);
  t.equal(same.status, 0);
  t.match(same.stdout, /^factlane setup: claude-code is already configured/);

  const configDir = join(box.root, 'claude-config');
  const elsewhere = box.run(['claude-code'], { CLAUDE_CONFIG_DIR: configDir });
  t.match(
    elsewhere.stdout, /^factlane setup: claude is not on the PATH/, 'CLAUDE_CONFIG_DIR moves the file claude reads',
  );
});
