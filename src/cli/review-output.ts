import type { AdapterError } from '../core/adapter-error.js';
import { escapeUnprintable } from '../core/text.js';
import type { ErrorCode } from '@factlane/schema';
import {
  storedAsContradiction, type CandidateEntry, type CandidatesReport,
} from '../maintenance/review-queue-operation.js';

// What factlane-admin candidates and promote print: a short block per Candidate or one promotion line, the JSON
// report with --json, and for a refusal the governed code with a one-line hint (docs/decisions/0022).

/** What a promotion answered: the record it started from and the memory_update envelope. */
export interface PromotionReport {
  readonly previous: { readonly revision: number; readonly record_id: string };
  readonly envelope: Record<string, unknown>;
}

const AGAIN = 'run factlane-admin candidates again for its revision and record id';
const HINTS: Partial<Record<ErrorCode, string>> = {
  VERSION_CONFLICT: `the memory changed since that revision (promoted, replaced or stored again): ${AGAIN}; a memory `
    + 'it no longer lists is no Candidate any more',
  NOT_FOUND: 'no memory has this --memory-id in this database: copy it from factlane-admin candidates',
  CROSS_SCOPE_DENIED: `the memory is not where it was: ${AGAIN}`,
  CONTRADICTION: 'it contradicts a current fact of its scope: REPLACE that fact from an owner-current session, '
    + 'or leave the Candidate unpromoted',
  PROVENANCE_REQUIRED: 'the Candidate has no source_timestamp: check its source, then pass --source-timestamp TS',
  INVALID_TIMESTAMP: 'give --source-timestamp as a contract timestamp such as 2026-11-30T10:00:00Z',
  UNVERIFIED_CURRENT: 'it would be stale once promoted (its on_change fingerprint no longer matches its source): '
    + 'store a re-checked fact instead',
  MAINTENANCE_IN_PROGRESS: 'a recovery is not sealed, or maintenance holds the exclusive lease: '
    + 'finish factlane-admin recover, or wait for the maintenance to end',
  SOURCE_NOT_FOUND: 'check --db: it must name an existing FactLane database',
  SCHEMA_MISMATCH: 'check --db; a database older than this release needs factlane-migrate up first',
  PROFILE_MISMATCH: 'the embedding binding is not usable here: see memory_status, or run factlane-admin reembed',
  EMBEDDING_UNAVAILABLE: 'the database is bound to an Ollama profile: start Ollama on loopback or pass --ollama-url',
  BACKEND_BUSY: 'the database stayed busy: run the same command again',
  BACKEND_UNAVAILABLE:
    'the database could not be used (disk full, read-only, moved): fix that and run the command again',
  WRITE_UNCONFIRMED: `the outcome is unknown: ${AGAIN}, or run the same promote again (it replays)`,
  IDEMPOTENCY_CONFLICT: 'this revision was already promoted by a promote with other flags (promote makes its key '
    + 'from its flags, so there is no key to change; the same command again replays its answer), so the memory has '
    + `moved on: ${AGAIN}`,
};

/** The one-line hint printed under a refusal of candidates or promote. */
function refusalHint(error: AdapterError): string {
  if (error.code === 'NOT_FOUND' && /not a Candidate/.test(error.message)) {
    return 'only a Candidate is promoted (factlane-admin candidates lists them); '
      + 'a current fact is re-verified with memory_update REVERIFY';
  }
  // Not retryable: no passing state (a backup served by mistake, a path that is no file); its message says what to do.
  if (error.code === 'BACKEND_UNAVAILABLE' && !error.retryable) return 'do what the message says, then run it again';
  return HINTS[error.code] ?? 'see docs/errors.md for this code';
}

/**
 * Prints a refusal: `factlane-admin: CODE: message` and `factlane-admin: hint: …` on stderr, with --json also stdout.
 */
export function printRefusal(error: AdapterError, json: boolean): void {
  const hint = refusalHint(error);
  process.stderr.write(`factlane-admin: ${error.code}: ${error.message}\nfactlane-admin: hint: ${hint}\n`);
  if (json) {
    const audit = error.audit ? { audit: error.audit } : {};
    const report = { error_code: error.code, message: error.message, retryable: error.retryable, hint, ...audit };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  }
}

