import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPO_ROOT, SHIPPED_MIGRATIONS } from '../helpers/storage.js';

// schema/ is the workspace package @factlane/schema (decision 0025); `factlane/schema` re-exports it.
const built = existsSync(join(REPO_ROOT, 'schema/dist/index.js')) &&
  existsSync(join(REPO_ROOT, 'dist/schema/index.js'));
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

t.test('@factlane/schema carries the contract and depends on TypeBox alone',
  { skip: built ? false : 'run npm run build first' }, async (t) => {
  const schema = await import('@factlane/schema');
  t.equal(schema.PUBLIC_CONTRACT_REVISION, 2);
  t.equal(schema.STORAGE_CONTRACT_VERSION, 2);
  t.equal(schema.SCHEMA_VERSION, SHIPPED_MIGRATIONS.at(-1)!.version,
    'the schema version it exports is the newest shipped migration');
  t.same(schema.TOOLS.map((tool: { name: string }) => tool.name),
    ['memory_search', 'memory_get', 'memory_store', 'memory_update', 'memory_status']);
  t.equal(schema.ERROR_CODES.BACKEND_BUSY.retryable, true);
  t.ok(schema.LINEAGE_AUDIT_QUERIES.no_current_forks.startsWith('SELECT'), 'the lineage-audit queries');
  t.match(schema.fullToolReference(), /# FactLane tools \(public contract revision 2\)/);
  const json = readJson(fileURLToPath(import.meta.resolve('@factlane/schema/json/memory_store.tool.json')));
  t.same(json.inputSchema.required, ['request'], 'JSON Schema files emitted at build');
  const manifest = readJson(join(REPO_ROOT, 'schema/package.json'));
  t.equal(manifest.name, '@factlane/schema');
  t.same(Object.keys(manifest.dependencies), ['@sinclair/typebox']);
  t.notOk(manifest.devDependencies ?? manifest.peerDependencies ?? manifest.optionalDependencies,
    'no other dependency of any kind');
  t.equal(readJson(join(REPO_ROOT, 'schema/package.json')).version,
    readJson(join(REPO_ROOT, 'package.json')).dependencies['@factlane/schema'],
    'the product depends on the workspace version');
});

t.test('factlane/schema still resolves, as a re-export, with the product table types',
  { skip: built ? false : 'run npm run build first' }, async (t) => {
  const product = await import('factlane/schema' as string);
  const schema = await import('@factlane/schema');
  t.equal(product.TOOLS, schema.TOOLS, 'the very same module');
  t.same(Object.keys(product).sort(), Object.keys(schema).sort());
  const json = readFileSync(join(REPO_ROOT, 'dist/schema/json/memory_store.tool.json'), 'utf8');
  t.equal(json, readFileSync(join(REPO_ROOT, 'schema/dist/json/memory_store.tool.json'), 'utf8'),
    'factlane/schema/json/* copies them');
  t.match(readFileSync(join(REPO_ROOT, 'dist/schema/index.d.ts'), 'utf8'),
    /export type \{ DB \} from '\.\.\/generated\/db\.js';/);
  t.ok(existsSync(join(REPO_ROOT, 'dist/generated/db.d.ts')), 'the DB types it names are built');
});

t.test('docs/TOOLS.md and docs/errors.md are generated from schema/',
  { skip: built ? false : 'run npm run build first' }, async (t) => {
  const { spawnSync } = await import('node:child_process');
  const result = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts/tools-doc.mjs'), '--check'],
    { encoding: 'utf8' });
  t.equal(result.status, 0, result.stderr);
});
