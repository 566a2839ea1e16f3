import { performance } from 'node:perf_hooks';
import { AdapterError } from '../core/adapter-error.js';
import { canonicalJson } from '../core/canonical-json.js';
import { SYSTEM_CLOCK, formatTimestamp, type Clock } from '../core/time.js';
import { freshBindingJson, runtimeFingerprint } from '../embedding/embedding-binding.js';
import type { EmbeddingProfile } from '../embedding/embedding-profiles.js';
import type { EmbeddingProvider, RuntimeProvenance } from '../embedding/embedding-provider.js';
import { MaintenanceTarget } from '../storage/maintenance-target.js';
import {
  readDocuments, readVectorRows, recreateNextTable, switchVectorTable, writeNextVectors,
  type VectorChanges, type VectorDocument, type VectorRow,
} from '../storage/reembed-repository.js';
import {
  assertNoInterlock, assertVectorTablesWhole, bindingProfileId, schemaRefusal,
} from '../storage/schema-inspection.js';
import { vectorTableDefinitions } from '../storage/schema-verification.js';
import { WriteConnection } from '../storage/write-connection.js';
import { Interrupted, say, sayThenStopAtOnce, watchSignals } from './operation-signals.js';
import { IGNORE_STEPS, type StepListener } from './operation-steps.js';

/** Records embedded per committed batch unless told otherwise. */
export const DEFAULT_REEMBED_BATCH_SIZE = 256;
/** Switch attempts before giving up on a database whose records keep changing. */
const MAX_SWITCH_ATTEMPTS = 5;
/** Records a dry run embeds (and discards) to estimate the rate. */
const DRY_RUN_SAMPLE_SIZE = 32;

/** Options of reembedDatabase, frozen by the caller. */
export interface ReembedOptions {
  readonly dbPath: string;
  /** The target profile's provider; its `profile` is the target. */
  readonly provider: EmbeddingProvider;
  readonly dryRun?: boolean;
  readonly batchSize?: number;
  readonly clock?: Clock;
  /** Called after every committed batch. */
  readonly onProgress?: (progress: ReembedProgress) => void;
  /**
   * Hears the steps around the batches (decision 0023): `lease_taken`, `provider_checked`, `planned` (total
   * records), then last `sampled` (dry run: the sample's records) or `switching` and `switched` (records embedded).
   */
  readonly onStep?: StepListener;
  /** Where SIGINT and SIGTERM are watched (the run stops before its next batch or its switch); default the process. */
  readonly signals?: NodeJS.EventEmitter;
  /** Hears each signal; default SAY_AND_STOP_AT_ONCE_ON_REPEAT. */
  readonly onSignal?: (signal: string, repeated: boolean) => void;
}

/** What a stopped run left, after "reembed stopped by …". */
const STOPPED_BEFORE_THE_SWITCH = 'before the switch: the database still serves its old vectors and profile; rerun '
  + 'reembed to switch';

/** What a signal during the switch transaction found. */
const SWITCH_COMPLETED = 'which had begun and completed: the database serves the new vectors and profile';

/**
 * The first signal is said on stderr (a batch, one embedding call, may take up to its provider's timeout); a second
 * stops the process at once, as a kill would: the old vectors stay in use either way (OPERATIONS.md §7).
 */
export const SAY_AND_STOP_AT_ONCE_ON_REPEAT = sayThenStopAtOnce(
  (signal) => `${signal}: reembed stops before its next batch, switching nothing; send it again to stop at once`,
  (signal) => `reembed stopped at once by a second ${signal} ${STOPPED_BEFORE_THE_SWITCH}`,
);

/** One progress line (OPERATIONS.md §7): records done / total, rate and time left. */
export interface ReembedProgress {
  readonly batch: number;
  readonly done: number;
  readonly total: number;
  readonly records_per_second: number;
  readonly seconds_left: number;
}

/** The `factlane-admin reembed` report: no fact text, no paths. */
export interface ReembedReport {
  readonly db_identity: string;
  readonly dry_run: boolean;
  readonly from_profile: string | null;
  readonly to_profile: string;
  /** Records with a vector when the run began: what a run embeds. */
  readonly records_to_embed: number;
  /** Vectors written under the target profile (0 for a dry run). */
  readonly records_embedded: number;
  readonly batches: number;
  /** Dry run: the estimated time of a real run; null otherwise. */
  readonly estimated_ms: number | null;
  readonly elapsed_ms: number;
  readonly switched: boolean;
}

/**
 * The binding a reembed writes (CONTRACT.md §14.5): the fresh binding of `profile` under `provenance`,
 * with `compatibility_proof.basis` `OPERATOR_REEMBED`.
 */
