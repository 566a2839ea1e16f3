import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync, chownSync, closeSync, existsSync, lstatSync, mkdirSync, openSync, readFileSync, readdirSync, realpathSync,
  statSync, symlinkSync, writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { parse as parseYaml } from 'yaml';
import { FACTLANE_BIN } from '../helpers/mcp.js';
import { LAUNCHER, backupsOf, launchEntry, setupSandbox } from '../helpers/host-setup.js';

/** fs-ext for the test's own lock (the product reaches it through storage/native.ts). */
const fsExt: { flockSync(fd: number, flags: string): void } = createRequire(import.meta.url)('fs-ext');
const TOOL_ORDER = ['memory_search', 'memory_get', 'memory_store', 'memory_update', 'memory_status'];
const modeOf = (path: string) => statSync(path).mode & 0o777;
type Entry = { command: string; args: string[]; timeout?: number };
const codexEntry = (path: string) =>
  (parseToml(readFileSync(path, 'utf8')) as { mcp_servers: Record<string, Entry> }).mcp_servers.factlane!;
const hermesEntry = (path: string) =>
  (parseYaml(readFileSync(path, 'utf8')) as { mcp_servers: Record<string, Entry> }).mcp_servers.factlane!;

const CODEX_CONFIG = `# my codex settings
model = "o3"
temperature = 0.5

[mcp_servers.github]
command = "/usr/bin/github-mcp" # pinned
args = ["stdio"]

[projects."/home/me/src"]
trust_level = "trusted"
`;

const HERMES_CONFIG = `# Hermes settings, by hand
model: hermes-4   # the default model
mcp_servers:
  # the filesystem server
  files:
    command: /usr/bin/files-mcp
    args: [--root, /srv]
toolsets:
  - web
`;

t.test('codex: a new config.toml gets the entry with absolute paths, and the entry starts FactLane', async (t) => {
  const box = setupSandbox(t.testdir());
  const first = box.run(['codex']);
  t.equal(first.status, 0, first.stderr);
  t.equal(first.stderr, '');
  t.equal(first.stdout, `factlane setup: codex configured (new file): entry factlane in ${box.codexConfig}\n`);
  const entry = codexEntry(box.codexConfig);
  t.same(entry, { command: LAUNCHER, args: ['--db', box.defaultDb, '--host-id', 'codex'] }, 'default db, absolute');
  t.equal(modeOf(box.codexConfig), 0o600, 'a new config file is 0600');
  t.equal(modeOf(box.codexHome), 0o700, 'a new config directory is 0700');
  t.same(readdirSync(box.codexHome), ['config.toml'], 'no backup of a file that did not exist, no temp file left');

  const bytes = readFileSync(box.codexConfig);
  const mtime = statSync(box.codexConfig).mtimeMs;
  const again = box.run(['codex']);
  t.equal(again.status, 0);
  t.equal(again.stdout, `factlane setup: codex is already configured (entry factlane in ${box.codexConfig}); nothing `
    + `changed\n`);
  t.same(readFileSync(box.codexConfig), bytes, 'byte-identical');
  t.equal(statSync(box.codexConfig).mtimeMs, mtime, 'not even rewritten');
  t.same(backupsOf(box.codexConfig), [], 'no backup for a no-op');

  const server = await launchEntry(entry, box.home);
  t.same(server.tools, TOOL_ORDER);
  t.match(server.status, {
    status: 'OK', audit: { host_binding: { host_id: 'codex' } }, launcher: { write_profile: 'read-only' },
  });
  t.same(server.exit, { code: 0, signal: null }, 'exits 0 when its stdin closes');
  t.same(server.kills, [], 'the client never had to signal it');
  t.ok(existsSync(box.defaultDb), 'the server opened the configured database');
});

