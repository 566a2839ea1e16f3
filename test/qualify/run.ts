import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { failuresOf, type PartReport, type QualifyPart, type QualifyProfile } from './qualify-report.js';

// `npm run qualify [-- --full] [-- --only PART,...]`: runs the parts in order, writes qualification/report.json and
// qualification/report.md, and exits 1 when a loss, crash or failure count is non-zero (or a part threw).

/** The parts in report order; each module is imported when its part runs. */
const PARTS: readonly [string, () => Promise<QualifyPart>][] = [
  ['load', async () => (await import('./load-part.js')).runLoadPart],
  ['kills', async () => (await import('./kills-part.js')).runKillsPart],
  ['fuzz', async () => (await import('./fuzz-part.js')).runFuzzPart],
  ['wire', async () => (await import('./wire-part.js')).runWirePart],
  ['faults', async () => (await import('./faults-part.js')).runFaultsPart],
];

const REPORT_DIR = 'qualification';

function markdown(report: Record<string, unknown>, parts: Record<string, PartReport | { error: string }>): string {
  const lines = [`# FactLane qualification (${String(report.profile)})`, '',
    `Started ${String(report.started_at)}, ${String(report.duration_s)} s, result **${String(report.result)}**.`, ''];
  for (const [name, part] of Object.entries(parts)) {
    lines.push(`## ${name}`, '');
    if ('error' in part) {
      lines.push(`The part failed to run: ${part.error}`, '');
      continue;
    }
    lines.push('| figure | value |', '| --- | --- |');
    for (const [key, value] of Object.entries(part.figures)) lines.push(`| \`${key}\` | ${JSON.stringify(value)} |`);
    lines.push('', ...part.notes, '');
  }
  return `${lines.join('\n')}\n`;
}

async function main(argv: readonly string[]): Promise<number> {
  const profile: QualifyProfile = argv.includes('--full') ? 'full' : 'quick';
  const onlyIndex = argv.indexOf('--only');
  const only = onlyIndex >= 0 ? (argv[onlyIndex + 1] ?? '').split(',') : PARTS.map(([name]) => name);
  const unknown = only.filter((name) => !PARTS.some(([known]) => known === name));
  if (unknown.length > 0) {
    process.stderr.write(`qualify: unknown part ${unknown.join(', ')}; parts: ${PARTS.map(([n]) => n).join(', ')}\n`);
    return 2;
  }
  const startedAt = new Date().toISOString();
  const started = performance.now();
  const parts: Record<string, PartReport | { error: string }> = {};
  const failures: string[] = [];
  for (const [name, load] of PARTS.filter(([n]) => only.includes(n))) {
    const workDir = mkdtempSync(join(tmpdir(), `factlane-qualify-${name}-`));
    const partStarted = performance.now();
    process.stderr.write(`qualify: ${name} (${profile}) ...\n`);
    try {
      const report = await (await load())(profile, workDir);
      parts[name] = report;
      failures.push(...failuresOf(report).map((failure) => `${name}.${failure}`));
    } catch (error) {
      const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
      parts[name] = { error: message.split('\n')[0]! };
      failures.push(`${name} threw`);
      process.stderr.write(`qualify: ${name} threw:\n${message}\n`);
    } finally {
      rmSync(workDir, { recursive: true, force: true });
    }
    process.stderr.write(`qualify: ${name} done in ${Math.round((performance.now() - partStarted) / 1000)} s\n`);
  }
  const report = {
    profile, started_at: startedAt, duration_s: Math.round((performance.now() - started) / 100) / 10,
    result: failures.length === 0 ? 'PASS' : 'FAIL', failures,
    ...Object.fromEntries(Object.entries(parts).map(([name, part]) => [name, 'error' in part ? part : part.figures])),
  };
  mkdirSync(REPORT_DIR, { recursive: true });
  writeFileSync(join(REPORT_DIR, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(REPORT_DIR, 'report.md'), markdown(report, parts));
  process.stdout.write(
    `${JSON.stringify({ profile, result: report.result, duration_s: report.duration_s, failures })}\n`,
  );
  return failures.length === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
}, (error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
