import { TOOL_DEFINITIONS, TOOLS } from './tool-schemas.js';
import type { ToolName } from './enums.js';

// The runtime validator is open (CONTRACT.md §3.3, §3.5): it checks only that required keys are present,
// known top-level keys have the right JSON type, and the numeric/array bounds of §3.5. Enum membership,
// byte lengths, formats and nested contents are governed later, so they are dropped here; unknown keys
// pass through to governed validation.

const KEPT_KEYWORDS = ['type', 'minimum', 'maximum', 'maxItems', 'items'] as const;

function openProperty(schema: Record<string, unknown>): Record<string, unknown> {
  if (typeof schema.$ref === 'string') return { type: 'object' };
  if (Array.isArray(schema.anyOf)) {
    // Nullable nested payloads: an object or null.
    return { type: ['object', 'null'] };
  }
  const open: Record<string, unknown> = {};
  for (const keyword of KEPT_KEYWORDS) if (schema[keyword] !== undefined)
    open[keyword] = keyword === 'items' ? { type: 'string' } : schema[keyword];
  return open;
}

/** The open runtime schema of one tool's `request` (a plain JSON Schema for ajv). */
export function openRequestSchema(name: ToolName): Record<string, unknown> {
  const tool = TOOLS.find((t) => t.name === name);
  if (!tool) throw new RangeError(`unknown tool ${name}`);
  const definition = JSON.parse(JSON.stringify(TOOL_DEFINITIONS[tool.requestDefinition])) as {
    properties: Record<string, Record<string, unknown>>; required?: string[];
  };
  return {
    type: 'object',
    properties: Object.fromEntries(Object.entries(definition.properties)
      .map(([key, schema]) => [key, openProperty(schema)])),
    required: definition.required ?? [],
    additionalProperties: true,
  };
}
