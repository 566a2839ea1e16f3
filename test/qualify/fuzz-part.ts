import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import fc from 'fast-check';
import { STATUSES, TOOL_NAMES, WRITE_PROFILES, type ToolName, type WriteProfile } from '../../schema/enums.js';
import { isErrorCode } from '../../schema/error-codes.js';
import {
  buildArguments, fuzzCase, SCOPE_VARIANTS, SECRET_SAMPLES, validStore, type Json, type KnownMemory,
} from './fuzz-requests.js';
import type { QualifyPart } from './qualify-report.js';
import { StdioPeer, type RpcResponse } from './stdio-peer.js';

// Part 3 of issue 13, bad input: fast-check requests against one server per write profile (each on its own
// database, seeded with current records and Candidates in every scope by an owner-current server first), one
// request at a time per server so a refused request's effect on the database is its own. Every reply is checked
// for the envelope shape, every stdout line for JSON-RPC framing, and the database digest after every refusal.

const require = createRequire(import.meta.url);
const Database: typeof import('better-sqlite3') = require('better-sqlite3');

const REQUESTS = { quick: 10_000, full: 100_000 } as const;
const TIME_LIMIT_MS = { quick: 90_000, full: 1_200_000 } as const;
const BATCH = 250;
const CALL_TIMEOUT_MS = 30_000;
/** The bound context of one server, so BOUND_CONTEXT_IDENTITY_MISMATCH and injection are reached too. */
const BOUND_PROFILE: WriteProfile = 'automated-verifier';
const BOUND_ARGS = ['--project-id', 'fz-p1', '--agent-id', 'fz-a1'];
const BLOCKED_KEYS = ['audit', 'degradation', 'error_code', 'message', 'results', 'status'].join(',');
const ENVELOPE_KEYS =
  ['audit', 'budget', 'contradictions', 'degradation', 'memory_needed', 'results', 'scope', 'status'];
const STATUS_KEYS = ['backend_status', 'provider_status', 'token_measurement', 'launcher'];

interface Tally {
  requests: number; ok: number; blocked: number; isError: number; malformed: number; unanswered: number;
  stateChanged: number; secretsEchoed: number; writesSeen: number; byTool: Record<string, number>;
  byCode: Record<string, number>; okByTool: Record<string, number>; examples: string[];
}

/** A cheap digest of what is on disk: record count, highest row, revision sum, count per lifecycle, vector rows. */
function digestOf(db: import('better-sqlite3').Database): string {
  const row = db.prepare(`SELECT count(*) AS n, max(row_id) AS top, total(revision) AS revs,
    sum(lifecycle_state = 'CANDIDATE') AS candidates, sum(lifecycle_state = 'VALIDATED_CURRENT') AS current,
    sum(lifecycle_state = 'SUPERSEDED') AS superseded, sum(lifecycle_state NOT IN ('CANDIDATE', 'VALIDATED_CURRENT', 'SUPERSEDED')) AS other
    FROM adapter_records`).get();
  const vectors = db.prepare('SELECT count(*) AS n FROM eligible_vectors').get();
  return JSON.stringify([row, vectors]);
}

