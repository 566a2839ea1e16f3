// The script every host runs against FactLane (launched with --write-profile delegated-candidate), and the checks
// of what the host sent back to the stand-in and of the database afterwards. The script: memory_status; a
// memory_store of a Candidate; a REVIEW_HISTORY memory_search that finds it; a memory_store asking for
// VALIDATED_CURRENT, which the delegated profile refuses (BLOCKED, WRITE_AUTHORIZATION_DENIED, CONTRACT.md §8.2).
import type { Test } from 'tap';
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { HostSetup } from './host-config.js';
import type { ScriptedCall } from './stand-in-wire.js';

/** The write profile the hosts launch FactLane with. */
export const HOST_WRITE_PROFILE = 'delegated-candidate';
/** What the stand-in says when the script is done, and the prompt each host is given. */
export const FINAL_TEXT = 'FactLane answered all four calls.';
export const PROMPT = 'Check FactLane, store the deploy fact, search it, then claim it current.';

/** A temp home, a work dir and a database path, all under the test's own folder. */
export function sandbox(dir: string): HostSetup & { work: string } {
  const work = join(dir, 'work');
  mkdirSync(work, { recursive: true });
  return {
    home: join(dir, 'home'), db: join(dir, 'state', 'factlane.sqlite3'), writeProfile: HOST_WRITE_PROFILE, work,
  };
}

const PROVENANCE = {
  source_class: 'repo_file', source_ref: 'README.md', source_hash: 'ab'.repeat(32), review_ref: 'review/hosts',
  extraction_method: 'manual_read',
};

/** The fact the script stores as a Candidate, naming the host so two hosts' facts never collide. */
export const candidateFact = (host: string) => `The ${host} host test deploys from the main branch`;

/** The four calls, with request ids `<host>-1` … `<host>-4`. */
export function hostScript(host: string): ScriptedCall[] {
  const request = (n: number, fields: Record<string, unknown>) => ({
    request: { scope: 'GLOBAL_USER', request_id: `${host}-${n}`, ...fields },
  });
  const store = { memory_type: 'USER_FACT', source_provenance: PROVENANCE, freshness_policy: { kind: 'never' } };
  return [
    { tool: 'memory_status', arguments: request(1, {}) },
    { tool: 'memory_store', arguments: request(
      2, { ...store, fact: candidateFact(host), idempotency_key: `${host}-candidate` },
    ) },
    {
      tool: 'memory_search', arguments: request(3, {
        query: 'host test deploys main branch', intent_class: 'USER_PREFERENCE_OR_DURABLE_FACT',
        retrieval_mode: 'REVIEW_HISTORY',
      }),
    },
    {
      tool: 'memory_store', arguments: request(4, {
        ...store, fact: `The ${host} host test claims a current fact`, idempotency_key: `${host}-current`,
        requested_lifecycle_state: 'VALIDATED_CURRENT', source_timestamp: '2026-11-01T00:00:00Z',
        last_verified_at: '2026-11-30T00:00:00Z',
      }),
    },
  ];
}

/**
 * The FactLane envelope in a tool result's text. Claude Code sends the text as is; Codex prefixes it with
 * "Wall time: … Output:", so the envelope is the JSON object from the first `{` to the last `}`.
 */
export function envelopeOf(text: string): Record<string, unknown> | null {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start < 0 || end < start) return null;
  try {
    return JSON.parse(text.slice(start, end + 1)) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/** Checks the four envelopes a host sent back, in script order. */
export function checkEnvelopes(t: Test, host: string, texts: readonly string[]): void {
  t.equal(texts.length, 4, `${host} sent back one result per scripted call`);
  const [status, stored, found, refused] = texts.map(envelopeOf);
  const binding = { host_id: host, transport: 'stdio', binding_source: 'explicit-launcher' };
  const audit = (n: number) => ({ request_id: `${host}-${n}`, host_binding: binding });
  const origin = { contributor_class: 'DELEGATED_AGENT', contributor_ref: host };
  t.match(status, { status: 'OK', launcher: { write_profile: HOST_WRITE_PROFILE }, audit: audit(1) },
    'memory_status: OK under the delegated profile');
  t.match(stored, {
    status: 'OK', audit: audit(2),
    results: [{ fact: candidateFact(host), lifecycle_state: 'CANDIDATE', contribution_origin: origin }],
  }, 'memory_store: the Candidate, contributed by the host');
  const memoryId = (stored?.results as { memory_id?: string }[] | undefined)?.[0]?.memory_id;
  t.match(found, {
    status: 'OK', audit: audit(3),
    results: [{ memory_id: memoryId, fact: candidateFact(host), lifecycle_state: 'CANDIDATE' }],
  }, 'memory_search REVIEW_HISTORY: finds the Candidate');
  t.match(refused, { status: 'BLOCKED', error_code: 'WRITE_AUTHORIZATION_DENIED', results: [], audit: audit(4) },
    'memory_store VALIDATED_CURRENT: BLOCKED, WRITE_AUTHORIZATION_DENIED');
}

/** Checks the database after the run, read-only: exactly the one Candidate, with the host as contributor. */
export function checkDatabase(t: Test, host: string, dbPath: string): void {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const rows =
      db.prepare('SELECT fact, lifecycle_state, verified_by, contribution_origin, revision FROM adapter_records')
      .all() as Record<string, unknown>[];
    t.equal(rows.length, 1, `${host}: one record stored (the refused store wrote nothing)`);
    t.match(
      rows[0], { fact: candidateFact(host), lifecycle_state: 'CANDIDATE', verified_by: 'UNVERIFIED', revision: 1 },
      `${host}: the Candidate on disk`);
    t.same(JSON.parse(String(rows[0]?.contribution_origin ?? 'null')), {
      contributor_class: 'DELEGATED_AGENT', contributor_ref: host,
    },
      `${host}: contribution_origin names the host`);
  } finally {
    db.close();
  }
}
