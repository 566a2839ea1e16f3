/**
 * The FactLane contract as code, its own package `@factlane/schema` (only dependency: TypeBox; no native
 * module, no database driver): constants, the error-code catalogue, enumerations, reserved keys, write
 * profiles, the TypeBox tool schemas and their open runtime form, the offline tool reference, the
 * lineage-audit queries, and the released migrations with their checksums. Imports nothing outside schema/. JSON
 * Schema files are emitted at build under `@factlane/schema/json/`. The product's Kysely table types stay in the
 * product (`factlane/schema`).
 */
export * from './constants.js';
export * from './error-codes.js';
export * from './enums.js';
export * from './reserved-keys.js';
export * from './write-profiles.js';
export * from './tool-schemas.js';
export * from './runtime-schemas.js';
export * from './tool-reference.js';
export * from './lineage-audit.js';
export * from './migrations.js';