export function reembedBindingJson(profile: EmbeddingProfile, provenance: RuntimeProvenance, boundAt: string): string {
  const binding = JSON.parse(freshBindingJson(profile, provenance, boundAt)) as Record<string, unknown>;
  return canonicalJson({ ...binding, compatibility_proof: { basis: 'OPERATOR_REEMBED', bound_at: boundAt } });
}

/** Document embeddings of `documents`, checked for count and dimension (SCHEMA_MISMATCH otherwise). */
async function embed(provider: EmbeddingProvider, documents: readonly VectorDocument[]): Promise<{
  row: VectorRow; embedding: Float32Array;
}[]> {
  if (documents.length === 0) return [];
  const vectors = await provider.embedDocuments(documents.map((document) => document.fact));
  if (vectors.length !== documents.length || vectors.some((v) => v.length !== provider.profile.outputDimension)) {
    throw new AdapterError('SCHEMA_MISMATCH',
      'the embedding provider returned the wrong number or dimension of vectors');
  }
  return documents.map(({ fact: _fact, ...row }, index) => ({ row, embedding: vectors[index]! }));
}

/**
 * Re-embeds every record that has a vector under `provider`'s profile and rebinds the database to it
 * (OPERATIONS.md §7): exclusive lease, provider status check, `fact_vec_next` filled in committed batches,
 * a fresh status check, then one switch transaction. An interruption before the switch leaves the old
 * table and binding in use; a rerun drops the leftover `fact_vec_next`. A dry run embeds a small sample to
 * estimate the time and changes nothing.
 *
 * Errors: MAINTENANCE_IN_PROGRESS (a runtime attached, or the recovery interlock), SOURCE_NOT_FOUND,
 * SCHEMA_MISMATCH (not a FactLane database of this release), the provider's own code when its status
 * check or an embedding fails, PROFILE_MISMATCH (runtime fingerprint changed before the switch),
 * BACKEND_BUSY (records kept changing), VERIFY_FAILED (switched schema wrong; rolled back).
 */
