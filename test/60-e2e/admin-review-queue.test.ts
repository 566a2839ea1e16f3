import t, { type Test } from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MaintenanceTarget } from '../../src/storage/maintenance-target.js';
import { startLauncher } from '../helpers/mcp.js';
import { REPO_ROOT, withRaw, writeInterlock } from '../helpers/storage.js';
import { currentRequest, replaceRequest, storeRequest, type Json } from '../helpers/writes.js';

// factlane-admin candidates and promote (issue 14, deliverable 3; docs/decisions/0022), run as the built binary
// against databases that real servers over stdio write and hold open.

const ADMIN_BIN = join(REPO_ROOT, 'dist/bin/factlane-admin.js');
const ENTRY_KEYS = [
  'age_seconds', 'confidence', 'contradicts', 'contradiction_state', 'contribution_origin', 'created_at',
  'equivalent_current', 'fact', 'freshness_policy', 'memory_id', 'memory_type', 'record_id', 'revision', 'scope',
  'source_provenance', 'source_timestamp', 'tags',
].sort();
const REPORT_KEYS =
  ['candidates', 'db_identity', 'limit', 'listed_at', 'more', 'scope_filter', 'shown', 'total'].sort();

function admin(...args: string[]) {
  const run = spawnSync(process.execPath, [ADMIN_BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr, json: () => JSON.parse(run.stdout) as Json };
}

/** The same as admin(), without blocking: for commands that must run at the same time. */
function adminAsync(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [ADMIN_BIN, ...args]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A server of `profile` on `dbPath` (host codex for the delegated agent), and a caller returning the envelope. */
async function server(t: Test, dbPath: string, profile: string, hostId = HOSTS[profile] ?? 'owner-shell') {
  const launched = await startLauncher(t, ['--db', dbPath, '--host-id', hostId, '--write-profile', profile]);
  const call = async (name: string, request: Json): Promise<Json> => {
    const result = (await launched.client.callTool({ name, arguments: { request } })) as CallToolResult;
    return result.structuredContent as Json;
  };
  /** Stores storeRequest(overrides) (a Candidate unless the overrides ask otherwise) and returns its record. */
  const store =
    async (overrides: Json): Promise<Json> => (await call('memory_store', storeRequest(overrides))).results[0];
  return { ...launched, call, store };
}
const HOSTS: Record<string, string> = { 'delegated-candidate': 'codex', 'read-only': 'reader' };
const SOURCE_TS = '2026-11-01T00:00:00Z';

const recordOf = (envelope: Json): Json => envelope.results[0];
const rows =
  (dbPath: string) => withRaw(dbPath, (db) => db.prepare('SELECT * FROM adapter_records ORDER BY row_id').all());
const promoteArgs = (dbPath: string, record: Json, ...extra: string[]) => [
  'promote', '--db', dbPath, '--memory-id', record.memory_id, '--expected-revision', String(record.revision),
  '--expected-record-id', record.record_id, ...extra,
];
const search = (query: string, mode = 'CURRENT') => ({
  scope: 'GLOBAL_USER', query, intent_class: 'USER_PREFERENCE_OR_DURABLE_FACT', retrieval_mode: mode,
  retrieval_mode_kind: 'KEYWORD',
});
const idsOf = (report: Json) => report.candidates.map((entry: Json) => entry.memory_id);

t.test('candidates lists what a delegated server stored, oldest first, while servers hold the database '
  + 'open', async (t) => {
  const dbPath = join(t.testdir(), 'queue.sqlite3');
  const delegated = await server(t, dbPath, 'delegated-candidate');
  const owner = await server(t, dbPath, 'owner-current');
  const first = await delegated.store({ fact: 'The build uses Node 20', source_timestamp: SOURCE_TS });
  const second = await delegated.store({
    scope: 'PROJECT', project_id: 'p1', fact: 'Tests run with tap', memory_type: 'PROJECT_LEARNED_FACT',
  });
  const current = await owner.store(currentRequest({ fact: 'The editor is Helix' }));
  t.equal(current.lifecycle_state, 'VALIDATED_CURRENT');
  const before = rows(dbPath);

  const listed = admin('candidates', '--db', dbPath, '--json');
  t.equal(listed.code, 0, listed.stderr);
  t.equal(listed.stderr, '');
  const report = listed.json();
  t.same(Object.keys(report).sort(), REPORT_KEYS);
  t.match(report, { total: 2, shown: 2, more: 0, limit: 50, scope_filter: null, db_identity: /^[0-9a-f]{64}$/ });
  t.same(idsOf(report), [first.memory_id, second.memory_id], 'oldest first; the current fact is not listed');
  const entry = report.candidates[0];
  t.same(Object.keys(entry).sort(), ENTRY_KEYS);
  t.match(entry, {
    record_id: first.record_id, revision: 1, fact: 'The build uses Node 20', memory_type: 'USER_FACT',
    created_at: first.created_at,
    scope: { scope: 'GLOBAL_USER', project_id: null, worktree_id: null, workflow_id: null, agent_id: null },
    source_provenance: first.source_provenance, source_timestamp: SOURCE_TS,
    contribution_origin: { contributor_class: 'DELEGATED_AGENT', contributor_ref: 'codex' },
    contradiction_state: 'NONE', contradicts: [], equivalent_current: null,
  });
  t.ok(Number.isInteger(entry.age_seconds) && entry.age_seconds >= 0, 'an age in whole seconds');
  t.same(rows(dbPath), before, 'listing changes nothing');

  const human = admin('candidates', '--db', dbPath);
  t.equal(human.code, 0);
  t.match(human.stdout, 'candidates: 2 pending in every scope, oldest first');
  t.match(human.stdout, `- memory_id ${first.memory_id}  revision 1  record_id ${first.record_id}`);
  t.match(human.stdout, 'fact: The build uses Node 20');
  t.match(human.stdout, 'contributor DELEGATED_AGENT codex; contradiction_state NONE');
  t.match(
    human.stdout, 'it has no source_timestamp: promote needs --source-timestamp TS', 'the second Candidate lacks one',
  );
  t.match(human.stdout, /\npromote one with: .* --expected-record-id ID \[--source-timestamp TS\]\n$/,
    'the footer names the flag a Candidate shown needs');
  const oldest = admin('candidates', '--db', dbPath, '--limit', '1');
  t.match(oldest.stdout, `- memory_id ${first.memory_id}`);
  t.match(oldest.stdout, /\npromote one with: .* --expected-record-id ID\n/, 'and not when none shown needs it');
  t.notMatch(human.stdout, 'Helix');

  const listScope = (...flags: string[]) => admin('candidates', '--db', dbPath, '--json', '--scope', ...flags).json();
  const project = listScope('PROJECT', '--project-id', 'p1');
  t.same(idsOf(project), [second.memory_id], 'the exact scope only');
  t.same(
    project.scope_filter, { scope: 'PROJECT', project_id: 'p1', worktree_id: null, workflow_id: null, agent_id: null },
  );
  t.same(idsOf(listScope('GLOBAL_USER')), [first.memory_id]);
  t.equal(listScope('PROJECT', '--project-id', 'p2').total, 0);
  t.equal(listScope('PROJECT', '--project-id', 'p1', '--agent-id', 'a1').total, 0, 'exact tuple: no fan-out');

  const limited = admin('candidates', '--db', dbPath, '--limit', '1');
  t.match(limited.stdout, '... and 1 more (shown at most 1; raise --limit or narrow --scope)');
  t.match(
    admin('candidates', '--db', dbPath, '--limit', '1', '--json').json(), { total: 2, shown: 1, more: 1, limit: 1 },
  );
});

t.test('an agent\'s control and bidirectional characters are printed escaped, never sent to the owner\'s terminal; '
  + '--json keeps the text exact', async (t) => {
  const dbPath = join(t.testdir(), 'controls.sqlite3');
  const delegated = await server(t, dbPath, 'delegated-candidate');
  // Whitespace runs, line breaks included, collapse to one space when the fact is stored; the other controls stay.
  const stored = await delegated.store({
    fact: 'Deploy with rm -rf build \u001b[8mHIDDEN\u001b[0m then\r\n\u001b[2K npm run deploy\u0007 \u009b2J '
      + '\u202eevil\u202c C:\\dir',
    source_provenance: {
      source_class: 'doc', source_ref: 'notes/\u001b[31mred.md', source_hash: 'ab'.repeat(32),
      review_ref: 'review\u001b[2J', extraction_method: 'manual',
    },
  });
  const fact = 'Deploy with rm -rf build \u001b[8mHIDDEN\u001b[0m then \u001b[2K npm run deploy\u0007 \u009b2J '
    + '\u202eevil\u202c C:\\dir';
  t.equal(stored.fact, fact, 'stored with its controls');

  const human = admin('candidates', '--db', dbPath);
  t.equal(human.code, 0, human.stderr);
  const raw = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
  t.notMatch(human.stdout, raw, 'no control or bidirectional character reaches stdout but the newlines');
  t.match(human.stdout, '  fact: Deploy with rm -rf build \\u001b[8mHIDDEN\\u001b[0m then \\u001b[2K npm run deploy'
    + '\\u0007 \\u009b2J \\u202eevil\\u202c C:\\dir\n', 'each written as \\uXXXX; a backslash stays');
  t.match(human.stdout, '  provenance: doc notes/\\u001b[31mred.md, review review\\u001b[2J;');
  const listed = admin('candidates', '--db', dbPath, '--json').json().candidates[0];
  t.equal(listed.fact, fact, '--json: exact');
  t.equal(listed.source_provenance.review_ref, 'review\u001b[2J');
});

t.test('a usage error shows its own command\'s usage; --help lists every command before the notes', async (t) => {
  const audit = admin('audit');
  t.equal(audit.code, 2);
  t.equal(audit.stderr.split('\n').slice(1).join('\n'), 'usage:\n  factlane-admin audit --db PATH [--json]\n'
    + '(factlane-admin --help lists every command, its notes and exit codes)\n', 'only the audit line, and a pointer');
  const recover = admin('recover', '--db', 'x.sqlite3').stderr;
  t.match(recover, /\n {2}factlane-admin recover plan .*\n {30}--out PLAN\.json/, 'recover plan with its continuation');
  t.match(recover, /\n {2}factlane-admin recover --db PATH --plan/, 'and recover');
  t.notMatch(recover, 'factlane-admin backup', 'no other command');
  const unknown = admin('bogus');
  t.match(unknown.stderr, /^factlane-admin: unknown or unavailable command bogus\nusage:\n {2}factlane-admin backup /);
  t.match(unknown.stderr, /\nexit codes: /, 'a command it cannot name gets the whole usage');
  const help = admin('--help').stdout;
  const commands = [...help.matchAll(/^ {2}factlane-admin (\w+)/gm)].map((m) => m[1]);
  t.same(commands, ['backup', 'restore', 'verify', 'reembed', 'audit', 'housekeep', 'candidates', 'promote', 'recover',
    'recover'], 'every command');
  t.ok(help.indexOf('\n\n') > help.lastIndexOf('  factlane-admin '), 'the notes come after the last command');
});

t.test('candidates refuses bad flags as usage errors and a missing or interlocked database with a hint', async (t) => {
  const dir = t.testdir();
  const dbPath = join(dir, 'flags.sqlite3');
  const delegated = await server(t, dbPath, 'delegated-candidate');
  await delegated.call('memory_store', storeRequest());
  await delegated.client.close();
  await delegated.exited;
  for (const [args, message] of [
    [['--project-id', 'p1'], '--project-id needs --scope'],
    [['--scope', 'PROJECT'], 'UNKNOWN_PROJECT_ID'],
    [['--scope', 'GLOBAL_USER', '--project-id', 'p1'], 'CROSS_SCOPE_DENIED'],
    [['--scope', 'NOWHERE'], 'INVALID_ENUM'],
    [['--limit', '0'], '--limit must be a whole number from 1 to 1000'],
    [['--limit', '1001'], '--limit must be a whole number from 1 to 1000'],
    [['--max-records', '3'], '--max-records does not belong to candidates'],
    [['--expected-revision', '1'], '--expected-revision does not belong to candidates'],
  ] as const) {
    const run = admin('candidates', '--db', dbPath, ...args);
    t.equal(run.code, 2, `${args.join(' ')}: usage`);
    t.match(run.stderr, message);
    t.match(run.stderr, 'factlane-admin candidates --db PATH', 'the usage text names the command');
    t.notMatch(run.stderr, 'factlane-admin promote', 'and no other');
  }
  t.equal(admin('candidates').code, 2, '--db is required');
  t.equal(admin('audit', '--db', dbPath, '--limit', '3').code, 2, 'review flags belong to the review commands');

  const missing = admin('candidates', '--db', join(dir, 'absent.sqlite3'), '--json');
  t.equal(missing.code, 1);
  t.match(missing.stderr, /^factlane-admin: SOURCE_NOT_FOUND: .*\nfactlane-admin: hint: check --db/);
  t.match(missing.json(), { error_code: 'SOURCE_NOT_FOUND', hint: /check --db/ });
  t.notOk(existsSync(join(dir, 'absent.sqlite3')), 'nothing created');
  writeFileSync(join(dir, 'empty.sqlite3'), '');
  t.match(admin('candidates', '--db', join(dir, 'empty.sqlite3')).stderr, 'SCHEMA_MISMATCH');

  const record = (rows(dbPath) as Json[])[0]!;
  const exclusive = MaintenanceTarget.open({ dbPath, lease: 'exclusive' });
  const leased = [admin('candidates', '--db', dbPath), admin(...promoteArgs(dbPath, record))];
  exclusive.close();
  t.same(leased.map((run) => run.code), [1, 1], 'maintenance holding the exclusive lease refuses both');
  for (const run of leased)
    t.match(run.stderr, /MAINTENANCE_IN_PROGRESS: .*\n.*hint: .*maintenance holds the exclusive lease/);

  writeInterlock(dbPath);
  const before = rows(dbPath);
  const held = admin('candidates', '--db', dbPath);
  t.equal(held.code, 1);
  t.match(held.stderr, /MAINTENANCE_IN_PROGRESS: .*\nfactlane-admin: hint: a recovery is not sealed/);
  const promote = admin(...promoteArgs(dbPath, record));
  t.equal(promote.code, 1);
  t.match(promote.stderr, 'MAINTENANCE_IN_PROGRESS');
  t.same(rows(dbPath), before, 'nothing promoted under the interlock');
});

t.test('promote makes the Candidate current as OWNER, keeps its contributor, and servers find it', async (t) => {
  const dbPath = join(t.testdir(), 'promote.sqlite3');
  const delegated = await server(t, dbPath, 'delegated-candidate');
  const reader = await server(t, dbPath, 'read-only');
  const candidate = await delegated.store({ fact: 'The deploy target is Debian 12', source_timestamp: SOURCE_TS });
  t.match(
    await reader.call('memory_search', search('Debian')), { results: [] }, 'CURRENT search does not show a Candidate',
  );

  const promoted = admin(...promoteArgs(dbPath, candidate, '--json'));
  t.equal(promoted.code, 0, promoted.stderr);
  t.equal(promoted.stderr, '');
  const report = promoted.json();
  t.match(report, {
    outcome: 'PROMOTED', memory_id: candidate.memory_id, revision: 2, previous_revision: 1,
    previous_record_id: candidate.record_id, lifecycle_state: 'VALIDATED_CURRENT', verified_by: 'OWNER',
    contribution_origin: { contributor_class: 'DELEGATED_AGENT', contributor_ref: 'codex' },
    envelope: {
      status: 'OK',
      audit: { operation: 'memory_update', host_binding: {
        host_id: 'factlane-admin', binding_source: 'operator-cli', transport: 'stdio',
      } },
      results: [{
        memory_id: candidate.memory_id, revision: 2, parent_record_id: candidate.record_id,
        authority_role: 'OWNER_CURRENT',
        fact: candidate.fact,
      }],
    },
  });
  t.not(report.record_id, candidate.record_id, 'a new record');

  const found = await reader.call('memory_search', search('Debian'));
  t.match(
    found, { status: 'OK', results: [{ memory_id: candidate.memory_id, revision: 2, record_id: report.record_id }] },
  );
  const history = await reader.call('memory_search', search('Debian', 'REVIEW_HISTORY'));
  const revisions = history.results.map((item: Json) => [item.revision, item.lifecycle_state]).sort();
  t.same(revisions, [[1, 'SUPERSEDED'], [2, 'VALIDATED_CURRENT']], 'REVIEW_HISTORY shows both revisions');
  t.equal(admin('candidates', '--db', dbPath, '--json').json().total, 0, 'the queue is empty');

  const after = rows(dbPath);
  const again = admin(...promoteArgs(dbPath, candidate));
  t.equal(again.code, 0, 'the same command again replays');
  t.match(again.stdout, 'already promoted by this same command (replayed, nothing written)');
  const later = admin(...promoteArgs(dbPath, { ...candidate, revision: 3 }));
  t.equal(later.code, 1, 'another revision of the promoted record is stale, not a replay');
  t.match(later.stderr, "VERSION_CONFLICT: expected_revision is not the live record's revision");
  const current = { ...candidate, revision: 2, record_id: report.record_id };
  const notCandidate = admin(...promoteArgs(dbPath, current));
  t.equal(notCandidate.code, 1);
  t.match(
    notCandidate.stderr,
    /NOT_FOUND: the live record is VALIDATED_CURRENT, not a Candidate.*\n.*hint: only a Candidate is promoted/,
  );
  t.same(rows(dbPath), after, 'neither wrote anything');

  const human =
    admin(...promoteArgs(dbPath, await delegated.store({ fact: 'Logs go to journald', source_timestamp: SOURCE_TS })));
  t.equal(human.code, 0);
  t.match(human.stdout, new RegExp(
    '^promote: promoted: memory \\S+ revision 1 -> 2, record_id \\S+; VALIDATED_CURRENT, '
    + 'verified_by OWNER, contributor DELEGATED_AGENT codex kept\n$'));
  const audit = admin('audit', '--db', dbPath);
  t.equal(audit.code, 0, audit.stdout);
});

t.test('stale, wrong and unknown ids are refused with the governed code and a hint; nothing changes', async (t) => {
  const dbPath = join(t.testdir(), 'stale.sqlite3');
  const delegated = await server(t, dbPath, 'delegated-candidate');
  const candidate = await delegated.store({ source_timestamp: SOURCE_TS });
  const before = rows(dbPath);

  const stale = admin(...promoteArgs(dbPath, { ...candidate, revision: 2 }, '--json'));
  t.equal(stale.code, 1);
  t.match(stale.stderr, new RegExp(
    '^factlane-admin: VERSION_CONFLICT: .*\nfactlane-admin: hint: the memory changed since that revision '
    + '\\(promoted, replaced or stored again\\): run factlane-admin candidates again for its revision and record id; '
    + 'a memory it no longer lists is no Candidate any more\n$'));
  t.match(stale.json(), {
    error_code: 'VERSION_CONFLICT', retryable: false, hint: /the memory changed since that revision/,
    audit: { host_binding: { host_id: 'factlane-admin' } },
  });
  const wrongRecord = admin(...promoteArgs(dbPath, { ...candidate, record_id: randomUUID() }));
  t.equal(wrongRecord.code, 1);
  t.match(wrongRecord.stderr, 'VERSION_CONFLICT: expected_record_id is not the live record');
  const unknown = admin(...promoteArgs(dbPath, { ...candidate, memory_id: randomUUID() }));
  t.equal(unknown.code, 1);
  t.match(
    unknown.stderr, /NOT_FOUND: no memory with this memory_id\nfactlane-admin: hint: no memory has this --memory-id/,
  );
  t.same(rows(dbPath), before, 'nothing changed');

  for (const [args, message] of [
    [['--expected-revision', '0'], '--expected-revision must be a whole number from 1 to 9007199254740991'],
    [['--expected-revision', '1.5'], '--expected-revision must be a whole number'],
    [['--expected-revision', '99999999999999999'], '--expected-revision must be a whole number from 1 to 900719925'],
    [['--expected-record-id', 'not-a-uuid'], '--expected-record-id must be a UUID'],
    [['--memory-id', 'x'], '--memory-id must be a UUID'],
    [['--scope', 'GLOBAL_USER'], '--scope does not belong to promote'],
    [['--ollama-url', 'http://example.com'], '--ollama-url must be'],
  ] as const) {
    const flags: Json = {
      '--memory-id': candidate.memory_id, '--expected-revision': '1', '--expected-record-id': candidate.record_id,
      [args[0]]: args[1],
    };
    const run = admin('promote', '--db', dbPath, ...Object.entries(flags).flat() as string[]);
    t.equal(run.code, 2, `${args.join(' ')}: usage`);
    t.match(run.stderr, message);
  }
  const missing = admin('promote', '--db', dbPath, '--memory-id', candidate.memory_id, '--expected-revision', '1');
  t.equal(missing.code, 2);
  t.match(
    missing.stderr, 'promote needs --db PATH, one --memory-id ID, --expected-revision N and --expected-record-id ID',
  );
  t.same(rows(dbPath), before, 'usage errors change nothing');
});

t.test('a Candidate without source_timestamp is promoted with --source-timestamp, validated by the '
  + 'adapter', async (t) => {
  const dbPath = join(t.testdir(), 'timestamp.sqlite3');
  const delegated = await server(t, dbPath, 'delegated-candidate');
  const candidate = await delegated.store({ fact: 'CI runs on two cores' });
  const before = rows(dbPath);
  const needs = admin(...promoteArgs(dbPath, candidate));
  t.equal(needs.code, 1);
  t.match(
    needs.stderr,
    /PROVENANCE_REQUIRED: .*\n.*hint: the Candidate has no source_timestamp: .*pass --source-timestamp TS/,
  );
  const bad = admin(...promoteArgs(dbPath, candidate, '--source-timestamp', 'yesterday'));
  t.equal(bad.code, 1);
  t.match(bad.stderr, /INVALID_TIMESTAMP: .*\nfactlane-admin: hint: give --source-timestamp as a contract timestamp/);
  t.same(rows(dbPath), before, 'refusals change nothing');
  const ok = admin(...promoteArgs(dbPath, candidate, '--source-timestamp', '2026-11-20T08:00:00+01:00', '--json'));
  t.equal(ok.code, 0, ok.stderr);
  const promoted = { source_timestamp: '2026-11-20T07:00:00Z', verified_by: 'OWNER' };
  t.match(ok.json(), { outcome: 'PROMOTED', revision: 2, envelope: { results: [promoted] } }, 'normalised to UTC');
  const other = admin(...promoteArgs(dbPath, candidate, '--source-timestamp', '2026-11-21T08:00:00Z'));
  t.equal(other.code, 1, 'the same revision promoted again with other flags is refused');
  t.match(other.stderr,
    /IDEMPOTENCY_CONFLICT: .*\nfactlane-admin: hint: this revision was already promoted by a promote with other flags/);
  t.match(other.stderr, /hint: .*there is no key to change/, 'the operator is not sent looking for a key flag');
});

t.test('a Candidate contradicting a current fact shows that fact, and promote refuses CONTRADICTION', async (t) => {
  const dbPath = join(t.testdir(), 'contradiction.sqlite3');
  const owner = await server(t, dbPath, 'owner-current');
  const delegated = await server(t, dbPath, 'delegated-candidate');
  const current = await owner.store(currentRequest({ fact: 'The build uses Node 20', subject: 'runtime' }));
  // No source_timestamp: promote would need one, but a Candidate stored as a contradiction is never promoted, so the
  // listing does not ask for it.
  const request = storeRequest({ fact: 'The build uses Node 22', subject: 'runtime' });
  const stored = await delegated.call('memory_store', request);
  t.equal(stored.status, 'CONTRADICTION');
  const candidate = recordOf(stored);

  const entry = admin('candidates', '--db', dbPath, '--json').json().candidates[0];
  t.match(entry, {
    memory_id: candidate.memory_id, contradiction_state: 'UNRESOLVED', equivalent_current: null,
    contradicts: [{
      memory_id: current.memory_id, record_id: current.record_id, revision: 1, fact: 'The build uses Node 20',
      verified_by: 'OWNER',
    }],
  });
  t.equal(entry.contradicts.length, 1);
  const human = admin('candidates', '--db', dbPath).stdout;
  t.match(human, `would contradict current memory ${current.memory_id} revision 1: The build uses Node 20`);
  t.match(human, 'it was stored as a contradiction: promote always refuses it with CONTRADICTION');
  t.notMatch(human, 'while it contradicts a current fact', 'one line, for the state it was stored in');
  t.notMatch(human, 'promote needs --source-timestamp', 'no advice for a promotion that cannot happen');
  t.notMatch(human, 'promote one with', 'nor the command for one');
  t.match(human, /\nnone of these can be promoted as it stands: each one says why\n$/);

  const before = rows(dbPath);
  const refused = admin(...promoteArgs(dbPath, candidate));
  t.equal(refused.code, 1);
  t.match(
    refused.stderr,
    /CONTRADICTION: this Candidate was stored as a contradiction and is never promoted.*\nfactlane-admin: hint: /,
  );
  t.same(rows(dbPath), before, 'nothing changed');
  t.equal(admin('audit', '--db', dbPath).code, 0);

  // The current fact moves to another subject: no live conflict is left, and the Candidate is still never promoted.
  const debian = recordOf(await owner.call('memory_update',
    replaceRequest(current, { fact: 'The build image is Debian 12', subject: 'base image' })));
  const after = admin('candidates', '--db', dbPath).stdout;
  t.notMatch(after, 'would contradict current memory', 'no conflicting fact is listed');
  t.match(after, 'it was stored as a contradiction: promote always refuses it with CONTRADICTION');
  t.match(admin(...promoteArgs(dbPath, candidate)).stderr, /was stored as a contradiction and is never promoted/);

  // Its very fact becomes current (the owner REPLACEs with it): one line, that nothing is left to promote.
  const moved = recordOf(await owner.call('memory_update',
    replaceRequest(debian, { fact: 'The build uses Node 22', subject: 'runtime' })));
  const settled = admin('candidates', '--db', dbPath).stdout;
  t.match(settled, `the same fact is already current as memory ${moved.memory_id}: nothing is left to promote`);
  t.notMatch(settled, 'promote answers ALREADY_CURRENT', 'not the answer promote would not give');
  t.notMatch(settled, 'REPLACE the current fact with it', 'not advice that cannot apply');
  t.notMatch(settled, 'promote needs --source-timestamp', 'nor the timestamp a promotion would need');
  t.notMatch(settled, 'promote one with', 'nor the command');
  t.match(admin(...promoteArgs(dbPath, candidate)).stderr, /was stored as a contradiction and is never promoted/);
});

t.test('a Candidate stored as a contradiction is settled by the README\'s REPLACE, which cannot restate its unstored '
  + 'subject: candidates says nothing is left to promote', async (t) => {
  const dbPath = join(t.testdir(), 'replace-no-subject.sqlite3');
  const owner = await server(t, dbPath, 'owner-current');
  const delegated = await server(t, dbPath, 'delegated-candidate');
  const current = await owner.store(currentRequest({ fact: 'The app listens on port 8080', subject: 'app port' }));
  const stored = await delegated.call('memory_store',
    storeRequest({ fact: 'The app listens on port 9090', subject: 'app port' }));
  t.equal(stored.status, 'CONTRADICTION');
  t.match(admin('candidates', '--db', dbPath).stdout, 'REPLACE the current memory it contradicts with this fact');
  // The listing shows no subject (it is not stored): the owner REPLACEs with the fact alone, which gives it another
  // contradiction key.
  const replaced = recordOf(await owner.call('memory_update',
    replaceRequest(current, { fact: 'The app listens on port 9090' })));
  t.equal(replaced.lifecycle_state, 'VALIDATED_CURRENT');

  const entry = admin('candidates', '--db', dbPath, '--json').json().candidates[0];
  t.match(entry, { contradicts: [], equivalent_current: { memory_id: replaced.memory_id } });
  const human = admin('candidates', '--db', dbPath).stdout;
  t.match(human, `the same fact is already current as memory ${replaced.memory_id}: nothing is left to promote`);
  t.notMatch(human, 'REPLACE the current memory it contradicts', 'no advice to do again what was done');
});

t.test('a Candidate not stored as a contradiction is equivalent only under its own key, as promotion decides',
  async (t) => {
  const dbPath = join(t.testdir(), 'other-key.sqlite3');
  const delegated = await server(t, dbPath, 'delegated-candidate');
  const owner = await server(t, dbPath, 'owner-current');
  const candidate =
    await delegated.store({ fact: 'The build uses Node 20', subject: 'node', source_timestamp: SOURCE_TS });
  // The same fact made current by a REPLACE under another subject (a store of it would be a DUPLICATE).
  const older = await owner.store(currentRequest({ fact: 'The build uses Node 18', subject: 'runtime' }));
  const replaced = recordOf(await owner.call('memory_update',
    replaceRequest(older, { fact: candidate.fact, subject: 'runtime' })));
  t.equal(replaced.lifecycle_state, 'VALIDATED_CURRENT');
  const entry = admin('candidates', '--db', dbPath, '--json').json().candidates[0];
  t.match(entry, { memory_id: candidate.memory_id, contradicts: [], equivalent_current: null });
  t.notMatch(admin('candidates', '--db', dbPath).stdout, 'already current');
});

t.test('a Candidate whose fact became current elsewhere is listed as such; promote answers '
  + 'ALREADY_CURRENT', async (t) => {
  const dbPath = join(t.testdir(), 'equivalent.sqlite3');
  const delegated = await server(t, dbPath, 'delegated-candidate');
  const owner = await server(t, dbPath, 'owner-current');
  const candidate =
    await delegated.store({ fact: 'The build uses Node 20', subject: 'node', source_timestamp: SOURCE_TS });
  const older = await owner.store(currentRequest({ fact: 'The build uses Node 18', subject: 'node' }));
  const replaced =
    recordOf(await owner.call('memory_update', replaceRequest(older, { fact: candidate.fact, subject: 'node' })));
  t.equal(replaced.lifecycle_state, 'VALIDATED_CURRENT');

  const entry = admin('candidates', '--db', dbPath, '--json').json().candidates[0];
  const equivalent = { memory_id: replaced.memory_id, record_id: replaced.record_id };
  t.match(entry, { memory_id: candidate.memory_id, contradicts: [], equivalent_current: equivalent });
  const human = admin('candidates', '--db', dbPath).stdout;
  t.match(human, `the same fact is already current as memory ${replaced.memory_id}: promote answers ALREADY_CURRENT`);
  const before = rows(dbPath);
  const answer = admin(...promoteArgs(dbPath, candidate));
  t.equal(answer.code, 0);
  t.match(
    answer.stdout, `promote: ALREADY_CURRENT: the same fact is current as memory ${replaced.memory_id} revision 1`,
  );
  const json = admin(...promoteArgs(dbPath, candidate, '--json')).json();
  t.match(json, { outcome: 'ALREADY_CURRENT', memory_id: replaced.memory_id });
  t.same(rows(dbPath), before, 'nothing written');
});

t.test('two promotes of one Candidate at once write one successor: the second replays the first', async (t) => {
  const dbPath = join(t.testdir(), 'race.sqlite3');
  const delegated = await server(t, dbPath, 'delegated-candidate');
  const candidate = await delegated.store({ source_timestamp: SOURCE_TS });
  const args = promoteArgs(dbPath, candidate, '--json');
  const runs = await Promise.all([adminAsync(...args), adminAsync(...args)]);
  t.same(runs.map((run) => run.code), [0, 0], runs.map((run) => run.stderr).join(''));
  t.same(runs.map((run) => JSON.parse(run.stdout).outcome).sort(), ['PROMOTED', 'REPLAYED']);
  const memory = rows(dbPath).filter((row) => (row as Json).memory_id === candidate.memory_id) as Json[];
  const lineage = memory.map((row) => [row.revision, row.lifecycle_state]);
  t.same(lineage, [[1, 'SUPERSEDED'], [2, 'VALIDATED_CURRENT']], 'one successor, no fork');
  t.equal(admin('audit', '--db', dbPath).code, 0);
});