t.test('codex: other tables and values survive; comments stay in the backup only', async (t) => {
  const box = setupSandbox(t.testdir());
  mkdirSync(box.codexHome);
  writeFileSync(box.codexConfig, CODEX_CONFIG);
  chmodSync(box.codexConfig, 0o644);
  const result =
    box.run(['codex', '--db', 'state/f.sqlite3', '--write-profile', 'delegated-candidate', '--project-id', 'proj-1']);
  t.equal(result.status, 0, result.stderr);
  const [backup, ...more] = backupsOf(box.codexConfig);
  t.same(more, [], 'one backup');
  t.match(backup, /config\.toml\.factlane-backup-\d{8}T\d{6}Z$/);
  t.equal(result.stdout, `factlane setup: codex configured: entry factlane in ${box.codexConfig}; the previous file `
    + `is kept as ${backup}\n`);
  t.equal(readFileSync(backup!, 'utf8'), CODEX_CONFIG, 'the backup is the old file');
  t.equal(modeOf(backup!), 0o644, 'the backup keeps the mode');
  t.equal(modeOf(box.codexConfig), 0o644, 'the edited file keeps its mode');
  const written = parseToml(readFileSync(box.codexConfig, 'utf8'));
  const { factlane, ...otherServers } = written.mcp_servers as Record<string, unknown>;
  const { mcp_servers: _old, ...otherTop } = parseToml(CODEX_CONFIG);
  const { mcp_servers: _new, ...writtenTop } = written;
  t.same(writtenTop, otherTop, 'every other table and value is kept');
  t.same(
    otherServers, (parseToml(CODEX_CONFIG).mcp_servers as Record<string, unknown>), 'the other MCP servers are kept',
  );
  const db = join(box.cwd, 'state/f.sqlite3');
  t.same(factlane, { command: LAUNCHER, args: [
    '--db', db, '--host-id', 'codex', '--write-profile', 'delegated-candidate', '--project-id', 'proj-1',
  ] });
  t.notMatch(readFileSync(box.codexConfig, 'utf8'), /# my codex settings/, 'smol-toml drops comments (decision 0021)');

  const server = await launchEntry(factlane as Entry, box.home);
  t.same(server.tools, TOOL_ORDER);
  t.match(server.status, {
    launcher: { write_profile: 'delegated-candidate' }, audit: { host_binding: { host_id: 'codex' } },
  });
  t.match(JSON.stringify(server.status), /"project_id":"proj-1"/, 'the bound project reached the server');
  t.same(server.exit, { code: 0, signal: null });
  t.ok(existsSync(db), 'the relative --db was written absolute');
});

t.test('codex: a different entry is refused and kept; --force replaces it and keeps a backup equal to the old '
  + 'file', async (t) => {
  const box = setupSandbox(t.testdir());
  mkdirSync(box.codexHome);
  const old = `${CODEX_CONFIG}\n[mcp_servers.factlane]\ncommand = "/old/factlane"\nargs = ["--host-id", `
    + `"codex"]\nstartup_timeout_sec = 20\n`;
  writeFileSync(box.codexConfig, old);
  const before = box.snapshot();
  const refused = box.run(['codex']);
  t.equal(refused.status, 1);
  t.equal(refused.stdout, '');
  t.equal(refused.stderr, `factlane setup: TARGET_EXISTS: ${box.codexConfig} already has a different MCP server `
    + `entry factlane; left as it was: rerun with --force to replace it\n`);
  t.same(box.snapshot(), before, 'file untouched, no backup');
  // A dry run says the real one would refuse, instead of looking fine.
  const printed = box.run(['codex', '--print']);
  t.equal(printed.status, 0);
  t.match(printed.stdout, /^\[mcp_servers\.factlane\]\n/);
  t.equal(printed.stderr, `factlane setup: ${box.codexConfig} already has a different MCP server entry factlane: `
    + 'without --print this command would refuse; add --force to replace it\n');
  t.equal(box.run(['codex', '--print', '--force']).stderr, '', 'no note with --force');
  t.same(box.snapshot(), before, 'the dry runs change nothing');

  const forced = box.run(['codex', '--force']);
  t.equal(forced.status, 0, forced.stderr);
  const [backup] = backupsOf(box.codexConfig);
  t.equal(forced.stdout, `factlane setup: codex entry replaced: entry factlane in ${box.codexConfig}; the previous `
    + `file is kept as ${backup}\n`);
  t.equal(readFileSync(backup!, 'utf8'), old, 'the backup is the old file');
  t.same(codexEntry(box.codexConfig), {
    command: LAUNCHER, args: ['--db', box.defaultDb, '--host-id', 'codex'], startup_timeout_sec: 20,
  },
    'command and args replaced, the key the user added kept');
  t.equal(
    (parseToml(readFileSync(box.codexConfig, 'utf8')).mcp_servers as Record<string, unknown>).github !== undefined,
    true, 'others kept',
  );

  const second = box.run(['codex', '--force', '--write-profile', 'repo-verifier']);
  t.equal(second.status, 0, second.stderr);
  t.equal(
    backupsOf(box.codexConfig).length, 2, 'a second backup in the same second gets its own name, the first is kept',
  );
  t.equal(readFileSync(backup!, 'utf8'), old, 'the first backup is never overwritten');
});

t.test('codex: a setup holds its config directory\'s lock from read to write; of two at once, one refuses',
  async (t) => {
  // Without it both setups read the same file, both said configured, and the later rename dropped the other's entry.
  const box = setupSandbox(t.testdir());
  mkdirSync(box.codexHome);
  writeFileSync(box.codexConfig, CODEX_CONFIG);
  const once = (args: string[]) => new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, [FACTLANE_BIN, 'setup', 'codex', ...args],
      { cwd: box.cwd, env: box.env, stdio: 'ignore' });
    child.once('exit', (code) => resolve(code));
  });
  // Another setup holding the lock: this one waits, and writes nothing meanwhile.
  const held = openSync(box.codexHome, 'r');
  fsExt.flockSync(held, 'ex');
  let done = false;
  const waiting = once(['--write-profile', 'delegated-candidate']).then((code) => { done = true; return code; });
  await new Promise((resolve) => setTimeout(resolve, 1500));
  t.notOk(done, 'it waits for the lock');
  t.equal(readFileSync(box.codexConfig, 'utf8'), CODEX_CONFIG, 'and has written nothing');
  closeSync(held);
  t.equal(await waiting, 0, 'then configures');
  // Two at once: the second to take the lock reads the first's entry and refuses it without --force.
  writeFileSync(box.codexConfig, CODEX_CONFIG);
  const codes = await Promise.all([once(['--write-profile', 'delegated-candidate']), once(['--project-id', 'p1'])]);
  t.same([...codes].sort(), [0, 1], `one configured, one refused (${codes.join(', ')})`);
  const won = codes[0] === 0 ? ['--write-profile', 'delegated-candidate'] : ['--project-id', 'p1'];
  t.same(codexEntry(box.codexConfig).args.slice(-2), won, 'the file holds the entry of the one that said so');
});

