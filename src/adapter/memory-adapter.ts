import { freezeCanonical } from '../core/canonical-json.js';
import { mintUuid } from '../core/identifiers.js';
import { SYSTEM_CLOCK, type Clock } from '../core/time.js';
import { WRITE_PROFILE_SPECS, type ToolName, type WriteProfile } from '@factlane/schema';
import { getMemory } from './memory-get.js';
import { searchMemory } from './memory-search.js';
import { storeMemory } from './memory-store.js';
import { updateMemory } from './memory-update.js';
import type { EmbeddingProvider } from '../embedding/embedding-provider.js';
import type { SQLiteVecEngine } from '../storage/sqlite-vec-engine.js';
import { ScopeCounter } from '../storage/status-repository.js';
import { adapterAudit, emptyBudget, envelopeScope } from './envelope.js';
import { observeStatus } from './memory-status.js';
import { applyRequestPolicy } from './request-policy.js';
import { requireIdentifier } from './request-scope.js';

// memory_status never has results: one frozen budget serves every status envelope (decision 0010).
const STATUS_BUDGET = freezeCanonical(emptyBudget(null));

/** Options of MemoryAdapter, frozen. */
export interface MemoryAdapterOptions {
  readonly engine: SQLiteVecEngine;
  readonly provider: EmbeddingProvider;
  readonly writeProfile: WriteProfile;
  /** The launcher's `--host-id`: the `contributor_ref` of what this process writes. */
  readonly hostId: string;
  readonly clock?: Clock;
}

/** The success envelope of an operation (CONTRACT.md §6.1), before the gateway adds its audit fields. */
export type Envelope = Record<string, unknown>;

/**
 * MemoryAdapter owns request validation, authorization and the handlers of the five operations. Governed
 * failures are thrown as AdapterError; the server boundary alone turns them into BLOCKED envelopes.

 */
export class MemoryAdapter {
  readonly #options: MemoryAdapterOptions;
  /** memory_status counts of this adapter's engine, remembered while the database is unchanged. */
  readonly #counter = new ScopeCounter();

  constructor(options: MemoryAdapterOptions) {
    this.#options = Object.freeze({ ...options });
  }

  /** Validates and executes one operation; `request` is the gateway's injected copy and is not modified. */
  async execute(operation: ToolName, request: Readonly<Record<string, unknown>>): Promise<Envelope> {
    const { scope, authorization } = applyRequestPolicy(operation, request, this.#options.writeProfile);
    const requestId = request.request_id === undefined || request.request_id === null ? mintUuid()
      : requireIdentifier('request_id', request.request_id);
    if (operation === 'memory_status') {
      const observation = await observeStatus({
        engine: this.#options.engine, counter: this.#counter, provider: this.#options.provider,
        writeProfile: this.#options.writeProfile, scope,
      });
      return {
        status: 'OK', memory_needed: false, scope: envelopeScope(scope), results: [], contradictions: [],
        budget: STATUS_BUDGET, degradation: null, audit: adapterAudit(operation, requestId, scope, 0), ...observation,
      };
    }
    const options = this.#options;
    const deps = { engine: options.engine, provider: options.provider, clock: options.clock ?? SYSTEM_CLOCK };
    if (operation === 'memory_search') return searchMemory(deps, { request, scope, requestId });
    if (operation === 'memory_get') return getMemory(deps, { request, scope, requestId });
    const context = {
      contributorClass: WRITE_PROFILE_SPECS[options.writeProfile].contributorClass, contributorRef: options.hostId,
    };
    const input = { request, scope, requestId, authorization: authorization!, context };
    return operation === 'memory_store' ? storeMemory(deps, input) : updateMemory(deps, input);
  }
}
