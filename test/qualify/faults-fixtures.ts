// Fixtures of the faults part (test/qualify/faults-part.ts): the built server over stdio, the operator CLIs, the
// database digest and integrity check, filling a filesystem, WAL parsing, and the request builders. Plain functions
// only (no tap), so `npm run qualify` can load them.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync, copyFileSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isErrorCode } from '../../schema/error-codes.js';
import { RawDatabase, REPO_ROOT, sqliteVec, withRaw } from '../helpers/storage.js';
export const FACTLANE_BIN = join(REPO_ROOT, 'dist/bin/factlane.js');
export const ADMIN_BIN = join(REPO_ROOT, 'dist/bin/factlane-admin.js');
export const MIGRATE_BIN = join(REPO_ROOT, 'dist/bin/factlane-migrate.js');
export const PROJECT = 'faults-project';
export const SCOPE = { scope: 'PROJECT', project_id: PROJECT } as const;
export const CLI_TIMEOUT_MS = 60_000;

export type Envelope = {
  status: string; error_code?: string;
  results?: { memory_id: string; record_id: string; revision: number; scope: Record<string, string | null> }[];
};
export type Verdict = { result: 'PASS' } | { result: 'FAIL'; reason: string } | { result: 'SKIPPED'; reason: string };
export type Case = { name: string; run: () => Promise<Verdict> };

export class CaseFailure extends Error {}
/** Fails the running case with `reason` (no paths, no fact text) unless `condition` holds. */
export function check(condition: unknown, reason: string): asserts condition {
  if (!condition) throw new CaseFailure(reason);
}
export const PASS: Verdict = { result: 'PASS' };
export const skipped = (reason: string): Verdict => ({ result: 'SKIPPED', reason });

export const nowText = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
export const hex64 = (seed: string) => createHash('sha256').update(seed).digest('hex');

/** A valid store request of the faults project: current (owner-current verifies it) or a Candidate. */
export function storeRequest(key: string, current: boolean): Record<string, unknown> {
  const now = nowText();
  return {
    ...SCOPE,
    fact: `service ${key} of the faults project listens on ` +
      `port ${8000 + (Number.parseInt(hex64(key).slice(0, 4), 16) % 1000)}`,
    memory_type: 'PROJECT_LEARNED_FACT', idempotency_key: `faults-${key}`, freshness_policy: { kind: 'never' },
    subject: `service ${key} port`,
    source_provenance: {
      source_class: 'repo_file', source_ref: `config/${key}.toml`, source_hash: hex64(key), review_ref: 'faults-review',
      extraction_method: 'manual_read',
    },
    ...(current ? {
      requested_lifecycle_state: 'VALIDATED_CURRENT', source_timestamp: now, last_verified_at: now,
    } : {}),
  };
}
export function reverifyRequest(record: { memory_id: string; revision: number }, key: string): Record<string, unknown> {
  const now = nowText();
  return {
    ...SCOPE, memory_id: record.memory_id, expected_revision: record.revision, mode: 'REVERIFY',
    idempotency_key: `faults-${key}`, verification: { last_verified_at: now, source_timestamp: now },
  };
}
export function replaceRequest(record: { memory_id: string; revision: number }, key: string): Record<string, unknown> {
  return {
    ...SCOPE, memory_id: record.memory_id, expected_revision: record.revision, mode: 'REPLACE',
    idempotency_key: `faults-${key}`,
    replacement: {
      fact: `service ${key} of the faults project moved to port 9${key.length}00`, freshness_policy: { kind: 'never' },
      source_timestamp: nowText(),
      source_provenance: {
        source_class: 'repo_file', source_ref: `config/${key}.toml`, source_hash: hex64(`${key}-b`),
        review_ref: 'faults-review', extraction_method: 'manual_read',
      },
    },
  };
}

/** The built server over stdio as an owner-current host; its child is exposed for SIGKILL. */
export class Server {
  static readonly children = new Set<ChildProcess>();
  private constructor(readonly client: Client, readonly child: ChildProcess, readonly stderr: () => string) {}

