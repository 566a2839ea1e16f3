// Bundles the three command-line entry points into dist/bin/ (one file each). Loading kysely, the MCP
// SDK, ajv and TypeBox as hundreds of separate ESM modules took ~250 ms of every start; one bundled file
// loads in a fraction of that. Native packages stay external: they load their .node binaries by path.
// The server's launcher is one CommonJS file beside its entry point, so that it can run from V8's code cache
// (decision 0047; scripts/code-cache.mjs writes the cache): Node 20 keeps no code cache for ES modules.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

// Chunk names carry a content hash, so a rebuild writes new files beside the old ones; `files` ships dist/bin/ whole.
rmSync('dist/bin', { recursive: true, force: true });
const EXTERNAL = ['better-sqlite3', 'sqlite-vec', 'fs-ext'];
await build({
  entryPoints: {
    factlane: 'dist/src/cli/factlane.js',
    'factlane-migrate': 'dist/src/cli/factlane-migrate.js',
    'factlane-admin': 'dist/src/cli/factlane-admin.js',
  },
  outdir: 'dist/bin',
  bundle: true,
  // Dynamic imports (the o200k_base tables, ~5 MB) become chunks loaded on first use, not at start.
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: EXTERNAL,
  // Bundled CommonJS dependencies call require(); give the ESM bundle one.
  banner: {
    js: "import { createRequire as __factlaneCreateRequire } from 'node:module'; "
      + 'const require = __factlaneCreateRequire(import.meta.url);',
  },
  logLevel: 'warning',
});
await build({
  entryPoints: ['dist/src/cli/factlane-launch.js'],
  outfile: 'dist/bin/factlane-server.cjs',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: EXTERNAL,
  // The one module-relative name the sources use: the bundle's own file URL, as an ES module would see it.
  define: { 'import.meta.url': '__factlaneModuleUrl' },
  // Strict, as the ES modules it is built from: a directive counts only at the top, above the banner's line.
  banner: { js: "'use strict';\nvar __factlaneModuleUrl = require('node:url').pathToFileURL(__filename).href;" },
  logLevel: 'warning',
});
