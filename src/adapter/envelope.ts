import { PUBLIC_CONTRACT_REVISION, type ToolName } from '@factlane/schema';
import { scopeDigest, type ScopeTuple } from './request-scope.js';

/** The adapter's part of `audit` (CONTRACT.md §6.1); the gateway adds host and context bindings. */
export function adapterAudit(
  operation: ToolName, requestId: string, scope: ScopeTuple, localEmbeddingCalls: number,
): Record<string, unknown> {
  return {
    request_id: requestId, operation, public_contract_revision: PUBLIC_CONTRACT_REVISION,
    scope_digest: scopeDigest(scope),
    backend: 'sqlite_vec', external_llm_calls: 0, local_embedding_calls: localEmbeddingCalls, raw_content_logged: false,
  };
}

/** The budget of an envelope without results. */
export function emptyBudget(requestedTopK: number | null): Record<string, unknown> {
  return { requested_top_k: requestedTopK, returned: 0, serialized_bytes: 0, serialized_tokens: 0, truncated: false };
}

/** The scope object of an envelope: the normalised five-key tuple. */
export function envelopeScope(scope: ScopeTuple): Record<string, unknown> {
  return {
    scope: scope.scope, project_id: scope.project_id, worktree_id: scope.worktree_id, workflow_id: scope.workflow_id,
    agent_id: scope.agent_id,
  };
}