function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${keys.map((k) => `${JSON.stringify(k)}:${sortedJson((value as Json)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** Why a tools/call reply is not a well-formed envelope or isError result, or null when it is. */
export function replyProblem(tool: ToolName, response: RpcResponse): string | null {
  if (response.error !== undefined || response.result === undefined)
    return `JSON-RPC error ${String(response.error?.code)}`;
  const result = response.result as Json;
  const content = result.content as Json[] | undefined;
  if (
    !Array.isArray(content)
      || content.length !== 1 || content[0]!.type !== 'text' || typeof content[0]!.text !== 'string'
  ) return 'content is not one text item';
  if (result.isError === true) return result.structuredContent === undefined ? null : 'isError with structuredContent';
  const envelope = result.structuredContent as Json | undefined;
  if (envelope === undefined || envelope === null || typeof envelope !== 'object') return 'no structuredContent';
  if (content[0]!.text !== sortedJson(envelope)) return 'text is not the canonical JSON of structuredContent';
  if (!(STATUSES as readonly string[]).includes(envelope.status as string))
    return `unknown status ${String(envelope.status)}`;
  if (envelope.audit?.raw_content_logged !== false || envelope.audit?.host_binding?.transport !== 'stdio')
    return 'audit incomplete';
  if (envelope.status === 'BLOCKED') {
    if (Object.keys(envelope).sort().join(',') !== BLOCKED_KEYS) return 'BLOCKED envelope keys';
    if (
      !isErrorCode(envelope.error_code as string)
        || typeof envelope.message !== 'string' || envelope.results.length !== 0
    ) return 'BLOCKED envelope values';
    return null;
  }
  const missing =
    [...ENVELOPE_KEYS, ...(tool === 'memory_status' ? STATUS_KEYS : [])].filter((key) => !Object.hasOwn(envelope, key));
  if (missing.length > 0) return `envelope lacks ${missing.join(',')}`;
  if (!Array.isArray(envelope.results) || envelope.audit.operation !== tool) return 'envelope results or operation';
  return null;
}

/** Records the acknowledged records of a write or read reply in the pool (latest revision per memory). */
function remember(pool: Map<string, KnownMemory>, envelope: Json): void {
  for (const record of (envelope.results ?? []) as Json[]) {
    if (typeof record.memory_id !== 'string' || !['CANDIDATE', 'VALIDATED_CURRENT'].includes(
      record.lifecycle_state as string,
    )) continue;
    const known = pool.get(record.memory_id);
    if (known === undefined || known.revision <= (record.revision as number)) {
      pool.set(record.memory_id, {
        memory_id: record.memory_id, record_id: record.record_id, revision: record.revision, scope: record.scope,
        lifecycle_state: record.lifecycle_state,
      });
    }
  }
}

function serverArgs(dbPath: string, profile: WriteProfile): string[] {
  return [
    '--db', dbPath, '--host-id', `fuzz-${profile}`, '--write-profile', profile,
    ...(profile === BOUND_PROFILE ? BOUND_ARGS : [])
  ];
}

/** Seeds a database with a current record and a Candidate in every scope variant, through an owner-current server. */
async function seed(dbPath: string, pool: Map<string, KnownMemory>): Promise<void> {
  const peer = await StdioPeer.start(['--db', dbPath, '--host-id', 'fuzz-seed', '--write-profile', 'owner-current']);
  try {
    for (const [index, scopeFields] of SCOPE_VARIANTS.entries()) {
      for (const current of [true, false]) {
        const response = await peer.callTool(
          'memory_store', { request: validStore(scopeFields, 1_000_000 + index * 2 + Number(current), current) },
          CALL_TIMEOUT_MS,
        );
        const envelope = response?.result?.structuredContent as Json | undefined;
        if (envelope?.status !== 'OK')
          throw new Error(`seed store refused: ${String(envelope?.error_code ?? response?.error?.message)}`);
        remember(pool, envelope);
      }
    }
  } finally {
    await peer.close();
  }
}

/** Runs `count` cases against one server; returns whether it crashed. */
async function fuzzOne(
  profile: WriteProfile, dir: string, count: number, seedBase: number, deadline: number, tally: Tally,
): Promise<{ crashed: boolean; nonFrames: number }> {
  const dbPath = join(dir, `${profile}.sqlite3`);
  const pool = new Map<string, KnownMemory>();
  await seed(dbPath, pool);
  const peer = await StdioPeer.start(serverArgs(dbPath, profile));
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    let baseline = digestOf(db);
    for (let done = 0, batchNo = 0; done < count && performance.now() < deadline && peer.exit === null; batchNo += 1) {
      const cases = fc.sample(fuzzCase, { numRuns: Math.min(BATCH, count - done), seed: seedBase + batchNo });
      for (const fuzz of cases) {
        if (peer.exit !== null) break;
        const n = seedBase * 1000 + done;
        const args = buildArguments(fuzz, [...pool.values()], n);
        done += 1;
        tally.requests += 1;
        tally.byTool[fuzz.tool] = (tally.byTool[fuzz.tool] ?? 0) + 1;
        const response = await peer.callTool(fuzz.tool, args, CALL_TIMEOUT_MS);
        if (response === null) {
          tally.unanswered += 1;
          continue;
        }
        const problem = replyProblem(fuzz.tool, response);
        if (problem !== null) {
          tally.malformed += 1;
          if (tally.examples.length < 5)
            tally.examples.push(`${profile} ${fuzz.tool}: ${problem}: ${JSON.stringify(args).slice(0, 600)}`);
          continue;
        }
        const result = response.result as Json;
        const text = (result.content as Json[])[0]!.text as string;
        if (SECRET_SAMPLES.some((secret) => text.includes(secret))) {
          tally.secretsEchoed += 1;
          if (tally.examples.length < 5) tally.examples.push(
            `${profile} ${fuzz.tool}: a secret in the reply: ${JSON.stringify(args).slice(0, 600)}`,
          );
        }
        const envelope = result.structuredContent as Json | undefined;
        const refused = result.isError === true || envelope?.status === 'BLOCKED';
        const after = digestOf(db);
        if (refused) {
          if (result.isError === true) tally.isError += 1;
          else {
            tally.blocked += 1;
            tally.byCode[envelope!.error_code as string] = (tally.byCode[envelope!.error_code as string] ?? 0) + 1;
          }
          if (after !== baseline) {
            tally.stateChanged += 1;
            if (tally.examples.length < 5)
              tally.examples.push(`${profile} ${fuzz.tool}: refused (${String(envelope?.error_code ?? 'isError')}) ` +
                `but the digest changed: ${JSON.stringify(args).slice(0, 600)}`);
          }
        } else {
          tally.ok += 1;
          tally.okByTool[fuzz.tool] = (tally.okByTool[fuzz.tool] ?? 0) + 1;
          if (after !== baseline) tally.writesSeen += 1;
          remember(pool, envelope!);
        }
        baseline = after;
      }
    }
    const status = peer.exit === null
      ? await peer.callTool('memory_status', { request: { scope: 'GLOBAL_USER' } }, CALL_TIMEOUT_MS) : null;
    const alive = (status?.result?.structuredContent as Json | undefined)?.status === 'OK';
    const exit = await peer.close();
    return {
      crashed: !alive || exit.code !== 0 || exit.timedOut,
      nonFrames: peer.nonFrameLines + (peer.partialLine === '' ? 0 : 1),
    };
  } finally {
    db.close();
    await peer.kill();
  }
}

/** The fuzz part (issue 13 part 3). */
export const runFuzzPart: QualifyPart = async (profile, workDir) => {
  const started = performance.now();
  const deadline = started + TIME_LIMIT_MS[profile];
  const dir = join(workDir, 'fuzz');
  mkdirSync(dir, { recursive: true });
  const tally: Tally = {
    requests: 0, ok: 0, blocked: 0, isError: 0, malformed: 0, unanswered: 0, stateChanged: 0, secretsEchoed: 0,
    writesSeen: 0, byCode: {}, okByTool: Object.fromEntries(TOOL_NAMES.map((t) => [t, 0])),
    byTool: Object.fromEntries(TOOL_NAMES.map((t) => [t, 0])), examples: [],
  };
  const perServer = Math.ceil(REQUESTS[profile] / WRITE_PROFILES.length);
  const outcomes = await Promise.all(WRITE_PROFILES.map(
    (writeProfile, index) => fuzzOne(writeProfile, dir, perServer, 1 + index * 100_000, deadline, tally),
  ));
  for (const example of tally.examples) process.stderr.write(`qualify: fuzz finding: ${example}\n`);
  const seconds = Math.round((performance.now() - started) / 100) / 10;
  return {
    figures: {
      requests: tally.requests, by_tool: tally.byTool, ok: tally.ok, blocked: tally.blocked, is_error: tally.isError,
      server_crashes: outcomes.filter((o) => o.crashed).length,
      non_frame_stdout: outcomes.reduce((sum, o) => sum + o.nonFrames, 0),
      malformed_replies: tally.malformed, unanswered: tally.unanswered, state_changed_by_refusals: tally.stateChanged,
      secrets_echoed: tally.secretsEchoed,
      accepted_writes_seen_in_digest: tally.writesSeen, ok_by_tool: tally.okByTool,
      blocked_by_code: Object.fromEntries(Object.entries(tally.byCode).sort(([a], [b]) => (a < b ? -1 : 1))),
      servers: WRITE_PROFILES.length, duration_s: seconds,
    },
    mustBeZero: [
      'server_crashes', 'non_frame_stdout', 'malformed_replies', 'unanswered', 'state_changed_by_refusals',
      'secrets_echoed',
    ],
    notes: [
      `${tally.requests} requests generated with fast-check went to five servers, one per write profile ` +
        `(${WRITE_PROFILES.join(', ')}; the ${BOUND_PROFILE} one with a bound project and agent), each on its own ` +
        `database seeded with a current record and a Candidate in every scope; about one in ten requests is a random ` +
        `object, the rest are valid requests with up to three mutations (wrong types, unknown and reserved keys at ` +
        `any depth, confusable, oversized and lone-surrogate Unicode, boundary numbers, secrets and deny-listed ` +
        `phrases, scope and identity changes).`,
      'Every reply must be one text item with either `isError` or a canonical-JSON envelope whose keys match its ' +
        'status (`malformed_replies`), come within 30 s (`unanswered`) and never carry a submitted secret ' +
        '(`secrets_echoed`); every stdout line must be one JSON-RPC message (`non_frame_stdout`); each server must ' +
        'answer a final memory_status and exit 0 on EOF (`server_crashes`).',
      'After every request a read-only connection digests the database (record count, highest row id, revision sum, ' +
        'count per lifecycle, vector rows); a refused request (BLOCKED or isError) whose digest differs from the one ' +
        'before it counts in `state_changed_by_refusals`.',
    ],
  };
};
