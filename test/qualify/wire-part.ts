import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRequire } from 'node:module';
import { validStore, type Json } from './fuzz-requests.js';
import type { QualifyProfile, QualifyPart } from './qualify-report.js';
import { StdioPeer, type RpcResponse } from './stdio-peer.js';

// Part 4 of issue 13, wire abuse: the raw server process fed malformed JSON lines, frames of 10 MB and past the
// SDK's 10 MiB read buffer, binary garbage, unknown methods and tools, calls before initialize, 200 calls in flight,
// a client that stops reading its replies while it keeps sending, and EOF on stdin. After every case the server
// must still answer (or, for EOF, have exited 0), every call must be answered, and stdout must carry only frames.

const require = createRequire(import.meta.url);
const Database: typeof import('better-sqlite3') = require('better-sqlite3');

/** The server's RSS must stay below this while a client stops reading. */
const RSS_BOUND_MB = 300;
const STALL = { quick: { calls: 2000, ms: 3000 }, full: { calls: 10_000, ms: 10_000 } } as const;
const IN_FLIGHT = 200;

interface CaseContext {
  readonly profile: QualifyProfile;
  readonly dir: string;
  readonly main: StdioPeer;
  sampleRss(peer: StdioPeer): void;
  /** The RSS when the client stopped reading, and the highest seen until it read again. */
  stallStartMb: number;
  stallPeakMb: number;
}

/** A case returns the reasons it failed (empty: PASS). */
type WireCase = (context: CaseContext) => Promise<string[]>;

const status = (peer: StdioPeer, timeoutMs = 10_000) =>
  peer.callTool('memory_status', { request: { scope: 'GLOBAL_USER' } }, timeoutMs);
const envelopeOf =
  (response: RpcResponse | null): Json | undefined => response?.result?.structuredContent as Json | undefined;

/** Reasons the server is not healthy after a case: it must answer memory_status and have written only frames. */
async function health(peer: StdioPeer): Promise<string[]> {
  const problems: string[] = [];
  if (peer.exit !== null) return [`server exited ${JSON.stringify(peer.exit)}`];
  if (envelopeOf(await status(peer))?.status !== 'OK') problems.push('no memory_status answer after the case');
  if (peer.nonFrameLines > 0) problems.push(`${peer.nonFrameLines} non-frame stdout lines`);
  return problems;
}

const serverArgs =
  (dbPath: string, hostId: string) => ['--db', dbPath, '--host-id', hostId, '--write-profile', 'owner-current'];

const malformedJson: WireCase = async ({ main }) => {
  const lines = [
    '{', '{"jsonrpc":"2.0",', 'not json', '[]', '[1,2', '{}', '"text"', '123', 'null', '{"jsonrpc":"2.0","id":1}',
    '{"jsonrpc":"1.0","id":900001,"method":"tools/list"}', '{"id":900002,"method":"tools/list"}',
    '{"jsonrpc":"2.0","id":900003,"method":"tools/call","params":"x"}',
    '{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', '{"jsonrpc":"2.0","id":900004,"method":5}',
    `{"jsonrpc":"2.0","method":"tools/call","params":${'['.repeat(5000)}`,
    '\u0000\u0000', '\ufeff{"jsonrpc":"2.0","id":900005,"method":"tools/list"}', '   ', ''];
  await main.writeRaw(`${lines.join('\n')}\n`);
  // a valid frame ended by CRLF is still one frame, and is answered
  await main.writeRaw('{"jsonrpc":"2.0","id":900010,"method":"tools/list"}\r\n');
  const problems = await health(main);
  if (!main.unmatched.some((reply) => reply.id === 900010 && reply.result !== undefined))
    problems.push('a CRLF-terminated frame got no answer');
  return problems;
};

const frame10Mb: WireCase = async ({ main, sampleRss }) => {
  const problems: string[] = [];
  const big = 'x'.repeat(10_000_000);
  const pending = main.callTool(
    'memory_store', { request: { ...validStore({ scope: 'GLOBAL_USER' }, 9_000_001, false), fact: big } }, 60_000,
  );
  sampleRss(main);
  const reply = await pending;
  sampleRss(main);
  const envelope = envelopeOf(reply);
  if (
    !(envelope?.status === 'BLOCKED' && envelope.error_code === 'INVALID_ENVELOPE') && reply?.result?.isError !== true
  ) problems.push('the 10 MB store was not refused with an envelope or isError');
  return [...problems, ...(await health(main))];
};

