import type { Readable, Writable } from 'node:stream';
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { isJsonObject } from '../core/canonical-json.js';
import { stdioFrame } from './envelope-frames.js';

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
/** JSON text is UTF-8 (RFC 8259 §8.1): a line that is not is no JSON, not text to repair with U+FFFD. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The id a JSON-RPC 2.0 error answer to an invalid frame carries: the frame's own when it is a string or an integer,
 * else null (JSON-RPC 2.0 §5). Undefined for a frame that looks like a response (`result` or `error`, no `method`):
 * a response is never answered.
 */
function answerIdOf(frame: unknown): string | number | null | undefined {
  if (!isJsonObject(frame)) return null;
  const { id } = frame;
  if (!('method' in frame) && ('result' in frame || 'error' in frame)) return undefined;
  return typeof id === 'string' || Number.isSafeInteger(id) ? id as string | number : null;
}

// A line over the limit is not parsed, but its id is looked for at either end of it, so that the client's call gets
// its error at once instead of waiting for its own timeout (a minute for an SDK client). JSON texts written by an SDK
// end with the id (`{"method":…,"params":…,"jsonrpc":"2.0","id":7}`), others start with it. The id is taken only
// where it can belong to the outer object (the line's first keys, or its last key right before the final brace),
// and only from a line whose first keys show a `method`: a response is never answered, long or not.
const ID_PROBE_BYTES = 256;
const ID_VALUE = String.raw`(-?(?:0|[1-9]\d{0,15})|"[^"\\\u0000-\u001f]{0,128}")`;
const FIRST_KEY = String.raw`"(?:jsonrpc|method|id)"\s*:\s*(?:"[^"\\]{0,64}"|-?\d{1,16})\s*,\s*`;
const HEAD_ID = new RegExp(String.raw`^\s*\{\s*(?:${FIRST_KEY})*"id"\s*:\s*${ID_VALUE}\s*[,}]`);
const TAIL_ID = new RegExp(String.raw`[{,]\s*"id"\s*:\s*${ID_VALUE}\s*\}\s*$`);
const HEAD_METHOD = new RegExp(String.raw`^\s*\{\s*(?:${FIRST_KEY})*"method"\s*:`);
const HEAD_RESPONSE = new RegExp(String.raw`^\s*\{\s*(?:${FIRST_KEY})*"(?:result|error)"\s*:`);

/**
 * The id of a line too long to parse, from its first and last ID_PROBE_BYTES bytes: null when unsure, undefined for
 * what starts as a response (never answered, as answerIdOf).
 */
function longLineIdOf(head: Buffer, tail: Buffer): string | number | null | undefined {
  let start: string;
  let end: string;
  try {
    // The ends are cut anywhere: a character split at the cut is dropped, any other bad byte makes the id unsure.
    start = UTF8.decode(head.subarray(0, lastWholeCharEnd(head)));
    end = UTF8.decode(tail.subarray(firstWholeCharStart(tail)));
  } catch {
    return null;
  }
  if (!HEAD_METHOD.test(start)) return HEAD_RESPONSE.test(start) ? undefined : null;
  let ids: (string | number)[];
  try {
    ids = [HEAD_ID.exec(start)?.[1], TAIL_ID.exec(end)?.[1]]
      .filter((text) => text !== undefined).map((text) => JSON.parse(text) as string | number);
  } catch {
    return null; // the expressions take only JSON values; never let a surprise end the server
  }
  const [id] = ids;
  if (id === undefined || ids.some((other) => other !== id)) return null;
  return typeof id === 'string' || Number.isSafeInteger(id) ? id : null;
}

const isContinuation = (byte: number) => (byte & 0xc0) === 0x80;

/** Where the first whole UTF-8 character of `bytes` begins: the continuation bytes of one cut at the start skipped. */
function firstWholeCharStart(bytes: Buffer): number {
  let at = 0;
  while (at < bytes.length && at < 4 && isContinuation(bytes[at]!)) at += 1;
  return at;
}

/** Where the last whole UTF-8 character of `bytes` ends: a character cut at the end dropped. */
function lastWholeCharEnd(bytes: Buffer): number {
  let at = bytes.length;
  while (at > 0 && bytes.length - at < 4 && isContinuation(bytes[at - 1]!)) at -= 1;
  if (at === 0) return bytes.length; // no lead byte: the strict decoder refuses it
  const lead = bytes[at - 1]!;
  const size = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return size === 1 || size === bytes.length - at + 1 ? bytes.length : at - 1;
}

