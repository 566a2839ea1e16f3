import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_CODES, LINEAGE_AUDIT_QUERIES, SCOPES, TOOLS } from '@factlane/schema';
import { npm, pack, registryUnreachable, userDir, userEnv } from '../helpers/npm-install.js';
import { REPO_ROOT } from '../helpers/storage.js';

// Deliverable 7 of issue 14 (decision 0025): audit tooling installs @factlane/schema alone, with TypeBox its
// only dependency and no native build, and finds the whole contract in it.
const built = existsSync(join(REPO_ROOT, 'schema/dist/index.js'));
const skip = !built ? 'run npm run build first' : registryUnreachable();
t.setTimeout(600_000);

// What the consumer imports, as node sees it from the consumer folder.
const PROBE = `
import * as schema from '@factlane/schema';
import { Kind } from '@sinclair/typebox';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
const json = (name) => JSON.parse(readFileSync(fileURLToPath(import.meta.resolve('@factlane/schema/json/' + name)), 'utf8'));
console.log(JSON.stringify({
  tools: schema.TOOLS.map((tool) => tool.name),
  errorCodes: Object.keys(schema.ERROR_CODES),
  scopes: schema.SCOPES,
  lineageChecks: Object.keys(schema.LINEAGE_AUDIT_QUERIES),
  contract: schema.PUBLIC_CONTRACT_REVISION,
  typeboxKind: schema.TOOL_DEFINITIONS.MemoryStoreRequest[Kind],
  storeTool: json('memory_store.tool.json').inputSchema.required,
  storeRequest: json('MemoryStoreRequest.json').required.includes('fact'),
  reference: schema.fullToolReference().split('\\n')[0],
}));
`;
const CONSUMER_TS = `import { ERROR_CODES, TOOLS, type ErrorCode, type ToolName } from '@factlane/schema';
const name: ToolName = TOOLS[0]!.name;
const code: ErrorCode = 'BACKEND_BUSY';
export const retryable: boolean = ERROR_CODES[code].retryable && name.length > 0;
`;

t.test('the packed @factlane/schema installs alone into an empty folder and holds the ' +
  'contract', { skip }, async (t) => {
  const tmp = userDir(t);
  const tarball = pack(tmp, '@factlane/schema');
  t.match(tarball.path, /factlane-schema-0\.1\.0\.tgz$/);
  const shipped = /^(package\.json|README\.md|dist\/[a-z-]+\.(js|d\.ts)|dist\/json\/\w+(\.tool)?\.json)$/;
  t.same(tarball.files.filter((file) => !shipped.test(file)), [], 'the built package only: no sources, source maps ' +
    'or scripts');
  t.same(tarball.bundled, []);

  const consumer = join(tmp, 'consumer');
  mkdirSync(consumer);
  const install = npm(['install', '--prefix', consumer, tarball.path, '--no-audit', '--no-fund'], tmp, 300_000);
  t.equal(install.status, 0, 'npm install of the tarball', { stderr: install.stderr });

  const lock = JSON.parse(readFileSync(join(consumer, 'package-lock.json'), 'utf8'));
  t.same(Object.keys(lock.packages).sort(), ['', 'node_modules/@factlane/schema', 'node_modules/@sinclair/typebox'],
    'the install is the package and TypeBox, nothing else');
  const scripted =
    Object.values(lock.packages).filter((entry) => (entry as { hasInstallScript?: boolean }).hasInstallScript);
  t.same(scripted, [], 'no install script anywhere');
  const installed = readdirSync(join(consumer, 'node_modules')).filter((name) => !name.startsWith('.'));
  t.same(installed.sort(), ['@factlane', '@sinclair']);
  for (const product of ['better-sqlite3', 'fs-ext', 'sqlite-vec', 'kysely']) {
    t.notOk(existsSync(join(consumer, 'node_modules', product)), `no ${product}`);
  }

  writeFileSync(join(consumer, 'probe.mjs'), PROBE);
  const probe = spawnSync(process.execPath, ['probe.mjs'], { cwd: consumer, env: userEnv(), encoding: 'utf8' });
  t.equal(probe.status, 0, 'node imports the package', { stderr: probe.stderr });
  const seen = JSON.parse(probe.stdout);
  t.same(seen.tools, TOOLS.map((tool) => tool.name), 'the five tool schemas');
  t.same(seen.errorCodes, Object.keys(ERROR_CODES), 'the error catalogue');
  t.same(seen.scopes, SCOPES, 'the enums');
  t.same(seen.lineageChecks, Object.keys(LINEAGE_AUDIT_QUERIES), 'the lineage-audit queries');
  t.match(seen, {
    contract: 2, typeboxKind: 'Object', storeTool: ['request'], storeRequest: true,
    reference: '# FactLane tools (public contract revision 2)',
  }, 'TypeBox schemas, the emitted JSON Schemas and the tool reference');

  // The types ship too: a TypeScript consumer compiles against the installed package alone.
  writeFileSync(join(consumer, 'consumer.ts'), CONSUMER_TS);
  writeFileSync(join(consumer, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, types: [],
    },
    files: ['consumer.ts'],
  }));
  const tsc = spawnSync(
    process.execPath, [join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', consumer], { encoding: 'utf8' },
  );
  t.equal(tsc.status, 0, 'tsc compiles a consumer against the installed types', { output: tsc.stdout + tsc.stderr });
});
