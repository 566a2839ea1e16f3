import t from 'tap';
import { spawnSync } from 'node:child_process';
import { accessSync, appendFileSync, constants, existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { TOOLS } from '@factlane/schema';
import { PACKAGE_VERSION } from '../../src/core/package-info.js';
import { npm, pack, registryUnreachable, userDir, userEnv } from '../helpers/npm-install.js';
import { REPO_ROOT } from '../helpers/storage.js';
import { currentRequest } from '../helpers/writes.js';

// Deliverable 6 of issue 14 (decision 0025): `npm pack`, then `npm install -g` of the tarball into a fresh prefix,
// as a user installs. One install: it compiles better-sqlite3 and fs-ext from source, minutes on a busy machine.
const BINS = ['factlane', 'factlane-migrate', 'factlane-admin'];
const built = BINS.every((bin) => existsSync(join(REPO_ROOT, `dist/bin/${bin}.js`)));
const skip = !built ? 'run npm run build first' : registryUnreachable();
t.setTimeout(1_200_000);

/**
 * What the tarball may carry: the READMEs (npm adds README* itself), the bundled bins, the server's bundle and its code
 * cache (decision 0047), the factlane/schema re-export, migrations, the bundled schema.
 */
const SHIPPED = new RegExp(`^(${[
  'package\\.json', 'README(\\.ar)?\\.md', 'dist/bin/(factlane|factlane-migrate|factlane-admin)\\.js',
  'dist/bin/factlane-server\\.cjs(\\.v8cache)?',
  'dist/bin/chunks/[\\w-]+\\.js',
  'dist/schema/index\\.(js|d\\.ts)', 'dist/schema/json/\\w+(\\.tool)?\\.json', 'dist/generated/db\\.d\\.ts',
  'migrations/\\d{4}_\\w+\\.sql', 'docs/[\\w-]+\\.md',
  'node_modules/(@factlane/schema|@sinclair/typebox)/.+',
].join('|')})$`);
const DEV_ONLY = ['tap', 'typescript', 'esbuild', 'kysely-codegen', 'fast-check', '@tapjs', '@types'];
const FACT = 'The installed build uses Node 20';

t.test('the packed product installs globally as users install it and its three commands work', { skip }, async (t) => {
  const tmp = userDir(t);
  const tarball = pack(tmp);
  t.equal(tarball.path, join(tmp, `factlane-${PACKAGE_VERSION}.tgz`));
  t.same(tarball.files.filter((file) => !SHIPPED.test(file)), [], 'no sources, tests, benchmarks or source maps');
  for (const needed of [
    'dist/bin/factlane.js', 'dist/bin/factlane-server.cjs', 'dist/bin/factlane-server.cjs.v8cache',
    'migrations/0001_initial.sql', 'node_modules/@factlane/schema/dist/index.js',
    // The README links these, and the commands' help and hints name docs/operations.md and docs/errors.md.
    'docs/hosts.md', 'docs/TOOLS.md', 'docs/operations.md', 'docs/errors.md',
  ]) {
    t.ok(tarball.files.includes(needed), `ships ${needed}`);
  }
  t.same([...tarball.bundled].sort(), ['@factlane/schema', '@sinclair/typebox'], 'the workspace package travels in '
    + 'the tarball');

  const prefix = join(tmp, 'prefix');
  const args = [
    'install', '-g', '--prefix', prefix, tarball.path, '--allow-scripts=better-sqlite3,fs-ext', '--no-audit',
    '--no-fund',
  ];
  const install = npm(args, tmp, 1_100_000);
  t.equal(install.status, 0, 'npm install -g of the tarball', { stderr: install.stderr });
  const root = join(prefix, 'lib/node_modules/factlane');
  const modules = readdirSync(join(root, 'node_modules'));
  for (const dev of DEV_ONLY) t.notOk(modules.includes(dev), `dev dependency ${dev} not installed`);
  t.ok(existsSync(join(root, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node')), 'better-sqlite3 built');

  const bin = join(prefix, 'bin');
  const env = userEnv([bin]);
  const run = (command: string, ...rest: string[]) =>
    spawnSync(command, rest, { cwd: tmp, env, encoding: 'utf8', input: '', timeout: 60_000 });
  for (const name of BINS) accessSync(join(bin, name), constants.X_OK);
  const version = run('factlane', '--version');
  t.equal(version.status, 0, 'factlane --version', { stderr: version.stderr });
  t.match(version.stdout, new RegExp(`^factlane ${PACKAGE_VERSION}\\n`), 'its version');
  for (const name of ['factlane-migrate', 'factlane-admin']) {
    const help = run(name, '--help');
    t.equal(help.status, 0, `${name} --help`, { stderr: help.stderr });
    t.match(help.stdout, new RegExp(`^usage:\\n  ${name} `), `${name} prints its usage`);
    const installed = run(name, '--version');
    t.equal(installed.status, 0, `${name} --version`, { stderr: installed.stderr });
    t.match(installed.stdout, new RegExp(`^${name} ${PACKAGE_VERSION}\\n`), `${name} prints its version`);
  }

  // An MCP host launches `factlane` from the PATH: initialize, tools/list, a store and a search that finds it.
  const dbPath = join(tmp, 'facts.sqlite3');
  const transport = new StdioClientTransport({
    command: 'factlane', args: ['--db', dbPath, '--host-id', 'installed', '--write-profile', 'owner-current'],
    env: env as Record<string, string>, stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr!.on('data', (chunk) => { stderr += chunk; });
  const client = new Client({ name: 'package-install', version: '0.0.0' });
  await client.connect(transport);
  t.teardown(() => client.close());
  t.match(client.getServerVersion(), { name: 'factlane', version: PACKAGE_VERSION }, 'MCP initialize');
  t.same((await client.listTools()).tools.map((tool) => tool.name), TOOLS.map((tool) => tool.name), 'five tools');
  const callTool = async (name: string, request: Record<string, unknown>) =>
    ((await client.callTool({ name, arguments: { request } })) as CallToolResult);
  const store = await callTool('memory_store', currentRequest({ fact: FACT }));
  t.match(store.structuredContent, { status: 'OK', results: [{ lifecycle_state: 'VALIDATED_CURRENT', fact: FACT }] },
    'memory_store stores a current fact', { content: store.content });
  const search = await callTool('memory_search', {
    scope: 'GLOBAL_USER', query: 'which node version does the build use',
    intent_class: 'USER_PREFERENCE_OR_DURABLE_FACT',
  });
  t.match(
    search.structuredContent, { status: 'OK', results: [{ fact: FACT }] }, 'memory_search finds it',
    { content: search.content },
  );
  await client.close();
  t.equal(stderr, '', 'nothing on stderr');

  // The installed operator commands find the shipped migrations and the native modules.
  const status = run('factlane-migrate', 'status', '--db', dbPath, '--json');
  t.equal(status.status, 0, 'factlane-migrate status', { stdout: status.stdout, stderr: status.stderr });
  t.match(
    JSON.parse(status.stdout), { state: 'UP_TO_DATE', pending: [] }, 'the shipped migrations are found and applied',
  );
  const verify = run('factlane-admin', 'verify', '--db', dbPath, '--json');
  t.equal(verify.status, 0, 'factlane-admin verify', { stdout: verify.stdout, stderr: verify.stderr });
  t.match(JSON.parse(verify.stdout), { ok: true }, 'verify passes on the database the installed server made');

  // `factlane/schema` still resolves for a consumer of the installed package (the bundled @factlane/schema).
  const probePath = join(prefix, 'lib', 'probe.mjs');
  writeFileSync(probePath, "const s = await import('factlane/schema');\n"
    + "console.log(s.TOOLS.length, import.meta.resolve('factlane/schema/json/memory_store.tool.json'));\n");
  const probe = spawnSync(process.execPath, [probePath], { env, encoding: 'utf8' });
  t.equal(probe.status, 0, 'factlane/schema imports', { stderr: probe.stderr });
  const jsonUrl = pathToFileURL(join(root, 'dist/schema/json/memory_store.tool.json')).href;
  t.equal(probe.stdout, `5 ${jsonUrl}\n`, 'from the installed package');

  // An install whose released migration changed refuses to run it (STORAGE.md §12.1, §12.5), with the error line.
  const migrations = join(root, 'migrations');
  const last = readdirSync(migrations).filter((name) => name.endsWith('.sql')).sort().at(-1)!;
  appendFileSync(join(migrations, last), '\nCREATE TABLE sneaky (a);\n');
  const altered = run('factlane-migrate', 'status', '--db', dbPath);
  t.equal(altered.status, 1, 'factlane-migrate refuses the altered install');
  const refusal = `SCHEMA_MISMATCH: migration ${last} is not the file this release`;
  t.match(altered.stderr, new RegExp(`^factlane-migrate: ${refusal}`));
  const server = spawnSync(join(bin, 'factlane'), ['--db', dbPath, '--host-id', 'installed'],
    { env, encoding: 'utf8', input: '' });
  t.equal(server.status, 1, 'so does the server');
  t.match(server.stderr, new RegExp(`^factlane: ${refusal}[^\n]*\n$`), 'in one line');
  const alteredVersion = spawnSync(join(bin, 'factlane'), ['--version'], { env, encoding: 'utf8' });
  t.equal(alteredVersion.status, 1, '--version too, which reads the migrations');
  t.match(alteredVersion.stderr, new RegExp(`^factlane: ${refusal}[^\n]*\n$`), 'in one line, no stack');
});
