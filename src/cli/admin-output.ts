import type { AuditReport } from '../maintenance/audit-operation.js';
import type { BackupManifest } from '../maintenance/backup-operation.js';
import type { HousekeepReport } from '../maintenance/housekeep-operation.js';
import type { ReembedReport } from '../maintenance/reembed-operation.js';
import type { RestoreReport } from '../maintenance/restore-operation.js';
import type { VerifyReport } from '../maintenance/verify-operation.js';
import { backupLine } from './cli-support.js';

// What factlane-admin prints on stdout for backup, restore, verify, audit, housekeep and reembed: the report as JSON
// with --json, else a few lines for a person (OPERATIONS.md §1). The review commands print through review-output.ts.

const out = (text: string) => process.stdout.write(text);

/** The report as indented JSON with --json; else `lines` of it. */
function printed<Report>(report: Report, json: boolean, lines: (report: Report) => string): void {
  out(json ? `${JSON.stringify(report, null, 2)}\n` : lines(report));
}

export function printVerify(report: VerifyReport & { readonly db_identity?: string }, json: boolean): void {
  printed(report, json, (r) => `verify: ${r.ok ? 'all checks passed' : 'PROBLEMS FOUND'}; interlock `
    + `${r.interlock_present ? 'PRESENT' : 'absent'}\n`
    + r.checks.map((check) => `  ${check.status}  ${check.name.padEnd(24)} ${check.detail}\n`).join(''));
}

export function printAudit(report: AuditReport & { db_identity: string }, json: boolean): void {
  printed(report, json, (r) => `audit: ${r.ok ? 'all checks passed' : 'PROBLEMS FOUND'}\n`
    + r.checks.map((check) => `  ${check.status}  ${check.name.padEnd(26)} ${check.count}`
      + `${check.samples.length > 0 ? `  e.g. ${check.samples.slice(0, 3).join(', ')}` : ''}\n`).join(''));
}

export function printBackup(report: { db_identity: string; manifest: BackupManifest }, json: boolean): void {
  printed(report, json, ({ manifest }) =>
    `${backupLine(manifest)}: ${manifest.file_bytes} bytes, sha256 ${manifest.file_sha256}\n`);
}

export function printRestore(report: RestoreReport, json: boolean): void {
  printed(report, json, (r) => `restored and verified: ${r.file_bytes} bytes, database_id ${r.database_id}, `
    + `schema version ${r.schema_version}\n`
    + (r.needs_migration ? 'the schema is older than this release: run factlane-migrate up on it before serving it\n'
      : ''));
}

export function printHousekeep(report: HousekeepReport, json: boolean): void {
  const free = (bytes: number | null) => (bytes === null ? 'unknown' : `${bytes}`);
  printed(report, json, (r) => `housekeep: ${r.outcome}\n  next: ${r.next_action}\n  compacted `
    + `${r.compacted_records} of ${r.selected_records} selected (at most ${r.max_records}); ready `
    + `${r.compaction_ready_before} -> ${r.compaction_ready_after}\n  free bytes `
    + `${free(r.filesystem_free_bytes_before)} -> ${free(r.filesystem_free_bytes_after)}, required `
    + `${r.required_free_bytes}; the file does not shrink\n`);
}

const formatDuration = (ms: number) => (ms < 1000 ? `${ms} ms` : `${Math.ceil(ms / 1000)} s`);

export function printReembed(report: ReembedReport, json: boolean): void {
  printed(report, json, (r) => (r.dry_run
    ? `reembed --dry-run: ${r.records_to_embed} records would be embedded under ${r.to_profile} in ${r.batches} `
      + `batch(es), about ${formatDuration(r.estimated_ms ?? 0)}; nothing changed\n`
    : `reembed: ${r.records_embedded} records embedded in ${r.batches} batch(es), ${r.elapsed_ms} ms; bound `
      + `${r.from_profile ?? '(no valid binding)'} -> ${r.to_profile}\n`));
}
