// The host install's failure paths: an unreachable registry gives a clear reason (the host tests skip with it),
// is remembered so the other files skip at once, and is retried once the memory is old; a cache folder missing
// an entry point is reported, not used.
import t from 'tap';
import { existsSync, mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HOST_PACKAGES, hostCacheDir, installHosts } from './host-install.js';

/** npm pointed at a closed loopback port, with an empty cache of its own: no tarball can come from anywhere. */
const deadRegistry = (dir: string) => ({
  npm_config_registry: 'http://127.0.0.1:9/', npm_config_cache: join(dir, 'npm-cache'), npm_config_fetch_retries: '0',
});

t.test('the cache folder is under the temp dir and keyed by the pinned versions', async (t) => {
  t.match(hostCacheDir(), /factlane-hosts-[0-9a-f]{16}$/);
  for (const pin of Object.values(HOST_PACKAGES))
    t.match(pin.version, /^\d+\.\d+\.\d+$/, `${pin.name}: an exact version`);
});

t.test('an unreachable registry: not ok with the reason, remembered, retried when the memory is old', async (t) => {
  const dir = t.testdir();
  const cacheDir = join(dir, 'hosts');
  const first = installHosts({ cacheDir, env: deadRegistry(dir) });
  t.equal(first.ok, false);
  const reason = first.ok ? '' : first.reason;
  t.match(reason, /^the pinned hosts could not be installed from the npm registry: npm install --prefix .* exited \d+/);
  t.match(reason, /@anthropic-ai\/claude-code@2\.1\.332/, 'the reason names what was installed');
  t.match(reason, /npm error code ECONNREFUSED/, "and npm's own error code");
  t.notOk(existsSync(cacheDir), 'no half-installed cache folder');
  t.same(
    readFileSync(`${cacheDir}.failed`, 'utf8').trim(), reason, 'the failure is remembered beside the cache folder',
  );

  writeFileSync(`${cacheDir}.failed`, 'remembered reason\n');
  const second = installHosts({ cacheDir, env: deadRegistry(dir) });
  t.same(second, { ok: false, reason: 'remembered reason' }, 'a fresh failure is reused without running npm again');

  const old = new Date(Date.now() - 11 * 60_000);
  utimesSync(`${cacheDir}.failed`, old, old);
  const third = installHosts({ cacheDir, env: deadRegistry(dir) });
  t.match(third, { ok: false, reason: /^the pinned hosts could not be installed/ }, 'an old failure is retried');
  t.ok(statSync(`${cacheDir}.failed`).mtimeMs > old.getTime() + 60_000, 'and remembered anew');
});

t.test('a cache folder that lacks an entry point is reported, with the fix', async (t) => {
  const cacheDir = join(t.testdir(), 'hosts');
  mkdirSync(cacheDir);
  writeFileSync(join(cacheDir, 'installed.json'), '[]\n');
  const outcome = installHosts({ cacheDir });
  t.match(outcome, { ok: false, reason: /lacks .*claude\.exe.*codex\.js.*index\.js; delete it to reinstall$/ });
});
