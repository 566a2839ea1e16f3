import t from 'tap';
import { PassThrough } from 'node:stream';
import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { CallToolResultSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { canonicalJson, freezeCanonical } from '../../src/core/canonical-json.js';
import { envelopeResult, stdioFrame } from '../../src/server/envelope-frames.js';
import { EnvelopeStdioTransport } from '../../src/server/stdio-transport.js';

const BLOCK = freezeCanonical({ available: true, counts: { CANDIDATE: 1, VALIDATED_CURRENT: 0 } });

/**
 * An envelope in insertion order that is not the canonical order, with a fresh audit object as the gateway stamps it.
 */
function envelope(): Record<string, unknown> {
  return {
    status: 'OK', results: [], degradation: null, backend_status: BLOCK, note: 'quote " backslash \\ é 😀 \u2028',
    audit: { request_id: 'r1', operation: 'memory_status' },
  };
}

/** The response the SDK sends: the handler's result after its CallToolResultSchema check (a copy one level deep). */
function response(result: unknown, id: string | number = 7): JSONRPCMessage {
  return { jsonrpc: '2.0', id, result: CallToolResultSchema.parse(result) } as JSONRPCMessage;
}

t.test('an envelope result is framed with its canonical text as structuredContent', async (t) => {
  for (const id of [7, 'id "quoted" \\ 1']) {
    const result = envelopeResult(envelope());
    const message = response(result, id);
    const frame = stdioFrame(message);
    t.equal(frame.indexOf('\n'), frame.length - 1, 'one line ending in a newline');
    t.same(JSON.parse(frame), JSON.parse(serializeMessage(message)), 'the same JSON-RPC message as the SDK writes');
    const text = (result.content[0] as { text: string }).text;
    t.equal(text, canonicalJson(envelope()));
    t.ok(frame.includes(`"structuredContent":${text}}`), 'the envelope is written from its text, not serialised again');
    t.not(frame, serializeMessage(message), 'not the SDK frame (which keeps insertion order)');
  }
});

t.test('anything that is not exactly an envelope result is framed as the SDK frames it', async (t) => {
  const cases: [string, (result: Record<string, any>) => unknown][] = [
    ['an envelope value replaced after the result was built', (r) => ({
      ...r, structuredContent: { ...r.structuredContent, status: 'BLOCKED' },
    })],
    ['an envelope key added', (r) => ({ ...r, structuredContent: { ...r.structuredContent, extra: 1 } })],
    ['an envelope key removed', (r) => {
      const { degradation: _d, ...rest } = r.structuredContent; return { ...r, structuredContent: rest };
    }],
    ['an envelope key renamed with the same count', (r) => {
      const { degradation, ...rest } = r.structuredContent;
      return { ...r, structuredContent: { ...rest, other: degradation } };
    }],
    ['another text', (r) => ({ ...r, content: [{ type: 'text', text: `${r.content[0].text} ` }] })],
    ['a second content item', (r) => ({ ...r, content: [...r.content, { type: 'text', text: 'x' }] })],
    ['a content item with more keys', (r) => ({ ...r, content: [{ ...r.content[0], annotations: { priority: 1 } }] })],
    ['isError beside the envelope', (r) => ({ ...r, isError: false })],
    ['_meta beside the envelope', (r) => ({ ...r, _meta: { a: 1 } })],
    ['an audit object of another envelope', (r) => ({
      ...r, structuredContent: { ...r.structuredContent, audit: { ...r.structuredContent.audit } },
    })],
  ];
  for (const [name, alter] of cases) {
    const message = response(alter(envelopeResult(envelope()) as Record<string, any>));
    t.equal(stdioFrame(message), serializeMessage(message), name);
  }
  // A key the envelope holds as undefined is absent from its text; another key in its place is not.
  const withUndefined = envelopeResult({ ...envelope(), absent: undefined }) as Record<string, any>;
  const { absent: _absent, ...kept } = withUndefined.structuredContent;
  const swapped = response({ ...withUndefined, structuredContent: { ...kept, present: 'x' } });
  t.equal(stdioFrame(swapped), serializeMessage(swapped), 'an undefined envelope key swapped for a present one');
  const byHand =
    response({ content: [{ type: 'text', text: canonicalJson(envelope()) }], structuredContent: envelope() });
  t.equal(stdioFrame(byHand), serializeMessage(byHand), 'a result not built by envelopeResult');
  const schemaError =
    response({ isError: true, content: [{ type: 'text', text: 'memory_status: invalid arguments' }] });
  t.equal(stdioFrame(schemaError), serializeMessage(schemaError), 'an isError result');
  const others: JSONRPCMessage[] = [
    { jsonrpc: '2.0', id: 1, result: { tools: [] } },
    { jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'unknown tool' } },
    { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
    { jsonrpc: '2.0', id: 3, method: 'ping' },
  ];
  for (const message of others) t.equal(stdioFrame(message), serializeMessage(message), JSON.stringify(message));
});

t.test('the transport writes frames to its output and waits for drain when the output is full', async (t) => {
  const input = new PassThrough();
  const output = new PassThrough({ highWaterMark: 16 });
  const transport = new EnvelopeStdioTransport(input, output);
  const received: JSONRPCMessage[] = [];
  transport.onmessage = (message) => received.push(message);
  await transport.start();
  input.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
  await new Promise((resolve) => setImmediate(resolve));
  t.same(received, [{ jsonrpc: '2.0', id: 1, method: 'ping' }], 'reads frames as the SDK transport does');
  const message = response(envelopeResult(envelope()), 1);
  let sent = false;
  const sending = transport.send(message).then(() => { sent = true; });
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(sent, false, 'not resolved while the output is over its high-water mark');
  const written = String(output.read());
  await sending;
  t.equal(written, stdioFrame(message), 'the frame is written as stdioFrame builds it');
  await transport.close();
});
