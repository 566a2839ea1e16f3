import { readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { Script } from 'node:vm';

// The server's bundle runs from V8's code cache (docs/decisions/0047): compiling the bundled modules was about a
// quarter of a start, and the first calls compiled the functions they ran. The build writes the cache once the
// bundle has served one of each call (scripts/code-cache.mjs); a cache V8 does not take (another Node, other V8
// flags) is ignored, and the bundle compiles from its source as it would without one.

/** Whether V8 took the cache beside a bundle. */
export type CodeCacheUse = 'ACCEPTED' | 'REJECTED' | 'ABSENT';

/** A bundle compiled, not yet run. */
export type CompiledBundle = { readonly path: string; readonly script: Script; readonly cache: CodeCacheUse };

/** The code cache of the CommonJS bundle at `bundlePath`: the file beside it. */
export function codeCachePath(bundlePath: string): string {
  return `${bundlePath}.v8cache`;
}

/**
 * Compiles a CommonJS bundle as Node's module wrapper would, with its code cache when there is one V8 takes. A
 * symbolic link is followed first, as Node's module loader does: the bundle finds its package, and its cache, beside
 * the file itself.
 */
export function compileBundle(bundleName: string): CompiledBundle {
  const bundlePath = realpathSync(bundleName);
  const source = readFileSync(bundlePath, 'utf8');
  let cachedData: Buffer | undefined;
  try {
    cachedData = readFileSync(codeCachePath(bundlePath));
  } catch {
    // No cache (a build that did not write one, or a copy without it): compiled from the source.
  }
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: bundlePath, cachedData,
  });
  const cache = cachedData === undefined ? 'ABSENT' : script.cachedDataRejected === true ? 'REJECTED' : 'ACCEPTED';
  return { path: bundlePath, script, cache };
}

/** Runs a compiled bundle as a CommonJS module of its own file: its `require` resolves from beside it. */
export function runBundle(bundle: CompiledBundle): void {
  const module = { exports: {} };
  const wrapper = bundle.script.runInThisContext() as (...args: unknown[]) => void;
  wrapper.call(module.exports, module.exports, createRequire(bundle.path), module, bundle.path, dirname(bundle.path));
}

/**
 * Writes the code cache of a bundle this process ran: the functions it compiled so far go in with it. Through a
 * temporary name, so a reader never takes half a file.
 */
export function writeCodeCache(bundle: CompiledBundle): void {
  const target = codeCachePath(bundle.path);
  const temporary = `${target}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, bundle.script.createCachedData());
    renameSync(temporary, target);
  } finally {
    rmSync(temporary, { force: true }); // gone after the rename; a write that failed leaves nothing to ship
  }
}