  /** Starts a server on `dbPath`; resolves with it, or with the startup stderr when it exits before answering. */
  static async start(dbPath: string): Promise<Server | { startupStderr: string }> {
    const transport = new StdioClientTransport(
      { command: process.execPath, args: [
        FACTLANE_BIN, '--db', dbPath, '--host-id', 'faults-host', '--write-profile', 'owner-current',
      ], stderr: 'pipe' },
    );
    let stderr = '';
    transport.stderr!.on('data', (chunk) => { stderr += chunk; });
    const client = new Client({ name: 'factlane-faults', version: '0.0.0' });
    try {
      await client.connect(transport);
    } catch {
      await client.close().catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, 50));
      return { startupStderr: stderr };
    }
    const child = (transport as unknown as { _process: ChildProcess })._process;
    Server.children.add(child);
    child.once('exit', () => Server.children.delete(child));
    return new Server(client, child, () => stderr);
  }

  /** Calls a tool; an isError result comes back as status ERROR. */
  async call(tool: string, request: Record<string, unknown>): Promise<Envelope> {
    const result = (await this.client.callTool({ name: tool, arguments: { request } })) as CallToolResult;
    if (result.isError) return { status: 'ERROR' };
    return result.structuredContent as Envelope;
  }

  async ok(tool: string, request: Record<string, unknown>): Promise<NonNullable<Envelope['results']>[number]> {
    const envelope = await this.call(tool, request);
    check(envelope.status === 'OK', `${tool} while seeding ended ${envelope.status} ${envelope.error_code ?? ''}`);
    return envelope.results![0]!;
  }

  /** True when the server still answers a read (status and a get of `memoryId`) with OK. */
  async answers(memoryId: string): Promise<boolean> {
    const status = await this.call('memory_status', { ...SCOPE });
    const get = await this.call('memory_get', { ...SCOPE, memory_id: memoryId });
    return status.status === 'OK' && get.status === 'OK';
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) resolve(null);
      else this.child.once('exit', resolve);
    });
    await this.client.close().catch(() => {});
    await exited;
  }

  async kill(): Promise<void> {
    const exited = new Promise((resolve) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) resolve(null);
      else this.child.once('exit', resolve);
    });
    this.child.kill('SIGKILL');
    await exited;
    await this.client.close().catch(() => {});
  }
}

export async function startServer(dbPath: string): Promise<Server> {
  const server = await Server.start(dbPath);
  if (!(server instanceof Server))
    throw new CaseFailure(`the server did not start: ${governedCode(server.startupStderr) ?? 'no governed code'}`);
  return server;
}

/** The governed code of a `<command>: <CODE>: message` line, if one names a catalogue code. */
export function governedCode(stderr: string): string | undefined {
  for (const match of stderr.matchAll(/^[\w-]+: ([A-Z][A-Z0-9_]+): /gm)) if (isErrorCode(match[1]!)) return match[1];
  return undefined;
}

export type CliRun = { status: number | null; stdout: string; stderr: string; code: string | undefined };
/** Runs an operator CLI to completion (asynchronously, so servers of this process keep being read). */
export function runCli(bin: string, args: readonly string[]): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    Server.children.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => { stdout += chunk; });
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    const timer = setTimeout(() => child.kill('SIGKILL'), CLI_TIMEOUT_MS);
    child.once('exit', (status) => {
      clearTimeout(timer);
      Server.children.delete(child);
      resolve({ status, stdout, stderr, code: governedCode(stderr) });
    });
  });
}
export const admin = (...args: string[]) => runCli(ADMIN_BIN, args);
export const migrate = (...args: string[]) => runCli(MIGRATE_BIN, args);

/** A digest of everything a write may change: every table FactLane keeps, its derived tables and the schema. */
export function digest(dbPath: string): string {
  return withRaw(dbPath, (db) => {
    const hash = createHash('sha256');
    const tables = new Set(
      (
        db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]
      ).map((row) => row.name),
    );
    const queries = [
      "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
      'SELECT * FROM adapter_records ORDER BY row_id', 'SELECT * FROM adapter_meta ORDER BY key',
      'SELECT * FROM schema_migrations ORDER BY version',
      'SELECT rowid, search_text FROM fact_fts ORDER BY rowid',
      'SELECT rowid, scope_key, is_current, embedding FROM fact_vec ORDER BY rowid',
      ...(tables.has('eligible_vectors') ? [
        'SELECT * FROM eligible_vectors ORDER BY row_id', 'SELECT * FROM eligible_shards ORDER BY scope_key, shard',
      ] : []),
      ...(tables.has('eligible_codes') ? ['SELECT rowid, shard_key, simhash_v1 FROM eligible_codes ORDER BY ' +
        'rowid'] : []),
      ...(tables.has('fact_vec_next') ? ['SELECT rowid FROM fact_vec_next ORDER BY rowid'] : []),
    ];
    for (const query of queries) {
      for (const row of db.prepare(query).all() as Record<string, unknown>[]) {
        hash.update(JSON.stringify(row, (_key, value: unknown) => (typeof value === 'bigint' ? `${value}n` : value)));
      }
      hash.update('\u0000');
    }
    return hash.digest('hex');
  });
}

