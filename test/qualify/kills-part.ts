import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { roundTo } from '../bench/latency-stats.js';
import { SeededRandom } from '../bench/seeded-random.js';
import { AckedWrites, type AckedWrite } from './acked-writes.js';
import { downgradeToSchemaOne } from '../helpers/storage.js';
import { compactable, copyDatabase, leftoversIn, liveRecords, schemaVersionOf } from './kill-files.js';
import { KillTally } from './kill-tally.js';
import type { PartReport, QualifyPart, QualifyProfile } from './qualify-report.js';
import { QualifyRequests } from './qualify-requests.js';
import {
  ADMIN_BIN, ChildRegistry, MIGRATE_BIN, runCommand, ServedProcess, type CallOutcome, type CommandRun,
  type PublicRecord, type ServerOptions,
} from './server-fleet.js';

// Part 2 of `npm run qualify` (issue 13): SIGKILL at random points (seeded) inside store, REVERIFY, promotion,
// REPLACE (a server killed with a burst of requests in flight) and inside housekeep, reembed, backup, restore and
// migrate up (the command killed after a random delay). After each kill: restart, every acknowledged write at its
// revision, integrity_check, FTS integrity-check and the lineage audit; a killed command is rerun and must exit 0.

const KILLS: Record<QualifyProfile, number> = { quick: 50, full: 500 };
/** The part stops starting kills past this time, whatever the count (the figures then show fewer kills). */
const TIME_BUDGET_MS: Record<QualifyProfile, number> = { quick: 80_000, full: 1_200_000 };
const SEED_CANDIDATES: Record<QualifyProfile, number> = { quick: 40, full: 200 };
const SEED_CURRENTS: Record<QualifyProfile, number> = { quick: 60, full: 200 };
/** Requests a killed server has in flight. */
const BURST = 10;
const SEED_IN_FLIGHT = 4;
/** Records one housekeep run compacts at most (one transaction each). */
const HOUSEKEEP_MAX_RECORDS = 16;
/** More free space than any disk has, so housekeep always finds the requirement unmet and compacts. */
const HOUSEKEEP_REQUIRED_FREE_BYTES = String(Number.MAX_SAFE_INTEGER);
/** Tries to land a kill inside a maintenance command before the kill is given up as missed. */
const MAX_KILL_TRIES = 6;
const PROJECT_ID = 'qualify-kills';
const SEED = 0x0c1110001;

const WRITE_TARGETS = ['store_candidate', 'store_current', 'reverify', 'promotion', 'replace'] as const;
const COMMAND_TARGETS = ['housekeep', 'reembed', 'backup', 'restore', 'migrate_up'] as const;
type WriteTarget = (typeof WRITE_TARGETS)[number];
type CommandTarget = (typeof COMMAND_TARGETS)[number];
type Target = WriteTarget | CommandTarget;
const TARGETS: readonly Target[] = [...WRITE_TARGETS, ...COMMAND_TARGETS];
type Profile = ServerOptions['writeProfile'];

const profileOf =
  (target: WriteTarget): Profile => (target === 'store_candidate' ? 'delegated-candidate' : 'owner-current');
const isWrite = (target: Target): target is WriteTarget => (WRITE_TARGETS as readonly string[]).includes(target);