/**
 * A line past the SDK's 10 MiB read buffer, on a server of its own: the SDK transport throws it away and closes
 * itself, and FactLane then exits 0 without its shutdown path, so the case fails until the server survives it.
 */
const framePastReadBuffer: WireCase = async ({ dir, sampleRss }) => {
  const peer = await StdioPeer.start(serverArgs(join(dir, 'past-buffer.sqlite3'), 'wire-past-buffer'));
  try {
    await peer.writeRaw(
      `{"jsonrpc":"2.0","id":900100,"method":"tools/call","params":{"name":"memory_status",` +
        `"arguments":{"request":{"scope":"GLOBAL_USER","q":"${'y'.repeat(11 * 1024 * 1024)}"}}}}\n`,
    );
    sampleRss(peer);
    const problems = await health(peer);
    await peer.close();
    return problems;
  } finally {
    await peer.kill();
  }
};

const binaryGarbage: WireCase = async ({ main }) => {
  for (let round = 0; round < 8; round += 1) await main.writeRaw(randomBytes(64 * 1024));
  await main.writeRaw(
    Buffer.from([0xff, 0xfe, 0x00, 0x0a, 0xc3, 0x28, 0x0a, 0xed, 0xa0, 0x80, 0x0a, 0xf0, 0x9f, 0x98, 0x0a]),
  );
  await main.writeRaw('\n');
  return health(main);
};

const unknownMethods: WireCase = async ({ main }) => {
  const problems: string[] = [];
  for (const method of ['factlane/admin', 'resources/list', 'prompts/get', 'tools/delete', '']) {
    const reply = await main.request(method, {}, 10_000);
    if (reply?.error === undefined) problems.push(`method ${JSON.stringify(method)}: no JSON-RPC error`);
  }
  for (const name of ['memory_delete', 'MEMORY_STATUS', '', 'memory_status ']) {
    const reply = await main.callTool(name, { request: { scope: 'GLOBAL_USER' } }, 10_000);
    if (reply?.error?.code !== -32602)
      problems.push(`tool ${JSON.stringify(name)}: expected JSON-RPC error -32602, ` +
        `got ${reply === null ? 'no answer' : JSON.stringify(reply.error?.code ?? 'a result')}`);
  }
  main.notify('notifications/unknown', { x: 1 });
  main.notify('tools/call', { name: 'memory_status', arguments: { request: { scope: 'GLOBAL_USER' } } });
  return [...problems, ...(await health(main))];
};

const beforeInitialize: WireCase = async ({ dir }) => {
  const problems: string[] = [];
  const peer = StdioPeer.spawn(serverArgs(join(dir, 'before-init.sqlite3'), 'wire-before'));
  try {
    const early = await Promise.all(
      [peer.request('tools/list', {}, 10_000), status(peer), peer.request('ping', undefined, 10_000)],
    );
    const unanswered = early.filter((reply) => reply === null).length;
    if (unanswered > 0) problems.push(`${unanswered} of ${early.length} calls before initialize got no answer`);
    await peer.initialize();
    problems.push(...(await health(peer)));
    const exit = await peer.close();
    if (exit.code !== 0) problems.push(`exit ${String(exit.code)} after EOF`);
  } finally {
    await peer.kill();
  }
  return problems;
};

