import { readFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package root: the nearest directory above this module holding FactLane's package.json.
 * Works from `src/` (tests) and from `dist/src/` (the built package) alike.
 */
export const PACKAGE_ROOT: string = (() => {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate) && JSON.parse(readFileSync(candidate, 'utf8')).name === 'factlane') return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('factlane package.json not found above the running module');
    dir = parent;
  }
})();

/** The package version from package.json. */
export const PACKAGE_VERSION: string = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')).version;

/** The `created_by` / `applied_by` label: `factlane <package version>`. */
export const PACKAGE_LABEL = `factlane ${PACKAGE_VERSION}`;

/** Directory of the shipped migration files. */
export const MIGRATIONS_DIR = join(PACKAGE_ROOT, 'migrations');