/** The kills part; see the module comment. */
export const runKillsPart: QualifyPart = async (profile, workDir): Promise<PartReport> => {
  const started = performance.now();
  const registry = new ChildRegistry();
  const rng = new SeededRandom(SEED);
  const dbPath = join(workDir, 'kills.sqlite3');
  const backupsDir = join(workDir, 'backups');
  const restoresDir = join(workDir, 'restores');
  const copiesDir = join(workDir, 'copies');
  for (const dir of [backupsDir, restoresDir, copiesDir]) mkdirSync(dir);
  const acked = new AckedWrites();
  const tally = new KillTally(TARGETS);
  const owner = new QualifyRequests(PROJECT_ID, 'kill-o', SEED + 1);
  const delegated = new QualifyRequests(PROJECT_ID, 'kill-d', SEED + 2);
  let server: { process: ServedProcess; profile: Profile } | null = null;
  let outputs = 0;
  const fresh = (dir: string, stem: string) => join(dir, `${stem}-${(outputs += 1)}.sqlite3`);

  const ackOf = (outcome: CallOutcome): PublicRecord | undefined => {
    const record = outcome.envelope?.status === 'OK' ? outcome.envelope.results[0] : undefined;
    if (record !== undefined) acked.add(record);
    return record;
  };
  /** The running server of `writeProfile` (started, and warmed by a search, when there is none). */
  const serverFor = async (writeProfile: Profile): Promise<ServedProcess> => {
    if (server?.profile === writeProfile && server.process.alive) return server.process;
    await stopServer();
    const started = await ServedProcess.start(registry, { dbPath, hostId: `kills-${writeProfile}`, writeProfile });
    // A warm server: the first search loads the tokenizer and embedding, so the burst that follows is all write path.
    const warm = await started.call('memory_search', owner.search('HYBRID', 'CURRENT', undefined));
    if (warm.envelope === null) tally.restartFailures += 1;
    server = { process: started, profile: writeProfile };
    return started;
  };
  const stopServer = async () => {
    if (server === null) return;
    const exit = await server.process.close();
    if (exit.code !== 0) tally.unexpectedExits += 1;
    server = null;
  };
  /** `requests` through `writeProfile`, SEED_IN_FLIGHT at a time, each OK acknowledged (setup and top-ups, no kill). */
  const writeAll = async (writeProfile: Profile, requests: readonly Record<string, unknown>[], tool: string) => {
    const target = await serverFor(writeProfile);
    let next = 0;
    await Promise.all(Array.from({ length: SEED_IN_FLIGHT }, async () => {
      while (next < requests.length) {
        const request = requests[next]!;
        next += 1;
        ackOf(await target.call(tool, request));
      }
    }));
  };
  const pickDistinct = (records: PublicRecord[], count: number): PublicRecord[] => {
    const pool = [...records];
    const chosen: PublicRecord[] = [];
    while (chosen.length < count && pool.length > 0) chosen.push(pool.splice(rng.int(pool.length), 1)[0]!);
    return chosen;
  };
  /** BURST requests of `target` (for the updates, on distinct live memories). */
  const burstOf = async (target: WriteTarget): Promise<{ tool: string; requests: Record<string, unknown>[] }> => {
    if (target === 'store_candidate')
      return { tool: 'memory_store', requests: Array.from({ length: BURST }, () => delegated.storeCandidate()) };
    if (target === 'store_current')
      return { tool: 'memory_store', requests: Array.from({ length: BURST }, () => owner.storeCurrent()) };
    if (target === 'promotion') {
      if (liveRecords(dbPath, PROJECT_ID, 'CANDIDATE').length < BURST) {
        await writeAll(
          'delegated-candidate', Array.from({ length: 2 * BURST }, () => delegated.storeCandidate()), 'memory_store',
        );
      }
      return { tool: 'memory_update', requests: pickDistinct(liveRecords(dbPath, PROJECT_ID, 'CANDIDATE'), BURST).map(
        (record) => owner.promote(record),
      ) };
    }
    const currents = pickDistinct(liveRecords(dbPath, PROJECT_ID, 'VALIDATED_CURRENT'), BURST);
    return { tool: 'memory_update', requests: currents.map(
      (record) => (target === 'reverify' ? owner.reverify(record) : owner.replace(record)),
    ) };
  };

  /** One burst on a warm server of the target's profile, answered in full: how long a burst takes here. */
  const calibrateWrite = async (target: WriteTarget): Promise<number> => {
    const { tool, requests } = await burstOf(target);
    const victim = await serverFor(profileOf(target));
    const begun = performance.now();
    await Promise.all(requests.map(async (request) => ackOf(await victim.call(tool, request))));
    return performance.now() - begun;
  };

  /** Kills a server with a burst of `target` in flight, restarts, resends what was unanswered, checks. */
  const killWrite = async (target: WriteTarget, burstMs: number) => {
    const writeProfile = profileOf(target);
    const { tool, requests } = await burstOf(target);
    const victim = await serverFor(writeProfile);
    let pending = requests.length;
    let inFlightAtKill = 0;
    const kill = () => {
      if (!victim.alive) return;
      inFlightAtKill = pending;
      victim.kill();
    };
    // Up to 1.5 bursts: the late kills land among commits and answers; the guard below keeps a request in flight.
    const timer = setTimeout(kill, rng.next() * burstMs * 1.5);
    const answers = await Promise.all(requests.map(async (request) => {
      const outcome = await victim.call(tool, request);
      pending -= 1;
      // The last request in flight is killed at the latest: every kill has at least one request in flight.
      if (pending === 1) kill();
      return outcome;
    }));
    clearTimeout(timer);
    const exit = await victim.exited;
    await victim.close();
    server = null;
    if (exit.signal !== 'SIGKILL') tally.unexpectedExits += 1;
    tally.kills += 1;
    tally.killsByTarget[target]! += 1;
    if (inFlightAtKill > 0) tally.killsWithRequestsInFlight += 1;
    for (const answer of answers) ackOf(answer);

    // Restart on the same profile; every unanswered request is sent again: it must replay (it was committed before
    // the kill, whether or not its answer got out) or be written fresh (it was not); never a refusal.
    const restarted = await serverFor(writeProfile);
    for (const [index, answer] of answers.entries()) {
      if (answer.envelope !== null) continue;
      const again = await restarted.call(tool, requests[index]!);
      const record = ackOf(again);
      if (record === undefined) tally.resendFailures += 1;
      else tally.resends[again.envelope!.idempotent_replay === true ? 'replayed' : 'written_fresh']! += 1;
    }
    tally.check(dbPath, acked.all());
  };

  /** The arguments of one run of `target`; outputs are fresh paths, so a rerun never meets a killed run's leftovers. */
  const commandOf = (target: CommandTarget, context: { backup: string; copy: string }): {
    bin: string; args: string[]; published: string[];
  } => {
    switch (target) {
      case 'housekeep':
        return { bin: ADMIN_BIN, args: [
          'housekeep', '--db', dbPath, '--scope', 'PROJECT', '--project-id', PROJECT_ID, '--max-records',
          String(HOUSEKEEP_MAX_RECORDS), '--required-free-bytes', HOUSEKEEP_REQUIRED_FREE_BYTES,
        ], published: [] };
      case 'reembed':
        return { bin: ADMIN_BIN, args: ['reembed', '--db', dbPath, '--profile', 'local-hash-384'], published: [] };
      case 'backup': {
        const out = fresh(backupsDir, 'backup');
        return {
          bin: ADMIN_BIN, args: ['backup', '--db', dbPath, '--out', out], published: [out, `${out}.manifest.json`],
        };
      }
      case 'restore': {
        const out = fresh(restoresDir, 'restored');
        return { bin: ADMIN_BIN, args: ['restore', '--from', context.backup, '--db', out], published: [
          out, `${out}-wal`, `${out}-shm`,
        ] };
      }
      case 'migrate_up': {
        // Every other run takes its backup first, so the kill can also land inside that backup.
        const withBackup = rng.next() < 0.5;
        const out = fresh(backupsDir, 'before-up');
        return {
          bin: MIGRATE_BIN, args: ['up', '--db', context.copy, ...(withBackup ? ['--backup', out] : ['--no-backup'])],
          published: withBackup ? [out, `${out}.manifest.json`] : [],
        };
      }
    }
  };
  const durations: Record<string, number> = {};
  let startupMs = 0;
  /** The latest verified backup (restores read it) and the acknowledged writes it must hold. */
  let latestBackup = { path: '', writes: [] as readonly AckedWrite[] };

  /** A schema-1 copy of the database for migrate up, and the acknowledged writes it holds. */
  const schemaOneCopy = async (): Promise<{ copy: string; writes: readonly AckedWrite[] }> => {
    const copy = fresh(copiesDir, 'schema-1');
    await copyDatabase(dbPath, copy);
    downgradeToSchemaOne(copy);
    return { copy, writes: acked.snapshot() };
  };

  /** Kills `target` after a random delay past the node startup, reruns it, checks what it touched. */
  const killCommand = async (target: CommandTarget) => {
    await stopServer();
    if (target === 'housekeep' && compactable(dbPath, PROJECT_ID) < 2 * HOUSEKEEP_MAX_RECORDS) {
      const currents = pickDistinct(liveRecords(dbPath, PROJECT_ID, 'VALIDATED_CURRENT'), 3 * HOUSEKEEP_MAX_RECORDS);
      await writeAll('owner-current', currents.map((record) => owner.reverify(record)), 'memory_update');
      await stopServer();
    }
    let migrate: { copy: string; writes: readonly AckedWrite[] } | undefined;
    const context = { backup: latestBackup.path, copy: '' };
    let killed: { run: CommandRun; published: string[] } | undefined;
    for (let attempt = 0; attempt < MAX_KILL_TRIES && killed === undefined; attempt += 1) {
      if (target === 'migrate_up') {
        // A fresh schema-1 copy each try: a try that finished has migrated its copy already.
        if (migrate !== undefined)
          for (const path of [migrate.copy, `${migrate.copy}-wal`, `${migrate.copy}-shm`])
            rmSync(path, { force: true });
        migrate = await schemaOneCopy();
        context.copy = migrate.copy;
      }
      const command = commandOf(target, context);
      // Past most of node's startup, but never so late that the command is sure to finish first.
      const duration = durations[target] ?? startupMs;
      const floor = Math.min(startupMs * 0.8, duration * 0.5);
      const delay = floor + rng.next() * Math.max(1, duration - floor);
      const run = await runCommand(registry, command.bin, command.args, delay);
      if (run.killed) {
        killed = { run, published: command.published };
        break;
      }
      // The command finished before the kill: it must have succeeded; the next try kills sooner.
      tally.missedKills += 1;
      tally.rerun(target, run);
      durations[target] = run.ms * 0.8;
      if (target === 'backup' && run.exit.code === 0)
        latestBackup = { path: command.args[4]!, writes: acked.snapshot() };
      else for (const path of command.published) rmSync(path, { force: true });
    }
    if (killed === undefined) {
      if (migrate !== undefined)
        for (const path of [migrate.copy, `${migrate.copy}-wal`, `${migrate.copy}-shm`]) rmSync(path, { force: true });
      return;
    }
    tally.kills += 1;
    tally.killsByTarget[target]! += 1;

    // What the killed run left: the database it worked on must be whole and hold every acknowledged write.
    if (target === 'backup' || target === 'restore') {
      const dir = target === 'backup' ? backupsDir : restoresDir;
      tally.leftover(target, leftoversIn(dir, killed.published));
      // A restore published before the kill is a whole database: it is checked, then removed with the rest.
      if (target === 'restore' && existsSync(killed.published[0]!))
        tally.check(killed.published[0]!, latestBackup.writes);
      for (const name of readdirSync(dir)) if (name.startsWith('.')) rmSync(join(dir, name), { force: true });
      for (const path of killed.published) rmSync(path, { force: true });
      tally.check(dbPath, acked.all());
    } else if (target === 'migrate_up') {
      tally.migrateStateAfterKill[schemaVersionOf(migrate!.copy) === 1 ? 'schema_1' : 'migrated']! += 1;
      tally.leftover(target, leftoversIn(backupsDir, killed.published));
      for (const name of readdirSync(backupsDir))
        if (name.startsWith('.')) rmSync(join(backupsDir, name), { force: true });
      for (const path of killed.published) rmSync(path, { force: true });
      // Before the rerun the copy may be at schema 1 (the audit would rightly call it not current): no audit yet.
      tally.check(migrate!.copy, migrate!.writes, { audit: false });
    } else {
      tally.check(dbPath, acked.all());
    }

    // The rerun: exit 0, and the file it worked on passes every check.
    const rerun = commandOf(target, context);
    const again = await runCommand(registry, rerun.bin, rerun.args);
    tally.rerun(target, again);
    if (again.exit.code === 0) durations[target] = again.ms;
    if (target === 'backup' && again.exit.code === 0) latestBackup = { path: rerun.args[4]!, writes: acked.snapshot() };
    if (target === 'restore') {
      if (existsSync(rerun.published[0]!)) tally.check(rerun.published[0]!, latestBackup.writes);
      for (const path of rerun.published) rmSync(path, { force: true });
    } else if (target === 'migrate_up') {
      tally.check(migrate!.copy, migrate!.writes);
      // The migrated copy serves again.
      const reader = await ServedProcess.start(
        registry, { dbPath: migrate!.copy, hostId: 'kills-reader', writeProfile: 'read-only' },
      );
      if ((await reader.call('memory_status', owner.status())).envelope?.status !== 'OK') tally.restartFailures += 1;
      if ((await reader.close()).code !== 0) tally.unexpectedExits += 1;
      for (const path of [migrate!.copy, `${migrate!.copy}-wal`, `${migrate!.copy}-shm`, ...rerun.published])
        rmSync(path, { force: true });
    } else if (target === 'housekeep' || target === 'reembed') {
      tally.check(dbPath, acked.all());
      // Restart: a server opens the database the command worked on and answers.
      const restarted = await serverFor('owner-current');
      if ((await restarted.call('memory_status', owner.status())).envelope?.status !== 'OK') tally.restartFailures += 1;
    }
  };

  try {
    // Setup: Candidates from a delegated server, current facts from an owner, each reverified once (SUPERSEDED
    // records for housekeep), then one unkilled run of every target to size the kill delays to this machine.
    await writeAll(
      'delegated-candidate', Array.from({ length: SEED_CANDIDATES[profile] }, () => delegated.storeCandidate()),
      'memory_store',
    );
    await writeAll(
      'owner-current', Array.from({ length: SEED_CURRENTS[profile] }, () => owner.storeCurrent()), 'memory_store',
    );
    await writeAll(
      'owner-current', liveRecords(dbPath, PROJECT_ID, 'VALIDATED_CURRENT').map((record) => owner.reverify(record)),
      'memory_update',
    );
    const burstMs: Record<string, number> = {};
    for (const target of WRITE_TARGETS) burstMs[target] = await calibrateWrite(target);
    await stopServer();
    startupMs = (await runCommand(registry, ADMIN_BIN, ['--help'])).ms;
    for (const target of COMMAND_TARGETS) {
      const migrate = target === 'migrate_up' ? await schemaOneCopy() : undefined;
      const command = commandOf(target, { backup: latestBackup.path, copy: migrate?.copy ?? '' });
      const run = await runCommand(registry, command.bin, command.args);
      tally.rerun(target, run);
      durations[target] = run.ms;
      if (target === 'backup') latestBackup = { path: command.args[4]!, writes: acked.snapshot() };
      if (target === 'restore') for (const path of command.published) rmSync(path, { force: true });
      if (migrate !== undefined) for (const path of [migrate.copy, ...command.published]) rmSync(path, { force: true });
    }
    tally.check(dbPath, acked.all());
    const calibration = {
      burst_ms: Object.fromEntries(Object.entries(burstMs).map(([key, ms]) => [key, roundTo(ms, 1)])),
      command_ms: Object.fromEntries(Object.entries(durations).map(([key, ms]) => [key, roundTo(ms, 1)])),
      node_startup_ms: roundTo(startupMs, 1),
    };

    // The kills: rounds of every target once, in a seeded random order, until the count is reached (a command whose
    // every try finished before its kill is tried again in a later round) or the time is up.
    const budgetEnd = started + TIME_BUDGET_MS[profile];
    const round: Target[] = [];
    let attempted = 0;
    while (tally.kills < KILLS[profile] && performance.now() < budgetEnd && attempted < 2 * KILLS[profile]) {
      if (round.length === 0) {
        round.push(...TARGETS);
        for (let i = round.length - 1; i > 0; i -= 1) {
          const j = rng.int(i + 1);
          [round[i], round[j]] = [round[j]!, round[i]!];
        }
      }
      const target = round.shift()!;
      attempted += 1;
      if (isWrite(target)) await killWrite(target, burstMs[target]!);
      else await killCommand(target);
    }
    await stopServer();
    tally.check(dbPath, acked.all());

    return {
      figures: {
        kills: tally.kills, kills_planned: KILLS[profile], kills_attempted: attempted,
        kills_by_target: tally.killsByTarget,
        kills_with_requests_in_flight: tally.killsWithRequestsInFlight, missed_kills: tally.missedKills,
        acked_writes: acked.size, acked_writes_checked: tally.ackedChecked, lost_writes: tally.lostWrites,
        resends_after_kill: tally.resends, resend_failures: tally.resendFailures,
        audit_findings: tally.auditFindings, audit_failed_checks: [...tally.auditFailed].sort(),
        integrity_failures: tally.integrityFailures, integrity_failed_checks: [...tally.integrityFailed].sort(),
        rerun_failures: tally.rerunFailures, rerun_failed_targets: [...tally.rerunFailedTargets].sort(),
        restart_failures: tally.restartFailures, unexpected_exits: tally.unexpectedExits,
        killed_run_leftovers: tally.leftovers, migrate_state_after_kill: tally.migrateStateAfterKill,
        calibration, duration_s: roundTo((performance.now() - started) / 1000, 1),
      },
      mustBeZero: [
        'lost_writes', 'audit_findings', 'integrity_failures', 'rerun_failures', 'resend_failures', 'restart_failures',
        'unexpected_exits',
      ],
      notes: [
        `${tally.kills} seeded-random SIGKILLs (\`kills_by_target\`): a warm server with ${BURST} stores, REVERIFYs, `
          + `promotions or REPLACEs in flight, or `
          + '`factlane-admin housekeep`, `reembed`, `backup`, `restore` and `factlane-migrate up` (on a schema-1 '
          + 'copy) after a random delay past node startup.',
        'After a server kill a server restarts on the same profile and every unanswered request is resent '
          + '(`resends_after_kill`: replayed if committed, else written fresh); '
          + 'after every kill each acknowledged write is looked up at its revision (`acked_writes_checked` lookups, '
          + '`lost_writes` misses), with integrity_check, '
          + 'the FTS5 integrity-check and the lineage audit (the migrate copy is audited after its rerun, since a '
          + 'kill may rightly leave it at schema 1).',
        'Every killed command is rerun, backup and restore to a fresh path, and must exit 0 (`rerun_failures`); '
          + '`killed_run_leftovers` counts what killed runs left '
          + '(temporary files, outputs published whole or in part), which the part removes.',
      ],
    };
  } finally {
    await stopServer().catch(() => undefined);
    registry.dispose();
  }
};
