import t from 'tap';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { codeCachePath, compileBundle, runBundle, writeCodeCache } from '../../src/cli/bundle-cache.js';
import { userEnv } from '../helpers/npm-install.js';
import { REPO_ROOT } from '../helpers/storage.js';

// The server's bundle runs from V8's code cache (docs/decisions/0047).

type Seen = { file: string; dir: string; self: boolean; joined: string; exported: unknown };
const SEEN = '__factlaneCodeCacheTest';

/** A small CommonJS bundle that reports what a module of its own file sees. */
function writeBundle(dir: string, marker: string): string {
  const path = join(dir, 'bundle.cjs');
  writeFileSync(path, `module.exports.marker = ${JSON.stringify(marker)};
globalThis.${SEEN} = { file: __filename, dir: __dirname, self: this === module.exports,
  joined: require('node:path').join('a', 'b'), exported: module.exports.marker };\n`);
  return path;
}

const seen = () => (globalThis as Record<string, unknown>)[SEEN] as Seen;

/** The built bundle-cache module, as an ES module script imports it. */
const LOADER = pathToFileURL(join(REPO_ROOT, 'dist/src/cli/bundle-cache.js')).href;

/**
 * Runs an ES module `script` in a plain node, in the user's environment: no test runner flags (tap's NODE_OPTIONS
 * would change V8's flags, and with them the caches V8 takes), nor V8's compilation cache of this process.
 */
function inPlainNode(script: string) {
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: userEnv(), encoding: 'utf8' });
}

/** What a plain node makes of the bundle at `path`: the cache use, then what the bundle exported. */
function inFreshNode(path: string): string {
  const run = inPlainNode(`import { compileBundle, runBundle } from ${JSON.stringify(LOADER)};\n`
    + `const bundle = compileBundle(${JSON.stringify(path)});\nrunBundle(bundle);\n`
    + `process.stdout.write(bundle.cache + ' ' + globalThis.${SEEN}.exported);\n`);
  return run.stdout || run.stderr;
}

t.test('a bundle runs as a CommonJS module of its own file, from a cache V8 takes', async (t) => {
  const dir = t.testdir();
  const path = writeBundle(dir, 'first');
  const fresh = compileBundle(path);
  t.equal(fresh.cache, 'ABSENT', 'no cache beside it yet');
  runBundle(fresh);
  t.same(seen(), { file: path, dir, self: true, joined: join('a', 'b'), exported: 'first' });
  writeCodeCache(fresh);
  t.ok(existsSync(codeCachePath(path)), 'the cache is written beside the bundle');
  t.equal(inFreshNode(path), 'ACCEPTED first', 'another process takes it');
});

t.test('a bundle reached through a symbolic link runs as its own file, with the cache beside that file', async (t) => {
  const dir = t.testdir({ real: {}, linked: {} });
  const path = writeBundle(join(dir, 'real'), 'linked');
  writeCodeCache(compileBundle(path));
  const link = join(dir, 'linked', 'bundle.cjs');
  symlinkSync(path, link);
  const bundle = compileBundle(link);
  t.equal(bundle.path, path);
  runBundle(bundle);
  t.same(seen(), { file: path, dir: join(dir, 'real'), self: true, joined: join('a', 'b'), exported: 'linked' });
  t.equal(inFreshNode(link), 'ACCEPTED linked');
});

t.test('a cache V8 does not take is ignored: the bundle compiles from its source', async (t) => {
  const dir = t.testdir();
  const path = writeBundle(dir, 'original');
  writeCodeCache(compileBundle(path));
  // Another source under the same name (an edited bundle, or one of another build): the cache is refused.
  writeBundle(dir, 'a bundle of another build');
  t.equal(inFreshNode(path), 'REJECTED a bundle of another build', 'the source runs, not the cached code');
  writeFileSync(codeCachePath(path), Buffer.from('not a code cache'));
  t.equal(inFreshNode(path), 'REJECTED a bundle of another build', 'bytes that are no cache');
});

const BUILT_BUNDLE = join(REPO_ROOT, 'dist/bin/factlane-server.cjs');
const notBuilt = existsSync(BUILT_BUNDLE) ? false : 'run npm run build first';

t.test('the built server bundle carries a cache that a plain node takes, as a host starts it', { skip: notBuilt },
  async (t) => {
  const run = inPlainNode(`import { compileBundle } from ${JSON.stringify(LOADER)};\n`
    + `process.stdout.write(compileBundle(${JSON.stringify(BUILT_BUNDLE)}).cache);\n`);
  t.equal(run.stderr, '');
  t.equal(run.stdout, 'ACCEPTED');
  // Strict, as the ES modules it is built from: the directive must be the file's first statement.
  t.ok(readFileSync(BUILT_BUNDLE, 'utf8').startsWith("'use strict';\n"), 'the bundle is strict code');
  const size = readFileSync(codeCachePath(BUILT_BUNDLE)).length;
  t.ok(size > 100_000, 'it holds the functions the build ran, not the top only');
});

t.test('a launcher without its bundle says the install is incomplete, in one line', { skip: notBuilt }, async (t) => {
  // The built launcher alone, as a copy or an interrupted build leaves it: its chunks, no factlane-server.cjs.
  const dir = t.testdir({ 'package.json': JSON.stringify({ type: 'module' }) });
  copyFileSync(join(REPO_ROOT, 'dist/bin/factlane.js'), join(dir, 'factlane.js'));
  symlinkSync(join(REPO_ROOT, 'dist/bin/chunks'), join(dir, 'chunks'));
  const run = spawnSync(process.execPath, [join(dir, 'factlane.js'), '--version'],
    { env: userEnv(), encoding: 'utf8' });
  t.equal(run.status, 1);
  t.equal(run.stdout, '', 'nothing on stdout, where a host reads MCP frames');
  t.equal(run.stderr, `factlane: this install is incomplete: ${join(dir, 'factlane-server.cjs')} is missing; `
    + 'run npm run build in a checkout, or install the package again\n');
});
