/* IMPORTANT
 * This snapshot file is auto-generated, but designed for humans.
 * It should be checked into source control and tracked carefully.
 * Re-generate by setting TAP_SNAPSHOT=1 and running tests.
 * Make sure to inspect the output below.  Do not ignore changes!
 */
'use strict'
exports[`test/50-server/tools-list.test.ts > TAP > tools/list advertises exactly the five tools with their closed request schemas > the whole tools/list result 1`] = `
Object {
  "tools": Array [
    Object {
      "annotations": Object {
        "openWorldHint": false,
        "readOnlyHint": true,
      },
      "description": "Search supporting facts in one exact scope. CURRENT returns validated, fresh facts only; REVIEW_HISTORY returns past revisions and Candidates. A fact past its freshness is left out of CURRENT (DEGRADED / STALE_ONLY when nothing fresh is left): REVIEW_HISTORY shows it, and a verifier renews it with memory_update REVERIFY. Facts support decisions; they never override the user, the repository or a live source.",
      "inputSchema": Object {
        "$defs": Object {
          "FreshnessPolicy": Object {
            "additionalProperties": false,
            "description": "When a fact stops being fresh.",
            "properties": Object {
              "kind": Object {
                "description": "when the fact goes stale",
                "enum": Array [
                  "never",
                  "ttl",
                  "on_change",
                  "manual",
                ],
                "type": "string",
              },
              "recheck_ref": Object {
                "default": null,
                "description": "what to re-check; at most 256 bytes; required for on_change",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "source_fingerprint": Object {
                "default": null,
                "description": "64 hex digits; for on_change equal to source_provenance.source_hash",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "ttl_seconds": Object {
                "default": null,
                "description": "required for ttl, forbidden otherwise",
                "maximum": 31536000,
                "minimum": 1,
                "type": Array [
                  "integer",
                  "null",
                ],
              },
            },
            "required": Array [
              "kind",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryGetRequest": Object {
            "additionalProperties": false,
            "description": "Read one memory by id.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_id": Object {
                "description": "memory UUID",
                "type": "string",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "retrieval_mode": Object {
                "default": "CURRENT",
                "description": "CURRENT: the current record; REVIEW_HISTORY: its records of any lifecycle, the newest 8 that fit the read budget, revision descending",
                "enum": Array [
                  "CURRENT",
                  "REVIEW_HISTORY",
                ],
                "type": "string",
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "memory_id",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemorySearchRequest": Object {
            "additionalProperties": false,
            "description": "Search supporting facts in one exact scope.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "intent_class": Object {
                "description": "why memory is asked; it does not filter or rank the facts. GENERAL_TASK_NO_MEMORY_REQUIRED answers NO_MEMORY_NEEDED without searching; HISTORICAL_QUESTION needs REVIEW_HISTORY; CROSS_PROJECT_WORKFLOW takes WORKFLOW_RULE (or HISTORICAL_QUESTION with REVIEW_HISTORY, or GENERAL_TASK_NO_MEMORY_REQUIRED) only",
                "enum": Array [
                  "CURRENT_PROJECT_STATE",
                  "GENERAL_TASK_NO_MEMORY_REQUIRED",
                  "HISTORICAL_QUESTION",
                  "PROJECT_DESIGN_RATIONALE",
                  "TOOL_ENVIRONMENT_STATE",
                  "USER_PREFERENCE_OR_DURABLE_FACT",
                  "WORKFLOW_RULE",
                ],
                "type": "string",
              },
              "max_bytes": Object {
                "default": 6000,
                "description": "byte budget of the results",
                "maximum": 8000,
                "minimum": 1,
                "type": "integer",
              },
              "max_memories": Object {
                "default": 5,
                "description": "most results returned; the byte and token budgets may cut the list further (budget.truncated, DEGRADED / BUDGET_EXCEEDED: a record is often 250-350 tokens)",
                "maximum": 8,
                "minimum": 1,
                "type": "integer",
              },
              "max_tokens": Object {
                "default": 1200,
                "description": "token budget of the results (o200k_base)",
                "maximum": 1600,
                "minimum": 1,
                "type": "integer",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "query": Object {
                "description": "what to look for; 1-512 bytes",
                "type": "string",
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "retrieval_mode": Object {
                "default": "CURRENT",
                "description": "CURRENT: validated fresh facts; REVIEW_HISTORY: past revisions and Candidates",
                "enum": Array [
                  "CURRENT",
                  "REVIEW_HISTORY",
                ],
                "type": "string",
              },
              "retrieval_mode_kind": Object {
                "default": "SEMANTIC",
                "description": "how to match: SEMANTIC ranks by the embedding profile's similarity (the built-in local-hash-384 compares words, not meaning: a fact sharing no word with the query still scores about 0.5); KEYWORD needs every query word in the fact (whole words, no stemming); HYBRID fuses SEMANTIC and KEYWORD; EXACT matches the whole normalised fact",
                "enum": Array [
                  "EXACT",
                  "KEYWORD",
                  "SEMANTIC",
                  "HYBRID",
                ],
                "type": "string",
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "top_k": Object {
                "default": 5,
                "description": "size of the candidate pool ranked per channel; it does not limit the results (max_memories and the budgets do)",
                "maximum": 8,
                "minimum": 1,
                "type": "integer",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "query",
              "intent_class",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryStatusRequest": Object {
            "additionalProperties": false,
            "description": "Report bounded health for one scope.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryStoreRequest": Object {
            "additionalProperties": false,
            "description": "Store one bounded, provenance-bearing fact.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "confidence": Object {
                "default": 0.5,
                "description": "confidence 0-1",
                "maximum": 1,
                "minimum": 0,
                "type": "number",
              },
              "fact": Object {
                "description": "the fact, collapsed; 1-2000 bytes; no secrets, transcripts or whole repositories",
                "type": "string",
              },
              "freshness_policy": Object {
                "$ref": "#/$defs/FreshnessPolicy",
              },
              "idempotency_key": Object {
                "description": "key of this write (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); retry the same write with the same key (it is answered as a replay of what it wrote), a new key only for a new write",
                "type": "string",
              },
              "last_verified_at": Object {
                "default": null,
                "description": "when the fact was verified (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z); required for a current record",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_type": Object {
                "description": "kind of memory",
                "enum": Array [
                  "USER_FACT",
                  "PREFERENCE",
                  "WORKFLOW_RULE",
                  "PROJECT_LEARNED_FACT",
                  "DECISION_RATIONALE",
                  "TOOL_ENVIRONMENT_FACT",
                ],
                "type": "string",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "requested_lifecycle_state": Object {
                "default": "CANDIDATE",
                "description": "CANDIDATE, or VALIDATED_CURRENT when the write profile allows",
                "enum": Array [
                  "CANDIDATE",
                  "VALIDATED_CURRENT",
                ],
                "type": "string",
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "source_provenance": Object {
                "$ref": "#/$defs/SourceProvenance",
              },
              "source_timestamp": Object {
                "default": null,
                "description": "when the source was observed (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z); required for a current record",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "subject": Object {
                "default": null,
                "description": "what question the fact answers, at most 96 bytes; give facts that answer the same question the same subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a \\"subject:\\" tag, else the fact)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "tags": Object {
                "default": Array [],
                "description": "at most 12 tags, each at most 48 bytes; duplicates dropped",
                "items": Object {
                  "type": "string",
                },
                "maxItems": 12,
                "type": "array",
              },
              "verified_by": Object {
                "default": "UNVERIFIED",
                "description": "verification basis; the write profile decides the stored value",
                "enum": Array [
                  "OWNER",
                  "CURRENT_REPO_CHECK",
                  "AUTOMATED_CHECK",
                  "UNVERIFIED",
                ],
                "type": "string",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "fact",
              "memory_type",
              "source_provenance",
              "freshness_policy",
              "idempotency_key",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryUpdateRequest": Object {
            "additionalProperties": false,
            "description": "Re-verify or replace a memory with expected_revision compare-and-swap.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "expected_record_id": Object {
                "default": null,
                "description": "the live record UUID; required to promote a Candidate",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "expected_revision": Object {
                "description": "the live record's revision (compare-and-swap)",
                "minimum": 1,
                "type": "integer",
              },
              "idempotency_key": Object {
                "description": "key of this write (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); retry the same write with the same key (it is answered as a replay of what it wrote), a new key only for a new write",
                "type": "string",
              },
              "memory_id": Object {
                "description": "memory UUID",
                "type": "string",
              },
              "mode": Object {
                "description": "REVERIFY keeps the memory (and promotes a Candidate); REPLACE starts a new memory",
                "enum": Array [
                  "REVERIFY",
                  "REPLACE",
                ],
                "type": "string",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "replacement": Object {
                "anyOf": Array [
                  Object {
                    "$ref": "#/$defs/ReplacementPayload",
                  },
                  Object {
                    "type": "null",
                  },
                ],
                "default": null,
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "verification": Object {
                "anyOf": Array [
                  Object {
                    "$ref": "#/$defs/VerificationPayload",
                  },
                  Object {
                    "type": "null",
                  },
                ],
                "default": null,
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "memory_id",
              "expected_revision",
              "mode",
              "idempotency_key",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "ReplacementPayload": Object {
            "additionalProperties": false,
            "description": "The replacing record of a REPLACE: fact, source_provenance, freshness_policy and source_timestamp are required there (INVALID_ENVELOPE lists the missing ones).",
            "properties": Object {
              "confidence": Object {
                "description": "confidence 0-1",
                "maximum": 1,
                "minimum": 0,
                "type": "number",
              },
              "fact": Object {
                "description": "the replacing fact; 1-2000 bytes",
                "type": "string",
              },
              "freshness_policy": Object {
                "$ref": "#/$defs/FreshnessPolicy",
              },
              "last_verified_at": Object {
                "default": null,
                "description": "when the fact was last verified (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_type": Object {
                "description": "kind of memory",
                "enum": Array [
                  "USER_FACT",
                  "PREFERENCE",
                  "WORKFLOW_RULE",
                  "PROJECT_LEARNED_FACT",
                  "DECISION_RATIONALE",
                  "TOOL_ENVIRONMENT_FACT",
                ],
                "type": "string",
              },
              "source_provenance": Object {
                "$ref": "#/$defs/SourceProvenance",
              },
              "source_timestamp": Object {
                "default": null,
                "description": "when the source was observed (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "subject": Object {
                "default": null,
                "description": "what question the fact answers, at most 96 bytes; give facts that answer the same question the same subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a \\"subject:\\" tag, else the fact)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "tags": Object {
                "description": "at most 12 tags, each at most 48 bytes",
                "items": Object {
                  "type": "string",
                },
                "maxItems": 12,
                "type": "array",
              },
              "verified_by": Object {
                "description": "verification basis; the write profile decides the stored value",
                "enum": Array [
                  "OWNER",
                  "CURRENT_REPO_CHECK",
                  "AUTOMATED_CHECK",
                  "UNVERIFIED",
                ],
                "type": "string",
              },
            },
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "SourceProvenance": Object {
            "additionalProperties": false,
            "description": "Where a fact comes from.",
            "properties": Object {
              "extraction_method": Object {
                "description": "how the fact was extracted; 1-96 bytes",
                "type": "string",
              },
              "review_ref": Object {
                "description": "review reference; 1-256 bytes",
                "type": "string",
              },
              "source_class": Object {
                "description": "kind of source; 1-96 bytes",
                "type": "string",
              },
              "source_fingerprint": Object {
                "default": null,
                "description": "64 hex digits",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "source_hash": Object {
                "description": "SHA-256 of the source, 64 hex digits",
                "type": "string",
              },
              "source_ref": Object {
                "description": "where the source is; 1-256 bytes",
                "type": "string",
              },
            },
            "required": Array [
              "source_class",
              "source_ref",
              "source_hash",
              "review_ref",
              "extraction_method",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "VerificationPayload": Object {
            "additionalProperties": false,
            "description": "Fields a REVERIFY may restate.",
            "properties": Object {
              "confidence": Object {
                "description": "confidence 0-1",
                "maximum": 1,
                "minimum": 0,
                "type": "number",
              },
              "freshness_policy": Object {
                "$ref": "#/$defs/FreshnessPolicy",
              },
              "last_verified_at": Object {
                "default": null,
                "description": "when the fact was last verified (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_type": Object {
                "description": "kind of memory",
                "enum": Array [
                  "USER_FACT",
                  "PREFERENCE",
                  "WORKFLOW_RULE",
                  "PROJECT_LEARNED_FACT",
                  "DECISION_RATIONALE",
                  "TOOL_ENVIRONMENT_FACT",
                ],
                "type": "string",
              },
              "source_provenance": Object {
                "$ref": "#/$defs/SourceProvenance",
              },
              "source_timestamp": Object {
                "default": null,
                "description": "when the source was observed (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "subject": Object {
                "default": null,
                "description": "what question the fact answers, at most 96 bytes; give facts that answer the same question the same subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a \\"subject:\\" tag, else the fact)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "tags": Object {
                "description": "at most 12 tags, each at most 48 bytes",
                "items": Object {
                  "type": "string",
                },
                "maxItems": 12,
                "type": "array",
              },
              "verified_by": Object {
                "description": "verification basis; the write profile decides the stored value",
                "enum": Array [
                  "OWNER",
                  "CURRENT_REPO_CHECK",
                  "AUTOMATED_CHECK",
                  "UNVERIFIED",
                ],
                "type": "string",
              },
            },
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
        },
        "additionalProperties": false,
        "properties": Object {
          "request": Object {
            "$ref": "#/$defs/MemorySearchRequest",
          },
        },
        "required": Array [
          "request",
        ],
        "type": "object",
        "x-factlane-public-contract-revision": 2,
      },
      "name": "memory_search",
      "outputSchema": Object {
        "type": "object",
        "x-factlane-public-contract-revision": 2,
      },
    },
    Object {
      "annotations": Object {
        "openWorldHint": false,
        "readOnlyHint": true,
      },
      "description": "Read one memory by memory_id in one exact scope: its current record, or with REVIEW_HISTORY its history, the newest 8 records that fit the read budget (older ones are not returned).",
      "inputSchema": Object {
        "$defs": Object {
          "FreshnessPolicy": Object {
            "additionalProperties": false,
            "description": "When a fact stops being fresh.",
            "properties": Object {
              "kind": Object {
                "description": "when the fact goes stale",
                "enum": Array [
                  "never",
                  "ttl",
                  "on_change",
                  "manual",
                ],
                "type": "string",
              },
              "recheck_ref": Object {
                "default": null,
                "description": "what to re-check; at most 256 bytes; required for on_change",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "source_fingerprint": Object {
                "default": null,
                "description": "64 hex digits; for on_change equal to source_provenance.source_hash",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "ttl_seconds": Object {
                "default": null,
                "description": "required for ttl, forbidden otherwise",
                "maximum": 31536000,
                "minimum": 1,
                "type": Array [
                  "integer",
                  "null",
                ],
              },
            },
            "required": Array [
              "kind",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryGetRequest": Object {
            "additionalProperties": false,
            "description": "Read one memory by id.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_id": Object {
                "description": "memory UUID",
                "type": "string",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "retrieval_mode": Object {
                "default": "CURRENT",
                "description": "CURRENT: the current record; REVIEW_HISTORY: its records of any lifecycle, the newest 8 that fit the read budget, revision descending",
                "enum": Array [
                  "CURRENT",
                  "REVIEW_HISTORY",
                ],
                "type": "string",
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "memory_id",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemorySearchRequest": Object {
            "additionalProperties": false,
            "description": "Search supporting facts in one exact scope.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "intent_class": Object {
                "description": "why memory is asked; it does not filter or rank the facts. GENERAL_TASK_NO_MEMORY_REQUIRED answers NO_MEMORY_NEEDED without searching; HISTORICAL_QUESTION needs REVIEW_HISTORY; CROSS_PROJECT_WORKFLOW takes WORKFLOW_RULE (or HISTORICAL_QUESTION with REVIEW_HISTORY, or GENERAL_TASK_NO_MEMORY_REQUIRED) only",
                "enum": Array [
                  "CURRENT_PROJECT_STATE",
                  "GENERAL_TASK_NO_MEMORY_REQUIRED",
                  "HISTORICAL_QUESTION",
                  "PROJECT_DESIGN_RATIONALE",
                  "TOOL_ENVIRONMENT_STATE",
                  "USER_PREFERENCE_OR_DURABLE_FACT",
                  "WORKFLOW_RULE",
                ],
                "type": "string",
              },
              "max_bytes": Object {
                "default": 6000,
                "description": "byte budget of the results",
                "maximum": 8000,
                "minimum": 1,
                "type": "integer",
              },
              "max_memories": Object {
                "default": 5,
                "description": "most results returned; the byte and token budgets may cut the list further (budget.truncated, DEGRADED / BUDGET_EXCEEDED: a record is often 250-350 tokens)",
                "maximum": 8,
                "minimum": 1,
                "type": "integer",
              },
              "max_tokens": Object {
                "default": 1200,
                "description": "token budget of the results (o200k_base)",
                "maximum": 1600,
                "minimum": 1,
                "type": "integer",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "query": Object {
                "description": "what to look for; 1-512 bytes",
                "type": "string",
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "retrieval_mode": Object {
                "default": "CURRENT",
                "description": "CURRENT: validated fresh facts; REVIEW_HISTORY: past revisions and Candidates",
                "enum": Array [
                  "CURRENT",
                  "REVIEW_HISTORY",
                ],
                "type": "string",
              },
              "retrieval_mode_kind": Object {
                "default": "SEMANTIC",
                "description": "how to match: SEMANTIC ranks by the embedding profile's similarity (the built-in local-hash-384 compares words, not meaning: a fact sharing no word with the query still scores about 0.5); KEYWORD needs every query word in the fact (whole words, no stemming); HYBRID fuses SEMANTIC and KEYWORD; EXACT matches the whole normalised fact",
                "enum": Array [
                  "EXACT",
                  "KEYWORD",
                  "SEMANTIC",
                  "HYBRID",
                ],
                "type": "string",
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "top_k": Object {
                "default": 5,
                "description": "size of the candidate pool ranked per channel; it does not limit the results (max_memories and the budgets do)",
                "maximum": 8,
                "minimum": 1,
                "type": "integer",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "query",
              "intent_class",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryStatusRequest": Object {
            "additionalProperties": false,
            "description": "Report bounded health for one scope.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryStoreRequest": Object {
            "additionalProperties": false,
            "description": "Store one bounded, provenance-bearing fact.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "confidence": Object {
                "default": 0.5,
                "description": "confidence 0-1",
                "maximum": 1,
                "minimum": 0,
                "type": "number",
              },
              "fact": Object {
                "description": "the fact, collapsed; 1-2000 bytes; no secrets, transcripts or whole repositories",
                "type": "string",
              },
              "freshness_policy": Object {
                "$ref": "#/$defs/FreshnessPolicy",
              },
              "idempotency_key": Object {
                "description": "key of this write (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); retry the same write with the same key (it is answered as a replay of what it wrote), a new key only for a new write",
                "type": "string",
              },
              "last_verified_at": Object {
                "default": null,
                "description": "when the fact was verified (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z); required for a current record",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_type": Object {
                "description": "kind of memory",
                "enum": Array [
                  "USER_FACT",
                  "PREFERENCE",
                  "WORKFLOW_RULE",
                  "PROJECT_LEARNED_FACT",
                  "DECISION_RATIONALE",
                  "TOOL_ENVIRONMENT_FACT",
                ],
                "type": "string",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "requested_lifecycle_state": Object {
                "default": "CANDIDATE",
                "description": "CANDIDATE, or VALIDATED_CURRENT when the write profile allows",
                "enum": Array [
                  "CANDIDATE",
                  "VALIDATED_CURRENT",
                ],
                "type": "string",
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "source_provenance": Object {
                "$ref": "#/$defs/SourceProvenance",
              },
              "source_timestamp": Object {
                "default": null,
                "description": "when the source was observed (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z); required for a current record",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "subject": Object {
                "default": null,
                "description": "what question the fact answers, at most 96 bytes; give facts that answer the same question the same subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a \\"subject:\\" tag, else the fact)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "tags": Object {
                "default": Array [],
                "description": "at most 12 tags, each at most 48 bytes; duplicates dropped",
                "items": Object {
                  "type": "string",
                },
                "maxItems": 12,
                "type": "array",
              },
              "verified_by": Object {
                "default": "UNVERIFIED",
                "description": "verification basis; the write profile decides the stored value",
                "enum": Array [
                  "OWNER",
                  "CURRENT_REPO_CHECK",
                  "AUTOMATED_CHECK",
                  "UNVERIFIED",
                ],
                "type": "string",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "fact",
              "memory_type",
              "source_provenance",
              "freshness_policy",
              "idempotency_key",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryUpdateRequest": Object {
            "additionalProperties": false,
            "description": "Re-verify or replace a memory with expected_revision compare-and-swap.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "expected_record_id": Object {
                "default": null,
                "description": "the live record UUID; required to promote a Candidate",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "expected_revision": Object {
                "description": "the live record's revision (compare-and-swap)",
                "minimum": 1,
                "type": "integer",
              },
              "idempotency_key": Object {
                "description": "key of this write (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); retry the same write with the same key (it is answered as a replay of what it wrote), a new key only for a new write",
                "type": "string",
              },
              "memory_id": Object {
                "description": "memory UUID",
                "type": "string",
              },
              "mode": Object {
                "description": "REVERIFY keeps the memory (and promotes a Candidate); REPLACE starts a new memory",
                "enum": Array [
                  "REVERIFY",
                  "REPLACE",
                ],
                "type": "string",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "replacement": Object {
                "anyOf": Array [
                  Object {
                    "$ref": "#/$defs/ReplacementPayload",
                  },
                  Object {
                    "type": "null",
                  },
                ],
                "default": null,
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "verification": Object {
                "anyOf": Array [
                  Object {
                    "$ref": "#/$defs/VerificationPayload",
                  },
                  Object {
                    "type": "null",
                  },
                ],
                "default": null,
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "memory_id",
              "expected_revision",
              "mode",
              "idempotency_key",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "ReplacementPayload": Object {
            "additionalProperties": false,
            "description": "The replacing record of a REPLACE: fact, source_provenance, freshness_policy and source_timestamp are required there (INVALID_ENVELOPE lists the missing ones).",
            "properties": Object {
              "confidence": Object {
                "description": "confidence 0-1",
                "maximum": 1,
                "minimum": 0,
                "type": "number",
              },
              "fact": Object {
                "description": "the replacing fact; 1-2000 bytes",
                "type": "string",
              },
              "freshness_policy": Object {
                "$ref": "#/$defs/FreshnessPolicy",
              },
              "last_verified_at": Object {
                "default": null,
                "description": "when the fact was last verified (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_type": Object {
                "description": "kind of memory",
                "enum": Array [
                  "USER_FACT",
                  "PREFERENCE",
                  "WORKFLOW_RULE",
                  "PROJECT_LEARNED_FACT",
                  "DECISION_RATIONALE",
                  "TOOL_ENVIRONMENT_FACT",
                ],
                "type": "string",
              },
              "source_provenance": Object {
                "$ref": "#/$defs/SourceProvenance",
              },
              "source_timestamp": Object {
                "default": null,
                "description": "when the source was observed (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "subject": Object {
                "default": null,
                "description": "what question the fact answers, at most 96 bytes; give facts that answer the same question the same subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a \\"subject:\\" tag, else the fact)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "tags": Object {
                "description": "at most 12 tags, each at most 48 bytes",
                "items": Object {
                  "type": "string",
                },
                "maxItems": 12,
                "type": "array",
              },
              "verified_by": Object {
                "description": "verification basis; the write profile decides the stored value",
                "enum": Array [
                  "OWNER",
                  "CURRENT_REPO_CHECK",
                  "AUTOMATED_CHECK",
                  "UNVERIFIED",
                ],
                "type": "string",
              },
            },
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "SourceProvenance": Object {
            "additionalProperties": false,
            "description": "Where a fact comes from.",
            "properties": Object {
              "extraction_method": Object {
                "description": "how the fact was extracted; 1-96 bytes",
                "type": "string",
              },
              "review_ref": Object {
                "description": "review reference; 1-256 bytes",
                "type": "string",
              },
              "source_class": Object {
                "description": "kind of source; 1-96 bytes",
                "type": "string",
              },
              "source_fingerprint": Object {
                "default": null,
                "description": "64 hex digits",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "source_hash": Object {
                "description": "SHA-256 of the source, 64 hex digits",
                "type": "string",
              },
              "source_ref": Object {
                "description": "where the source is; 1-256 bytes",
                "type": "string",
              },
            },
            "required": Array [
              "source_class",
              "source_ref",
              "source_hash",
              "review_ref",
              "extraction_method",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "VerificationPayload": Object {
            "additionalProperties": false,
            "description": "Fields a REVERIFY may restate.",
            "properties": Object {
              "confidence": Object {
                "description": "confidence 0-1",
                "maximum": 1,
                "minimum": 0,
                "type": "number",
              },
              "freshness_policy": Object {
                "$ref": "#/$defs/FreshnessPolicy",
              },
              "last_verified_at": Object {
                "default": null,
                "description": "when the fact was last verified (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_type": Object {
                "description": "kind of memory",
                "enum": Array [
                  "USER_FACT",
                  "PREFERENCE",
                  "WORKFLOW_RULE",
                  "PROJECT_LEARNED_FACT",
                  "DECISION_RATIONALE",
                  "TOOL_ENVIRONMENT_FACT",
                ],
                "type": "string",
              },
              "source_provenance": Object {
                "$ref": "#/$defs/SourceProvenance",
              },
              "source_timestamp": Object {
                "default": null,
                "description": "when the source was observed (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "subject": Object {
                "default": null,
                "description": "what question the fact answers, at most 96 bytes; give facts that answer the same question the same subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a \\"subject:\\" tag, else the fact)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "tags": Object {
                "description": "at most 12 tags, each at most 48 bytes",
                "items": Object {
                  "type": "string",
                },
                "maxItems": 12,
                "type": "array",
              },
              "verified_by": Object {
                "description": "verification basis; the write profile decides the stored value",
                "enum": Array [
                  "OWNER",
                  "CURRENT_REPO_CHECK",
                  "AUTOMATED_CHECK",
                  "UNVERIFIED",
                ],
                "type": "string",
              },
            },
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
        },
        "additionalProperties": false,
        "properties": Object {
          "request": Object {
            "$ref": "#/$defs/MemoryGetRequest",
          },
        },
        "required": Array [
          "request",
        ],
        "type": "object",
        "x-factlane-public-contract-revision": 2,
      },
      "name": "memory_get",
      "outputSchema": Object {
        "type": "object",
        "x-factlane-public-contract-revision": 2,
      },
    },
    Object {
      "annotations": Object {
        "idempotentHint": true,
        "readOnlyHint": false,
      },
      "description": "Store one bounded, provenance-bearing fact if the launcher's write profile allows it. Delegated agents submit Candidates only; verifiers may store current facts. A Candidate is not returned by CURRENT search or get until it is promoted (memory_update REVERIFY by a verifier or the owner); REVIEW_HISTORY shows it. DUPLICATE returns the record that already holds this fact (a Candidate is promoted, not stored again). CONTRADICTION means a current fact of the scope answers the same subject differently: this fact is kept as a Candidate that is never promoted, and a verifier or the owner makes it current with memory_update REPLACE of that current memory. memory_status names this server's write profile (launcher.write_profile).",
      "inputSchema": Object {
        "$defs": Object {
          "FreshnessPolicy": Object {
            "additionalProperties": false,
            "description": "When a fact stops being fresh.",
            "properties": Object {
              "kind": Object {
                "description": "when the fact goes stale",
                "enum": Array [
                  "never",
                  "ttl",
                  "on_change",
                  "manual",
                ],
                "type": "string",
              },
              "recheck_ref": Object {
                "default": null,
                "description": "what to re-check; at most 256 bytes; required for on_change",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "source_fingerprint": Object {
                "default": null,
                "description": "64 hex digits; for on_change equal to source_provenance.source_hash",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "ttl_seconds": Object {
                "default": null,
                "description": "required for ttl, forbidden otherwise",
                "maximum": 31536000,
                "minimum": 1,
                "type": Array [
                  "integer",
                  "null",
                ],
              },
            },
            "required": Array [
              "kind",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryGetRequest": Object {
            "additionalProperties": false,
            "description": "Read one memory by id.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_id": Object {
                "description": "memory UUID",
                "type": "string",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "retrieval_mode": Object {
                "default": "CURRENT",
                "description": "CURRENT: the current record; REVIEW_HISTORY: its records of any lifecycle, the newest 8 that fit the read budget, revision descending",
                "enum": Array [
                  "CURRENT",
                  "REVIEW_HISTORY",
                ],
                "type": "string",
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "memory_id",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemorySearchRequest": Object {
            "additionalProperties": false,
            "description": "Search supporting facts in one exact scope.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "intent_class": Object {
                "description": "why memory is asked; it does not filter or rank the facts. GENERAL_TASK_NO_MEMORY_REQUIRED answers NO_MEMORY_NEEDED without searching; HISTORICAL_QUESTION needs REVIEW_HISTORY; CROSS_PROJECT_WORKFLOW takes WORKFLOW_RULE (or HISTORICAL_QUESTION with REVIEW_HISTORY, or GENERAL_TASK_NO_MEMORY_REQUIRED) only",
                "enum": Array [
                  "CURRENT_PROJECT_STATE",
                  "GENERAL_TASK_NO_MEMORY_REQUIRED",
                  "HISTORICAL_QUESTION",
                  "PROJECT_DESIGN_RATIONALE",
                  "TOOL_ENVIRONMENT_STATE",
                  "USER_PREFERENCE_OR_DURABLE_FACT",
                  "WORKFLOW_RULE",
                ],
                "type": "string",
              },
              "max_bytes": Object {
                "default": 6000,
                "description": "byte budget of the results",
                "maximum": 8000,
                "minimum": 1,
                "type": "integer",
              },
              "max_memories": Object {
                "default": 5,
                "description": "most results returned; the byte and token budgets may cut the list further (budget.truncated, DEGRADED / BUDGET_EXCEEDED: a record is often 250-350 tokens)",
                "maximum": 8,
                "minimum": 1,
                "type": "integer",
              },
              "max_tokens": Object {
                "default": 1200,
                "description": "token budget of the results (o200k_base)",
                "maximum": 1600,
                "minimum": 1,
                "type": "integer",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "query": Object {
                "description": "what to look for; 1-512 bytes",
                "type": "string",
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "retrieval_mode": Object {
                "default": "CURRENT",
                "description": "CURRENT: validated fresh facts; REVIEW_HISTORY: past revisions and Candidates",
                "enum": Array [
                  "CURRENT",
                  "REVIEW_HISTORY",
                ],
                "type": "string",
              },
              "retrieval_mode_kind": Object {
                "default": "SEMANTIC",
                "description": "how to match: SEMANTIC ranks by the embedding profile's similarity (the built-in local-hash-384 compares words, not meaning: a fact sharing no word with the query still scores about 0.5); KEYWORD needs every query word in the fact (whole words, no stemming); HYBRID fuses SEMANTIC and KEYWORD; EXACT matches the whole normalised fact",
                "enum": Array [
                  "EXACT",
                  "KEYWORD",
                  "SEMANTIC",
                  "HYBRID",
                ],
                "type": "string",
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "top_k": Object {
                "default": 5,
                "description": "size of the candidate pool ranked per channel; it does not limit the results (max_memories and the budgets do)",
                "maximum": 8,
                "minimum": 1,
                "type": "integer",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "query",
              "intent_class",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryStatusRequest": Object {
            "additionalProperties": false,
            "description": "Report bounded health for one scope.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryStoreRequest": Object {
            "additionalProperties": false,
            "description": "Store one bounded, provenance-bearing fact.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "confidence": Object {
                "default": 0.5,
                "description": "confidence 0-1",
                "maximum": 1,
                "minimum": 0,
                "type": "number",
              },
              "fact": Object {
                "description": "the fact, collapsed; 1-2000 bytes; no secrets, transcripts or whole repositories",
                "type": "string",
              },
              "freshness_policy": Object {
                "$ref": "#/$defs/FreshnessPolicy",
              },
              "idempotency_key": Object {
                "description": "key of this write (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); retry the same write with the same key (it is answered as a replay of what it wrote), a new key only for a new write",
                "type": "string",
              },
              "last_verified_at": Object {
                "default": null,
                "description": "when the fact was verified (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z); required for a current record",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_type": Object {
                "description": "kind of memory",
                "enum": Array [
                  "USER_FACT",
                  "PREFERENCE",
                  "WORKFLOW_RULE",
                  "PROJECT_LEARNED_FACT",
                  "DECISION_RATIONALE",
                  "TOOL_ENVIRONMENT_FACT",
                ],
                "type": "string",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "requested_lifecycle_state": Object {
                "default": "CANDIDATE",
                "description": "CANDIDATE, or VALIDATED_CURRENT when the write profile allows",
                "enum": Array [
                  "CANDIDATE",
                  "VALIDATED_CURRENT",
                ],
                "type": "string",
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "source_provenance": Object {
                "$ref": "#/$defs/SourceProvenance",
              },
              "source_timestamp": Object {
                "default": null,
                "description": "when the source was observed (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z); required for a current record",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "subject": Object {
                "default": null,
                "description": "what question the fact answers, at most 96 bytes; give facts that answer the same question the same subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a \\"subject:\\" tag, else the fact)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "tags": Object {
                "default": Array [],
                "description": "at most 12 tags, each at most 48 bytes; duplicates dropped",
                "items": Object {
                  "type": "string",
                },
                "maxItems": 12,
                "type": "array",
              },
              "verified_by": Object {
                "default": "UNVERIFIED",
                "description": "verification basis; the write profile decides the stored value",
                "enum": Array [
                  "OWNER",
                  "CURRENT_REPO_CHECK",
                  "AUTOMATED_CHECK",
                  "UNVERIFIED",
                ],
                "type": "string",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "fact",
              "memory_type",
              "source_provenance",
              "freshness_policy",
              "idempotency_key",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryUpdateRequest": Object {
            "additionalProperties": false,
            "description": "Re-verify or replace a memory with expected_revision compare-and-swap.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "expected_record_id": Object {
                "default": null,
                "description": "the live record UUID; required to promote a Candidate",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "expected_revision": Object {
                "description": "the live record's revision (compare-and-swap)",
                "minimum": 1,
                "type": "integer",
              },
              "idempotency_key": Object {
                "description": "key of this write (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); retry the same write with the same key (it is answered as a replay of what it wrote), a new key only for a new write",
                "type": "string",
              },
              "memory_id": Object {
                "description": "memory UUID",
                "type": "string",
              },
              "mode": Object {
                "description": "REVERIFY keeps the memory (and promotes a Candidate); REPLACE starts a new memory",
                "enum": Array [
                  "REVERIFY",
                  "REPLACE",
                ],
                "type": "string",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "replacement": Object {
                "anyOf": Array [
                  Object {
                    "$ref": "#/$defs/ReplacementPayload",
                  },
                  Object {
                    "type": "null",
                  },
                ],
                "default": null,
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "verification": Object {
                "anyOf": Array [
                  Object {
                    "$ref": "#/$defs/VerificationPayload",
                  },
                  Object {
                    "type": "null",
                  },
                ],
                "default": null,
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "memory_id",
              "expected_revision",
              "mode",
              "idempotency_key",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "ReplacementPayload": Object {
            "additionalProperties": false,
            "description": "The replacing record of a REPLACE: fact, source_provenance, freshness_policy and source_timestamp are required there (INVALID_ENVELOPE lists the missing ones).",
            "properties": Object {
              "confidence": Object {
                "description": "confidence 0-1",
                "maximum": 1,
                "minimum": 0,
                "type": "number",
              },
              "fact": Object {
                "description": "the replacing fact; 1-2000 bytes",
                "type": "string",
              },
              "freshness_policy": Object {
                "$ref": "#/$defs/FreshnessPolicy",
              },
              "last_verified_at": Object {
                "default": null,
                "description": "when the fact was last verified (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_type": Object {
                "description": "kind of memory",
                "enum": Array [
                  "USER_FACT",
                  "PREFERENCE",
                  "WORKFLOW_RULE",
                  "PROJECT_LEARNED_FACT",
                  "DECISION_RATIONALE",
                  "TOOL_ENVIRONMENT_FACT",
                ],
                "type": "string",
              },
              "source_provenance": Object {
                "$ref": "#/$defs/SourceProvenance",
              },
              "source_timestamp": Object {
                "default": null,
                "description": "when the source was observed (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "subject": Object {
                "default": null,
                "description": "what question the fact answers, at most 96 bytes; give facts that answer the same question the same subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a \\"subject:\\" tag, else the fact)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "tags": Object {
                "description": "at most 12 tags, each at most 48 bytes",
                "items": Object {
                  "type": "string",
                },
                "maxItems": 12,
                "type": "array",
              },
              "verified_by": Object {
                "description": "verification basis; the write profile decides the stored value",
                "enum": Array [
                  "OWNER",
                  "CURRENT_REPO_CHECK",
                  "AUTOMATED_CHECK",
                  "UNVERIFIED",
                ],
                "type": "string",
              },
            },
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "SourceProvenance": Object {
            "additionalProperties": false,
            "description": "Where a fact comes from.",
            "properties": Object {
              "extraction_method": Object {
                "description": "how the fact was extracted; 1-96 bytes",
                "type": "string",
              },
              "review_ref": Object {
                "description": "review reference; 1-256 bytes",
                "type": "string",
              },
              "source_class": Object {
                "description": "kind of source; 1-96 bytes",
                "type": "string",
              },
              "source_fingerprint": Object {
                "default": null,
                "description": "64 hex digits",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "source_hash": Object {
                "description": "SHA-256 of the source, 64 hex digits",
                "type": "string",
              },
              "source_ref": Object {
                "description": "where the source is; 1-256 bytes",
                "type": "string",
              },
            },
            "required": Array [
              "source_class",
              "source_ref",
              "source_hash",
              "review_ref",
              "extraction_method",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "VerificationPayload": Object {
            "additionalProperties": false,
            "description": "Fields a REVERIFY may restate.",
            "properties": Object {
              "confidence": Object {
                "description": "confidence 0-1",
                "maximum": 1,
                "minimum": 0,
                "type": "number",
              },
              "freshness_policy": Object {
                "$ref": "#/$defs/FreshnessPolicy",
              },
              "last_verified_at": Object {
                "default": null,
                "description": "when the fact was last verified (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_type": Object {
                "description": "kind of memory",
                "enum": Array [
                  "USER_FACT",
                  "PREFERENCE",
                  "WORKFLOW_RULE",
                  "PROJECT_LEARNED_FACT",
                  "DECISION_RATIONALE",
                  "TOOL_ENVIRONMENT_FACT",
                ],
                "type": "string",
              },
              "source_provenance": Object {
                "$ref": "#/$defs/SourceProvenance",
              },
              "source_timestamp": Object {
                "default": null,
                "description": "when the source was observed (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "subject": Object {
                "default": null,
                "description": "what question the fact answers, at most 96 bytes; give facts that answer the same question the same subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a \\"subject:\\" tag, else the fact)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "tags": Object {
                "description": "at most 12 tags, each at most 48 bytes",
                "items": Object {
                  "type": "string",
                },
                "maxItems": 12,
                "type": "array",
              },
              "verified_by": Object {
                "description": "verification basis; the write profile decides the stored value",
                "enum": Array [
                  "OWNER",
                  "CURRENT_REPO_CHECK",
                  "AUTOMATED_CHECK",
                  "UNVERIFIED",
                ],
                "type": "string",
              },
            },
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
        },
        "additionalProperties": false,
        "properties": Object {
          "request": Object {
            "$ref": "#/$defs/MemoryStoreRequest",
          },
        },
        "required": Array [
          "request",
        ],
        "type": "object",
        "x-factlane-public-contract-revision": 2,
      },
      "name": "memory_store",
      "outputSchema": Object {
        "type": "object",
        "x-factlane-public-contract-revision": 2,
      },
    },
    Object {
      "annotations": Object {
        "idempotentHint": true,
        "readOnlyHint": false,
      },
      "description": "Re-verify (REVERIFY) or replace (REPLACE) a memory, with expected_revision compare-and-swap. Only a verifier or owner write profile updates, and the successor is current, verified by that profile. REVERIFY keeps the memory (revision + 1) and also promotes a Candidate (needs expected_record_id, and verification.source_timestamp when the Candidate has none). REPLACE starts a new current memory that supersedes a current one (not a Candidate); replacement states fact, source_provenance, freshness_policy and source_timestamp. On VERSION_CONFLICT, read the memory with memory_get REVIEW_HISTORY and retry.",
      "inputSchema": Object {
        "$defs": Object {
          "FreshnessPolicy": Object {
            "additionalProperties": false,
            "description": "When a fact stops being fresh.",
            "properties": Object {
              "kind": Object {
                "description": "when the fact goes stale",
                "enum": Array [
                  "never",
                  "ttl",
                  "on_change",
                  "manual",
                ],
                "type": "string",
              },
              "recheck_ref": Object {
                "default": null,
                "description": "what to re-check; at most 256 bytes; required for on_change",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "source_fingerprint": Object {
                "default": null,
                "description": "64 hex digits; for on_change equal to source_provenance.source_hash",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "ttl_seconds": Object {
                "default": null,
                "description": "required for ttl, forbidden otherwise",
                "maximum": 31536000,
                "minimum": 1,
                "type": Array [
                  "integer",
                  "null",
                ],
              },
            },
            "required": Array [
              "kind",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryGetRequest": Object {
            "additionalProperties": false,
            "description": "Read one memory by id.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_id": Object {
                "description": "memory UUID",
                "type": "string",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "retrieval_mode": Object {
                "default": "CURRENT",
                "description": "CURRENT: the current record; REVIEW_HISTORY: its records of any lifecycle, the newest 8 that fit the read budget, revision descending",
                "enum": Array [
                  "CURRENT",
                  "REVIEW_HISTORY",
                ],
                "type": "string",
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "memory_id",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemorySearchRequest": Object {
            "additionalProperties": false,
            "description": "Search supporting facts in one exact scope.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "intent_class": Object {
                "description": "why memory is asked; it does not filter or rank the facts. GENERAL_TASK_NO_MEMORY_REQUIRED answers NO_MEMORY_NEEDED without searching; HISTORICAL_QUESTION needs REVIEW_HISTORY; CROSS_PROJECT_WORKFLOW takes WORKFLOW_RULE (or HISTORICAL_QUESTION with REVIEW_HISTORY, or GENERAL_TASK_NO_MEMORY_REQUIRED) only",
                "enum": Array [
                  "CURRENT_PROJECT_STATE",
                  "GENERAL_TASK_NO_MEMORY_REQUIRED",
                  "HISTORICAL_QUESTION",
                  "PROJECT_DESIGN_RATIONALE",
                  "TOOL_ENVIRONMENT_STATE",
                  "USER_PREFERENCE_OR_DURABLE_FACT",
                  "WORKFLOW_RULE",
                ],
                "type": "string",
              },
              "max_bytes": Object {
                "default": 6000,
                "description": "byte budget of the results",
                "maximum": 8000,
                "minimum": 1,
                "type": "integer",
              },
              "max_memories": Object {
                "default": 5,
                "description": "most results returned; the byte and token budgets may cut the list further (budget.truncated, DEGRADED / BUDGET_EXCEEDED: a record is often 250-350 tokens)",
                "maximum": 8,
                "minimum": 1,
                "type": "integer",
              },
              "max_tokens": Object {
                "default": 1200,
                "description": "token budget of the results (o200k_base)",
                "maximum": 1600,
                "minimum": 1,
                "type": "integer",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "query": Object {
                "description": "what to look for; 1-512 bytes",
                "type": "string",
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "retrieval_mode": Object {
                "default": "CURRENT",
                "description": "CURRENT: validated fresh facts; REVIEW_HISTORY: past revisions and Candidates",
                "enum": Array [
                  "CURRENT",
                  "REVIEW_HISTORY",
                ],
                "type": "string",
              },
              "retrieval_mode_kind": Object {
                "default": "SEMANTIC",
                "description": "how to match: SEMANTIC ranks by the embedding profile's similarity (the built-in local-hash-384 compares words, not meaning: a fact sharing no word with the query still scores about 0.5); KEYWORD needs every query word in the fact (whole words, no stemming); HYBRID fuses SEMANTIC and KEYWORD; EXACT matches the whole normalised fact",
                "enum": Array [
                  "EXACT",
                  "KEYWORD",
                  "SEMANTIC",
                  "HYBRID",
                ],
                "type": "string",
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "top_k": Object {
                "default": 5,
                "description": "size of the candidate pool ranked per channel; it does not limit the results (max_memories and the budgets do)",
                "maximum": 8,
                "minimum": 1,
                "type": "integer",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "query",
              "intent_class",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryStatusRequest": Object {
            "additionalProperties": false,
            "description": "Report bounded health for one scope.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryStoreRequest": Object {
            "additionalProperties": false,
            "description": "Store one bounded, provenance-bearing fact.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "confidence": Object {
                "default": 0.5,
                "description": "confidence 0-1",
                "maximum": 1,
                "minimum": 0,
                "type": "number",
              },
              "fact": Object {
                "description": "the fact, collapsed; 1-2000 bytes; no secrets, transcripts or whole repositories",
                "type": "string",
              },
              "freshness_policy": Object {
                "$ref": "#/$defs/FreshnessPolicy",
              },
              "idempotency_key": Object {
                "description": "key of this write (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); retry the same write with the same key (it is answered as a replay of what it wrote), a new key only for a new write",
                "type": "string",
              },
              "last_verified_at": Object {
                "default": null,
                "description": "when the fact was verified (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z); required for a current record",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_type": Object {
                "description": "kind of memory",
                "enum": Array [
                  "USER_FACT",
                  "PREFERENCE",
                  "WORKFLOW_RULE",
                  "PROJECT_LEARNED_FACT",
                  "DECISION_RATIONALE",
                  "TOOL_ENVIRONMENT_FACT",
                ],
                "type": "string",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "requested_lifecycle_state": Object {
                "default": "CANDIDATE",
                "description": "CANDIDATE, or VALIDATED_CURRENT when the write profile allows",
                "enum": Array [
                  "CANDIDATE",
                  "VALIDATED_CURRENT",
                ],
                "type": "string",
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "source_provenance": Object {
                "$ref": "#/$defs/SourceProvenance",
              },
              "source_timestamp": Object {
                "default": null,
                "description": "when the source was observed (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z); required for a current record",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "subject": Object {
                "default": null,
                "description": "what question the fact answers, at most 96 bytes; give facts that answer the same question the same subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a \\"subject:\\" tag, else the fact)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "tags": Object {
                "default": Array [],
                "description": "at most 12 tags, each at most 48 bytes; duplicates dropped",
                "items": Object {
                  "type": "string",
                },
                "maxItems": 12,
                "type": "array",
              },
              "verified_by": Object {
                "default": "UNVERIFIED",
                "description": "verification basis; the write profile decides the stored value",
                "enum": Array [
                  "OWNER",
                  "CURRENT_REPO_CHECK",
                  "AUTOMATED_CHECK",
                  "UNVERIFIED",
                ],
                "type": "string",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "fact",
              "memory_type",
              "source_provenance",
              "freshness_policy",
              "idempotency_key",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryUpdateRequest": Object {
            "additionalProperties": false,
            "description": "Re-verify or replace a memory with expected_revision compare-and-swap.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "expected_record_id": Object {
                "default": null,
                "description": "the live record UUID; required to promote a Candidate",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "expected_revision": Object {
                "description": "the live record's revision (compare-and-swap)",
                "minimum": 1,
                "type": "integer",
              },
              "idempotency_key": Object {
                "description": "key of this write (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); retry the same write with the same key (it is answered as a replay of what it wrote), a new key only for a new write",
                "type": "string",
              },
              "memory_id": Object {
                "description": "memory UUID",
                "type": "string",
              },
              "mode": Object {
                "description": "REVERIFY keeps the memory (and promotes a Candidate); REPLACE starts a new memory",
                "enum": Array [
                  "REVERIFY",
                  "REPLACE",
                ],
                "type": "string",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "replacement": Object {
                "anyOf": Array [
                  Object {
                    "$ref": "#/$defs/ReplacementPayload",
                  },
                  Object {
                    "type": "null",
                  },
                ],
                "default": null,
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "verification": Object {
                "anyOf": Array [
                  Object {
                    "$ref": "#/$defs/VerificationPayload",
                  },
                  Object {
                    "type": "null",
                  },
                ],
                "default": null,
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "memory_id",
              "expected_revision",
              "mode",
              "idempotency_key",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "ReplacementPayload": Object {
            "additionalProperties": false,
            "description": "The replacing record of a REPLACE: fact, source_provenance, freshness_policy and source_timestamp are required there (INVALID_ENVELOPE lists the missing ones).",
            "properties": Object {
              "confidence": Object {
                "description": "confidence 0-1",
                "maximum": 1,
                "minimum": 0,
                "type": "number",
              },
              "fact": Object {
                "description": "the replacing fact; 1-2000 bytes",
                "type": "string",
              },
              "freshness_policy": Object {
                "$ref": "#/$defs/FreshnessPolicy",
              },
              "last_verified_at": Object {
                "default": null,
                "description": "when the fact was last verified (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_type": Object {
                "description": "kind of memory",
                "enum": Array [
                  "USER_FACT",
                  "PREFERENCE",
                  "WORKFLOW_RULE",
                  "PROJECT_LEARNED_FACT",
                  "DECISION_RATIONALE",
                  "TOOL_ENVIRONMENT_FACT",
                ],
                "type": "string",
              },
              "source_provenance": Object {
                "$ref": "#/$defs/SourceProvenance",
              },
              "source_timestamp": Object {
                "default": null,
                "description": "when the source was observed (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "subject": Object {
                "default": null,
                "description": "what question the fact answers, at most 96 bytes; give facts that answer the same question the same subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a \\"subject:\\" tag, else the fact)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "tags": Object {
                "description": "at most 12 tags, each at most 48 bytes",
                "items": Object {
                  "type": "string",
                },
                "maxItems": 12,
                "type": "array",
              },
              "verified_by": Object {
                "description": "verification basis; the write profile decides the stored value",
                "enum": Array [
                  "OWNER",
                  "CURRENT_REPO_CHECK",
                  "AUTOMATED_CHECK",
                  "UNVERIFIED",
                ],
                "type": "string",
              },
            },
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "SourceProvenance": Object {
            "additionalProperties": false,
            "description": "Where a fact comes from.",
            "properties": Object {
              "extraction_method": Object {
                "description": "how the fact was extracted; 1-96 bytes",
                "type": "string",
              },
              "review_ref": Object {
                "description": "review reference; 1-256 bytes",
                "type": "string",
              },
              "source_class": Object {
                "description": "kind of source; 1-96 bytes",
                "type": "string",
              },
              "source_fingerprint": Object {
                "default": null,
                "description": "64 hex digits",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "source_hash": Object {
                "description": "SHA-256 of the source, 64 hex digits",
                "type": "string",
              },
              "source_ref": Object {
                "description": "where the source is; 1-256 bytes",
                "type": "string",
              },
            },
            "required": Array [
              "source_class",
              "source_ref",
              "source_hash",
              "review_ref",
              "extraction_method",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "VerificationPayload": Object {
            "additionalProperties": false,
            "description": "Fields a REVERIFY may restate.",
            "properties": Object {
              "confidence": Object {
                "description": "confidence 0-1",
                "maximum": 1,
                "minimum": 0,
                "type": "number",
              },
              "freshness_policy": Object {
                "$ref": "#/$defs/FreshnessPolicy",
              },
              "last_verified_at": Object {
                "default": null,
                "description": "when the fact was last verified (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_type": Object {
                "description": "kind of memory",
                "enum": Array [
                  "USER_FACT",
                  "PREFERENCE",
                  "WORKFLOW_RULE",
                  "PROJECT_LEARNED_FACT",
                  "DECISION_RATIONALE",
                  "TOOL_ENVIRONMENT_FACT",
                ],
                "type": "string",
              },
              "source_provenance": Object {
                "$ref": "#/$defs/SourceProvenance",
              },
              "source_timestamp": Object {
                "default": null,
                "description": "when the source was observed (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "subject": Object {
                "default": null,
                "description": "what question the fact answers, at most 96 bytes; give facts that answer the same question the same subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a \\"subject:\\" tag, else the fact)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "tags": Object {
                "description": "at most 12 tags, each at most 48 bytes",
                "items": Object {
                  "type": "string",
                },
                "maxItems": 12,
                "type": "array",
              },
              "verified_by": Object {
                "description": "verification basis; the write profile decides the stored value",
                "enum": Array [
                  "OWNER",
                  "CURRENT_REPO_CHECK",
                  "AUTOMATED_CHECK",
                  "UNVERIFIED",
                ],
                "type": "string",
              },
            },
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
        },
        "additionalProperties": false,
        "properties": Object {
          "request": Object {
            "$ref": "#/$defs/MemoryUpdateRequest",
          },
        },
        "required": Array [
          "request",
        ],
        "type": "object",
        "x-factlane-public-contract-revision": 2,
      },
      "name": "memory_update",
      "outputSchema": Object {
        "type": "object",
        "x-factlane-public-contract-revision": 2,
      },
    },
    Object {
      "annotations": Object {
        "openWorldHint": false,
        "readOnlyHint": true,
      },
      "description": "Report bounded health for one scope: lifecycle counts, retention and capacity observations, embedding profile and provider status.",
      "inputSchema": Object {
        "$defs": Object {
          "FreshnessPolicy": Object {
            "additionalProperties": false,
            "description": "When a fact stops being fresh.",
            "properties": Object {
              "kind": Object {
                "description": "when the fact goes stale",
                "enum": Array [
                  "never",
                  "ttl",
                  "on_change",
                  "manual",
                ],
                "type": "string",
              },
              "recheck_ref": Object {
                "default": null,
                "description": "what to re-check; at most 256 bytes; required for on_change",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "source_fingerprint": Object {
                "default": null,
                "description": "64 hex digits; for on_change equal to source_provenance.source_hash",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "ttl_seconds": Object {
                "default": null,
                "description": "required for ttl, forbidden otherwise",
                "maximum": 31536000,
                "minimum": 1,
                "type": Array [
                  "integer",
                  "null",
                ],
              },
            },
            "required": Array [
              "kind",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryGetRequest": Object {
            "additionalProperties": false,
            "description": "Read one memory by id.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_id": Object {
                "description": "memory UUID",
                "type": "string",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "retrieval_mode": Object {
                "default": "CURRENT",
                "description": "CURRENT: the current record; REVIEW_HISTORY: its records of any lifecycle, the newest 8 that fit the read budget, revision descending",
                "enum": Array [
                  "CURRENT",
                  "REVIEW_HISTORY",
                ],
                "type": "string",
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "memory_id",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemorySearchRequest": Object {
            "additionalProperties": false,
            "description": "Search supporting facts in one exact scope.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "intent_class": Object {
                "description": "why memory is asked; it does not filter or rank the facts. GENERAL_TASK_NO_MEMORY_REQUIRED answers NO_MEMORY_NEEDED without searching; HISTORICAL_QUESTION needs REVIEW_HISTORY; CROSS_PROJECT_WORKFLOW takes WORKFLOW_RULE (or HISTORICAL_QUESTION with REVIEW_HISTORY, or GENERAL_TASK_NO_MEMORY_REQUIRED) only",
                "enum": Array [
                  "CURRENT_PROJECT_STATE",
                  "GENERAL_TASK_NO_MEMORY_REQUIRED",
                  "HISTORICAL_QUESTION",
                  "PROJECT_DESIGN_RATIONALE",
                  "TOOL_ENVIRONMENT_STATE",
                  "USER_PREFERENCE_OR_DURABLE_FACT",
                  "WORKFLOW_RULE",
                ],
                "type": "string",
              },
              "max_bytes": Object {
                "default": 6000,
                "description": "byte budget of the results",
                "maximum": 8000,
                "minimum": 1,
                "type": "integer",
              },
              "max_memories": Object {
                "default": 5,
                "description": "most results returned; the byte and token budgets may cut the list further (budget.truncated, DEGRADED / BUDGET_EXCEEDED: a record is often 250-350 tokens)",
                "maximum": 8,
                "minimum": 1,
                "type": "integer",
              },
              "max_tokens": Object {
                "default": 1200,
                "description": "token budget of the results (o200k_base)",
                "maximum": 1600,
                "minimum": 1,
                "type": "integer",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "query": Object {
                "description": "what to look for; 1-512 bytes",
                "type": "string",
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "retrieval_mode": Object {
                "default": "CURRENT",
                "description": "CURRENT: validated fresh facts; REVIEW_HISTORY: past revisions and Candidates",
                "enum": Array [
                  "CURRENT",
                  "REVIEW_HISTORY",
                ],
                "type": "string",
              },
              "retrieval_mode_kind": Object {
                "default": "SEMANTIC",
                "description": "how to match: SEMANTIC ranks by the embedding profile's similarity (the built-in local-hash-384 compares words, not meaning: a fact sharing no word with the query still scores about 0.5); KEYWORD needs every query word in the fact (whole words, no stemming); HYBRID fuses SEMANTIC and KEYWORD; EXACT matches the whole normalised fact",
                "enum": Array [
                  "EXACT",
                  "KEYWORD",
                  "SEMANTIC",
                  "HYBRID",
                ],
                "type": "string",
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "top_k": Object {
                "default": 5,
                "description": "size of the candidate pool ranked per channel; it does not limit the results (max_memories and the budgets do)",
                "maximum": 8,
                "minimum": 1,
                "type": "integer",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "query",
              "intent_class",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryStatusRequest": Object {
            "additionalProperties": false,
            "description": "Report bounded health for one scope.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryStoreRequest": Object {
            "additionalProperties": false,
            "description": "Store one bounded, provenance-bearing fact.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "confidence": Object {
                "default": 0.5,
                "description": "confidence 0-1",
                "maximum": 1,
                "minimum": 0,
                "type": "number",
              },
              "fact": Object {
                "description": "the fact, collapsed; 1-2000 bytes; no secrets, transcripts or whole repositories",
                "type": "string",
              },
              "freshness_policy": Object {
                "$ref": "#/$defs/FreshnessPolicy",
              },
              "idempotency_key": Object {
                "description": "key of this write (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); retry the same write with the same key (it is answered as a replay of what it wrote), a new key only for a new write",
                "type": "string",
              },
              "last_verified_at": Object {
                "default": null,
                "description": "when the fact was verified (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z); required for a current record",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_type": Object {
                "description": "kind of memory",
                "enum": Array [
                  "USER_FACT",
                  "PREFERENCE",
                  "WORKFLOW_RULE",
                  "PROJECT_LEARNED_FACT",
                  "DECISION_RATIONALE",
                  "TOOL_ENVIRONMENT_FACT",
                ],
                "type": "string",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "requested_lifecycle_state": Object {
                "default": "CANDIDATE",
                "description": "CANDIDATE, or VALIDATED_CURRENT when the write profile allows",
                "enum": Array [
                  "CANDIDATE",
                  "VALIDATED_CURRENT",
                ],
                "type": "string",
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "source_provenance": Object {
                "$ref": "#/$defs/SourceProvenance",
              },
              "source_timestamp": Object {
                "default": null,
                "description": "when the source was observed (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z); required for a current record",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "subject": Object {
                "default": null,
                "description": "what question the fact answers, at most 96 bytes; give facts that answer the same question the same subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a \\"subject:\\" tag, else the fact)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "tags": Object {
                "default": Array [],
                "description": "at most 12 tags, each at most 48 bytes; duplicates dropped",
                "items": Object {
                  "type": "string",
                },
                "maxItems": 12,
                "type": "array",
              },
              "verified_by": Object {
                "default": "UNVERIFIED",
                "description": "verification basis; the write profile decides the stored value",
                "enum": Array [
                  "OWNER",
                  "CURRENT_REPO_CHECK",
                  "AUTOMATED_CHECK",
                  "UNVERIFIED",
                ],
                "type": "string",
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "fact",
              "memory_type",
              "source_provenance",
              "freshness_policy",
              "idempotency_key",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "MemoryUpdateRequest": Object {
            "additionalProperties": false,
            "description": "Re-verify or replace a memory with expected_revision compare-and-swap.",
            "properties": Object {
              "agent_id": Object {
                "default": null,
                "description": "agent identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by TOOL_ENVIRONMENT",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "expected_record_id": Object {
                "default": null,
                "description": "the live record UUID; required to promote a Candidate",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "expected_revision": Object {
                "description": "the live record's revision (compare-and-swap)",
                "minimum": 1,
                "type": "integer",
              },
              "idempotency_key": Object {
                "description": "key of this write (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); retry the same write with the same key (it is answered as a replay of what it wrote), a new key only for a new write",
                "type": "string",
              },
              "memory_id": Object {
                "description": "memory UUID",
                "type": "string",
              },
              "mode": Object {
                "description": "REVERIFY keeps the memory (and promotes a Candidate); REPLACE starts a new memory",
                "enum": Array [
                  "REVERIFY",
                  "REPLACE",
                ],
                "type": "string",
              },
              "project_id": Object {
                "default": null,
                "description": "project identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by PROJECT and WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "replacement": Object {
                "anyOf": Array [
                  Object {
                    "$ref": "#/$defs/ReplacementPayload",
                  },
                  Object {
                    "type": "null",
                  },
                ],
                "default": null,
              },
              "request_id": Object {
                "default": null,
                "description": "caller's request id (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); a UUID is minted when absent",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "scope": Object {
                "description": "one exact scope; \\"\\" gives UNKNOWN_SCOPE; CROSS_PROJECT_WORKFLOW takes none of the four identity keys, not even as null",
                "enum": Array [
                  "CROSS_PROJECT_WORKFLOW",
                  "GLOBAL_USER",
                  "PROJECT",
                  "TOOL_ENVIRONMENT",
                  "WORKFLOW",
                ],
                "type": "string",
              },
              "verification": Object {
                "anyOf": Array [
                  Object {
                    "$ref": "#/$defs/VerificationPayload",
                  },
                  Object {
                    "type": "null",
                  },
                ],
                "default": null,
              },
              "workflow_id": Object {
                "default": null,
                "description": "workflow identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like); required by WORKFLOW",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "worktree_id": Object {
                "default": null,
                "description": "worktree identity (identifier: ^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$, not secret-like)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
            },
            "required": Array [
              "scope",
              "memory_id",
              "expected_revision",
              "mode",
              "idempotency_key",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "ReplacementPayload": Object {
            "additionalProperties": false,
            "description": "The replacing record of a REPLACE: fact, source_provenance, freshness_policy and source_timestamp are required there (INVALID_ENVELOPE lists the missing ones).",
            "properties": Object {
              "confidence": Object {
                "description": "confidence 0-1",
                "maximum": 1,
                "minimum": 0,
                "type": "number",
              },
              "fact": Object {
                "description": "the replacing fact; 1-2000 bytes",
                "type": "string",
              },
              "freshness_policy": Object {
                "$ref": "#/$defs/FreshnessPolicy",
              },
              "last_verified_at": Object {
                "default": null,
                "description": "when the fact was last verified (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_type": Object {
                "description": "kind of memory",
                "enum": Array [
                  "USER_FACT",
                  "PREFERENCE",
                  "WORKFLOW_RULE",
                  "PROJECT_LEARNED_FACT",
                  "DECISION_RATIONALE",
                  "TOOL_ENVIRONMENT_FACT",
                ],
                "type": "string",
              },
              "source_provenance": Object {
                "$ref": "#/$defs/SourceProvenance",
              },
              "source_timestamp": Object {
                "default": null,
                "description": "when the source was observed (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "subject": Object {
                "default": null,
                "description": "what question the fact answers, at most 96 bytes; give facts that answer the same question the same subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a \\"subject:\\" tag, else the fact)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "tags": Object {
                "description": "at most 12 tags, each at most 48 bytes",
                "items": Object {
                  "type": "string",
                },
                "maxItems": 12,
                "type": "array",
              },
              "verified_by": Object {
                "description": "verification basis; the write profile decides the stored value",
                "enum": Array [
                  "OWNER",
                  "CURRENT_REPO_CHECK",
                  "AUTOMATED_CHECK",
                  "UNVERIFIED",
                ],
                "type": "string",
              },
            },
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "SourceProvenance": Object {
            "additionalProperties": false,
            "description": "Where a fact comes from.",
            "properties": Object {
              "extraction_method": Object {
                "description": "how the fact was extracted; 1-96 bytes",
                "type": "string",
              },
              "review_ref": Object {
                "description": "review reference; 1-256 bytes",
                "type": "string",
              },
              "source_class": Object {
                "description": "kind of source; 1-96 bytes",
                "type": "string",
              },
              "source_fingerprint": Object {
                "default": null,
                "description": "64 hex digits",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "source_hash": Object {
                "description": "SHA-256 of the source, 64 hex digits",
                "type": "string",
              },
              "source_ref": Object {
                "description": "where the source is; 1-256 bytes",
                "type": "string",
              },
            },
            "required": Array [
              "source_class",
              "source_ref",
              "source_hash",
              "review_ref",
              "extraction_method",
            ],
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
          "VerificationPayload": Object {
            "additionalProperties": false,
            "description": "Fields a REVERIFY may restate.",
            "properties": Object {
              "confidence": Object {
                "description": "confidence 0-1",
                "maximum": 1,
                "minimum": 0,
                "type": "number",
              },
              "freshness_policy": Object {
                "$ref": "#/$defs/FreshnessPolicy",
              },
              "last_verified_at": Object {
                "default": null,
                "description": "when the fact was last verified (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "memory_type": Object {
                "description": "kind of memory",
                "enum": Array [
                  "USER_FACT",
                  "PREFERENCE",
                  "WORKFLOW_RULE",
                  "PROJECT_LEARNED_FACT",
                  "DECISION_RATIONALE",
                  "TOOL_ENVIRONMENT_FACT",
                ],
                "type": "string",
              },
              "source_provenance": Object {
                "$ref": "#/$defs/SourceProvenance",
              },
              "source_timestamp": Object {
                "default": null,
                "description": "when the source was observed (YYYY-MM-DD[T ]HH:MM[:SS[.fraction]] with Z or ±HH:MM; output is UTC with Z)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "subject": Object {
                "default": null,
                "description": "what question the fact answers, at most 96 bytes; give facts that answer the same question the same subject, so a changed answer is caught as a contradiction (feeds the contradiction key only; default: a \\"subject:\\" tag, else the fact)",
                "type": Array [
                  "string",
                  "null",
                ],
              },
              "tags": Object {
                "description": "at most 12 tags, each at most 48 bytes",
                "items": Object {
                  "type": "string",
                },
                "maxItems": 12,
                "type": "array",
              },
              "verified_by": Object {
                "description": "verification basis; the write profile decides the stored value",
                "enum": Array [
                  "OWNER",
                  "CURRENT_REPO_CHECK",
                  "AUTOMATED_CHECK",
                  "UNVERIFIED",
                ],
                "type": "string",
              },
            },
            "type": "object",
            "x-factlane-public-contract-revision": 2,
          },
        },
        "additionalProperties": false,
        "properties": Object {
          "request": Object {
            "$ref": "#/$defs/MemoryStatusRequest",
          },
        },
        "required": Array [
          "request",
        ],
        "type": "object",
        "x-factlane-public-contract-revision": 2,
      },
      "name": "memory_status",
      "outputSchema": Object {
        "type": "object",
        "x-factlane-public-contract-revision": 2,
      },
    },
  ],
}
`
