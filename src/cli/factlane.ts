#!/usr/bin/env node
import { holdStopSignals } from './stop-signals.js';

// The launcher's entry point: the stop signals are held first, then the launcher loads (the MCP SDK, ajv, kysely and
// the rest take 100-200 ms to load, during which Node's default would end the process by the signal).
holdStopSignals();
await import('./factlane-launch.js');