export async function reembedDatabase(options: ReembedOptions): Promise<ReembedReport> {
  const started = performance.now();
  const { provider } = options;
  const profile = provider.profile;
  const batchSize = options.batchSize ?? DEFAULT_REEMBED_BATCH_SIZE;
  const onStep = options.onStep ?? IGNORE_STEPS;
  const target = MaintenanceTarget.open({ dbPath: options.dbPath, lease: 'exclusive' });
  onStep({ step: 'lease_taken', fields: { lease: target.leaseMode } });
  // STORAGE.md §9: if SQLite cannot confirm the write connection closed, the lease stays until exit.
  let connectionClosed = true;
  try {
    const findings = target.findings;
    if (findings.kind !== 'FACTLANE' || findings.vectorDimension === null)
      throw new AdapterError('SCHEMA_MISMATCH', 'the file is not a FactLane database');
    assertNoInterlock(findings);
    const refusal = schemaRefusal(findings, target.shipped, null);
    if (refusal) throw new AdapterError('SCHEMA_MISMATCH', refusal);
    assertVectorTablesWhole(findings);
    const startProvenance = await provider.statusCheck();
    const fingerprint = runtimeFingerprint(startProvenance);
    onStep({ step: 'provider_checked', fields: { profile: profile.profileId } });
    const plan = target.withReadOnly(readVectorRows);
    onStep({ step: 'planned', total: plan.length });
    const report = {
      db_identity: target.dbIdentity, dry_run: options.dryRun === true,
      from_profile: bindingProfileId(findings.bindingText), to_profile: profile.profileId,
      records_to_embed: plan.length,
    };
    const progress = new ProgressMeter(plan.length, options.onProgress);

    if (options.dryRun) {
      const sample = target.withReadOnly((connection) => readDocuments(connection, plan.slice(0, DRY_RUN_SAMPLE_SIZE)));
      const sampleStarted = performance.now();
      await embed(provider, sample);
      onStep({ step: 'sampled', done: sample.length, total: sample.length });
      const perRecordMs = sample.length === 0 ? 0 : (performance.now() - sampleStarted) / sample.length;
      return { ...report, records_embedded: 0, batches: Math.ceil(plan.length / batchSize),
        estimated_ms: Math.round(perRecordMs * plan.length),
        elapsed_ms: Math.round(performance.now() - started), switched: false };
    }

    const definitions = vectorTableDefinitions(target.shipped, findings.schemaVersion, profile.outputDimension);
    const connection = WriteConnection.open({ path: target.path });
    connectionClosed = false;
    const onSignal = options.onSignal ?? SAY_AND_STOP_AT_ONCE_ON_REPEAT;
    // During the switch transaction a signal is only noted: the switch commits whatever comes, and is said after it.
    let switching = false;
    const signals = watchSignals(options.signals ?? process, (signal, repeated) => {
      if (!switching) onSignal(signal, repeated);
    });
    try {
      await connection.write(async (_trx, raw) => recreateNextTable(raw, definitions));
      const filled = new Map<number, VectorRow>();
      const fill = async (rows: readonly VectorRow[], remove: readonly number[] = []) => {
        await signals.check();
        const documents = readDocuments(connection.connection, rows);
        const embedded = await embed(provider, documents);
        await connection.write(async (_trx, raw) => writeNextVectors(raw, embedded, remove));
        for (const rowId of remove) filled.delete(rowId);
        for (const { row } of embedded) filled.set(row.rowId, row);
        progress.batchDone(embedded.length);
      };
      for (let offset = 0; offset < plan.length; offset += batchSize) await fill(plan.slice(offset,
        offset + batchSize));

      for (let attempt = 1; ; attempt += 1) {
        await signals.check();
        const now = await provider.statusCheck();
        if (runtimeFingerprint(now) !== fingerprint) {
          throw new AdapterError('PROFILE_MISMATCH',
            'the embedding runtime changed during the run (model or Ollama version); nothing was switched, rerun '
              + 'reembed');
        }
        // The status check may take up to its provider's timeout: a signal said "switching nothing" meanwhile.
        await signals.check();
        // The switch rebuilds every eligible form in one transaction: seconds past the last batch's "0 s left".
        onStep({ step: 'switching', done: filled.size, total: filled.size });
        switching = true;
        const outcome = await connection.write((trx, raw) => switchVectorTable(trx, raw, {
          filled, definitions, shipped: target.shipped, profileId: profile.profileId, modelDigest: now.digest,
          dimension: profile.outputDimension,
          bindingJson: reembedBindingJson(profile, now, formatTimestamp((options.clock ?? SYSTEM_CLOCK)())),
        }));
        // A signal sent while the transaction ran is handed to its listener only now.
        const late = await signals.heard();
        switching = false;
        if (outcome.switched) {
          if (late !== null) say(`${late} came during reembed's switch, ${SWITCH_COMPLETED}`);
          onStep({ step: 'switched', done: filled.size, total: filled.size });
          break;
        }
        if (attempt >= MAX_SWITCH_ATTEMPTS) {
          throw new AdapterError('BACKEND_BUSY',
            'records kept changing during reembed; stop every process writing to the database and rerun', {
              retryable: true,
            });
        }
        await catchUp(outcome.changes, batchSize, fill);
      }
      return { ...report, records_embedded: filled.size, batches: progress.batches, estimated_ms: null,
        elapsed_ms: Math.round(performance.now() - started), switched: true };
    } catch (error) {
      if (!(error instanceof Interrupted)) throw error;
      throw new Interrupted(error.signal, `reembed stopped by ${error.signal} ${STOPPED_BEFORE_THE_SWITCH}`);
    } finally {
      signals.stop();
      connectionClosed = await connection.close();
    }
  } finally {
    if (connectionClosed) target.close();
  }
}

/** Redoes the rows that changed since they were filled, in batches; the first batch also drops vanished rows. */
async function catchUp(
  changes: VectorChanges, batchSize: number,
  fill: (rows: readonly VectorRow[], remove?: readonly number[]) => Promise<void>,
): Promise<void> {
  let remove = changes.remove;
  for (let offset = 0; offset < Math.max(changes.embed.length, 1); offset += batchSize) {
    await fill(changes.embed.slice(offset, offset + batchSize), remove);
    remove = [];
  }
}

/** Counts committed batches and reports done / total, rate and time left. */
class ProgressMeter {
  batches = 0;
  #done = 0;
  readonly #total: number;
  readonly #started = performance.now();
  readonly #report: ((progress: ReembedProgress) => void) | undefined;

  constructor(total: number, report?: (progress: ReembedProgress) => void) {
    this.#total = total;
    this.#report = report;
  }

  batchDone(records: number): void {
    this.batches += 1;
    this.#done += records;
    const total = Math.max(this.#total, this.#done);
    const seconds = Math.max((performance.now() - this.#started) / 1000, 1e-6);
    const rate = this.#done / seconds;
    this.#report?.({
      batch: this.batches, done: this.#done, total, records_per_second: Math.round(rate),
      seconds_left: rate > 0 ? Math.ceil((total - this.#done) / rate) : 0,
    });
  }
}
