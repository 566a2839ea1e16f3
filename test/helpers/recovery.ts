import { chmodSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MemoryAdapter } from '../../src/adapter/memory-adapter.js';
import { LocalHashProvider } from '../../src/embedding/local-hash-provider.js';
import { recoverDatabase, type RecoverOptions, type RecoveryOutcome } from '../../src/maintenance/recover-operation.js';
import { buildRecoveryPlan, writeRecoveryPlan } from '../../src/maintenance/recovery-plan-builder.js';
import type { RecoveryPlan } from '../../src/maintenance/recovery-plan.js';
import { compactRecord } from '../../src/storage/compaction-repository.js';
import { recordDigests } from '../../src/storage/recovery-repository.js';
import type { WriteProfile } from '../../schema/enums.js';
import { openLocalHashEngine } from './mcp.js';
import { padScope, scopeTuple } from './reads.js';
import { RawDatabase, sqliteVec } from './storage.js';
import { fixedClock, replaceRequest, reverifyRequest, storeRequest, currentRequest, type Json } from './writes.js';

// A database holding a secret in every lifecycle recovery handles (issue 12): a Candidate promoted (SUPERSEDED, then
// compacted to HISTORICAL), its current successor REPLACEd (SUPERSEDED, holding the secret too), beside other records.

/** A unique 40-byte marker: the secret. */
export const MARKER = 'FLSECRET-7f3a9c1e5b2d8046af13ce97b5d2e8c4';

const PROJECT = { scope: 'PROJECT', project_id: 'proj-a' };

export interface SecretScenario {
  readonly dbPath: string;
  readonly memoryId: string;
  /** The secret's records: revision 1 (HISTORICAL) and revision 2 (SUPERSEDED). */
  readonly targetIds: readonly string[];
  /** The REPLACE successor (another memory, without the secret). */
  readonly replacementId: string;
  /** The store request that created the secret, to retry under its idempotency key. */
  readonly storeRequest: Json;
  readonly secretFact: string;
}

/** An adapter on an open engine of `dbPath`. */
export function adapterFor(
  engine: Awaited<ReturnType<typeof openLocalHashEngine>>, profile: WriteProfile, hostId = 'host-a',
): MemoryAdapter {
  return new MemoryAdapter({
    engine, provider: new LocalHashProvider(), writeProfile: profile, hostId, clock: fixedClock(),
  });
}

async function ok(envelope: Promise<unknown>): Promise<Json> {
  const result = (await envelope) as Json;
  if (result.status !== 'OK') {
    throw new Error(`scenario setup: ${result.status} ${JSON.stringify(result.error ?? result)}`);
  }
  return result.results[0];
}

/** Builds the scenario in `dir`; the engine is closed again when it returns. */
export async function secretScenario(
  dir: string, options: { coded?: boolean; secretFact?: string } = {},
): Promise<SecretScenario> {
  const dbPath = join(dir, 'recover.sqlite3');
  const engine = await openLocalHashEngine(dbPath);
  try {
    const delegated = adapterFor(engine, 'delegated-candidate', 'agent-host');
    const owner = adapterFor(engine, 'owner-current', 'owner-host');
    // `coded`: the project scope is coded (schema 3), so its current records, the secret's promoted revision among them
    // while it is current, have eligible forms: the purge and the residual scan must reach those bytes too.
    if (options.coded) {
      await padScope(engine, scopeTuple('PROJECT', { project_id: PROJECT.project_id }));
    }
    for (const fact of ['The build uses Node 20', 'Lint runs with eslint 9', 'Releases are tagged from main']) {
      await ok(owner.execute('memory_store', currentRequest({ ...PROJECT, fact })));
    }
    await ok(delegated.execute('memory_store', storeRequest({ ...PROJECT, fact: 'Staging runs on port 8080' })));
    await ok(owner.execute('memory_store', currentRequest({ fact: 'The owner prefers short commit messages' })));
    const secretFact = options.secretFact ?? `The staging deploy token is ${MARKER}`;
    const request = storeRequest({ ...PROJECT, fact: secretFact });
    const candidate = await ok(delegated.execute('memory_store', request));
    const promoted = await ok(owner.execute('memory_update', reverifyRequest(candidate, {
      expected_record_id: candidate.record_id,
      verification: { source_timestamp: '2026-11-28T00:00:00Z', verified_by: 'OWNER' },
    })));
    const replacementRequest = replaceRequest(promoted, { fact: 'The staging deploy token lives in the vault' });
    const replacement = await ok(owner.execute('memory_update', replacementRequest));
    await engine.write((trx) => compactRecord(trx, candidate.record_id));
    return {
      dbPath, memoryId: candidate.memory_id, targetIds: [candidate.record_id, promoted.record_id],
      replacementId: replacement.record_id, storeRequest: request, secretFact,
    };
  } finally {
    await engine.close();
  }
}

/** Writes a plan for `memoryIds` with the plan helper (mode 0600) and returns it with its path. */
export function planFor(
  dir: string, dbPath: string, memoryIds: readonly string[], name = 'plan.json', edit?: (plan: Json) => Json,
): { plan: RecoveryPlan; planPath: string } {
  const planPath = join(dir, name);
  let plan = buildRecoveryPlan({ dbPath, memoryIds }).plan as unknown as Json;
  if (edit) plan = edit(structuredClone(plan));
  writeRecoveryPlan(planPath, plan as unknown as RecoveryPlan);
  chmodSync(planPath, 0o600);
  return { plan: plan as unknown as RecoveryPlan, planPath };
}

/** Runs recover in this process with the plan's own confirmation and a receipt beside it. */
export function recover(
  dir: string, dbPath: string, planPath: string, options: Partial<RecoverOptions> = {},
): Promise<RecoveryOutcome> {
  const plan = JSON.parse(readFileSync(planPath, 'utf8')) as Json;
  return recoverDatabase({
    dbPath, planPath, confirm: plan.operation_id, receiptPath: join(dir, 'receipt.json'), ...options,
  });
}

/** The digest of every record and its derived rows, by record_id (storage's recordDigests, keyed for tests). */
export function digestsByRecord(dbPath: string): Map<string, string> {
  const db = new RawDatabase(dbPath, { readonly: true });
  try {
    sqliteVec.load(db);
    const records = db.prepare('SELECT row_id, record_id FROM adapter_records').all() as
      { row_id: number; record_id: string }[];
    const ids = new Map(records.map((r) => [r.row_id, r.record_id]));
    return new Map([...recordDigests(db as never, new Set())].map(([rowId, digest]) => [ids.get(rowId)!, digest]));
  } finally {
    db.close();
  }
}

/**
 * Every byte of the database file and of its WAL, for comparing "unchanged". An empty or absent WAL counts alike, and
 * the -shm is left out: any reader (the plan helper, a preflight check) creates both, and neither holds content.
 */
export function fileBytes(dbPath: string): string {
  return ['', '-wal'].map((suffix) => {
    try {
      return readFileSync(dbPath + suffix).toString('base64');
    } catch {
      return '';
    }
  }).join('|');
}
