/**
 * Top-level identity claims (CONTRACT.md §9.1): HOST_IDENTITY_CLAIM_DENIED, even when the value matches the binding.
 */
export const IDENTITY_CLAIM_KEYS = Object.freeze(['bound_agent_id', 'bound_host_id', 'bound_project_id',
  'bound_workflow_id', 'context_binding',
  'context_binding_source', 'gateway_instance_id', 'host_id', 'host_identity', 'runtime_agent_id', 'session_context',
  'transport_identity', 'transport_kind'] as const);

/** Trust claims at any depth (CONTRACT.md §9.2): WRITE_AUTHORIZATION_DENIED. */
export const TRUST_CLAIM_KEYS = Object.freeze(['authority_role', 'contribution_origin', 'contributor_class',
  'contributor_ref', 'effective_authority',
  'effective_authority_role', 'effective_lifecycle', 'effective_lifecycle_state', 'effective_verified_by', 'grant_ref',
  'owner_authorized', 'principal_class', 'public_contract_revision', 'public_contract_revision_override',
  'runtime_contract_marker', 'storage_contract_version', 'trusted_actor', 'trusted_write_context',
  'verification_authority', 'write_authorization', 'write_capability'] as const);

/** Retired fields of the original contract (CONTRACT.md §9.3); unknown keys like any other. */
export const RETIRED_KEYS = Object.freeze(['include_graph_links', 'direct_truth_available', 'user_supplied'] as const);
