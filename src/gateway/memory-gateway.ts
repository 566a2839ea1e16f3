import { AdapterError } from '../core/adapter-error.js';
import { copyJson, freezeCanonical, isJsonObject } from '../core/canonical-json.js';
import { isIdentifier, mintUuid } from '../core/identifiers.js';
import { TOOL_NAMES, type ToolName, IDENTITY_CLAIM_KEYS, TRUST_CLAIM_KEYS } from '@factlane/schema';
import type { Envelope, MemoryAdapter } from '../adapter/memory-adapter.js';
import type { ContextBinding, HostBinding } from './bindings.js';

/** Options of MemoryGateway, frozen. */
export interface MemoryGatewayOptions {
  readonly adapter: Pick<MemoryAdapter, 'execute'>;
  readonly hostBinding: HostBinding;
  readonly contextBinding: ContextBinding | null;
  /** The transport the gateway serves; only `stdio` is supported. */
  readonly transport: string;
}

// Which bound ids the gateway governs per scope (CONTRACT.md §4.5). A Map, not an object: the scope is the caller's
// string, and an object would answer `toString` or `__proto__` with what it inherits.
const GOVERNED: ReadonlyMap<string, readonly ('project_id' | 'workflow_id' | 'agent_id')[]> = new Map([
  ['PROJECT', ['project_id']], ['WORKFLOW', ['project_id', 'workflow_id']], ['TOOL_ENVIRONMENT', ['agent_id']],
]);


/**
 * MemoryGateway receives the five operations from the server: it refuses identity claims and top-level
 * trust claims, injects the launcher-bound context into a copy of the request, and stamps the trusted
 * host and context bindings into every envelope. Governed failures are thrown as AdapterError carrying
 * the audit the BLOCKED envelope needs.
 */
export class MemoryGateway {
  readonly #options: MemoryGatewayOptions;
  /**
   * The audit fields the gateway owns, copied from the bindings once and deep-frozen: no envelope can alter another's.
   */
  readonly #bindingAudit: Readonly<{ host_binding: HostBinding; context_binding?: ContextBinding }>;

  /** HOST_TRANSPORT_IDENTITY_MISMATCH for any transport other than stdio. */
  constructor(options: MemoryGatewayOptions) {
    if (options.transport !== 'stdio')
      throw new AdapterError('HOST_TRANSPORT_IDENTITY_MISMATCH', 'FactLane serves local stdio only');
    this.#options = Object.freeze({ ...options });
    this.#bindingAudit = freezeCanonical(options.contextBinding
      ? { host_binding: { ...options.hostBinding }, context_binding: { ...options.contextBinding } }
      : { host_binding: { ...options.hostBinding } });
  }

  get hostBinding(): HostBinding {
    return this.#options.hostBinding;
  }

  /** Runs one operation through the gateway checks (CONTRACT.md §11 stage B) and the adapter. */
  async handle(operation: string, request: unknown): Promise<Envelope> {
    const mintedId = mintUuid();
    try {
      if (!(TOOL_NAMES as readonly string[]).includes(operation))
        throw new AdapterError('INVALID_OPERATION', 'unknown operation');
      if (!isJsonObject(request)) throw new AdapterError('INVALID_ENVELOPE', 'request must be a JSON object');
      const claims = IDENTITY_CLAIM_KEYS.filter((key) => Object.hasOwn(request, key));
      if (claims.length > 0)
        throw new AdapterError('HOST_IDENTITY_CLAIM_DENIED',
          `the request cannot claim host identity: ${claims.join(', ')}`);
      if (TRUST_CLAIM_KEYS.some((key) => Object.hasOwn(request, key)))
        throw new AdapterError('WRITE_AUTHORIZATION_DENIED', 'the request cannot claim trusted or derived authority');
      const injected = this.#inject(request);
      if ((operation === 'memory_store' || operation === 'memory_update') && Object.hasOwn(injected, 'provenance')) {
        throw new AdapterError('INVALID_ENVELOPE', 'provenance is not a field; send source_provenance');
      }
      if (injected.request_id === undefined || injected.request_id === null) injected.request_id = mintedId;
      const envelope = await this.#options.adapter.execute(operation as ToolName, injected);
      return this.#stamp(envelope);
    } catch (error) {
      if (error instanceof AdapterError) throw error.withAudit(this.#blockedAudit(request, mintedId, error));
      throw error;
    }
  }

  /** Copies the request and applies the bound context for the request's scope. */
  #inject(request: Record<string, unknown>): Record<string, unknown> {
    const copy = copyJson(request);
    const binding = this.#options.contextBinding;
    const governed = typeof copy.scope === 'string' ? GOVERNED.get(copy.scope) ?? [] : [];
    for (const key of binding ? governed : []) {
      const bound = binding![key];
      if (bound === undefined) continue;
      if (!Object.hasOwn(copy, key)) copy[key] = bound;
      else if (copy[key] !== bound)
        throw new AdapterError('BOUND_CONTEXT_IDENTITY_MISMATCH',
          `${key} differs from the launcher-bound value; omit it or send the bound value`);
    }
    return copy;
  }

  /** A copy of the envelope with the gateway's audit fields; the adapter's objects are left as they are. */
  #stamp(envelope: Envelope): Envelope {
    const audit: Record<string, unknown> = {
      ...(isJsonObject(envelope.audit) ? envelope.audit : {}), ...this.#bindingAudit,
    };
    // The gateway owns both binding fields: an adapter value never survives, bound or not.
    if (!this.#bindingAudit.context_binding && Object.hasOwn(audit, 'context_binding')) delete audit.context_binding;
    return { ...envelope, audit };
  }

  /** request_id echoes a valid caller value, the minted id when none was sent, else null (CONTRACT.md §6.3). */
  #blockedAudit(request: unknown, mintedId: string, error: AdapterError): Record<string, unknown> {
    const sent = isJsonObject(request) ? request.request_id : undefined;
    const requestId = sent === undefined || sent === null ? mintedId : typeof sent === 'string' && isIdentifier(sent)
      ? sent
      : null;
    return { ...this.#bindingAudit, raw_content_logged: false, request_id: requestId, retryable: error.retryable };
  }
}
