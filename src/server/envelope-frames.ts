import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { canonicalJson, isJsonObject } from '../core/canonical-json.js';

// A governed result carries its envelope twice: as canonical JSON text and as structuredContent
// (CONTRACT.md §3.4). The text is already the JSON of structuredContent, so the stdio frame writes it
// in that place instead of serialising the envelope a second time.

/** Each envelope a result was built from, and its canonical text, by the envelope's audit object. */
const ENVELOPE_TEXTS = new WeakMap<object, {
  readonly envelope: Readonly<Record<string, unknown>>; readonly text: string;
}>();

/**
 * The tool result of an envelope: its canonical JSON as the one text item, and the envelope as structuredContent.
 * The envelope must not be changed after this call: the frame writes the text computed here in its place.
 */
export function envelopeResult(envelope: Record<string, unknown>): CallToolResult {
  const text = canonicalJson(envelope);
  if (isJsonObject(envelope.audit)) ENVELOPE_TEXTS.set(envelope.audit, { envelope, text });
  return { content: [{ type: 'text', text }], structuredContent: envelope };
}

const hasKeys = (value: object, count: number) => Object.keys(value).length === count;

/**
 * The canonical text of the envelope a result carries, or null. The SDK validates a result before sending it
 * and hands over a copy one level deep, so the envelope is found by its audit object and the copy must hold
 * exactly the envelope's keys with the same values; the result must hold nothing but the text and the envelope.
 */
function envelopeTextOf(result: unknown): string | null {
  if (!isJsonObject(result) || !hasKeys(result, 2) || !Array.isArray(result.content) || result.content.length !== 1)
    return null;
  const item: unknown = result.content[0];
  const structured = result.structuredContent;
  if (!isJsonObject(item) || !hasKeys(item, 2) || item.type !== 'text' || !isJsonObject(structured)
    || !isJsonObject(structured.audit)) return null;
  const known = ENVELOPE_TEXTS.get(structured.audit);
  if (known === undefined || known.text !== item.text) return null;
  const keys = Object.keys(known.envelope);
  if (!hasKeys(structured, keys.length)) return null;
  for (const key of keys) if (!Object.hasOwn(structured, key) || structured[key] !== known.envelope[key]) return null;
  return known.text;
}

/**
 * One newline-delimited JSON-RPC frame. A response carrying an envelope result is written with the envelope's
 * canonical text as structuredContent (same JSON value, keys in canonical order); anything else as the SDK
 * writes it.
 */
export function stdioFrame(message: JSONRPCMessage): string {
  if (!('result' in message) || !('id' in message)) return serializeMessage(message);
  const text = envelopeTextOf(message.result);
  if (text === null) return serializeMessage(message);
  return `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{"content":[{"type":"text","text":`
    + `${JSON.stringify(text)}}],"structuredContent":${text}}}\n`;
}
