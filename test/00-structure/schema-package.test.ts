import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/storage.js';

const built = existsSync(join(REPO_ROOT, 'dist/schema/index.js'));
t.test('factlane/schema resolves through the package exports and carries the contract', { skip: built ? false : 'run npm run build first' }, async (t) => {
  const schema = await import('factlane/schema' as string);
  t.equal(schema.PUBLIC_CONTRACT_REVISION, 2);
  t.equal(schema.STORAGE_CONTRACT_VERSION, 2);
  t.same(schema.TOOLS.map((tool: { name: string }) => tool.name), ['memory_search', 'memory_get', 'memory_store', 'memory_update', 'memory_status']);
  t.equal(schema.ERROR_CODES.BACKEND_BUSY.retryable, true);
  t.match(schema.fullToolReference(), /# FactLane tools \(public contract revision 2\)/);
  const json = JSON.parse(readFileSync(join(REPO_ROOT, 'dist/schema/json/memory_store.tool.json'), 'utf8'));
  t.same(json.inputSchema.required, ['request'], 'JSON Schema files emitted at build');
});

t.test('docs/TOOLS.md and docs/errors.md are generated from schema/', { skip: built ? false : 'run npm run build first' }, async (t) => {
  const { spawnSync } = await import('node:child_process');
  const result = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts/tools-doc.mjs'), '--check'], { encoding: 'utf8' });
  t.equal(result.status, 0, result.stderr);
});