t.test('codex: an unparsable file or a foreign mcp_servers is refused and left untouched', async (t) => {
  for (const [text, detail] of [
    ['model = \n', /does not parse as TOML \(Invalid TOML document: .* at line 1, column \d+\)/],
    ['mcp_servers = "x"\n', /does not parse as a Codex config \(mcp_servers is not a table\)/],
  ] as const) {
    const box = setupSandbox(t.testdir());
    mkdirSync(box.codexHome);
    writeFileSync(box.codexConfig, text);
    const before = box.snapshot();
    const result = box.run(['codex', '--force']);
    t.equal(result.status, 1);
    t.equal(result.stdout, '');
    t.match(result.stderr, /^factlane setup: VERIFY_FAILED: \S+config\.toml /);
    t.match(result.stderr, detail);
    t.match(result.stderr, /it was left as it was: fix it or move it away, then rerun\n$/);
    t.equal(result.stderr.split('\n').length, 2, 'one line');
    t.same(box.snapshot(), before, 'untouched, no backup, no temp file');
  }
});

t.test('a config that cannot be read or written is one BACKEND_UNAVAILABLE line, exit 1, nothing '
  + 'changed', async (t) => {
  const box = setupSandbox(t.testdir());
  writeFileSync(box.codexHome, 'a file where a directory should be\n');
  mkdirSync(box.hermesConfig, { recursive: true });
  const before = box.snapshot();
  const codex = box.run(['codex']);
  t.equal(codex.status, 1);
  t.equal(codex.stderr, `factlane setup: BACKEND_UNAVAILABLE: cannot write ${box.codexConfig} (ENOTDIR)\n`);
  const hermes = box.run(['hermes']);
  t.equal(hermes.status, 1);
  t.equal(hermes.stderr, `factlane setup: BACKEND_UNAVAILABLE: cannot read ${box.hermesConfig} (EISDIR)\n`);
  t.same(box.snapshot(), before, 'nothing changed, no temp file left');
});

