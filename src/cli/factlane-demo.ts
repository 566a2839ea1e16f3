import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StdioSession } from './stdio-session.js';

type Envelope = Record<string, unknown>;
type PublicRecord = Record<string, unknown>;
/** The first 8 characters of an id, for the story; the database keeps the whole id. */
const short = (id: unknown) => `${String(id).slice(0, 8)}…`;

const PROJECT_ID = 'demo-project';
const FACT = 'The test suite runs with npm test and needs Node 20';
const QUERY = 'how do I run the tests';
const SCOPE = { scope: 'PROJECT', project_id: PROJECT_ID };

export interface DemoOptions {
  /** Absolute path of the `factlane` launcher script the demo starts as its hosts would. */
  readonly launcher: string;
  /** Where the story is printed (standard output). */
  readonly write: (text: string) => void;
  /** Keep the temporary database instead of removing it at the end. */
  readonly keep: boolean;
}

/** A one-line summary of an envelope: status, error code or the records it carries. */
export function summarise(envelope: Envelope): string {
  if (envelope.status === 'BLOCKED') return `BLOCKED ${envelope.error_code}: ${envelope.message}`;
  const records = (envelope.results as PublicRecord[]) ?? [];
  const degradation = envelope.degradation ? ` (${envelope.degradation})` : '';
  if (records.length === 0) return `${envelope.status}${degradation}: no results`;
  const lines = records.map((record) => `revision ${record.revision} ${record.lifecycle_state}, verified_by `
    + `${record.verified_by}, "${record.fact}"`);
  const block = lines.map((line) => `        ${line}`).join('\n');
  return `${envelope.status}${degradation}: ${records.length} result(s)\n${block}`;
}

/**
 * `factlane demo`: a temporary database taken through the lifecycle over real stdio by two launched hosts, an
 * agent with the delegated-candidate profile and the owner with owner-current. Returns the exit code: 0 when
 * every step answered as the contract says, 1 when one did not (the step is named).
 */
