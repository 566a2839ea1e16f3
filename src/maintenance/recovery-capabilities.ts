import { TOOLS } from '@factlane/schema';
import type { SqliteConnection } from '../storage/native.js';
import { checkpointTruncate, enableSecureDelete, ftsPresent } from '../storage/recovery-pragmas.js';
import { ftsSecureDeleteSettable } from '../storage/recovery-repository.js';
import { bindingDimension, bindingProfileId, type SchemaFindings } from '../storage/schema-inspection.js';
import type { WriteConnection } from '../storage/write-connection.js';
import { RecoveryHold } from './recovery-hold.js';
import type { RecoveryPlan } from './recovery-plan.js';

// OPERATIONS.md §5.3 checks 14-18: what this SQLite build and this release can do, on the open write connection.

/** The probes of checks 14 and 15, each true when the capability is there. */
export interface CapabilityProbes {
  readonly secureDelete: (connection: SqliteConnection) => boolean;
  readonly ftsPresent: (connection: SqliteConnection) => boolean;
  readonly ftsSecureDelete: (connection: SqliteConnection) => boolean;
}

const REAL_PROBES: CapabilityProbes = {
  secureDelete: enableSecureDelete, ftsPresent, ftsSecureDelete: ftsSecureDeleteSettable,
};

/** The public contract's five tools (CONTRACT.md §1); check 18 compares the build's tools/list with them. */
const CONTRACT_TOOLS = ['memory_get', 'memory_search', 'memory_status', 'memory_store', 'memory_update'];

/** Seams for tests of checks 14, 15 and 18. */
export interface CapabilityOverrides {
  /** Checks 14 and 15 (what this SQLite build can do); default the real probes. */
  readonly capabilities?: Partial<CapabilityProbes>;
  /** Check 18: the tool names this build serves; default the schema package's tools/list. */
  readonly exposedTools?: readonly string[];
}

/** Checks 14-17 on the read-write connection; check 18 on the schema package. */
export function checkCapabilities(connection: WriteConnection, plan: RecoveryPlan, findings: SchemaFindings,
  env: CapabilityOverrides): void {
  const raw = connection.connection;
  const probes = { ...REAL_PROBES, ...env.capabilities };
  if (!probes.secureDelete(raw)) {
    throw new RecoveryHold('HOLD_SECURE_DELETE_UNAVAILABLE_NO_MUTATION', 'PRAGMA secure_delete does not read back on');
  }
  if (!probes.ftsPresent(raw)) {
    throw new RecoveryHold('HOLD_FTS_UNAVAILABLE_NO_MUTATION', 'the fact_fts table is missing');
  }
  if (!probes.ftsSecureDelete(raw)) {
    throw new RecoveryHold('HOLD_FTS_SECURE_DELETE_UNAVAILABLE_NO_MUTATION', 'FTS5 secure-delete cannot be set');
  }
  // A malformed binding, or one without an integer dimension, matches no plan profile.
  const dimension = bindingDimension(findings.bindingText);
  if (bindingProfileId(findings.bindingText) !== plan.profile || dimension === null
    || dimension !== findings.vectorDimension) {
    throw new RecoveryHold('HOLD_PROFILE_MISMATCH_NO_MUTATION',
      'the plan\'s profile or the vector dimension differs from the database binding');
  }
  if (!checkpointTruncate(raw)) {
    throw new RecoveryHold('HOLD_NONQUIESCENT_NO_MUTATION',
      'wal_checkpoint(TRUNCATE) did not return (0, 0, 0): another connection is active');
  }
  const names = [...(env.exposedTools ?? TOOLS.map((tool) => tool.name))].sort();
  if (names.length !== CONTRACT_TOOLS.length || names.some((name, i) => name !== CONTRACT_TOOLS[i])) {
    throw new RecoveryHold('HOLD_PUBLIC_CONTRACT_DRIFT_NO_MUTATION',
      'this build does not expose exactly the five memory tools');
  }
}