/** The first ID_PROBE_BYTES bytes of `pieces`, as a copy of their own. */
function firstBytes(pieces: readonly Buffer[]): Buffer {
  const taken: Buffer[] = [];
  let bytes = 0;
  for (const piece of pieces) {
    if (bytes >= ID_PROBE_BYTES) break;
    taken.push(piece.subarray(0, ID_PROBE_BYTES - bytes));
    bytes += taken.at(-1)!.length;
  }
  return Buffer.concat(taken);
}

/** The last ID_PROBE_BYTES bytes of `pieces` joined, as a copy of their own. */
function lastBytesOf(pieces: readonly Buffer[]): Buffer {
  let tail: Buffer = Buffer.alloc(0);
  for (let index = pieces.length - 1; index >= 0 && tail.length < ID_PROBE_BYTES; index -= 1)
    tail = lastBytes(pieces[index]!, tail);
  return tail;
}

/** The last ID_PROBE_BYTES bytes of `before` followed by `piece`, as a copy of their own. */
function lastBytes(before: Buffer, piece: Buffer): Buffer {
  if (piece.length >= ID_PROBE_BYTES) return Buffer.from(piece.subarray(piece.length - ID_PROBE_BYTES));
  const joined = Buffer.concat([before, piece]);
  return Buffer.from(joined.subarray(Math.max(0, joined.length - ID_PROBE_BYTES)));
}

/**
 * The server's stdio transport: newline-delimited JSON-RPC in, frames written with stdioFrame out. Unlike the SDK's
 * StdioServerTransport, which closes itself (and so ends the server without its shutdown) when one line passes its
 * 10 MiB buffer, a longer line is discarded as it arrives and reported through `onerror`; reading goes on at the next
 * line. And input is paused while stdout is over its high-water mark, so a client that stops reading its answers
 * holds the server's memory to what is in flight instead of queuing every answer (issue 13, wire abuse).
 */
