import { AdapterError } from '../core/adapter-error.js';
import { isHostLabel, isIdentifier, isSecretLike, mintInstanceId } from '../core/identifiers.js';

/** The immutable host binding of a process (CONTRACT.md §4.6). */
export interface HostBinding {
  readonly host_id: string;
  readonly transport: 'stdio';
  readonly binding_source: string;
  readonly gateway_instance_id: string;
}

/** The trusted context binding (CONTRACT.md §4.5); only bound ids and their sources appear. */
export interface ContextBinding {
  readonly binding_source: string;
  readonly project_id?: string;
  readonly project_id_source?: string;
  readonly workflow_id?: string;
  readonly workflow_id_source?: string;
  readonly agent_id?: string;
  readonly agent_id_source?: string;
}

function label(code: 'INVALID_HOST_BINDING' | 'INVALID_CONTEXT_BINDING', flag: string, value: string): string {
  if (isSecretLike(value)) throw new AdapterError('RAW_OR_SENSITIVE_CONTENT', `${flag} looks like a secret`);
  if (!isHostLabel(value))
    throw new AdapterError(code,
      `${flag} must be a label: 1-128 letters, digits and . _ : -, starting with a letter or digit`);
  return value;
}

/** Builds the host binding; INVALID_HOST_BINDING (or RAW_OR_SENSITIVE_CONTENT) for a bad label. */
export function createHostBinding(hostId: string, bindingSource = 'explicit-launcher'): HostBinding {
  return Object.freeze({
    host_id: label('INVALID_HOST_BINDING', '--host-id', hostId), transport: 'stdio',
    binding_source: label('INVALID_HOST_BINDING', '--binding-source', bindingSource),
    gateway_instance_id: mintInstanceId(),
  });
}

/** Launcher inputs of a context binding; undefined means the flag was not given. */
export interface ContextBindingInput {
  readonly bindingSource?: string;
  readonly projectId?: string;
  readonly projectIdSource?: string;
  readonly workflowId?: string;
  readonly workflowIdSource?: string;
  readonly agentId?: string;
  readonly agentIdSource?: string;
}

/**
 * Builds the context binding, or null when no id is bound. INVALID_CONTEXT_BINDING for a bound id that is
 * not an identifier, `--workflow-id` without `--project-id`, or a source label without its id.
 */
export function createContextBinding(input: ContextBindingInput): ContextBinding | null {
  const source = label('INVALID_CONTEXT_BINDING', '--context-binding-source',
    input.bindingSource ?? 'explicit-launcher');
  const binding: Record<string, string> = { binding_source: source };
  for (const [key, id, idSource] of [
    ['project_id', input.projectId, input.projectIdSource], ['workflow_id', input.workflowId, input.workflowIdSource],
    ['agent_id', input.agentId, input.agentIdSource],
  ] as const) {
    const flag = `--${key.replace('_', '-')}`;
    if (id === undefined) {
      if (idSource !== undefined) throw new AdapterError('INVALID_CONTEXT_BINDING', `${flag}-source needs ${flag}`);
      continue;
    }
    if (isSecretLike(id)) throw new AdapterError('RAW_OR_SENSITIVE_CONTENT', `${flag} looks like a secret`);
    if (!isIdentifier(id)) throw new AdapterError('INVALID_CONTEXT_BINDING', `${flag} must be an identifier`);
    binding[key] = id;
    binding[`${key}_source`] = idSource === undefined ? source
      : label('INVALID_CONTEXT_BINDING', `${flag}-source`, idSource);
  }
  if (binding.workflow_id !== undefined && binding.project_id === undefined)
    throw new AdapterError('INVALID_CONTEXT_BINDING', '--workflow-id needs --project-id');
  return Object.keys(binding).length > 1 ? Object.freeze(binding as unknown as ContextBinding) : null;
}
