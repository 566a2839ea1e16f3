// Writes dist/schema/, the `factlane/schema` export kept for consumers that install the whole product: a
// re-export of the bundled workspace package @factlane/schema, plus the product's own Kysely table types
// (DB), and a copy of its JSON Schemas under factlane/schema/json/ (an export may not point into node_modules).
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const out = fileURLToPath(new URL('../dist/schema/', import.meta.url));
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
writeFileSync(`${out}index.js`, "export * from '@factlane/schema';\n");
writeFileSync(`${out}index.d.ts`, "export * from '@factlane/schema';\nexport type { DB } from '../generated/db.js';\n");
cpSync(fileURLToPath(new URL('../schema/dist/json/', import.meta.url)), `${out}json/`, { recursive: true });