t.test('a launcher that is not executable is refused: a host could not start it', async (t) => {
  const box = setupSandbox(t.testdir());
  const copy = join(box.root, 'unbuilt');
  mkdirSync(copy);
  writeFileSync(join(copy, 'factlane.js'), readFileSync(FACTLANE_BIN));
  chmodSync(join(copy, 'factlane.js'), 0o644);
  symlinkSync(join(dirname(FACTLANE_BIN), 'chunks'), join(copy, 'chunks'));
  symlinkSync(join(dirname(FACTLANE_BIN), 'factlane-server.cjs'), join(copy, 'factlane-server.cjs'));
  const before = box.snapshot();
  const result = spawnSync(
    process.execPath, [join(copy, 'factlane.js'), 'setup', 'codex'], { encoding: 'utf8', env: box.env, input: '' },
  );
  t.equal(result.status, 1, result.stderr);
  t.equal(result.stderr, `factlane setup: VERIFY_FAILED: the launcher ${realpathSync(join(copy, 'factlane.js'))} is `
    + `not executable; run factlane setup from the built or installed factlane\n`);
  t.same(box.snapshot(), before, 'nothing written');
});

t.test('codex: CODEX_HOME unset means ~/.codex; a symlinked config stays a symlink and its target is '
  + 'edited', async (t) => {
  const box = setupSandbox(t.testdir());
  const dotfiles = join(box.root, 'dotfiles');
  mkdirSync(dotfiles);
  mkdirSync(join(box.home, '.codex'));
  writeFileSync(join(dotfiles, 'codex.toml'), 'model = "o3"\n');
  symlinkSync(join(dotfiles, 'codex.toml'), join(box.home, '.codex', 'config.toml'));
  const result = box.run(['codex'], { CODEX_HOME: undefined });
  t.equal(result.status, 0, result.stderr);
  t.ok(lstatSync(join(box.home, '.codex', 'config.toml')).isSymbolicLink(), 'still a symlink');
  t.same(parseToml(readFileSync(join(dotfiles, 'codex.toml'), 'utf8')), {
    model: 'o3', mcp_servers: { factlane: { command: LAUNCHER, args: ['--db', box.defaultDb, '--host-id', 'codex'] } },
  });
  t.same(
    backupsOf(join(dotfiles, 'codex.toml')).map((p) => readFileSync(p, 'utf8')), ['model = "o3"\n'],
    'the backup is beside the real file',
  );
  t.notOk(existsSync(box.codexHome), 'CODEX_HOME was not used');
});

t.test('hermes: a new config.yaml, a no-op rerun, and the entry starts FactLane', async (t) => {
  const box = setupSandbox(t.testdir());
  const first = box.run(['hermes', '--write-profile', 'delegated-candidate']);
  t.equal(first.status, 0, first.stderr);
  t.equal(first.stdout, `factlane setup: hermes configured (new file): entry factlane in ${box.hermesConfig}\n`);
  const entry = hermesEntry(box.hermesConfig);
  t.same(entry, {
    command: LAUNCHER, args: ['--db', box.defaultDb, '--host-id', 'hermes', '--write-profile', 'delegated-candidate'],
  });
  t.equal(modeOf(box.hermesConfig), 0o600);
  t.equal(modeOf(box.hermesHome), 0o700);
  const before = box.snapshot();
  const again = box.run(['hermes', '--write-profile', 'delegated-candidate']);
  t.equal(again.status, 0);
  t.match(again.stdout, /^factlane setup: hermes is already configured .*nothing changed\n$/);
  t.same(box.snapshot(), before, 'byte-identical, no backup');

  const server = await launchEntry(entry, box.home);
  t.same(server.tools, TOOL_ORDER);
  t.match(server.status, {
    launcher: { write_profile: 'delegated-candidate' }, audit: { host_binding: { host_id: 'hermes' } },
  });
  t.same(server.exit, { code: 0, signal: null });
});

