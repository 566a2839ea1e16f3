#!/usr/bin/env node
import { fileURLToPath } from 'node:url';
import { compileBundle, runBundle, type CompiledBundle } from './bundle-cache.js';
import { holdStopSignals } from './stop-signals.js';

// The launcher's entry point: the stop signals are held first, then the launcher loads (the MCP SDK, ajv, kysely and
// the rest take 100-200 ms to load, during which Node's default would end the process by the signal). The launcher
// is a CommonJS bundle beside this file (scripts/bundle.mjs), which runs from V8's code cache (decision 0047).
holdStopSignals();
const bundlePath = fileURLToPath(new URL('./factlane-server.cjs', import.meta.url));
let bundle: CompiledBundle;
try {
  bundle = compileBundle(bundlePath);
} catch (error) {
  if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  // A broken install (a copied bin, an interrupted build): one line a host shows, not a stack.
  process.stderr.write(`factlane: this install is incomplete: ${bundlePath} is missing; run npm run build in a `
    + 'checkout, or install the package again\n');
  process.exit(1);
}
runBundle(bundle);
