/**
 * The FactLane contract as code, consumable without the runtime (`factlane/schema`): constants,
 * the error-code catalogue, enumerations, reserved keys, write profiles, the TypeBox tool schemas and
 * their open runtime form, the offline tool reference, and the generated Kysely table types.
 * Imports nothing from `src/`. JSON Schema files are emitted at build under `factlane/schema/json/`.
 */
export * from './constants.js';
export * from './error-codes.js';
export * from './enums.js';
export * from './reserved-keys.js';
export * from './write-profiles.js';
export * from './tool-schemas.js';
export * from './runtime-schemas.js';
export * from './tool-reference.js';
export type { DB } from '../generated/db.js';
export * from './lineage-audit.js';
