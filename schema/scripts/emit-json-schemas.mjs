// Emits the contract's JSON Schemas beside the built package (schema/dist/json/, exported as `@factlane/schema/json/*`), so audit
// tooling can read them without running TypeScript: one file per definition and one per tool.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TOOL_DEFINITIONS, TOOLS, TOOL_OUTPUT_SCHEMA, toolInputSchema } from '../dist/tool-schemas.js';

const out = fileURLToPath(new URL('../dist/json/', import.meta.url));
mkdirSync(out, { recursive: true });
for (const [name, schema] of Object.entries(TOOL_DEFINITIONS)) writeFileSync(join(out, `${name}.json`), `${JSON.stringify(schema, null, 2)}\n`);
for (const tool of TOOLS) {
  const entry = { name: tool.name, description: tool.description, inputSchema: toolInputSchema(tool.name), outputSchema: TOOL_OUTPUT_SCHEMA };
  writeFileSync(join(out, `${tool.name}.tool.json`), `${JSON.stringify(entry, null, 2)}\n`);
}
