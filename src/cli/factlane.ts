#!/usr/bin/env node
import { fileURLToPath } from 'node:url';
import { compileBundle, runBundle } from './bundle-cache.js';
import { holdStopSignals } from './stop-signals.js';

// The launcher's entry point: the stop signals are held first, then the launcher loads (the MCP SDK, ajv, kysely and
// the rest take 100-200 ms to load, during which Node's default would end the process by the signal). The launcher
// is a CommonJS bundle beside this file (scripts/bundle.mjs), which runs from V8's code cache (decision 0047).
holdStopSignals();
runBundle(compileBundle(fileURLToPath(new URL('./factlane-server.cjs', import.meta.url))));
