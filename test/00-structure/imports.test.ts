import t from 'tap';
import { readFileSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { REPO_ROOT, typeScriptFiles } from '../helpers/storage.js';

// STYLE.md "The house": imports run downhill only, and native/SQL/MCP packages stay on their floor.
// schema/ is its own package (@factlane/schema, decision 0025): it imports only itself and TypeBox, and the
// product reaches it by its package name, never by a relative path into schema/.
const MAY_IMPORT: Record<string, readonly string[]> = {
  'generated': ['generated'],
  'schema': ['schema'],
  'src/core': ['src/core'],
  'src/storage': ['src/storage', 'src/core', 'generated'],
  'src/embedding': ['src/embedding', 'src/core'],
  'src/adapter': ['src/adapter', 'src/storage', 'src/embedding', 'src/core', 'generated'],
  'src/maintenance': ['src/maintenance', 'src/storage', 'src/embedding', 'src/core', 'generated'],
  'src/gateway': ['src/gateway', 'src/adapter', 'src/core'],
  'src/server': ['src/server', 'src/gateway', 'src/core'],
  'src/cli': ['src/cli', 'src/server', 'src/gateway', 'src/adapter', 'src/maintenance', 'src/storage',
    'src/embedding', 'src/core'],
};
const SRC_FLOORS = Object.keys(MAY_IMPORT).filter((floor) => floor.startsWith('src/'));
const PACKAGE_FLOORS: Record<string, readonly string[]> = {
  // generated/db.ts imports kysely's ColumnType, a type only.
  'kysely': ['src/storage', 'generated'], 'better-sqlite3': ['src/storage'], 'sqlite-vec': ['src/storage'],
  'fs-ext': ['src/storage'],
  '@modelcontextprotocol/sdk': ['src/server'],
  '@factlane/schema': SRC_FLOORS, '@sinclair/typebox': ['schema'],
};
/** The only packages schema/ may import: its package.json declares no other dependency. */
const SCHEMA_PACKAGES: readonly string[] = ['@sinclair/typebox'];

function floorOf(file: string): string | undefined {
  const rel = relative(REPO_ROOT, file);
  return Object.keys(MAY_IMPORT).find((floor) => rel === floor || rel.startsWith(`${floor}/`));
}

/** The rule violations of one source file's import and export specifiers. */
function violationsOf(file: string, text: string): string[] {
  const floor = floorOf(file);
  if (!floor) return [`${relative(REPO_ROOT, file)} is on no known floor`];
  const violations: string[] = [];
  const specifiers = [
    ...text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g),
  ].map((m) => m[1] ?? m[2]!);
  for (const specifier of specifiers) {
    if (specifier.startsWith('.')) {
      const target = floorOf(resolve(dirname(file), specifier));
      if (!target || !MAY_IMPORT[floor]!.includes(target)) violations.push(
        `${relative(REPO_ROOT, file)} imports ${specifier} (${target ?? 'outside the floors'})`);
    } else {
      const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
      const owners = PACKAGE_FLOORS[name];
      if (floor === 'schema' && !SCHEMA_PACKAGES.includes(name)) violations.push(
        `${relative(REPO_ROOT, file)} imports ${name}, which @factlane/schema does not depend on`);
      else if (owners && !owners.includes(floor)) violations.push(
        `${relative(REPO_ROOT, file)} imports ${name}, which belongs to ${owners.join(', ')}`);
    }
  }
  return violations;
}

t.test('imports run downhill and packages stay on their floor', async (t) => {
  const files = ['src', 'schema', 'generated'].flatMap((dir) => typeScriptFiles(join(REPO_ROOT, dir)));
  t.ok(files.length > 10, 'found the sources');
  t.same(files.flatMap((file) => violationsOf(file, readFileSync(file, 'utf8'))), []);
});

t.test('the product reaches the schema package by name, and the package stands alone', async (t) => {
  const at = (path: string) => join(REPO_ROOT, path);
  t.same(violationsOf(at('src/adapter/x.ts'), "import { SCOPES } from '@factlane/schema';"), []);
  t.same(violationsOf(at('src/adapter/x.ts'), "import { SCOPES } from '../../schema/enums.js';"),
    ['src/adapter/x.ts imports ../../schema/enums.js (schema)']);
  t.same(violationsOf(at('src/core/x.ts'), "import { Type } from '@sinclair/typebox';"),
    ['src/core/x.ts imports @sinclair/typebox, which belongs to schema']);
  t.same(violationsOf(at('schema/x.ts'), "import type { DB } from '../generated/db.js';"),
    ['schema/x.ts imports ../generated/db.js (generated)']);
  t.same(violationsOf(at('schema/x.ts'),
    "import type { ColumnType } from 'kysely';\nimport { Type } from '@sinclair/typebox';"),
    ['schema/x.ts imports kysely, which @factlane/schema does not depend on']);
  t.same(violationsOf(at('schema/x.ts'), "import { join } from 'node:path';"),
    ['schema/x.ts imports node:path, which @factlane/schema does not depend on']);
});