const inFlight: WireCase = async ({ main }) => {
  const problems: string[] = [];
  const calls: Promise<RpcResponse | null>[] = [];
  for (let i = 0; i < IN_FLIGHT; i += 1) {
    if (i % 2 === 0) calls.push(main.callTool(
      'memory_store', { request: validStore({ scope: 'PROJECT', project_id: 'wire-p1' }, 8_000_000 + i, i % 4 === 0) },
      60_000,
    ));
    else if (i % 4 === 1) calls.push(status(main, 60_000));
    else calls.push(
      main.callTool('memory_search', { request: {
        scope: 'PROJECT', project_id: 'wire-p1', query: 'step uses', intent_class: 'CURRENT_PROJECT_STATE',
        retrieval_mode_kind: 'HYBRID',
      } }, 60_000),
    );
  }
  const replies = await Promise.all(calls);
  const unanswered = replies.filter((reply) => reply === null).length;
  if (unanswered > 0) problems.push(`${unanswered} of ${IN_FLIGHT} calls in flight got no answer`);
  const stored = replies.filter((_, i) => i % 2 === 0).map(envelopeOf);
  const notOk = stored.filter((envelope) => envelope?.status !== 'OK').length;
  if (notOk > 0) problems.push(`${notOk} of ${IN_FLIGHT / 2} stores in flight not OK`);
  const notOkReads = replies.filter((_, i) => i % 2 === 1).map(envelopeOf).filter(
    (envelope) => envelope === undefined || envelope.status === 'BLOCKED',
  ).length;
  if (notOkReads > 0) problems.push(`${notOkReads} reads in flight refused`);
  let missing = 0;
  for (const envelope of stored) {
    const record = envelope?.results?.[0] as Json | undefined;
    if (record === undefined) continue;
    const got = envelopeOf(await main.callTool('memory_get', { request: {
      scope: 'PROJECT', project_id: 'wire-p1', memory_id: record.memory_id, retrieval_mode: 'REVIEW_HISTORY',
    } }));
    if (got?.results?.[0]?.record_id !== record.record_id) missing += 1;
  }
  if (missing > 0) problems.push(`${missing} acknowledged stores not visible`);
  return [...problems, ...(await health(main))];
};

const stalledReader: WireCase = async (context) => {
  const { main, profile, sampleRss } = context;
  const problems: string[] = [];
  const { calls, ms } = STALL[profile];
  context.stallStartMb = main.rssMb();
  main.pauseReading();
  const replies: Promise<RpcResponse | null>[] = [];
  for (let i = 0; i < calls; i += 1) replies.push(status(main, 120_000 + ms));
  const stallEnds = performance.now() + ms;
  let peak = 0;
  while (performance.now() < stallEnds) {
    peak = Math.max(peak, main.rssMb());
    sampleRss(main);
    await sleep(100);
  }
  main.resumeReading();
  const answered = await Promise.all(replies);
  const lost = answered.filter((reply) => envelopeOf(reply)?.status !== 'OK').length;
  if (lost > 0) problems.push(`${lost} of ${calls} calls sent while the client did not read got no OK answer`);
  context.stallPeakMb = peak;
  if (peak > RSS_BOUND_MB)
    problems.push(`RSS reached ${peak} MB while the client did not read (bound ${RSS_BOUND_MB} MB)`);
  return [...problems, ...(await health(main))];
};

const eofExit: WireCase = async ({ dir }) => {
  const problems: string[] = [];
  const dbPath = join(dir, 'eof.sqlite3');
  const peer = await StdioPeer.start(serverArgs(dbPath, 'wire-eof'));
  try {
    const storeReply =
      peer.callTool('memory_store', { request: validStore({ scope: 'GLOBAL_USER' }, 7_000_001, true) }, 15_000);
    const started = performance.now();
    const exit = await peer.close(10_000);
    const seconds = (performance.now() - started) / 1000;
    if (exit.code !== 0 || exit.timedOut)
      problems.push(`EOF: exit ${JSON.stringify(exit)} after ${seconds.toFixed(1)} s`);
    const envelope = envelopeOf(await storeReply);
    if (envelope?.status !== 'OK') {
      const db = new Database(dbPath, { readonly: true, fileMustExist: true });
      const rows = (db.prepare('SELECT count(*) AS n FROM adapter_records').get() as { n: number }).n;
      db.close();
      problems.push(`the store sent just before EOF got no OK answer ` +
        `(${rows === 1 ? 'yet it was committed' : 'and it was not committed'})`);
    }
    if (peer.nonFrameLines > 0 || peer.partialLine !== '') problems.push('non-frame stdout before exit');
    const record = envelope?.results?.[0] as Json | undefined;
    if (record !== undefined) {
      const again = await StdioPeer.start(serverArgs(dbPath, 'wire-eof'));
      try {
        const got = envelopeOf(
          await again.callTool('memory_get', { request: { scope: 'GLOBAL_USER', memory_id: record.memory_id } }),
        );
        if (got?.results?.[0]?.record_id !== record.record_id)
          problems.push('the store answered before EOF is not visible after a restart');
        await again.close();
      } finally {
        await again.kill();
      }
    }
  } finally {
    await peer.kill();
  }
  return problems;
};

