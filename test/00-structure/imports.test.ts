import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { REPO_ROOT } from '../helpers/storage.js';

// STYLE.md "The house": imports run downhill only, and native/SQL/MCP packages stay on their floor.
const MAY_IMPORT: Record<string, readonly string[]> = {
  'generated': ['generated'],
  'schema': ['schema', 'generated'],
  'src/core': ['src/core', 'schema'],
  'src/storage': ['src/storage', 'src/core', 'schema', 'generated'],
  'src/embedding': ['src/embedding', 'src/core', 'schema'],
  'src/adapter': ['src/adapter', 'src/storage', 'src/embedding', 'src/core', 'schema', 'generated'],
  'src/maintenance': ['src/maintenance', 'src/storage', 'src/embedding', 'src/core', 'schema', 'generated'],
  'src/gateway': ['src/gateway', 'src/adapter', 'src/core', 'schema'],
  'src/server': ['src/server', 'src/gateway', 'src/core', 'schema'],
  'src/cli': ['src/cli', 'src/server', 'src/gateway', 'src/adapter', 'src/maintenance', 'src/storage', 'src/embedding', 'src/core', 'schema'],
};
const PACKAGE_FLOORS: Record<string, readonly string[]> = {
  // generated/db.ts imports kysely's ColumnType, a type only.
  'kysely': ['src/storage', 'generated'], 'better-sqlite3': ['src/storage'], 'sqlite-vec': ['src/storage'], 'fs-ext': ['src/storage'],
  '@modelcontextprotocol/sdk': ['src/server'],
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

function floorOf(file: string): string | undefined {
  const rel = relative(REPO_ROOT, file);
  return Object.keys(MAY_IMPORT).find((floor) => rel === floor || rel.startsWith(`${floor}/`));
}

t.test('imports run downhill and packages stay on their floor', async (t) => {
  const files = ['src', 'schema', 'generated'].flatMap((dir) => sourceFiles(join(REPO_ROOT, dir)));
  t.ok(files.length > 10, 'found the sources');
  const violations: string[] = [];
  for (const file of files) {
    const floor = floorOf(file);
    if (!floor) { violations.push(`${relative(REPO_ROOT, file)} is on no known floor`); continue; }
    const specifiers = [...readFileSync(file, 'utf8').matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1] ?? m[2]!);
    for (const specifier of specifiers) {
      if (specifier.startsWith('.')) {
        const target = floorOf(resolve(dirname(file), specifier));
        if (!target || !MAY_IMPORT[floor]!.includes(target)) violations.push(`${relative(REPO_ROOT, file)} imports ${specifier} (${target ?? 'outside the floors'})`);
      } else {
        const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
        const owners = PACKAGE_FLOORS[name];
        if (owners && !owners.includes(floor)) violations.push(`${relative(REPO_ROOT, file)} imports ${name}, which belongs to ${owners.join(', ')}`);
      }
    }
  }
  t.same(violations, []);
});
