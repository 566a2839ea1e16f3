import t from 'tap';
import { PassThrough } from 'node:stream';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { EnvelopeStdioTransport } from '../../src/server/stdio-transport.js';

// The server's stdio transport: a line over the limit is dropped and reading goes on; input pauses under backpressure.

const tick = () => new Promise((resolve) => setImmediate(resolve));
const PING = (id: number) => `{"jsonrpc":"2.0","id":${id},"method":"ping"}\n`;

t.test('a line over the limit is discarded, in one chunk or many, and the next line is read', async (t) => {
  const input = new PassThrough();
  const transport = new EnvelopeStdioTransport(input, new PassThrough(), 64);
  const received: JSONRPCMessage[] = [];
  const errors: string[] = [];
  transport.onmessage = (message) => received.push(message);
  transport.onerror = (error) => errors.push(error.message);
  await transport.start();
  input.write(`${'x'.repeat(100)}\n${PING(1)}`);
  await tick();
  input.write('y'.repeat(40));
  input.write('y'.repeat(40));
  input.write('y'.repeat(40));
  input.write(`\n${PING(2)}{"jsonrpc":"2.0",`);
  input.write('"id":3,"method":"ping"}\n');
  await tick();
  t.same(received.map((m) => (m as { id: number }).id), [1, 2, 3], 'every message after a long line arrives');
  t.equal(errors.filter((e) => /over 64 bytes was discarded/.test(e)).length, 2, 'each long line is reported once');
  input.write('not json\n');
  await tick();
  t.equal(errors.length, 3, 'a malformed line is reported, not fatal');
  input.write(PING(4));
  await tick();
  t.equal(received.length, 4, 'still reading');
  await transport.close();
});

t.test('input pauses while stdout is over its high-water mark and resumes on drain', async (t) => {
  const input = new PassThrough();
  const output = new PassThrough({ highWaterMark: 16 });
  const transport = new EnvelopeStdioTransport(input, output);
  await transport.start();
  const sending = transport.send({ jsonrpc: '2.0', id: 1, result: { tools: [] } });
  t.ok(input.isPaused(), 'no more requests are read while the client has not taken the answer');
  output.read();
  await sending;
  t.notOk(input.isPaused(), 'reading resumes once the answer was taken');
  await transport.close();
});
