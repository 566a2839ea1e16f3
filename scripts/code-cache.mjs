// Writes the V8 code cache of the server bundle, dist/bin/factlane-server.cjs.v8cache (docs/decisions/0047).
// A server runs the bundle as `factlane` does, on a temporary database, while this script calls every tool over
// stdio: stores past the size where a scope's vectors are coded, searches of each kind, a promotion, a read of the
// history, status and a refused request. At its exit the server writes the cache, which then holds the bytecode of
// every function those calls ran; the script checks that V8 takes it. Run by `npm run build`, after the bundle.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { compileBundle, runBundle, writeCodeCache } from '../dist/src/cli/bundle-cache.js';
import { holdStopSignals } from '../dist/src/cli/stop-signals.js';

const LAUNCHER = fileURLToPath(new URL('../dist/bin/factlane.js', import.meta.url));
const BUNDLE = fileURLToPath(new URL('../dist/bin/factlane-server.cjs', import.meta.url));
const SERVE = 'FACTLANE_CODE_CACHE_SERVE';
/** Past UNCODED_SCOPE_MAX_RECORDS (256), so the coded first pass of a search is compiled too. */
const STORES = 300;
const SCOPE = { scope: 'PROJECT', project_id: 'code-cache' };
const NOW = new Date().toISOString();
const sha256 = (text) => createHash('sha256').update(text).digest('hex');
// A host starts the server with no NODE_OPTIONS of the build's: V8 flags there (--max-old-space-size, --stack-size)
// would go into the cache, and a plain start would refuse it.
const HOST_ENV = Object.fromEntries(Object.entries(process.env).filter(([key]) => key !== 'NODE_OPTIONS'));

if (process.env[SERVE] === '1') {
  // The server: the launcher's own steps (factlane.ts), then the cache at exit.
  holdStopSignals();
  const bundle = compileBundle(BUNDLE);
  process.argv[1] = LAUNCHER;
  process.on('exit', () => writeCodeCache(bundle));
  runBundle(bundle);
} else {
  const directory = mkdtempSync(join(tmpdir(), 'factlane-code-cache-'));
  try {
    await train(join(directory, 'train.sqlite3'));
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  // Taken by a node as a host starts it, in a process of its own (this one compiled the bundle already).
  const loader = new URL('../dist/src/cli/bundle-cache.js', import.meta.url).href;
  const check = `import { compileBundle } from ${JSON.stringify(loader)};\n`
    + `process.stdout.write(compileBundle(${JSON.stringify(BUNDLE)}).cache);\n`;
  const use = spawnSync(process.execPath, ['--input-type=module', '-e', check], { env: HOST_ENV, encoding: 'utf8' });
  if (use.stdout !== 'ACCEPTED') {
    throw new Error(`code-cache: V8 did not take the cache it wrote (${use.stdout || use.stderr})`);
  }
}

async function train(dbPath) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      fileURLToPath(import.meta.url), '--db', dbPath, '--host-id', 'code-cache', '--write-profile', 'owner-current',
    ],
    env: { ...HOST_ENV, [SERVE]: '1' },
    stderr: 'inherit',
  });
  const client = new Client({ name: 'factlane-code-cache', version: '1' });
  await client.connect(transport);
  const call = async (name, request, expected = ['OK']) => {
    const envelope = (await client.callTool({ name, arguments: { request } })).structuredContent;
    if (!expected.includes(envelope?.status)) {
      const why = envelope?.error_code ?? envelope?.degradation ?? '';
      throw new Error(`code-cache: ${name} answered ${envelope?.status} ${why}: ${JSON.stringify(request)}`);
    }
    return envelope;
  };
  await client.listTools();
  await call('memory_status', SCOPE);
  const store = (n, state) => {
    const fact = `Service ${n} of the code cache run listens on port ${8000 + n} behind gateway ${n % 7}`;
    return call('memory_store', {
      ...SCOPE, fact, memory_type: 'PROJECT_LEARNED_FACT', requested_lifecycle_state: state,
      freshness_policy: { kind: 'manual' }, idempotency_key: `code-cache-${n}`, source_timestamp: NOW,
      last_verified_at: state === 'VALIDATED_CURRENT' ? NOW : undefined,
      source_provenance: {
        source_class: 'doc', source_ref: `services/${n}.md`, source_hash: sha256(fact), review_ref: 'code-cache',
        extraction_method: 'manual_read',
      },
    });
  };
  for (let n = 0; n < STORES; n++) await store(n, 'VALIDATED_CURRENT');
  const candidate = (await store(STORES, 'CANDIDATE')).results[0];
  const search = { ...SCOPE, query: 'which port does service 12 listen on', intent_class: 'CURRENT_PROJECT_STATE' };
  for (const kind of ['HYBRID', 'SEMANTIC', 'KEYWORD', 'EXACT']) {
    // A full answer may be cut to the read budget (DEGRADED): that path is compiled too.
    await call('memory_search', { ...search, retrieval_mode_kind: kind, max_memories: 5 }, ['OK', 'DEGRADED']);
  }
  await call('memory_update', {
    ...SCOPE, memory_id: candidate.memory_id, mode: 'REVERIFY', expected_revision: candidate.revision,
    expected_record_id: candidate.record_id, verification: { verified_by: 'OWNER' }, idempotency_key: 'code-cache-up',
  });
  await call('memory_get', { ...SCOPE, memory_id: candidate.memory_id, retrieval_mode: 'REVIEW_HISTORY' });
  await call('memory_search', { ...search, project_id: undefined }, ['BLOCKED']);
  await call('memory_status', SCOPE);
  await client.close();
}