export async function runDemo(options: DemoOptions): Promise<number> {
  const directory = mkdtempSync(join(tmpdir(), 'factlane-demo-'));
  const dbPath = join(directory, 'demo.sqlite3');
  const { write } = options;
  // Every launch, finished or not: a stop during a launch waits for that server too, which would otherwise go on to
  // create the database after the directory was removed.
  const launches: Promise<StdioSession>[] = [];
  let stopping = false;
  const launch = (hostId: string, profile: string) => {
    if (stopping) return Promise.reject(new DemoStopped());
    const opening = StdioSession.open(options.launcher, [
      '--db', dbPath, '--host-id', hostId, '--write-profile', profile, '--project-id', PROJECT_ID,
    ]);
    launches.push(opening);
    return opening;
  };
  write(`FactLane demo on a temporary database: ${dbPath}\n`
    + 'Two hosts share it, each its own factlane process spoken to over stdio, as Codex or Claude Code would:\n'
    + '  agent  --write-profile delegated-candidate (may only submit Candidates)\n'
    + '  owner  --write-profile owner-current (may store and promote current facts)\n\n');
  const cleanUp = async () => {
    stopping = true;
    for (const opened of await Promise.allSettled(launches)) {
      if (opened.status === 'fulfilled') await opened.value.close();
    }
    if (options.keep) write(`The database is kept at ${dbPath}\n`);
    else rmSync(directory, { recursive: true, force: true });
  };
  // Ctrl-C stops the demo as its end does: the servers closed, the temporary database removed (unless --keep). So
  // does a reader that closed standard output (`factlane demo | head`): exit 141, as a write to a closed pipe would.
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    void cleanUp().finally(() => process.exit({ SIGINT: 130, SIGPIPE: 141 }[signal as string] ?? 143));
  };
  const outputClosed = () => stop('SIGPIPE');
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  process.stdout.on('error', outputClosed);
  try {
    const agent = await launch('demo-agent', 'delegated-candidate');
    const owner = await launch('demo-owner', 'owner-current');
    const step = async (title: string, who: string, session: StdioSession, tool: string, request: Envelope,
      shown: string, expect: (envelope: Envelope) => boolean): Promise<Envelope> => {
      write(`${title}\n  ${who.padEnd(5)} -> ${tool} ${shown}\n`);
      const envelope = await session.callTool(tool, request);
      write(`  ${who.padEnd(5)} <- ${summarise(envelope)}\n\n`);
      if (!expect(envelope)) throw new DemoStepFailed(title, envelope);
      return envelope;
    };
    const recordOf = (envelope: Envelope) => (envelope.results as PublicRecord[])[0]!;
    const search = { ...SCOPE, query: QUERY, intent_class: 'CURRENT_PROJECT_STATE', retrieval_mode_kind: 'HYBRID' };

    const stored = recordOf(await step('1. The agent stores what it learned: a Candidate, not yet a fact.', 'agent',
      agent, 'memory_store', {
        ...SCOPE, fact: FACT, memory_type: 'PROJECT_LEARNED_FACT', freshness_policy: { kind: 'never' },
        source_timestamp: '2026-12-01T00:00:00Z', idempotency_key: `demo-${randomUUID()}`,
        source_provenance: {
          source_class: 'repo_file', source_ref: 'package.json', review_ref: 'demo/1',
          extraction_method: 'manual_read',
          source_hash: createHash('sha256').update('package.json').digest('hex'),
        },
      }, `{scope PROJECT, fact "${FACT}"}`, (e) => e.status === 'OK' && recordOf(e).lifecycle_state === 'CANDIDATE'));
    await step('2. CURRENT search returns only validated facts, so the Candidate is not shown.', 'agent', agent,
      'memory_search', search, `{query "${QUERY}", retrieval_mode CURRENT}`,
      (e) => e.status === 'OK' && (e.results as PublicRecord[]).length === 0);
    const reverify = { ...SCOPE, memory_id: stored.memory_id, mode: 'REVERIFY', expected_revision: stored.revision,
      expected_record_id: stored.record_id, verification: { verified_by: 'OWNER' } };
    const promoted = recordOf(await step('3. The owner reviews it and promotes it (compare-and-swap on revision 1).',
      'owner', owner, 'memory_update', { ...reverify, idempotency_key: `demo-${randomUUID()}` },
      `{mode REVERIFY, expected_revision ${stored.revision}, expected_record_id ${short(stored.record_id)}}`,
      (e) => e.status === 'OK' && recordOf(e).lifecycle_state === 'VALIDATED_CURRENT'));
    await step('4. Now CURRENT search finds it.', 'agent', agent, 'memory_search', search,
      `{query "${QUERY}", retrieval_mode CURRENT}`,
      (e) => (e.results as PublicRecord[]).some((r) => r.record_id === promoted.record_id));
    await step('5. A writer still holding revision 1 is refused: nothing is overwritten.', 'owner', owner,
      'memory_update', { ...reverify, idempotency_key: `demo-${randomUUID()}` },
      `{mode REVERIFY, expected_revision ${stored.revision}} (stale)`,
      (e) => e.status === 'BLOCKED' && e.error_code === 'VERSION_CONFLICT');
    await step('6. REVIEW_HISTORY keeps both revisions: the Candidate and the promoted fact.', 'agent', agent,
      'memory_get', { ...SCOPE, memory_id: stored.memory_id, retrieval_mode: 'REVIEW_HISTORY' },
      `{memory_id ${short(stored.memory_id)}, retrieval_mode REVIEW_HISTORY}`,
      (e) => (e.results as PublicRecord[]).map((r) => r.revision).join(',') === '2,1');
    write('Done: every step answered as the contract says.\n');
    return 0;
  } catch (error) {
    // A stop (a signal, or standard output closed) ends the process in its own clean-up; a step cut off by it too.
    if (error instanceof DemoStopped || stopping) return 1;
    if (!(error instanceof DemoStepFailed)) throw error;
    write(`The demo stopped: step "${error.step}" did not answer as expected:\n${JSON.stringify(error.envelope)}\n`);
    return 1;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    // The listener stays: a write of the clean-up (--keep) or a late EPIPE would otherwise be an unhandled error.
    await cleanUp();
  }
}

/** A launch asked for after a stop signal: the demo ends without starting another server. */
class DemoStopped extends Error {}

class DemoStepFailed extends Error {
  override name = 'DemoStepFailed';
  constructor(readonly step: string, readonly envelope: Envelope) {
    super(`demo step failed: ${step}`);
  }
}
