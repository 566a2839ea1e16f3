import t from 'tap';
import { PassThrough } from 'node:stream';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { EnvelopeStdioTransport } from '../../src/server/stdio-transport.js';

// The server's stdio transport: a line over the limit is dropped and reading goes on; input pauses under backpressure.

const tick = () => new Promise((resolve) => setImmediate(resolve));
const PING = (id: number) => `{"jsonrpc":"2.0","id":${id},"method":"ping"}\n`;

/** A started transport over two pass-through streams, with what it delivered and reported. */
async function openTransport(maxLineBytes?: number, outputHighWaterMark?: number) {
  const input = new PassThrough();
  const output = new PassThrough({ highWaterMark: outputHighWaterMark });
  const transport = new EnvelopeStdioTransport(input, output, maxLineBytes);
  const received: JSONRPCMessage[] = [];
  const errors: string[] = [];
  transport.onmessage = (message) => received.push(message);
  transport.onerror = (error) => errors.push(error.message);
  await transport.start();
  return { input, output, transport, received, errors };
}

t.test('a line over the limit is discarded, in one chunk or many, and the next line is read', async (t) => {
  const { input, transport, received, errors } = await openTransport(64);
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

t.test('a frame that is no JSON-RPC message is answered -32700 or -32600, without its content', async (t) => {
  const { input, output, transport, received } = await openTransport(256);
  const cases: [string, string | number | null, number][] = [
    ['{"jsonrpc":"2.0","id":4,"method":"tools/list"', null, -32700],
    ['QQ_NOT_JSON', null, -32700],
    ['{"jsonrpc":"2.0","id":3,"method":"tools/call","params":[]}', 3, -32600],
    ['{"jsonrpc":"2.0","id":"a-7","method":"tools/call","params":"QQ_PARAMS"}', 'a-7', -32600],
    ['[{"jsonrpc":"2.0","id":5,"method":"tools/list"}]', null, -32600],
    ['{"jsonrpc":"1.0","id":6,"method":"ping"}', 6, -32600],
    ['{"id":8,"method":"ping"}', 8, -32600],
    ['{"jsonrpc":"2.0","id":1.5,"method":"ping"}', null, -32600],
    ['{"jsonrpc":"2.0","id":{},"method":"ping"}', null, -32600],
    ['"QQ_STRING"', null, -32600],
    [`{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"${'q'.repeat(300)}"}}`, 9, -32700],
  ];
  for (const [line] of cases) input.write(`${line}\n`);
  input.write('{"jsonrpc":"2.0","id":12,"result":5}\n');
  input.write(PING(13));
  await tick();
  const answers = String(output.read()).trim().split('\n');
  t.same(answers.map((line) => JSON.parse(line)), cases.map(([, id, code]) => ({
    jsonrpc: '2.0', id,
    error: {
      code,
      message: id === 9
        ? 'Parse error: a line over 256 bytes is not read' : code === -32700 ? 'Parse error' : 'Invalid Request',
    },
  })), 'one answer per frame, in order; a malformed response (id 12) is not answered');
  t.notOk(answers.join('').includes('QQ_'), 'no content is repeated');
  t.same(received.map((m) => (m as { id: number }).id), [13], 'the next good frame is delivered');
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

t.test('after stopReading, a drain sends the waiting answers but reads no more requests', async (t) => {
  // A shutdown stops reading while an answer waits on a full stdout: that drain resumed input, and requests read then
  // ran against storage that was closing.
  const { input, output, transport, received } = await openTransport(undefined, 16);
  const sending = transport.send({ jsonrpc: '2.0', id: 1, result: { tools: [] } });
  transport.stopReading();
  input.write(PING(2));
  t.match(String(output.read()), /"id":1/, 'the waiting answer goes out');
  await sending;
  await tick();
  t.ok(input.isPaused(), 'input stays paused after the drain');
  t.same(received, [], 'the request written after stopReading is not read');
  await transport.close();
});

t.test('every send waiting on a full stdout shares one drain listener, and all resolve together', async (t) => {
  // A listener per waiting answer passed Node's limit of 10 and printed a MaxListenersExceededWarning on stderr.
  const input = new PassThrough();
  const output = new PassThrough({ highWaterMark: 16 });
  const transport = new EnvelopeStdioTransport(input, output);
  await transport.start();
  const sends = Array.from({ length: 20 }, (_, id) => transport.send({ jsonrpc: '2.0', id, result: {} }));
  t.equal(output.listenerCount('drain'), 1, 'one drain listener for 20 waiting answers');
  t.ok(input.isPaused(), 'input paused');
  output.resume();
  await Promise.all(sends);
  t.equal(output.listenerCount('drain'), 0, 'none left once drained');
  t.notOk(input.isPaused(), 'input resumed');
  await transport.close();
});

t.test('a line that is not UTF-8 is a parse error, not text repaired with U+FFFD', async (t) => {
  const { input, output, transport, received } = await openTransport(256);
  const invalid = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"'),
    Buffer.from([0xff, 0xc3]), Buffer.from('"}}\n')]);
  input.write(invalid);
  // A valid character split across two writes is still one character.
  const smile = Buffer.from('{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"日😀"}}\n');
  input.write(smile.subarray(0, 56));
  input.write(smile.subarray(56));
  await tick();
  const parseError = { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } };
  t.same(JSON.parse(String(output.read()).trim()), parseError, 'one -32700 answer');
  const ping = { jsonrpc: '2.0', id: 2, method: 'ping', params: { x: '日😀' } };
  t.same(received, [ping], 'the next line is read intact');
  await transport.close();
});

t.test('a line over the limit is answered -32700 with its id, found at its start or end, at the end of the line',
  async (t) => {
  // Before, the answer had id null, and an SDK client waited for its own timeout (a minute) on the call.
  const { input, output, transport, received } = await openTransport(64);
  const q = 'q'.repeat(100);
  const lines: [string, string | number | null][] = [
    [`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"${q}"}}`, 1],
    [`{"method":"tools/call","params":{"x":"${q}"},"jsonrpc":"2.0","id":"two"}`, 'two'], // the SDK's key order
    [`{"id":3,"method":"ping","params":{"x":"${q}"}}\r`, 3],
    [`{"method":"ping","params":{"x":"${q}"},"id":4}  \r`, 4],
    [`{"method":"ping","params":{"x":"${q}","id":5}}`, null], // a nested id is not the call's
    [`{"method":"ping","params":{"x":"${q}"},"s":",\\"id\\":6}"}`, null], // nor one inside a string
    [`{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"${q}"},"id":8}`, null], // two ids: unsure
    [`{"jsonrpc":"2.0","method":"notifications/x","params":{"x":"${q}"}}`, null],
    [`{"jsonrpc":"2.0","id":1.5,"method":"ping","params":{"x":"${q}"}}`, null],
  ];
  const answers = () => String(output.read() ?? '').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
  for (const [line] of lines) input.write(`${line}\n`);
  await tick();
  // In pieces: nothing is answered before the line ends.
  const long = `{"jsonrpc":"2.0","id":10,"method":"ping","params":{"x":"${q}${q}"},"id":10}`;
  for (let at = 0; at < long.length; at += 30) input.write(long.slice(at, at + 30));
  await tick();
  const first = answers();
  t.same(first.map((answer) => answer.id), lines.map(([, id]) => id), 'each long line answered with its id, or null');
  t.ok(first.every((answer) => answer.error.code === -32700
    && answer.error.message === 'Parse error: a line over 64 bytes is not read'), 'as -32700, the limit named');
  input.write(`\n${PING(11)}`);
  await tick();
  t.same(answers().map((answer) => answer.id), [10], 'the line in pieces is answered at its end, with its id');
  t.same(received.map((m) => (m as { id: number }).id), [11], 'and the next line is read');
  await transport.close();
});

t.test('a long line: an id that is no JSON value or no UTF-8 gives null, a response no answer; reading goes on',
  async (t) => {
  // `007`, `-01` and a raw tab passed the id expressions and then failed JSON.parse inside the stdin handler: the
  // server exited 1 (review of the long-line ids). A long response was answered with its id, a short one never is.
  const { input, output, transport, received } = await openTransport(64);
  const q = 'q'.repeat(100);
  for (const line of [`{"id":007,"method":"ping","params":{"x":"${q}"}}`,
    `{"jsonrpc":"2.0","method":"ping","params":{"x":"${q}"},"id":-01}`,
    `{"id":"a\tb","method":"ping","params":{"x":"${q}"}}`,
    `{"jsonrpc":"2.0","id":5,"result":{"x":"${q}"}}`,
    `{"result":{"x":"${q}"},"jsonrpc":"2.0","id":5}`]) input.write(`${line}\n`);
  // Bytes that are no UTF-8 in the id: not repaired into an id of another call.
  input.write(Buffer.concat(
    [Buffer.from('{"id":"a'), Buffer.from([0xff]), Buffer.from(`b","method":"ping","params":{"x":"${q}"}}\n`)],
  ));
  // Characters cut at either end of the 256 bytes looked at do not hide the id.
  for (const pad of ['', 'a'])
    input.write(`{"method":"m","params":{"x":"${pad}${'é'.repeat(200)}"},"jsonrpc":"2.0","id":9}\n`);
  input.write(PING(2));
  await tick();
  const answers = String(output.read()).trim().split('\n').map((line) => JSON.parse(line));
  t.same(answers.map((answer) => answer.id), [null, null, null, null, 9, 9],
    'no JSON id: null; the two responses: no answer; bad UTF-8: null; cut characters: the id');
  t.same(received.map((m) => (m as { id: number }).id), [2], 'the next line is read');
  await transport.close();
});

t.test('a long line gives the same answer whatever chunks it arrives in', async (t) => {
  // The tail kept only the chunk that started the discarding, so an id split across it and the bytes before was lost.
  const shapes: [string, string | number, (pad: string) => string][] = [
    ['SDK order', 77, (pad) => `{"method":"tools/call","params":{"p":"${pad}"},"jsonrpc":"2.0","id":77}`],
    ['id first', 'abc', (pad) => `{"jsonrpc":"2.0","id":"abc","method":"x","params":{"p":"${pad}"}}`],
    ['CRLF', 12345, (pad) => `{"method":"m","params":{"p":"${pad}"},"jsonrpc":"2.0","id":12345}\r`],
  ];
  const wrong: string[] = [];
  for (const max of [64, 1000]) {
    for (const [name, id, make] of shapes) {
      for (const extra of [2, 5, 300]) {
        const line = make('x'.repeat(Math.max(0, max - make('').length + extra)));
        for (let size = 1; size <= 300; size += 1) {
          const { input, output, transport } = await openTransport(max);
          for (let at = 0; at < line.length; at += size) input.write(line.slice(at, at + size));
          input.write('\n');
          await tick();
          const answer = JSON.parse(String(output.read()).trim());
          if (answer.id !== id)
            wrong.push(`${name}, limit ${max}, ${line.length} bytes in chunks of ${size}: ${answer.id}`);
          await transport.close();
        }
      }
    }
  }
  t.same(wrong.slice(0, 5), [], `${wrong.length} of 5,400 wrong`);
});

t.test('a message whose handler throws is reported, and the next line in the same chunk is read', async (t) => {
  const { input, transport, received, errors } = await openTransport();
  transport.onmessage = (message) => {
    received.push(message);
    if ((message as { id: number }).id === 1) throw new Error('handler fault');
  };
  input.write(`${PING(1)}${PING(2)}`);
  await tick();
  t.same(received.map((m) => (m as { id: number }).id), [1, 2], 'both delivered');
  t.same(errors, ['handler fault'], 'the fault reported through onerror');
  await transport.close();
});

t.test('the line limit counts a CRLF line as the same message ending in LF', async (t) => {
  const { input, transport, received, errors } = await openTransport(64);
  const padded = (id: number, bytes: number) => {
    const head = `{"jsonrpc":"2.0","id":${id},"method":"ping","params":{"p":"`;
    return `${head}${'x'.repeat(bytes - head.length - 3)}"}}`;
  };
  input.write(`${padded(1, 64)}\r\n`);
  input.write(`${padded(2, 64)}\r`);
  input.write(`\n${padded(3, 65)}\r\n`);
  await tick();
  const ids = received.map((m) => (m as { id: number }).id);
  t.same(ids, [1, 2], 'exactly 64 bytes before CRLF are read, in one chunk or two');
  t.equal(errors.filter((e) => /over 64 bytes was discarded/.test(e)).length, 1, '65 bytes are not');
  await transport.close();
});