t.test('run as root over a config another user owns (sudo keeping HOME), setup keeps its owner, and its backup\'s',
  { skip: process.geteuid?.() === 0 ? false : 'needs root' }, async (t) => {
    const box = setupSandbox(t.testdir());
    mkdirSync(box.codexHome);
    writeFileSync(box.codexConfig, CODEX_CONFIG, { mode: 0o600 });
    const nobody = 65534;
    chownSync(box.codexConfig, nobody, nobody);
    t.equal(box.run(['codex']).status, 0);
    for (const path of [box.codexConfig, backupsOf(box.codexConfig)[0]!]) {
      const stat = statSync(path);
      t.same([stat.uid, stat.gid, stat.mode & 0o777], [nobody, nobody, 0o600], `${path}: owner, group and mode kept`);
    }
  });

t.test('a config whose bytes are not UTF-8 is refused and left as it was, not rewritten with replacement characters',
  async (t) => {
    const box = setupSandbox(t.testdir());
    mkdirSync(box.codexHome);
    const bytes = Buffer.concat([Buffer.from('name = "caf'), Buffer.from([0xe9]), Buffer.from('"\n')]);
    writeFileSync(box.codexConfig, bytes);
    const refused = box.run(['codex']);
    t.equal(refused.status, 1);
    t.equal(refused.stderr, `factlane setup: VERIFY_FAILED: ${box.codexConfig} is not UTF-8 text; it was left as it `
      + 'was: fix its encoding or move it away, then rerun\n');
    t.ok(readFileSync(box.codexConfig).equals(bytes), 'the bytes unchanged');
    t.same(backupsOf(box.codexConfig), [], 'no backup made');
  });

t.test('--force over a remote (HTTP) entry drops its url and headers: the host would not run the command beside them',
  async (t) => {
    const box = setupSandbox(t.testdir());
    mkdirSync(box.codexHome);
    writeFileSync(box.codexConfig, '[mcp_servers.factlane]\nurl = "http://127.0.0.1:9000/mcp"\n'
      + 'bearer_token_env_var = "TOKEN"\nstartup_timeout_sec = 20\n\n[mcp_servers.factlane.http_headers]\nX-A = "1"\n');
    t.equal(box.run(['codex', '--force']).status, 0);
    t.same(codexEntry(box.codexConfig),
      { command: LAUNCHER, args: ['--db', box.defaultDb, '--host-id', 'codex'], startup_timeout_sec: 20 },
      'codex: url, bearer_token_env_var and http_headers gone, the timeout kept');
    mkdirSync(box.hermesHome);
    writeFileSync(box.hermesConfig, 'mcp_servers:\n  factlane:\n    url: http://127.0.0.1:9000/mcp\n'
      + '    headers:\n      X-A: "1"\n    timeout: 30\n');
    t.equal(box.run(['hermes', '--force']).status, 0);
    t.same(hermesEntry(box.hermesConfig),
      { timeout: 30, command: LAUNCHER, args: ['--db', box.defaultDb, '--host-id', 'hermes'] },
      'hermes: url and headers gone, the timeout kept');
  });