/** An age in its two largest units: `45 s`, `12 min`, `3 h 20 min`, `2 d 4 h`. */
function formatAge(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

function scopeText(scope: CandidateEntry['scope']): string {
  const ids = (['project_id', 'worktree_id', 'workflow_id', 'agent_id'] as const).filter((key) => scope[key] !== null)
    .map((key) => `${key}=${scope[key]}`);
  return [scope.scope, ...ids].join(' ');
}

function candidateBlock(entry: CandidateEntry): string {
  const origin = entry.contribution_origin as { contributor_class?: string; contributor_ref?: string };
  const provenance = entry.source_provenance as { source_class?: string; source_ref?: string; review_ref?: string };
  const lines = [
    `- memory_id ${entry.memory_id}  revision ${entry.revision}  record_id ${entry.record_id}`,
    `  scope ${scopeText(entry.scope)}; ${entry.memory_type}; age ${formatAge(entry.age_seconds)}`
      + ` (created ${entry.created_at})`,
    `  fact: ${entry.fact}`,
    `  provenance: ${provenance.source_class} ${provenance.source_ref}, review ${provenance.review_ref};`
      + ` source_timestamp ${entry.source_timestamp ?? 'none'}`,
    `  contributor ${origin.contributor_class} ${origin.contributor_ref};`
      + ` contradiction_state ${entry.contradiction_state}`,
  ];
  for (const current of entry.contradicts) {
    lines.push(`  would contradict current memory ${current.memory_id} revision ${current.revision}: ${current.fact}`);
  }
  // Two different refusals (CONTRACT.md §13.4 step 2): stored as a contradiction, it is never promoted, and that
  // refusal comes before ALREADY_CURRENT; otherwise a live conflict refuses it only while the conflicting fact stands.
  const neverPromoted = storedAsContradiction(entry.contradiction_state);
  if (entry.equivalent_current) {
    const memoryId = entry.equivalent_current.memory_id;
    lines.push(neverPromoted
      ? `  the same fact is already current as memory ${memoryId}: nothing is left to promote (stored as a `
        + 'contradiction, this Candidate is refused with CONTRADICTION)'
      : `  the same fact is already current as memory ${memoryId}: promote answers ALREADY_CURRENT`);
  }
  // A Candidate stored as a contradiction is never promoted: no timestamp would make it so.
  if (entry.source_timestamp === null && !neverPromoted)
    lines.push('  it has no source_timestamp: promote needs --source-timestamp TS');
  if (neverPromoted && !entry.equivalent_current) {
    lines.push('  it was stored as a contradiction: promote always refuses it with CONTRADICTION; to make its fact '
      + 'current, REPLACE the current memory it contradicts with this fact (storing it again is a DUPLICATE of it)');
  } else if (!neverPromoted && entry.contradicts.length > 0) {
    lines.push('  promote refuses it with CONTRADICTION while it contradicts a current fact');
  }
  // The fact and provenance come from an agent: printed as they are, control and bidirectional characters could clear
  // the owner's screen or hide words of the fact (docs/decisions/0046-what-the-review-queue-prints.md).
  return `${lines.map(escapeUnprintable).join('\n')}\n`;
}

/** Prints the candidates report: the JSON report with --json, else a heading and a short block per Candidate. */
export function printCandidates(report: CandidatesReport, json: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return;
  }
  const where = report.scope_filter ? `in ${scopeText(report.scope_filter)}` : 'in every scope';
  process.stdout.write(`${escapeUnprintable(`candidates: ${report.total} pending ${where}, oldest first`)}\n`);
  for (const entry of report.candidates) process.stdout.write(candidateBlock(entry));
  if (report.more > 0) {
    process.stdout.write(`... and ${report.more} more (shown at most ${report.limit}; raise --limit or narrow --scope)`
      + '\n');
  }
  if (report.total === 0) return;
  // The command is shown when a Candidate may be promoted: one shown that nothing refuses yet, or one not shown.
  const promotable = report.candidates.filter(canBePromoted);
  if (promotable.length === 0 && report.more === 0) {
    process.stdout.write('none of these can be promoted as it stands: each one says why\n');
    return;
  }
  // The timestamp flag is named when a Candidate shown needs it; its own block says which.
  const timestamp = promotable.some((entry) => entry.source_timestamp === null) ? ' [--source-timestamp TS]' : '';
  process.stdout.write('promote one with: factlane-admin promote --db PATH --memory-id ID --expected-revision N'
    + ` --expected-record-id ID${timestamp}\n`);
}

/** A Candidate promote would not refuse as it stands: not stored as a contradiction, contradicting no current fact. */
function canBePromoted(entry: CandidateEntry): boolean {
  return !storedAsContradiction(entry.contradiction_state) && entry.contradicts.length === 0;
}

/** Prints a promotion: one line, or with --json a report carrying the whole envelope. */
export function printPromotion(report: PromotionReport, json: boolean): void {
  const { envelope, previous } = report;
  const record = (envelope.results as Record<string, unknown>[])[0]!;
  const replay = envelope.idempotent_replay === true;
  const outcome = envelope.status === 'ALREADY_CURRENT' ? 'ALREADY_CURRENT' : replay ? 'REPLAYED' : 'PROMOTED';
  if (json) {
    process.stdout.write(`${JSON.stringify({
      outcome, memory_id: record.memory_id, revision: record.revision, record_id: record.record_id,
      previous_revision: previous.revision, previous_record_id: previous.record_id,
      lifecycle_state: record.lifecycle_state,
      verified_by: record.verified_by, contribution_origin: record.contribution_origin, envelope,
    }, null, 2)}\n`);
    return;
  }
  const origin = record.contribution_origin as { contributor_class: string; contributor_ref: string };
  if (outcome === 'ALREADY_CURRENT') {
    process.stdout.write(`promote: ALREADY_CURRENT: the same fact is current as memory ${record.memory_id}`
      + ` revision ${record.revision} `
      + `(record_id ${record.record_id}); nothing was written, the Candidate stays pending\n`);
    return;
  }
  const what = replay ? 'already promoted by this same command (replayed, nothing written)' : 'promoted';
  process.stdout.write(`${escapeUnprintable(`promote: ${what}: memory ${record.memory_id}`
    + ` revision ${previous.revision} -> ${record.revision}, `
    + `record_id ${record.record_id}; ${record.lifecycle_state}, verified_by ${record.verified_by}, `
    + `contributor ${origin.contributor_class} ${origin.contributor_ref} kept`)}\n`);
}