export class EnvelopeStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #stdin: Readable;
  readonly #stdout: Writable;
  readonly #maxLineBytes: number;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #discarding = false;
  /** Of the line being discarded: its first and its latest ID_PROBE_BYTES bytes (longLineIdOf). */
  #discardedHead: Buffer = Buffer.alloc(0);
  #discardedTail: Buffer = Buffer.alloc(0);
  /** The sends waiting for stdout to drain, resolved together by one pair of listeners. */
  #drainWaiters: (() => void)[] = [];
  #closed = false;
  /** False once stopReading was called: no drain resumes input any more (a shutdown's last answers still go out). */
  #reading = true;
  readonly #onData = (chunk: Buffer) => this.#receive(chunk);
  readonly #onError = (error: Error) => this.onerror?.(error);

  constructor(
    stdin: Readable = process.stdin, stdout: Writable = process.stdout, maxLineBytes = STDIO_DEFAULT_MAX_BUFFER_SIZE,
  ) {
    this.#stdin = stdin;
    this.#stdout = stdout;
    this.#maxLineBytes = maxLineBytes;
  }

  async start(): Promise<void> {
    this.#stdin.on('data', this.#onData);
    this.#stdin.on('error', this.#onError);
  }

  #receive(chunk: Buffer): void {
    let start = 0;
    for (let index = chunk.indexOf(NEWLINE); index !== -1; index = chunk.indexOf(NEWLINE, start)) {
      const piece = chunk.subarray(start, index);
      start = index + 1;
      if (this.#discarding) {
        this.#discarding = false;
        this.#answerLong(this.#discardedHead, lastBytes(this.#discardedTail, piece));
        continue;
      }
      const line = this.#pendingBytes === 0 ? piece : Buffer.concat([...this.#pending, piece]);
      this.#pending = [];
      this.#pendingBytes = 0;
      // A CRLF line ends at its LF like any other: the CR is not counted against the limit.
      const end = line.at(-1) === CARRIAGE_RETURN ? line.length - 1 : line.length;
      if (end > this.#maxLineBytes) {
        this.#reportLong();
        this.#answerLong(line.subarray(0, ID_PROBE_BYTES), line.subarray(Math.max(0, end - ID_PROBE_BYTES), end));
        continue;
      }
      this.#deliver(line.subarray(0, end));
    }
    if (start >= chunk.length) return;
    const rest = chunk.subarray(start);
    if (this.#discarding) {
      this.#discardedTail = lastBytes(this.#discardedTail, rest);
      return;
    }
    // One byte of slack: the line's CR may be the last byte here, its LF in the next chunk.
    if (this.#pendingBytes + rest.length > this.#maxLineBytes + 1) {
      // The line is already too long: drop what came of it and the rest of it as it arrives; answer at its end.
      this.#discardedHead = firstBytes([...this.#pending, rest]);
      this.#discardedTail = lastBytesOf([...this.#pending, rest]);
      this.#pending = [];
      this.#pendingBytes = 0;
      this.#discarding = true;
      this.#reportLong();
      return;
    }
    this.#pending.push(rest);
    this.#pendingBytes += rest.length;
  }

  #reportLong(): void {
    this.onerror?.(new Error(`a frame over ${this.#maxLineBytes} bytes was discarded`));
  }

  /** Answers a discarded line: -32700, with the line's id when longLineIdOf finds it. */
  #answerLong(head: Buffer, tail: Buffer): void {
    this.#answerInvalid(longLineIdOf(head, tail), ErrorCode.ParseError,
      `Parse error: a line over ${this.#maxLineBytes} bytes is not read`);
  }

  /**
   * A line that is no JSON-RPC 2.0 message is answered, as JSON-RPC 2.0 §5.1 asks, so that the host does not wait
   * for ever: -32700 when it is no JSON (not UTF-8 included), -32600 when it is JSON but no message (a batch array
   * included: MCP has no batches). The answer never repeats the content; the reason goes to `onerror`.
   */
  #deliver(bytes: Buffer): void {
    let frame: unknown;
    try {
      const line = UTF8.decode(bytes);
      if (line.trim() === '') return;
      frame = JSON.parse(line);
    } catch (error) {
      this.onerror?.(error as Error);
      this.#answerInvalid(null, ErrorCode.ParseError, 'Parse error');
      return;
    }
    const message = JSONRPCMessageSchema.safeParse(frame);
    if (!message.success) {
      this.onerror?.(new Error('a frame that is no JSON-RPC 2.0 message was refused'));
      this.#answerInvalid(answerIdOf(frame), ErrorCode.InvalidRequest, 'Invalid Request');
      return;
    }
    try {
      this.onmessage?.(message.data);
    } catch (error) {
      // Thrown in the stdin handler it would end the server, and with it every call in flight; the next line is read.
      this.onerror?.(error as Error);
    }
  }

  #answerInvalid(id: string | number | null | undefined, code: number, text: string): void {
    if (id === undefined) return;
    // JSON-RPC's null id is outside the SDK's message type, which only knows answers to requests it could read.
    void this.send({ jsonrpc: '2.0', id, error: { code, message: text } } as unknown as JSONRPCMessage);
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      // The host closed its end of stdout (it went away): no answer can be delivered any more.
      if (this.#stdout.destroyed) {
        resolve();
        return;
      }
      if (this.#stdout.write(stdioFrame(message))) {
        resolve();
        return;
      }
      // Backpressure: read no more requests until the client has taken the answers already written, or is gone.
      // One pair of listeners serves every waiting send: a listener per answer passed Node's leak warning at 11.
      if (this.#drainWaiters.length === 0) {
        this.#stdin.pause();
        this.#stdout.on('drain', this.#drained);
        this.#stdout.on('close', this.#drained);
      }
      this.#drainWaiters.push(resolve);
    });
  }

  readonly #drained = () => {
    this.#stdout.off('drain', this.#drained);
    this.#stdout.off('close', this.#drained);
    const waiters = this.#drainWaiters;
    this.#drainWaiters = [];
    if (!this.#closed && this.#reading) this.#stdin.resume();
    for (const resolve of waiters) resolve();
  };

  /**
   * Reads no more requests, for good, while answers are still sent: a shutdown waits for the calls in flight, and a
   * request read after it began would run against storage that is closing.
   */
  stopReading(): void {
    this.#reading = false;
    this.#stdin.pause();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stdin.off('data', this.#onData);
    this.#stdin.off('error', this.#onError);
    this.#stdin.pause();
    this.#pending = [];
    this.onclose?.();
  }
}