export function integrityOk(dbPath: string): boolean {
  return withRaw(dbPath, (db) => {
    const rows = db.prepare('PRAGMA integrity_check').all() as { integrity_check: string }[];
    return rows.length === 1 && rows[0]!.integrity_check === 'ok';
  });
}

/** The names in `dir` except SQLite and writer-queue companions of `dbNames` and the filler file. */
export function listing(dir: string, dbNames: readonly string[] = []): string[] {
  const companions =
    new Set(dbNames.flatMap((name) => [`${name}-wal`, `${name}-shm`, `${name}-writer`, `${name}-journal`]));
  return readdirSync(dir).filter((name) => !companions.has(name) && name !== FILLER).sort();
}
export const FILLER = 'filler.bin';

/** Asserts the digest, integrity and directory listing a failed operation must leave. */
export function assertUnchanged(
  dbPath: string, before: string, dir: string, files: string[], dbNames: readonly string[],
): void {
  check(digest(dbPath) === before, 'the database digest changed');
  check(integrityOk(dbPath), 'integrity_check is not ok');
  const after = listing(dir, dbNames);
  check(
    JSON.stringify(after) === JSON.stringify(files),
    `stray files left: ${after.filter((name) => !files.includes(name)).length}`,
  );
}

export function tryRun(command: string, args: readonly string[]): boolean {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

/** Fills the filesystem holding `dir` until writes fail with ENOSPC. */
export function fill(dir: string): void {
  const fd = openSync(join(dir, FILLER), 'a');
  try {
    for (const size of [1 << 20, 1 << 12, 1]) {
      const chunk = Buffer.alloc(size, 0x5a);
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw error;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * Rewinds the WAL of each kept connection to zero bytes (a failed write leaves uncommitted frames in the file, and
 * their space would let the next write fit), then fills the filesystem again.
 */
export function squeeze(dir: string, keepers: readonly InstanceType<typeof RawDatabase>[]): void {
  for (const keeper of keepers) keeper.pragma('wal_checkpoint(TRUNCATE)');
  fill(dir);
}

/**
 * A read connection held open by this process: the -wal and -shm stay allocated while servers and commands come and go.
 */
export function keeper(dbPath: string): InstanceType<typeof RawDatabase> {
  const db = new RawDatabase(dbPath);
  sqliteVec.load(db);
  db.prepare('SELECT count(*) FROM adapter_records').get();
  return db;
}

export type Seeded = {
  current: { memory_id: string; revision: number }[]; candidate: { memory_id: string; revision: number };
};
/**
 * Seeds `dbPath` through a server: current records, one Candidate and one REPLACE (a SUPERSEDED record for housekeep).
 */
export async function seed(dbPath: string, tag: string): Promise<Seeded> {
  const server = await startServer(dbPath);
  try {
    const current = [];
    for (let n = 0; n < 6; n += 1) current.push(await server.ok('memory_store', storeRequest(`${tag}-c${n}`, true)));
    const candidate = await server.ok('memory_store', storeRequest(`${tag}-cand`, false));
    const replaced = await server.ok('memory_update', replaceRequest(current[5]!, `${tag}-r`));
    current[5] = replaced;
    return { current, candidate };
  } finally {
    await server.stop();
  }
}

/** Parses a WAL file: the byte offsets just past each valid commit frame, and the frame size. */
export function walCommits(walPath: string): { commitEnds: number[]; frameSize: number } {
  const wal = readFileSync(walPath);
  if (wal.length < 32) return { commitEnds: [], frameSize: 0 };
  const bigEndian = (wal.readUInt32BE(0) & 1) === 1;
  const pageSize = wal.readUInt32BE(8);
  const salt1 = wal.readUInt32BE(16);
  const salt2 = wal.readUInt32BE(20);
  const frameSize = 24 + pageSize;
  let s0 = wal.readUInt32BE(24);
  let s1 = wal.readUInt32BE(28);
  const sum = (buffer: Buffer, start: number, end: number) => {
    for (let i = start; i < end; i += 8) {
      const a = bigEndian ? buffer.readUInt32BE(i) : buffer.readUInt32LE(i);
      const b = bigEndian ? buffer.readUInt32BE(i + 4) : buffer.readUInt32LE(i + 4);
      s0 = (s0 + a + s1) >>> 0;
      s1 = (s1 + b + s0) >>> 0;
    }
  };
  const commitEnds: number[] = [];
  for (let offset = 32; offset + frameSize <= wal.length; offset += frameSize) {
    if (wal.readUInt32BE(offset + 8) !== salt1 || wal.readUInt32BE(offset + 12) !== salt2) break;
    sum(wal, offset, offset + 8);
    sum(wal, offset + 24, offset + frameSize);
    if (wal.readUInt32BE(offset + 16) !== s0 || wal.readUInt32BE(offset + 20) !== s1) break;
    if (wal.readUInt32BE(offset + 4) !== 0) commitEnds.push(offset + frameSize);
  }
  return { commitEnds, frameSize };
}

/** The idempotency keys of the faults stores committed in `dbPath`, read from a copy so the original is untouched. */
export function committedKeys(dbPath: string, copyDir: string, withWal: boolean, prefix = 'faults-'): Set<string> {
  mkdirSync(copyDir, { recursive: true });
  const copy = join(copyDir, 'copy.sqlite3');
  copyFileSync(dbPath, copy);
  if (withWal && existsSync(`${dbPath}-wal`)) copyFileSync(`${dbPath}-wal`, `${copy}-wal`);
  const db = new RawDatabase(copy);
  try {
    return new Set(
      (
        db.prepare(
          'SELECT idempotency_key FROM adapter_records WHERE substr(idempotency_key, 1, ?) = ?',
        ).all(prefix.length, prefix) as { idempotency_key: string }[]
      ).map((row) => row.idempotency_key),
    );
  } finally {
    db.close();
    rmSync(copyDir, { recursive: true, force: true });
  }
}

/**
 * Sends stores one after another and SIGKILLs the server while the next is in flight; returns the acknowledged keys in
 * order.
 */
export async function killMidWrites(dbPath: string, tag: string, count: number): Promise<string[]> {
  const server = await startServer(dbPath);
  const acked: string[] = [];
  for (let n = 0; n < count; n += 1) {
    const envelope = await server.call('memory_store', storeRequest(`${tag}-${n}`, n % 2 === 0));
    check(envelope.status === 'OK', `a store before the kill ended ${envelope.status} ${envelope.error_code ?? ''}`);
    acked.push(`faults-${tag}-${n}`);
  }
  const inFlight = server.call('memory_store', storeRequest(`${tag}-${count}`, true)).then((envelope) => {
    if (envelope.status === 'OK') acked.push(`faults-${tag}-${count}`);
  }, () => {});
  await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 4)));
  await server.kill();
  await inFlight;
  return acked;
}

/** Checks a reopened database: it serves (or refuses with a governed code), keeps `mustKeep`, and audits clean. */
export async function reopenAndCheck(dbPath: string, mustKeep: readonly string[]): Promise<void> {
  const started = await Server.start(dbPath);
  if (started instanceof Server) {
    const status = await started.call('memory_status', { ...SCOPE });
    await started.stop();
    check(status.status === 'OK', `the reopened server answered status ${status.status} ${status.error_code ?? ''}`);
  } else {
    check(governedCode(started.startupStderr) !== undefined, 'the reopen was refused without a governed code');
  }
  const kept = committedKeys(dbPath, `${dbPath}.check`, true);
  const lost = mustKeep.filter((key) => !kept.has(key));
  check(lost.length === 0, `${lost.length} acknowledged write(s) committed before the truncation point were lost`);
  check(integrityOk(dbPath), 'integrity_check is not ok after the reopen');
  const audit = await admin('audit', '--db', dbPath, '--json');
  check(audit.status === 0, `audit exit ${audit.status} ${audit.code ?? ''}`);
}
