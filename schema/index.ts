/**
 * The FactLane contract as code, consumable without the runtime (`factlane/schema`).
 * Imports nothing from `src/`.
 */
export * from './constants.js';
export * from './error-codes.js';
export type { DB } from '../generated/db.js';
