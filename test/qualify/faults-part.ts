// Qualification part 5 (issue 13): resource faults. Each case drives the built binaries (server over stdio, the
// operator CLIs) into a full filesystem, a read-only file, directory or filesystem, a corrupted page, a truncated
// WAL or a missing -shm, or a raw writer, and asserts a governed code from the catalogue plus nothing half-written:
// the database digest (records, meta, ledger, FTS, vectors, eligible forms, schema) unchanged, integrity_check ok,
// and no stray file (half backup, half restore) left beside it.
import {
  copyFileSync, closeSync, existsSync, mkdirSync, openSync, statSync, truncateSync, unlinkSync, writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { UNCODED_SCOPE_MAX_RECORDS } from '@factlane/schema';
import { openLocalHashEngine } from '../helpers/mcp.js';
import { fixtureRow, insertFixtures, padScope, scopeTuple } from '../helpers/reads.js';
import { downgradeToSchemaOne, inGatedTransaction, RawDatabase, withRaw } from '../helpers/storage.js';
import {
  admin, assertUnchanged, CaseFailure, check, committedKeys, digest, fill, FILLER, governedCode, integrityOk, keeper,
  killMidWrites, listing, migrate, PASS, PROJECT, reopenAndCheck, replaceRequest, reverifyRequest, SCOPE, seed, Server,
  skipped, squeeze,
  startServer, storeRequest, tryRun, walCommits, type Case, type CliRun, type Seeded, type Verdict,
} from './faults-fixtures.js';
import { pageCapCase, type PageCapWrite } from './faults-page-cap.js';
import type { PartReport, QualifyPart } from './qualify-report.js';

const FULL_MOUNT_SIZE = '8m';
const WRITER_FUNCTION_MISSING = /no such function: factlane_contract_v2_writer/;
const WRITER_REQUIRED = 'FACTLANE_STORAGE_V2_WRITER_REQUIRED';
/** A scope the corruption cases fill past UNCODED_SCOPE_MAX_RECORDS, so that it is coded (schema 3). */
const CODED_SCOPE = { scope: 'PROJECT', project_id: 'faults-coded' } as const;
/** Set to 1 to take the no-mount path (max_page_count) on a machine that can mount, to exercise the fallback. */
const NO_MOUNT_ENV = 'FACTLANE_QUALIFY_FAULTS_NO_MOUNT';

const MUTATIONS = [
  "INSERT INTO adapter_records (record_id) VALUES ('x')", "UPDATE adapter_records SET fact = 'rewritten'",
  'DELETE FROM adapter_records',
  "INSERT INTO adapter_meta (key, value) VALUES ('k', 'v')",
  "UPDATE adapter_meta SET value = '3' WHERE key = 'contract_version'", 'DELETE FROM adapter_meta',
  "INSERT INTO schema_migrations VALUES (9, 'x', 'y', 'z', 'w')", "UPDATE schema_migrations SET checksum = 'forged'",
  'DELETE FROM schema_migrations',
  "INSERT INTO eligible_vectors (row_id, scope_key, shard, embedding) VALUES (999999, 'x', 0, x'00')",
  'UPDATE eligible_vectors SET shard = shard + 1', 'DELETE FROM eligible_vectors',
  "INSERT INTO eligible_shards (scope_key, shard, size) VALUES ('x', 0, 1)",
  'UPDATE eligible_shards SET size = size + 1', 'DELETE FROM eligible_shards',
];

/**
 * The resource-fault cases, with their fixtures under `workDir`; mounts are recorded in `mounts` for the caller to
 * undo.
 */
async function buildCases(workDir: string, mounts: string[], cleanups: (() => void)[]): Promise<Case[]> {
  const cases: Case[] = [];
  const canMount = process.env[NO_MOUNT_ENV] === '1' ? false : (() => {
    const probe = join(workDir, 'mount-probe');
    mkdirSync(probe);
    if (!tryRun('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe])) return false;
    const ro = tryRun('mount', ['-o', 'remount,ro', probe]);
    tryRun('umount', [probe]);
    return ro ? 'ro' : 'rw';
  })();
  const mountTmpfs = (dir: string, size: string) => {
    mkdirSync(dir, { recursive: true });
    check(tryRun('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir]), 'tmpfs mount failed');
    mounts.push(dir);
  };

  // A seeded database on ext4 to copy from: fences, corruption, read-only cases.
  const baseDir = join(workDir, 'base');
  mkdirSync(baseDir);
  const basePath = join(baseDir, 'base.sqlite3');
  const baseSeed = await seed(basePath, 'base');
  const readOnlyBackup = join(workDir, 'base-backup.sqlite3');
  const baseBackup = await admin('backup', '--db', basePath, '--out', readOnlyBackup);
  check(baseBackup.status === 0, `the fixture backup exit ${baseBackup.status}`);
  const freshCopy = (dir: string, name = 'db.sqlite3') => {
    mkdirSync(dir, { recursive: true });
    const path = join(dir, name);
    copyFileSync(basePath, path);
    return path;
  };

  // --- full filesystem -------------------------------------------------------------------------------------
  const fullNames = [
    'memory_store', 'memory_update_reverify', 'memory_update_replace', 'housekeep', 'reembed', 'backup_output',
    'restore_target', 'migrate_up', 'migrate_up_backup_output',
  ].map((n) => `full_disk.${n}`);
  if (!canMount) {
    const capped: Record<string, PageCapWrite> = {
      'full_disk.memory_store': 'memory_store', 'full_disk.memory_update_reverify': 'memory_update_reverify',
      'full_disk.memory_update_replace': 'memory_update_replace',
    };
    const capDir = join(workDir, 'page-cap');
    for (const name of [...fullNames, 'full_disk.space_freed']) {
      const write = capped[name];
      cases.push({ name: write ? `${name}.max_page_count` : name, run: async () => {
        if (!write) return skipped('no tmpfs mount here, and the operator commands have no max_page_count switch');
        mkdirSync(capDir, { recursive: true });
        const failure = await pageCapCase(capDir, write, {
          store: storeRequest, reverify: reverifyRequest, replace: replaceRequest, digest, integrityOk,
        });
        return failure === null ? PASS : { result: 'FAIL', reason: failure };
      } });
    }
  } else {
    const fullDir = join(workDir, 'full');
    let server: Server | undefined;
    let keepers: InstanceType<typeof RawDatabase>[] = [];
    const dbPath = join(fullDir, 'full.sqlite3');
    const oldPath = join(fullDir, 'old.sqlite3');
    const backupFile = join(workDir, 'full-backup.sqlite3');
    let seeded: Seeded | undefined;
    const setup = async () => {
      if (seeded) return seeded;
      mountTmpfs(fullDir, FULL_MOUNT_SIZE);
      seeded = await seed(dbPath, 'full');
      const backup = await admin('backup', '--db', dbPath, '--out', backupFile);
      check(backup.status === 0, `seed backup exit ${backup.status}`);
      copyFileSync(dbPath, oldPath);
      downgradeToSchemaOne(oldPath);
      server = await startServer(dbPath);
      check(await server.answers(seeded.current[0]!.memory_id), 'the server on the full filesystem does not answer');
      keepers = [keeper(dbPath), keeper(oldPath)];
      cleanups.push(() => { for (const k of keepers) k.close(); });
      fill(fullDir);
      return seeded;
    };
    const fullCase = (name: string, body: (s: Seeded) => Promise<void>, target = dbPath, targetNames = [
      'full.sqlite3', 'old.sqlite3',
    ]) => {
      cases.push({ name, run: async () => {
        const s = await setup();
        squeeze(fullDir, keepers);
        const before = digest(target);
        const files = listing(fullDir, targetNames);
        await body(s);
        assertUnchanged(target, before, fullDir, files, targetNames);
        return PASS;
      } });
    };
    const blockedFull = async (tool: string, request: Record<string, unknown>, s: Seeded) => {
      const envelope = await server!.call(tool, request);
      check(envelope.status === 'BLOCKED' && envelope.error_code === 'BACKEND_UNAVAILABLE', `${tool} on a full disk ` +
        `ended ${envelope.status} ${envelope.error_code ?? ''}`);
      check(await server!.answers(s.current[0]!.memory_id), 'the server stopped answering reads after the full disk');
    };
    fullCase(fullNames[0]!, (s) => blockedFull('memory_store', storeRequest('full-new', true), s));
    fullCase(fullNames[1]!, (s) => blockedFull('memory_update', reverifyRequest(s.current[1]!, 'full-reverify'), s));
    fullCase(fullNames[2]!, (s) => blockedFull('memory_update', replaceRequest(s.current[2]!, 'full-replace'), s));
    fullCase(fullNames[3]!, async () => {
      const run = await admin(
        'housekeep', '--db', dbPath, '--scope', 'PROJECT', '--project-id', PROJECT, '--max-records', '10',
        '--required-free-bytes', String(1 << 30), '--json',
      );
      const outcome =
        run.status === 0 ? (JSON.parse(run.stdout) as { outcome: string; compacted_records: number }) : undefined;
      check(run.status === 1 && run.code === 'BACKEND_UNAVAILABLE', `housekeep on a full disk ` +
        `exit ${run.status} ${run.code ?? outcome?.outcome ?? ''}`);
    });
    fullCase(fullNames[4]!, async () => {
      if (server) { await server.stop(); server = undefined; }
      const run = await admin('reembed', '--db', dbPath, '--profile', 'local-hash-384');
      check(run.status === 1 && run.code === 'BACKEND_UNAVAILABLE', `reembed on a full disk ` +
        `exit ${run.status} ${run.code ?? ''}`);
    });
    fullCase(fullNames[5]!, async () => {
      if (server) { await server.stop(); server = undefined; }
      const run = await admin('backup', '--db', dbPath, '--out', join(fullDir, 'half.sqlite3'));
      check(run.status === 1 && run.code === 'BACKEND_UNAVAILABLE', `backup onto a full disk ` +
        `exit ${run.status} ${run.code ?? ''}`);
      check(
        run.stderr.includes('the disk the copy is written to is full'), `backup onto a full disk said: ${run.stderr}`,
      );
    });
    fullCase(fullNames[6]!, async () => {
      const target = join(fullDir, 'restored.sqlite3');
      const run = await admin('restore', '--from', backupFile, '--db', target);
      check(run.status === 1 && run.code === 'BACKEND_UNAVAILABLE', `restore onto a full disk ` +
        `exit ${run.status} ${run.code ?? ''}`);
      check(
        run.stderr.includes('the disk the copy is written to is full'), `restore onto a full disk said: ${run.stderr}`,
      );
    });
    fullCase(fullNames[7]!, async () => {
      const run = await migrate('up', '--db', oldPath, '--no-backup');
      check(run.status === 1 && run.code === 'BACKEND_UNAVAILABLE', `migrate up on a full disk ` +
        `exit ${run.status} ${run.code ?? ''}`);
    }, oldPath);
    fullCase(fullNames[8]!, async () => {
      const run = await migrate('up', '--db', oldPath, '--backup', join(fullDir, 'before-up.sqlite3'));
      check(run.status === 1 && run.code === 'BACKEND_UNAVAILABLE', `migrate up with its backup on a full disk ` +
        `exit ${run.status} ${run.code ?? ''}`);
    }, oldPath);
    cases.push({ name: 'full_disk.space_freed', run: async () => {
      await setup();
      if (server) { await server.stop(); server = undefined; }
      unlinkSync(join(fullDir, FILLER));
      const again = await startServer(dbPath);
      const store = await again.call('memory_store', storeRequest('full-after', true));
      await again.stop();
      check(store.status === 'OK', `a store once space is freed ended ${store.status} ${store.error_code ?? ''}`);
      const up = await migrate('up', '--db', oldPath, '--no-backup');
      check(up.status === 0, `migrate up rerun once space is freed exit ${up.status} ${up.code ?? ''}`);
      for (const path of [dbPath, oldPath]) {
        check(integrityOk(path), 'integrity_check is not ok once space is freed');
        const audit = await admin('audit', '--db', path, '--json');
        check(audit.status === 0, `audit once space is freed exit ${audit.status} ${audit.code ?? ''}`);
      }
      return PASS;
    } });
    cleanups.push(() => { if (server) server.child.kill('SIGKILL'); });
  }

  // --- read-only file, directory, filesystem ---------------------------------------------------------------
  // Root ignores chmod, so a read-only file or directory is made immutable (chattr +i) and a read-only filesystem
  // is a tmpfs remounted ro. The database is copied in with no -wal or -shm: with them present SQLite can still
  // write through an immutable directory, which is correct and not the case under test.
  const chattrWorks = (() => {
    const probe = join(workDir, 'chattr-probe');
    mkdirSync(probe);
    const ok = tryRun('chattr', ['+i', probe]);
    if (ok) tryRun('chattr', ['-i', probe]);
    return ok;
  })();
  type ReadOnlyKind = 'file' | 'directory' | 'filesystem';
  const unavailableReason = (kind: ReadOnlyKind) =>
    (kind === 'filesystem' ? (canMount === 'ro' ? undefined : 'no tmpfs mount with remount,ro on this machine')
      : (chattrWorks ? undefined : 'chattr +i is not supported here and root ignores chmod'));
  /** A directory (holding a seeded copy when `withDatabase`), then made read-only as `kind` says; returns the undo. */
  const readOnlyPlace = (kind: ReadOnlyKind, name: string, withDatabase: boolean) => {
    const dir = join(workDir, name);
    if (kind === 'filesystem') mountTmpfs(dir, '16m');
    else mkdirSync(dir, { recursive: true });
    const path = join(dir, 'db.sqlite3');
    if (withDatabase) {
      copyFileSync(basePath, path);
      // A read-only connection leaves an empty -wal and -shm behind: the fixture starts without them.
      digest(path);
      for (const companion of [`${path}-wal`, `${path}-shm`]) if (existsSync(companion)) unlinkSync(companion);
    }
    const before = withDatabase ? digest(path) : '';
    for (const companion of [`${path}-wal`, `${path}-shm`]) if (existsSync(companion)) unlinkSync(companion);
    const files = listing(dir, ['db.sqlite3']);
    const [command, args, undoArgs] =
      kind === 'filesystem' ? ['mount', ['-o', 'remount,ro', dir], ['-o', 'remount,rw', dir]]
      : ['chattr', ['+i', kind === 'file' ? path : dir], ['-i', kind === 'file' ? path : dir]];
    check(tryRun(command, args), `${command} failed`);
    const undo = () => { tryRun(command, undoArgs); };
    cleanups.push(undo);
    return { dir, path, before, files, undo };
  };
  for (const kind of ['file', 'directory', 'filesystem'] as const) {
    cases.push({ name: `read_only.${kind}.server`, run: async () => {
      const reason = unavailableReason(kind);
      if (reason) return skipped(reason);
      const { dir, path, before, files, undo } = readOnlyPlace(kind, `ro-${kind}-server`, true);
      try {
        const started = await Server.start(path);
        if (started instanceof Server) {
          const store = await started.call('memory_store', storeRequest(`ro-${kind}-new`, true));
          const answers = await started.answers(baseSeed.current[0]!.memory_id).catch(() => false);
          await started.stop();
          check(
            store.status === 'BLOCKED' && store.error_code === 'BACKEND_UNAVAILABLE',
            `a store on a read-only ${kind} ended ${store.status} ${store.error_code ?? ''}`,
          );
          check(answers, `the server on a read-only ${kind} stopped answering reads`);
        } else {
          const code = governedCode(started.startupStderr);
          check(
            code === 'BACKEND_UNAVAILABLE', `startup on a read-only ${kind} refused with ${code ?? 'no governed code'}`,
          );
        }
      } finally {
        undo();
      }
      assertUnchanged(path, before, dir, files, ['db.sqlite3']);
      return PASS;
    } });
  }
  for (const kind of ['directory', 'filesystem'] as const) {
    const outputCase = (
      name: string, command: (target: string, source: string) => Promise<CliRun>,
      prepareSource?: (source: string) => void
    ) => {
      cases.push({ name: `read_only.${kind}.${name}`, run: async () => {
        const reason = unavailableReason(kind);
        if (reason) return skipped(reason);
        const source = freshCopy(join(workDir, `ro-${kind}-${name}-source`));
        prepareSource?.(source);
        const sourceBefore = digest(source);
        const { dir, files, undo } = readOnlyPlace(kind, `ro-${kind}-${name}`, false);
        let run: CliRun;
        try {
          run = await command(join(dir, 'target.sqlite3'), source);
        } finally {
          undo();
        }
        check(digest(source) === sourceBefore, 'the source database digest changed');
        const after = listing(dir, ['db.sqlite3']);
        check(JSON.stringify(after) === JSON.stringify(files), 'stray files left in the read-only place');
        check(run.status === 1 && run.code === 'BACKEND_UNAVAILABLE', `${name} into a read-only ${kind} ` +
          `exit ${run.status} ${run.code ?? (/internal error/.test(run.stderr) ? 'internal error (ungoverned)' : '')}`);
        return PASS;
      } });
    };
    outputCase('backup_output', (target, source) => admin('backup', '--db', source, '--out', target));
    outputCase('restore_target', (target) => admin('restore', '--from', readOnlyBackup, '--db', target));
    outputCase(
      'migrate_up_backup_output', (target, source) => migrate('up', '--db', source, '--backup', target),
      downgradeToSchemaOne,
    );
  }

  // --- a corrupted page -----------------------------------------------------------------------------------
  /** True when `factlane-admin verify` refuses with BACKEND_CORRUPT or reports integrity_check FAIL (exit 3). */
  const verifyFlagsCorruption = async (path: string) => {
    const run = await admin('verify', '--db', path, '--json');
    const report =
      run.status === 3 ? (JSON.parse(run.stdout) as { checks: { name: string; status: string }[] }) : undefined;
    return run.code === 'BACKEND_CORRUPT'
      || (report?.checks.some((c) => c.name === 'integrity_check' && c.status === 'FAIL') ?? false);
  };
  /**
   * A copy of the base with a coded scope added through the product's insert (more than UNCODED_SCOPE_MAX_RECORDS
   * records, three of them current), so its current facts have eligible forms; returns its path.
   */
  const codedCopy = async (dir: string) => {
    const path = freshCopy(dir);
    const engine = await openLocalHashEngine(path);
    try {
      const tuple = scopeTuple('PROJECT', { project_id: CODED_SCOPE.project_id });
      await padScope(engine, tuple, UNCODED_SCOPE_MAX_RECORDS);
      await insertFixtures(engine, ['The faults project listens on port 8443', 'Its workers listen on port 9000',
        'The port is set in deploy.yaml'].map((fact) => ({ row: fixtureRow(tuple, fact) })));
    } finally {
      await engine.close();
    }
    return path;
  };
  /** Overwrites the root page of `table` in a copy of `source` (default: the base) with garbage; returns its path. */
  const corrupted = (dir: string, table = 'adapter_records', source = basePath) => {
    mkdirSync(dir, { recursive: true });
    const path = join(dir, 'db.sqlite3');
    copyFileSync(source, path);
    const { rootpage, pageSize } = withRaw(path, (db) => ({
      rootpage: (
        db.prepare('SELECT rootpage FROM sqlite_master WHERE name = ?').get(table) as { rootpage: number }
      ).rootpage,
      pageSize: db.pragma('page_size', { simple: true }) as number,
    }));
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (rootpage - 1) * pageSize);
    closeSync(fd);
    return path;
  };
  cases.push({ name: 'corrupt_page.server', run: async () => {
    const path = corrupted(join(workDir, 'corrupt-server'));
    const started = await Server.start(path);
    if (!(started instanceof Server)) {
      const code = governedCode(started.startupStderr);
      check(code === 'BACKEND_CORRUPT', `startup on a corrupted page refused with ${code ?? 'no governed code'}`);
      return PASS;
    }
    try {
      const answers = [
        await started.call('memory_search', {
          ...SCOPE, query: 'faults project listens on port', intent_class: 'CURRENT_PROJECT_STATE',
          retrieval_mode_kind: 'KEYWORD',
        }),
        await started.call(
          'memory_search', { ...SCOPE, query: 'faults project listens on port', intent_class: 'CURRENT_PROJECT_STATE' },
        ),
        await started.call('memory_get', { ...SCOPE, memory_id: baseSeed.current[0]!.memory_id }),
        await started.call('memory_store', storeRequest('corrupt-new', true)),
      ];
      const served = answers.filter((a) => !(a.status === 'BLOCKED' && a.error_code === 'BACKEND_CORRUPT'));
      check(
        served.length === 0,
        `over a corrupted page: ${served.map((a) => `${a.status} ${a.error_code ?? ''}`.trim()).join(', ')}`,
      );
    } finally {
      await started.stop();
    }
    return PASS;
  } });
  // The derived tables: a search that reads the damaged keyword or vector index must not answer OK.
  // CURRENT semantic search reads the scope's shards first; then the seeded scope, small and so not coded (schema 3),
  // is searched on fact_vec, as REVIEW_HISTORY is, and a coded scope on its eligible forms: each variant damages what
  // its searches read.
  const searchOver = (scope: object, mode: string, kind: string) => ({
    ...scope, query: 'faults project listens on port', intent_class: 'CURRENT_PROJECT_STATE', retrieval_mode: mode,
    retrieval_mode_kind: kind,
  });
  const variants = [
    { name: 'fts_index', table: 'fact_fts_data', mode: 'CURRENT', kinds: ['KEYWORD', 'HYBRID'], coded: false },
    { name: 'eligible_shards', table: 'eligible_shards', mode: 'CURRENT', kinds: ['SEMANTIC', 'HYBRID'], coded: false },
    { name: 'vector_index', table: 'fact_vec_vector_chunks00', mode: 'CURRENT', kinds: [
      'SEMANTIC', 'HYBRID',
    ], coded: false },
    { name: 'vector_index_history', table: 'fact_vec_vector_chunks00', mode: 'REVIEW_HISTORY', kinds: [
      'SEMANTIC', 'HYBRID',
    ], coded: false },
    { name: 'eligible_vectors', table: 'eligible_vectors', mode: 'CURRENT', kinds: [
      'SEMANTIC', 'HYBRID',
    ], coded: true },
  ] as const;
  for (const { name, table, mode, kinds, coded } of variants) {
    cases.push({ name: `corrupt_page.${name}`, run: async () => {
      const path = corrupted(
        join(workDir, `corrupt-${name}`), table, coded ? await codedCopy(join(workDir, `coded-${name}`)) : basePath,
      );
      const scope = coded ? CODED_SCOPE : SCOPE;
      const started = await Server.start(path);
      if (!(started instanceof Server)) {
        const code = governedCode(started.startupStderr);
        check(
          code === 'BACKEND_CORRUPT', `startup on a corrupted ${name} page refused with ${code ?? 'no governed code'}`,
        );
        return PASS;
      }
      try {
        const answers = [];
        for (const kind of kinds) answers.push(await started.call('memory_search', searchOver(scope, mode, kind)));
        const served = answers.filter((a) => !(a.status === 'BLOCKED' && a.error_code === 'BACKEND_CORRUPT'));
        check(served.length === 0, `searches over a corrupted ${name} ` +
          `page: ${served.map((a) => (a.status === 'ERROR' ? 'isError (ungoverned)' : `${a.status} ${a.error_code ?? ''}`.trim())).join(', ')}`);
      } finally {
        await started.stop();
      }
      check(await verifyFlagsCorruption(path), `verify of a corrupted ${name} page did not report it`);
      return PASS;
    } });
  }
  cases.push({ name: 'corrupt_page.verify', run: async () => {
    const path = corrupted(join(workDir, 'corrupt-verify'));
    check(await verifyFlagsCorruption(path), 'verify of a corrupted records page did not report it');
    return PASS;
  } });

  // --- a truncated WAL, a missing -shm ------------------------------------------------------------------------
  cases.push({ name: 'wal.truncated', run: async () => {
    const dir = join(workDir, 'wal-truncated');
    const path = freshCopy(dir);
    const acked = await killMidWrites(path, 'walt', 24);
    check(existsSync(`${path}-wal`), 'the kill left no WAL');
    const committed = committedKeys(path, join(dir, 'truth'), true, 'faults-walt-');
    check(acked.every((key) => committed.has(key)), 'an acknowledged write is missing before the truncation');
    const { commitEnds, frameSize } = walCommits(`${path}-wal`);
    const keepCommits = Math.ceil(commitEnds.length / 2);
    const cut = keepCommits === 0
      ? Math.floor(statSync(`${path}-wal`).size / 2) : commitEnds[keepCommits - 1]! + Math.floor(frameSize / 2);
    truncateSync(`${path}-wal`, cut);
    // Transactions after the cut are lost; every acknowledged write committed before it must stay (the stores are
    // sequential).
    const lostAtMost = keepCommits === 0 ? committed.size : commitEnds.length - keepCommits;
    const mustKeep = acked.slice(0, Math.max(0, committed.size - lostAtMost));
    check(commitEnds.length >= 2 && mustKeep.length > 0 && mustKeep.length < acked.length, 'the WAL held too few ' +
      'commits to cut between two of them');
    await reopenAndCheck(path, mustKeep);
    return PASS;
  } });
  cases.push({ name: 'wal.missing_shm', run: async () => {
    const dir = join(workDir, 'wal-missing-shm');
    const path = freshCopy(dir);
    const acked = await killMidWrites(path, 'shm', 16);
    check(existsSync(`${path}-shm`), 'the kill left no -shm');
    unlinkSync(`${path}-shm`);
    await reopenAndCheck(path, acked);
    return PASS;
  } });

  // --- raw writers and the fences -------------------------------------------------------------------------
  /**
   * A copy of the base whose eligible tables hold a row each (written through a gated connection), so that an UPDATE
   * or DELETE of them reaches its fence: the seeded scope is too small to be coded (schema 3), so they start empty.
   */
  const fencesCopy = (dir: string) => {
    const path = freshCopy(dir);
    inGatedTransaction(path, (raw) => raw.exec(
      `INSERT INTO eligible_shards (scope_key, shard, size) VALUES ('fences', 0, 1);
      INSERT INTO eligible_vectors (row_id, scope_key, shard, embedding) VALUES (888888, 'fences', 0, x'00')`));
    return path;
  };
  cases.push({ name: 'fences.raw_connection', run: async () => {
    const path = fencesCopy(join(workDir, 'fences-raw'));
    const before = digest(path);
    const raw = new RawDatabase(path);
    try {
      const passed = MUTATIONS.filter((statement) => {
        try {
          raw.prepare(statement).run();
          return true;
        } catch (error) {
          return !WRITER_FUNCTION_MISSING.test((error as Error).message);
        }
      });
      check(passed.length === 0, `${passed.length} raw write(s) were not refused by the fences`);
    } finally {
      raw.close();
    }
    check(digest(path) === before, 'the database digest changed');
    return PASS;
  } });
  cases.push({ name: 'fences.writer_answering_zero', run: async () => {
    const path = fencesCopy(join(workDir, 'fences-zero'));
    const before = digest(path);
    const raw = new RawDatabase(path);
    raw.function('factlane_contract_v2_writer', { deterministic: false }, () => 0);
    try {
      const passed = MUTATIONS.filter((statement) => {
        try {
          raw.prepare(statement).run();
          return true;
        } catch (error) {
          return (error as Error).message !== WRITER_REQUIRED;
        }
      });
      check(passed.length === 0, `${passed.length} write(s) with the writer function answering 0 were not refused ` +
        `with the fence marker`);
    } finally {
      raw.close();
    }
    check(digest(path) === before, 'the database digest changed');
    return PASS;
  } });
  cases.push({ name: 'fences.sqlite3_cli', run: async () => {
    if (!tryRun('sqlite3', ['--version'])) return skipped('the sqlite3 CLI is not installed');
    const path = fencesCopy(join(workDir, 'fences-cli'));
    const before = digest(path);
    const passed = MUTATIONS.filter((statement) => {
      const result = spawnSync('sqlite3', [path, `${statement};`], { encoding: 'utf8' });
      return result.status === 0 || !WRITER_FUNCTION_MISSING.test(result.stderr);
    });
    check(passed.length === 0, `${passed.length} sqlite3 CLI write(s) were not refused by the fences`);
    check(digest(path) === before, 'the database digest changed');
    return PASS;
  } });
  return cases;
}

/** Removes paths and long hex runs from a reason, so figures never carry a path. */
const safeReason = (reason: string) => reason.replace(/\/\S+/g, '<path>').slice(0, 200);

/** Part 5 of `npm run qualify`: resource faults (the same set in quick and full, under a minute). */
export const runFaultsPart: QualifyPart = async (_profile, workDir) => {
  const mounts: string[] = [];
  const cleanups: (() => void)[] = [];
  const results: Record<string, 'PASS' | 'FAIL' | 'SKIPPED'> = {};
  const reasons: Record<string, string> = {};
  const skippedCases: { name: string; reason: string }[] = [];
  try {
    const cases = await buildCases(workDir, mounts, cleanups);
    for (const { name, run } of cases) {
      let verdict: Verdict;
      try {
        verdict = await run();
      } catch (error) {
        const message =
          error instanceof CaseFailure ? error.message : `unexpected: ${(error as Error)?.message ?? String(error)}`;
        verdict = { result: 'FAIL', reason: message };
        if (!(error instanceof CaseFailure))
          process.stderr.write(`qualify faults: ${name}: ${(error as Error)?.stack ?? String(error)}\n`);
      }
      results[name] = verdict.result;
      if (verdict.result === 'FAIL') reasons[name] = safeReason(verdict.reason);
      if (verdict.result === 'SKIPPED') skippedCases.push({ name, reason: safeReason(verdict.reason) });
      process.stderr.write(
        `qualify faults: ${name} ${verdict.result}` +
          `${verdict.result === 'PASS' ? '' : `: ${safeReason(verdict.reason)}`}\n`,
      );
    }
  } finally {
    for (const child of Server.children) child.kill('SIGKILL');
    for (const cleanup of cleanups) {
      try { cleanup(); } catch { /* best effort */ }
    }
    for (const dir of mounts.reverse()) {
      if (!tryRun('umount', [dir])) tryRun('umount', ['-l', dir]);
    }
  }
  const failures = Object.values(results).filter((r) => r === 'FAIL').length;
  const report: PartReport = {
    figures: {
      cases: Object.keys(results).length, failures, skipped: skippedCases, case_results: results,
      ...(failures > 0 ? { failure_reasons: reasons } : {}),
    },
    mustBeZero: ['failures'],
    notes: [
      'Each case drives the built server or an operator command into a resource fault (a full tmpfs, a read-only ' +
        'file, directory or filesystem, a corrupted page, a truncated WAL or a missing -shm after SIGKILL, a raw ' +
        'writer) and passes when it ends with the expected governed code and leaves the database digest, ' +
        'integrity_check and the directory listing as they were.',
      'Without a tmpfs mount the tool writes fall back to SQLite max_page_count in process (cases suffixed ' +
        '.max_page_count) and the operator commands are skipped; root ignores chmod, so read-only files and ' +
        'directories are made with chattr +i.',
      '`cases` counts them, `failures` counts FAIL, `skipped` lists the cases this machine could not set up and why, ' +
        '`case_results` gives each verdict (and `failure_reasons` what went wrong).',
    ],
  };
  return report;
};