t.test('hermes: comments, key order and other entries survive; a different entry needs --force', async (t) => {
  const box = setupSandbox(t.testdir());
  mkdirSync(box.hermesHome);
  writeFileSync(box.hermesConfig, HERMES_CONFIG);
  const result = box.run(['hermes']);
  t.equal(result.status, 0, result.stderr);
  const text = readFileSync(box.hermesConfig, 'utf8');
  for (const comment of ['# Hermes settings, by hand', '# the default model', '# the filesystem server'])
    t.ok(text.includes(comment), `kept: ${comment}`);
  t.ok(
    text.indexOf('model:') < text.indexOf('mcp_servers:') && text.indexOf('mcp_servers:') < text.indexOf('toolsets:'),
    'key order kept',
  );
  const parsed = parseYaml(text);
  const { factlane, ...others } = parsed.mcp_servers;
  t.same(others, parseYaml(HERMES_CONFIG).mcp_servers, 'the other server is kept');
  t.same({ ...parsed, mcp_servers: others }, parseYaml(HERMES_CONFIG), 'everything else is kept');
  t.same(factlane, { command: LAUNCHER, args: ['--db', box.defaultDb, '--host-id', 'hermes'] });
  t.equal(readFileSync(backupsOf(box.hermesConfig)[0]!, 'utf8'), HERMES_CONFIG);

  const edited = readFileSync(box.hermesConfig, 'utf8');
  const before = box.snapshot();
  const refused = box.run(['hermes', '--project-id', 'proj-2']);
  t.equal(refused.status, 1);
  t.equal(refused.stderr, `factlane setup: TARGET_EXISTS: ${box.hermesConfig} already has a different MCP server `
    + `entry factlane; left as it was: rerun with --force to replace it\n`);
  t.same(box.snapshot(), before, 'untouched');
  // A key the user added to the entry survives --force, as in Codex.
  writeFileSync(box.hermesConfig, edited.replace(/(\n  factlane:\n)/, '$1    timeout: 30 # my timeout\n'));
  const forced = box.run(['hermes', '--project-id', 'proj-2', '--force']);
  t.equal(forced.status, 0, forced.stderr);
  t.equal(hermesEntry(box.hermesConfig).timeout, 30, 'the user key kept');
  t.ok(readFileSync(box.hermesConfig, 'utf8').includes('# my timeout'), 'with its comment');
  t.match(
    forced.stdout,
    /^factlane setup: hermes entry replaced: entry factlane in .*; the previous file is kept as .*factlane-backup-/,
  );
  t.same(hermesEntry(box.hermesConfig).args, ['--db', box.defaultDb, '--host-id', 'hermes', '--project-id', 'proj-2']);
  t.ok(readFileSync(box.hermesConfig, 'utf8').includes('# the filesystem server'), 'comments still kept');
  t.equal(backupsOf(box.hermesConfig).length, 2, 'each edit left its backup');
  t.ok(
    backupsOf(box.hermesConfig).map((p) => readFileSync(p, 'utf8')).includes(HERMES_CONFIG), 'the original among them',
  );
});