const CASES: readonly [string, WireCase][] = [
  // the stall runs before the large frames, so its RSS is not the heap they leave behind
  ['malformed_json_lines', malformedJson], ['binary_garbage', binaryGarbage], ['unknown_methods', unknownMethods],
  ['in_flight_200', inFlight],
  ['stalled_reader', stalledReader], ['frame_10mb', frame10Mb], ['frame_past_read_buffer', framePastReadBuffer],
  ['calls_before_initialize', beforeInitialize],
  ['eof_clean_exit', eofExit],
];

/** The wire part (issue 13 part 4). */
export const runWirePart: QualifyPart = async (profile, workDir) => {
  const started = performance.now();
  const dir = join(workDir, 'wire');
  mkdirSync(dir, { recursive: true });
  let maxRssMb = 0;
  const sampleRss = (peer: StdioPeer) => { maxRssMb = Math.max(maxRssMb, peer.rssMb()); };
  const main = await StdioPeer.start(serverArgs(join(dir, `main-${randomUUID()}.sqlite3`), 'wire-main'));
  const results: Record<string, 'PASS' | 'FAIL'> = {};
  const context: CaseContext = { profile, dir, main, sampleRss, stallStartMb: 0, stallPeakMb: 0 };
  try {
    for (const [name, run] of CASES) {
      const problems = await run(context).catch((error: unknown) => [
        `threw: ${error instanceof Error ? error.message : String(error)}`,
      ]);
      sampleRss(main);
      results[name] = problems.length === 0 ? 'PASS' : 'FAIL';
      for (const problem of problems) process.stderr.write(`qualify: wire ${name}: ${problem}\n`);
    }
    const exit = await main.close();
    if (exit.code !== 0 || exit.timedOut) {
      results.main_server_exit = 'FAIL';
      process.stderr.write(`qualify: wire: the main server ended ${JSON.stringify(exit)}\n`);
    }
  } finally {
    await main.kill();
  }
  const failures = Object.values(results).filter((result) => result === 'FAIL').length;
  return {
    figures: {
      cases: Object.keys(results).length, failures, case_results: results, max_rss_mb: maxRssMb,
      stall_start_rss_mb: context.stallStartMb, stall_max_rss_mb: context.stallPeakMb, rss_bound_mb: RSS_BOUND_MB,
      duration_s: Math.round((performance.now() - started) / 100) / 10,
    },
    mustBeZero: ['failures'],
    notes: [
      'One owner-current server took, in turn, malformed and non-JSON-RPC lines, a 10 MB store (answered ' +
        'INVALID_ENVELOPE), 512 KiB of random bytes and invalid UTF-8, unknown methods and tools (JSON-RPC errors, ' +
        '-32602 for tools), 200 calls in flight (every one answered, every acknowledged store read back), and a ' +
        'client that stopped reading while it sent status calls; after each case it had to answer memory_status with ' +
        'only JSON-RPC frames on stdout.',
      `Three more servers: one sent an 11 MiB line, past the SDK's 10 MiB read buffer (it must answer memory_status ` +
        `afterwards), one called before initialize (every call answered, then a normal session), one sent a store ` +
        `and then EOF on stdin (the store answered and visible after a restart, exit 0 within 10 s). \`max_rss_mb\` ` +
        `is the highest VmRSS sampled during the large frames and the stall, \`stall_start_rss_mb\` and ` +
        `\`stall_max_rss_mb\` the RSS when the client stopped reading and the highest until it read again ` +
        `(${STALL[profile].calls} status calls sent meanwhile; bound ${RSS_BOUND_MB} MB).`,
    ],
  };
};