t.test('hermes: unparsable YAML, a list at the top or a foreign mcp_servers is refused and left '
  + 'untouched', async (t) => {
  const cases = [['model: [\n', /does not parse as YAML \(.*line 2, column 1\)/],
    ['- a\n- b\n', /does not parse as a Hermes config \(the top level is not a mapping\)/],
    ['mcp_servers: [a]\n', /mcp_servers is not a mapping/],
    ['a: 1\n---\nb: 2\n', /does not parse as YAML \(Source contains multiple documents/]] as const;
  for (const [text, detail] of cases) {
    const box = setupSandbox(t.testdir());
    mkdirSync(box.hermesHome);
    writeFileSync(box.hermesConfig, text);
    const before = box.snapshot();
    const result = box.run(['hermes', '--force']);
    t.equal(result.status, 1, text);
    t.match(result.stderr, /^factlane setup: VERIFY_FAILED: \S+config\.yaml does not parse as /);
    t.match(result.stderr, detail);
    t.equal(result.stderr.split('\n').length, 2, 'one line');
    t.same(box.snapshot(), before, 'untouched');
  }
  const box = setupSandbox(t.testdir());
  mkdirSync(box.hermesHome);
  writeFileSync(box.hermesConfig, '# only a comment\nmcp_servers:\n');
  t.equal(box.run(['hermes']).status, 0, 'an empty mcp_servers is filled in');
  t.ok(readFileSync(box.hermesConfig, 'utf8').startsWith('# only a comment\n'));
  t.same(hermesEntry(box.hermesConfig).command, LAUNCHER);
});

t.test('--print writes the entry on stdout and touches nothing', async (t) => {
  const box = setupSandbox(t.testdir());
  mkdirSync(box.codexHome);
  writeFileSync(box.codexConfig, 'model = "o3"\n');
  const before = box.snapshot();
  const codex = box.run(['codex', '--print', '--db', '/abs/f.sqlite3']);
  t.equal(codex.status, 0);
  t.same(parseToml(codex.stdout), {
    mcp_servers: { factlane: { command: LAUNCHER, args: ['--db', '/abs/f.sqlite3', '--host-id', 'codex'] } },
  });
  t.match(codex.stdout, /^\[mcp_servers\.factlane\]\n/);
  const hermes = box.run(['hermes', '--print', '--project-id', 'p1']);
  t.equal(hermes.status, 0);
  t.same(parseYaml(hermes.stdout), { mcp_servers: {
    factlane: { command: LAUNCHER, args: ['--db', box.defaultDb, '--host-id', 'hermes', '--project-id', 'p1'] },
  } });
  const claude = box.run(['claude-code', '--print', '--db', '/a dir/f.sqlite3']);
  t.equal(claude.status, 0);
  t.equal(claude.stdout, `claude mcp add --scope user factlane -- ${LAUNCHER} --db '/a dir/f.sqlite3' --host-id `
    + `claude-code\n`);
  const noXdg = box.run(['codex', '--print'], { XDG_DATA_HOME: undefined });
  t.same(
    parseToml(noXdg.stdout),
    { mcp_servers: { factlane: {
      command: LAUNCHER, args: ['--db', join(box.home, '.local/share/factlane/factlane.sqlite3'), '--host-id', 'codex'],
    } } },
    'the launcher default without XDG_DATA_HOME',
  );
  for (const result of [codex, hermes, claude, noXdg]) t.equal(result.stderr, '');
  t.same(box.snapshot(), before, 'nothing created or changed');
});

t.test('usage errors exit 2 with the usage text and touch nothing', async (t) => {
  const box = setupSandbox(t.testdir());
  const aFile = join(box.cwd, 'a-file');
  writeFileSync(aFile, '');
  // A backup (a non-empty file with its manifest beside it), which every start refuses to serve (decision 0032).
  const backup = join(box.cwd, 'backup.sqlite3');
  writeFileSync(backup, 'SQLite format 3\0');
  writeFileSync(`${backup}.manifest.json`, '{}');
  const before = box.snapshot();
  const cases: [string[], RegExp][] = [
    [['nope'], /^factlane setup: the host must be one of: codex, claude-code, hermes\n/],
    [[], /^factlane setup: the host must be one of/],
    [['codex', 'hermes'], /^factlane setup: one host only, got: codex hermes\n/],
    [
      ['codex', '--write-profile', 'admin'],
      /^factlane setup: --write-profile must be one of: read-only, delegated-candidate, /,
    ],
    [
      ['hermes', '--project-id', 'not an id'],
      /^factlane setup: INVALID_CONTEXT_BINDING: --project-id must be an identifier\n/,
    ],
    [
      ['codex', '--project-id', 'sk-abcdefghijklmnopqrstuvwxyz0123456789'],
      /^factlane setup: RAW_OR_SENSITIVE_CONTENT: --project-id looks like a secret\n/,
    ],
    [['codex', '--db', ''], /^factlane setup: --db needs a path\n/],
    [['codex', '--host-id', 'x'],
      /^factlane setup: setup takes no --host-id; it writes --host-id \(the host's name\) itself/],
    [['codex', '--profile', 'nomic-768'], /^factlane setup: setup takes no --profile; .*edit the entry afterwards/],
    // A path that can never be a database file: the host would only say "Failed to connect".
    [['codex', '--db', box.home], /^factlane setup: --db .* is not a regular file; give the path of a database file\n/],
    [['hermes', '--db', join(aFile, 'x.sqlite3')], /^factlane setup: --db .* is under .*, which is not a directory\n/],
    [['claude-code', '--db', backup], /^factlane setup: --db .*backup\.sqlite3: the database is a backup \(its /],
    [['codex', '--db', `${aFile}-wal`, '--print'],
      /^factlane setup: --db .*a-file-wal: --db names the -wal, -shm, -journal or -writer file of another database/],
    [['claude-code', '--write-profile'], /^factlane setup: Option '--write-profile <value>' argument missing/],
    [['codex', '--db', join(box.cwd, 'a.sqlite3'), '--db', join(box.cwd, 'b.sqlite3')],
      /^factlane setup: --db was given more than once; give it once\n/],
  ];
  for (const [args, message] of cases) {
    const result = box.run(args);
    t.equal(result.status, 2, args.join(' '));
    t.match(result.stderr, message);
    t.match(result.stderr, /\nusage: factlane setup codex\|claude-code\|hermes /);
    t.equal(result.stdout, '');
  }
  t.same(box.snapshot(), before, 'nothing created');
  const help = box.run(['--help']);
  t.equal(help.status, 0);
  t.ok(
    help.stdout.startsWith('usage: factlane setup codex|claude-code|hermes [--db PATH] [--write-profile P]\n'
      + '                      [--project-id ID] [--print] [--force]\n'),
    help.stdout,
  );
});

t.test('factlane --help names setup, and a launch without setup is still the server', async (t) => {
  const box = setupSandbox(t.testdir());
  const help = spawnSync(process.execPath, [FACTLANE_BIN, '--help'], { encoding: 'utf8', env: box.env });
  t.equal(help.status, 0);
  t.match(help.stdout, /\n {7}factlane setup codex\|claude-code\|hermes \[--db PATH\]/);
  const positional = spawnSync(
    process.execPath, [FACTLANE_BIN, 'codex', '--host-id', 'x'], { encoding: 'utf8', env: box.env, input: '' },
  );
  t.equal(positional.status, 2, 'a positional other than setup stays a launcher usage error');
  t.match(positional.stderr, /^factlane: Unexpected argument 'codex'/);
});

t.test('a config linked to a FIFO or a device is refused, the special file untouched and never read', async (t) => {
  const box = setupSandbox(t.testdir());
  mkdirSync(box.codexHome);
  const fifo = join(box.root, 'config-fifo');
  const made = spawnSync('mkfifo', [fifo]);
  t.equal(made.status, 0, 'mkfifo');
  symlinkSync(fifo, box.codexConfig);
  // Before: the read of the FIFO never ended (the spawn's timeout stops it).
  const result = spawnSync(process.execPath, [FACTLANE_BIN, 'setup', 'codex'], {
    encoding: 'utf8', env: box.env, input: '', timeout: 20_000, killSignal: 'SIGKILL',
  });
  t.equal(result.status, 1);
  t.match(result.stderr, /^factlane setup: VERIFY_FAILED: .*config\.toml is not a regular file \(a device, FIFO or /);
  t.ok(lstatSync(fifo).isFIFO(), 'still a FIFO');
  t.same(readdirSync(box.root).filter((name) => name.includes('factlane-backup')), [], 'no backup of it');
});

t.test('a config that is a symbolic link to a missing file is refused, and the link kept', async (t) => {
  const box = setupSandbox(t.testdir());
  mkdirSync(box.codexHome);
  symlinkSync(join(box.root, 'dotfiles', 'config.toml'), box.codexConfig);
  const result = box.run(['codex']);
  t.equal(result.status, 1);
  t.match(
    result.stderr, /^factlane setup: VERIFY_FAILED: .*config\.toml is a symbolic link to a file that does not exist; /,
  );
  t.ok(lstatSync(box.codexConfig).isSymbolicLink(), 'still a link');
});
