import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import { CODED_SCOPE_KEYS_QUERY, UNCODED_SCOPE_MAX_RECORDS } from '@factlane/schema';
import type { RecordRow } from './record-rows.js';
import type { DB } from '../../generated/db.js';
import { inSnapshot } from './read-snapshot.js';
import { simhashCode } from './simhash-projection.js';
import { runShape } from './statement-shapes.js';

// The eligible vector forms (STORAGE.md §4.5, docs/decisions/0017-eligible-vector-layout.md): for every
// VALIDATED_CURRENT record of a coded scope, a copy of its float vector (eligible_vectors), its SimHash code in one
// shard of its scope (eligible_codes) and the shard's size (eligible_shards). Nothing else is in them, so a CURRENT
// semantic query never scores or counts a Candidate. fact_vec stays the float source; these rows are rebuilt from it.
// Since schema 3 (docs/decisions/0027-small-scope-vectors.md) a scope is coded only once it holds more than
// UNCODED_SCOPE_MAX_RECORDS records: a smaller scope keeps each vector once, in fact_vec, and is searched exactly
// there, with the eligibility filter inside the KNN (before k) over at most that many vectors.

/** The codes one chunk of `eligible_codes` holds (`chunk_size=512`, migration 0004). */
export const CODE_CHUNK_ROWS = 512;
/** SQLite allows 500 terms in a compound SELECT: one UNION ALL arm per shard, so a scope keeps fewer shards. */
const MAX_SHARDS = 400;

/**
 * How many vectors a scope of `total` eligible vectors fills a shard with: whole chunks of CODE_CHUNK_ROWS, as many as
 * 8·√total rounds to (at least one), and enough that the scope keeps at most MAX_SHARDS. vec0 reads and ranks every
 * slot of each chunk a first pass touches, filled or not, so a shard ending just past a chunk's end costs a whole
 * chunk more (decision 0035). The first pass costs about k × shard size per shard, with k in proportion to the shard's
 * share of FIRST_PASS_ROWS, so about FIRST_PASS_ROWS × shard size in all: small shards for small scopes. Each shard
 * also costs a statement arm and at least MIN_SHARD_K candidates to re-score, so big scopes want fewer, bigger
 * shards; √total balances the two (decisions 0017 and 0035 have the measurements).
 */
export function shardCapacity(total: number): number {
  const chunks = Math.max(1, Math.round((8 * Math.sqrt(total)) / CODE_CHUNK_ROWS),
    Math.ceil(total / MAX_SHARDS / CODE_CHUNK_ROWS));
  return chunks * CODE_CHUNK_ROWS;
}

/**
 * Which of a scope's shards (their sizes, in shard order) the next eligible vector goes to: the newest shard still
 * under shardCapacity of the new total, else a new shard (`sizes.length`). Shards fill one at a time, so all but the
 * one filling stay in whole chunks while the capacity grows. A place freed in an older shard (a record superseded) is
 * taken again only once every newer shard is full: vec0 reuses a free slot of a partition's last chunk only, so filling
 * an older shard's gap could open a chunk for one code.
 */
export function nextShard(sizes: readonly number[]): number {
  const capacity = shardCapacity(sizes.reduce((sum, size) => sum + size, 1));
  for (let shard = sizes.length - 1; shard >= 0; shard -= 1) if (sizes[shard]! < capacity) return shard;
  return sizes.length;
}

/** A scope of at most this many eligible vectors is searched exactly: every one of them is re-scored. */
export const EXACT_SCOPE_ROWS = 256;
/**
 * How many codes the first pass keeps over a larger scope. Measured on the search bench's data (decision 0017):
 * recall@8 0.99 at 2k-10k with 128 against 0.995 with 256, at 0.5-0.7 ms less a search at 10k. At 100k each shard's
 * floor of MIN_SHARD_K decides, so 128 and 256 keep the same codes there.
 */
export const FIRST_PASS_ROWS = 128;
/** The least k asked of one shard, so a shard's best few always reach the exact re-scoring. */
export const MIN_SHARD_K = 8;

/** The size of a coded scope's first pass: FIRST_PASS_ROWS codes in all, at least MIN_SHARD_K from each shard. */
export interface FirstPass {
  readonly rows: number;
  readonly minShardK: number;
}

export const FIRST_PASS: FirstPass = { rows: FIRST_PASS_ROWS, minShardK: MIN_SHARD_K };
/** A rebuild reports its progress every this many vectors (one progress line per report on the operator's stderr). */
export const REBUILD_REPORT_ROWS = 1000;

/** A vector neighbour: the record's row id and its exact cosine distance on the stored float vector. */
export interface Neighbour {
  readonly rowid: number;
  readonly distance: number;
}

type Reader = Kysely<DB> | Transaction<DB>;

/** The bytes of a float32 vector as SQLite binds a vector blob (a view, no copy); floatVector reads them back. */
export function vectorBytes(vector: Float32Array): Uint8Array {
  return new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** A stored float32 vector blob as a Float32Array of its own (blobs need not be 4-byte aligned). */
export function floatVector(blob: Uint8Array): Float32Array {
  return new Float32Array(blob.buffer.slice(blob.byteOffset, blob.byteOffset + blob.byteLength));
}

// Codes by vector, so a code computed ahead of a write transaction is only looked up inside it: the writer lock
// (STORAGE.md §6) is then not held while a code is computed (0.2-0.7 ms of a store). Vectors are never changed after
// they are embedded or read, and a WeakMap lets each code go with its vector.
const CODES = new WeakMap<Float32Array, Uint8Array>();

/** The SimHash code of a vector that is, or is about to become, eligible: computed once per vector object. */
export function eligibleCode(vector: Float32Array): Uint8Array {
  let code = CODES.get(vector);
  if (code === undefined) {
    code = simhashCode(vector);
    CODES.set(vector, code);
  }
  return code;
}

// Scopes this process has seen coded (by a search or a write). Most scopes never are, and their current writes
// need no code: only a scope seen coded has its codes computed ahead of the write transaction. A scope coded by
// another process since gets the code inside the transaction instead, once. Nothing else depends on this set.
const SEEN_CODED = new Set<string>();
const SEEN_CODED_MAX = 4096;

function sawCoded(scopeKey: string): void {
  if (SEEN_CODED.has(scopeKey)) return;
  if (SEEN_CODED.size >= SEEN_CODED_MAX) SEEN_CODED.delete(SEEN_CODED.values().next().value!);
  SEEN_CODED.add(scopeKey);
}

/**
 * Before the write transaction that makes `vector` VALIDATED_CURRENT in the scope: computes its code when this
 * process has seen the scope coded, so the insert inside only looks it up and the writer lock (STORAGE.md §6) is
 * not held meanwhile. True when the code is ready.
 */
export function codeAheadOfWrite(scopeKey: string, vector: Float32Array): boolean {
  if (!SEEN_CODED.has(scopeKey)) return false;
  eligibleCode(vector);
  return true;
}

/**
 * Adds the eligible forms of one VALIDATED_CURRENT record inside the caller's write transaction: the float copy,
 * the SimHash code in the shard nextShard picks from the scope's shard sizes, and that shard's size.
 */
export async function addEligibleVector(
  trx: Transaction<DB>, rowId: bigint, scopeKey: string, embedding: Float32Array,
): Promise<void> {
  const held = (await runShape(trx, 'scopeShards', [scopeKey], ([key]) => sql<{ shard: number; size: number }>`
    SELECT shard, size FROM eligible_shards WHERE scope_key = ${key} ORDER BY shard`.compile(trx))).rows;
  sawCoded(scopeKey);
  // The shard nextShard picks, or none when it opens a new one, numbered after the last.
  const grown = held[nextShard(held.map((row) => row.size))];
  const shard = grown?.shard ?? (held.at(-1)?.shard ?? -1) + 1;
  if (grown !== undefined) {
    await runShape(trx, 'growShard', [scopeKey, shard], ([key, s]) =>
      sql`UPDATE eligible_shards SET size = size + 1 WHERE scope_key = ${key} AND shard = ${s}`.compile(trx));
  } else {
    await runShape(trx, 'openShard', [scopeKey, shard], ([key, s]) =>
      sql`INSERT INTO eligible_shards (scope_key, shard, size) VALUES (${key}, ${s}, 1)`.compile(trx));
  }
  await runShape(trx, 'insertEligibleVector', [rowId, scopeKey, shard, vectorBytes(embedding)], ([id, key, s, bytes]) =>
    sql`INSERT INTO eligible_vectors (row_id, scope_key, shard, embedding)
      VALUES (${id}, ${key}, ${s}, ${bytes})`.compile(trx));
  // vec0 refuses a REAL rowid: bind BigInt.
  const codeArgs = [rowId, `${scopeKey}/${shard}`, eligibleCode(embedding)] as const;
  await runShape(trx, 'insertEligibleCode', codeArgs, ([id, shardKey, code]) =>
    sql`INSERT INTO eligible_codes (rowid, shard_key, simhash_v1) VALUES (${id}, ${shardKey}, vec_bit(${code}))`
      .compile(trx));
}

/**
 * Keeps the eligible forms in step with one record just inserted (its `adapter_records` and `fact_vec` rows already
 * written) inside the caller's write transaction. A scope of at most UNCODED_SCOPE_MAX_RECORDS records keeps none.
 * The insert that brings the scope past that codes it: the forms of every VALIDATED_CURRENT record of the scope,
 * this one included, in row id order. In a scope coded before, a VALIDATED_CURRENT record gets its forms
 * (`embedding` is its float vector; null for any other lifecycle).
 */
export async function keepEligibleFormsOnInsert(
  trx: Transaction<DB>, rowId: bigint, scopeKey: string, embedding: Float32Array | null,
): Promise<void> {
  // A coded scope has a shard row (one primary-key probe); only a scope without one counts its records, at most one
  // past the threshold, which tells "not coded" from "coded by this insert". -1 means coded.
  const args = [scopeKey, scopeKey];
  const records = Number((await runShape(trx, 'scopeRecordCount', args, ([shardsKey, recordsKey]) => sql<{ n: number }>`
    SELECT CASE WHEN EXISTS (SELECT 1 FROM eligible_shards WHERE scope_key = ${shardsKey}) THEN -1
      ELSE (SELECT count(*) FROM (SELECT 1 FROM adapter_records WHERE scope_key = ${recordsKey}
        LIMIT ${sql.lit(UNCODED_SCOPE_MAX_RECORDS + 1)})) END AS n`.compile(trx))).rows[0]!.n);
  if (records === -1) {
    if (embedding !== null) await addEligibleVector(trx, rowId, scopeKey, embedding);
  } else if (records > UNCODED_SCOPE_MAX_RECORDS) {
    await codeScope(trx, scopeKey);
  }
}

/**
 * Adds the eligible forms of every VALIDATED_CURRENT record of a scope that has none yet, in row id order, from their
 * `fact_vec` floats (codeNewScope).
 */
async function codeScope(trx: Transaction<DB>, scopeKey: string): Promise<void> {
  // A join of a vec0 table by rowid has no Kysely builder (fact_vec has no generated rowid column), hence raw SQL.
  const { rows } = await sql<{ row_id: number; embedding: Uint8Array }>`
    SELECT r.row_id, v.embedding FROM adapter_records r JOIN fact_vec v ON v.rowid = r.row_id
    WHERE r.scope_key = ${scopeKey} AND r.lifecycle_state = 'VALIDATED_CURRENT' ORDER BY r.row_id`.execute(trx);
  await codeNewScope(trx, scopeKey, rows.map((row) => ({ rowId: row.row_id, bytes: row.embedding })));
}

/**
 * The shard of each of `count` vectors added one at a time, in order, to a scope without shards, exactly as
 * addEligibleVector chooses it (nextShard), and each shard's size after the last.
 */
export function shardsOfNewScope(count: number): { shards: readonly number[]; sizes: readonly number[] } {
  const shards: number[] = [];
  const sizes: number[] = [];
  for (let added = 0; added < count; added += 1) {
    const shard = nextShard(sizes);
    sizes[shard] = (sizes[shard] ?? 0) + 1;
    shards.push(shard);
  }
  return { shards, sizes };
}

/**
 * A current record's vector as codeNewScope takes it: its `fact_vec` blob as read, copied as it is into
 * `eligible_vectors` and turned into floats only for its code, a batch at a time (a rebuild holds every coded vector).
 */
interface NewScopeVector {
  readonly rowId: number;
  readonly bytes: Uint8Array;
}

/** Most vectors one statement of codeNewScope adds (4 bound values each). */
const NEW_SCOPE_BATCH_ROWS = 128;

/**
 * Codes a scope that has no eligible form yet, inside the caller's write transaction: the forms of `vectors` (its
 * VALIDATED_CURRENT records, in row id order) in the shards addEligibleVector would have put them in one by one
 * (shardsOfNewScope), the same rows and the same order in each vec0 partition, written a batch per statement instead
 * of four statements per vector; a scope without a current record gets an empty shard 0, the mark that it is coded.
 * `onAdded` hears each batch's size once it is written.
 */
async function codeNewScope(
  trx: Transaction<DB>, scopeKey: string, vectors: readonly NewScopeVector[], onAdded?: (count: number) => void,
  batchEnd = (start: number) => start + NEW_SCOPE_BATCH_ROWS,
): Promise<void> {
  sawCoded(scopeKey);
  const { shards, sizes } = shardsOfNewScope(vectors.length);
  const shardRows = sizes.length === 0 ? [sql`(${scopeKey}, 0, 0)`]
    : sizes.map((size, shard) => sql`(${scopeKey}, ${shard}, ${size})`);
  await sql`INSERT INTO eligible_shards (scope_key, shard, size) VALUES ${sql.join(shardRows)}`.execute(trx);
  for (let start = 0; start < vectors.length;) {
    const end = Math.min(vectors.length, Math.max(start + 1, batchEnd(start)));
    const batch = vectors.slice(start, end).map((vector, offset) => ({ ...vector, shard: shards[start + offset]! }));
    await sql`INSERT INTO eligible_vectors (row_id, scope_key, shard, embedding) VALUES ${sql.join(batch.map((v) =>
      sql`(${BigInt(v.rowId)}, ${scopeKey}, ${v.shard}, ${v.bytes})`))}`.execute(trx);
    // vec0 refuses a REAL rowid: bind BigInt.
    await sql`INSERT INTO eligible_codes (rowid, shard_key, simhash_v1) VALUES ${sql.join(batch.map((v) =>
      sql`(${BigInt(v.rowId)}, ${`${scopeKey}/${v.shard}`}, vec_bit(${simhashCode(floatVector(v.bytes))}))`))}`
      .execute(trx);
    onAdded?.(batch.length);
    start = end;
  }
}

/** Removes the eligible forms of one record (if it has any) inside the caller's write transaction. */
export async function removeEligibleVector(trx: Transaction<DB>, rowId: bigint): Promise<void> {
  // RETURNING names the shard the row was in, so the row is found once.
  const held = (await runShape(trx, 'deleteEligibleVector', [rowId], ([id]) => sql<{ scope_key: string; shard: number }>`
    DELETE FROM eligible_vectors WHERE row_id = ${id} RETURNING scope_key, shard`.compile(trx))).rows[0];
  if (held === undefined) return;
  await runShape(trx, 'shrinkShard', [held.scope_key, held.shard], ([key, s]) =>
    sql`UPDATE eligible_shards SET size = size - 1 WHERE scope_key = ${key} AND shard = ${s}`.compile(trx));
  await runShape(trx, 'deleteEligibleCode', [rowId], ([id]) =>
    sql`DELETE FROM eligible_codes WHERE rowid = ${id}`.compile(trx));
}

/**
 * Rebuilds every eligible form from the float source inside the caller's write transaction: empties the three
 * tables, then codes each scope of more than UNCODED_SCOPE_MAX_RECORDS records as the insert that takes a scope past
 * it does (codeNewScope): its `fact_vec` rows whose `is_current` is 1, in row id order (so a rebuild is deterministic),
 * and an empty shard for a coded scope without one. Used by `factlane-migrate up` (schemas 2, 3 and 4) and by the
 * reembed switch. Returns how many vectors it added.
 * `onRows` hears the vectors added of the total every REBUILD_REPORT_ROWS vectors and once at the end.
 */
export async function rebuildEligibleVectors(
  trx: Transaction<DB>, onRows?: (done: number, total: number) => void,
): Promise<number> {
  await sql`DELETE FROM eligible_codes`.execute(trx);
  await sql`DELETE FROM eligible_vectors`.execute(trx);
  await sql`DELETE FROM eligible_shards`.execute(trx);
  const coded = (await sql<{ scope_key: string }>`${sql.raw(CODED_SCOPE_KEYS_QUERY)}`.execute(trx)).rows
    .map((row) => row.scope_key);
  // A full scan of vec0 with a metadata filter, kept to the coded scopes (passed as one JSON array) in SQL so that the
  // floats of small scopes never reach JavaScript; the float vector comes back as its 4-byte-per-component blob.
  const { rows } = await sql<{ rowid: number; scope_key: string; embedding: Uint8Array }>`
    SELECT rowid, scope_key, embedding FROM fact_vec WHERE is_current = ${1n}
      AND scope_key IN (SELECT value FROM json_each(${JSON.stringify(coded)})) ORDER BY rowid`.execute(trx);
  const byScope = new Map<string, NewScopeVector[]>(coded.map((key) => [key, []]));
  for (const row of rows) byScope.get(row.scope_key)!.push({ rowId: row.rowid, bytes: row.embedding });
  // Batches end at each multiple of REBUILD_REPORT_ROWS of the vectors added, so progress is heard at exactly those.
  let added = 0;
  const onAdded = (count: number) => {
    added += count;
    if (added % REBUILD_REPORT_ROWS === 0 && added < rows.length) onRows?.(added, rows.length);
  };
  const toNextReport = (start: number) =>
    start + Math.min(NEW_SCOPE_BATCH_ROWS, REBUILD_REPORT_ROWS - (added % REBUILD_REPORT_ROWS));
  for (const [scopeKey, vectors] of byScope) await codeNewScope(trx, scopeKey, vectors, onAdded, toNextReport);
  onRows?.(rows.length, rows.length);
  return rows.length;
}

/**
 * CURRENT semantic neighbours of `embedding` in the exact scope, nearest first (ties by row id), at most `limit`.
 * A coded scope (one with `eligible_shards` rows) is searched on its eligible forms only: each shard returns its
 * nearest codes by Hamming distance (k in proportion to its size, at least MIN_SHARD_K), and those candidates are
 * re-scored on their float vectors by exact cosine distance. A coded scope of at most EXACT_SCOPE_ROWS eligible
 * vectors sends all of them to the re-scoring: exact search. Each shard's k costs vec0 about rows x k comparisons,
 * so many small k beat one large k over the whole scope. A scope not coded (at most UNCODED_SCOPE_MAX_RECORDS
 * records) is searched exactly on `fact_vec` (uncodedNeighbours). `columns` of each neighbour's `adapter_records`
 * row come back in the same statement (a search ranks on them); a neighbour whose record is gone is left out.
 * A search always takes the FIRST_PASS sizes; the search bench varies `firstPass` to print its recall / latency
 * frontier.
 * The shards are read by one statement and searched by another, so both run on one snapshot (inSnapshot): between
 * two snapshots other commits could open a shard and move a record into it, and a search that never asked that shard
 * would miss the record in every state the database was in.
 */
export async function eligibleNeighbours<const C extends readonly (keyof RecordRow)[] = []>(
  reader: Reader, scopeKey: string, embedding: Float32Array, limit: number, columns: C = [] as unknown as C,
  firstPass: FirstPass = FIRST_PASS,
): Promise<(Neighbour & Pick<RecordRow, C[number]>)[]> {
  if (limit <= 0) return [];
  return inSnapshot(reader, (db) => neighboursInSnapshot(db, scopeKey, embedding, limit, columns, firstPass));
}

async function neighboursInSnapshot<const C extends readonly (keyof RecordRow)[]>(
  reader: Reader, scopeKey: string, embedding: Float32Array, limit: number, columns: C, firstPass: FirstPass,
): Promise<(Neighbour & Pick<RecordRow, C[number]>)[]> {
  type Shard = { shard: number; size: number };
  const shards = (await runShape(reader, 'eligibleShards', [scopeKey], ([key]) => sql<Shard>`
    SELECT shard, size FROM eligible_shards WHERE scope_key = ${key} ORDER BY shard`.compile(reader))).rows;
  if (shards.length === 0) return uncodedNeighbours(reader, scopeKey, embedding, limit, columns);
  sawCoded(scopeKey);
  const total = shards.reduce((sum, shard) => sum + shard.size, 0);
  if (total === 0) return [];
  const code = simhashCode(embedding);
  // The sizes are those of the snapshot the KNN reads, so an empty shard holds nothing to ask for. A small scope
  // asks each shard for EXACT_SCOPE_ROWS, every vector it holds (vec0 returns all the rows of a smaller partition).
  const shardK = (size: number) => (total <= EXACT_SCOPE_ROWS ? EXACT_SCOPE_ROWS
    : Math.max(firstPass.minShardK, Math.ceil((firstPass.rows * size) / total)));
  const passes = shards.filter(({ size }) => size > 0)
    .map(({ shard, size }) => ({ shardKey: `${scopeKey}/${shard}`, k: BigInt(shardK(size)) }));
  // One statement: a KNN over the codes of each shard (vec0 takes one partition and one k per query, hence the
  // UNION ALL), then the exact cosine distance on the stored float32 vectors of those candidates (STORAGE.md §4.5
  // rule 2), the same distance vec0 computes.
  const args = [vectorBytes(embedding), limit, code, ...passes.flatMap((pass) => [pass.k, pass.shardKey])];
  const shape = `eligibleNeighbours:${passes.length}:${columns.join(',')}`;
  const { rows } = await runShape(reader, shape, args, ([vector, n, c, ...bound]) => {
    const arms = passes.map((_, i) => sql`SELECT rowid FROM eligible_codes
      WHERE simhash_v1 MATCH vec_bit(${c}) AND k = ${bound[2 * i]} AND shard_key = ${bound[2 * i + 1]}`);
    const nearest = sql`SELECT row_id AS rowid, vec_distance_cosine(embedding, ${vector}) AS distance
      FROM eligible_vectors WHERE row_id IN (${sql.join(arms, sql` UNION ALL `)})
      ORDER BY distance, row_id LIMIT ${n}`;
    if (columns.length === 0) return sql<Neighbour>`${nearest}`.compile(reader);
    return withRecordColumns<Neighbour & Pick<RecordRow, C[number]>>(nearest, columns).compile(reader);
  });
  return rows as (Neighbour & Pick<RecordRow, C[number]>)[];
}

/**
 * The neighbours of a scope that is not coded, exactly: a vec0 KNN of the scope's `fact_vec` partition whose
 * eligibility filter (`is_current = 1`, metadata) vec0 applies before it scores a vector or counts it against k, so
 * a Candidate is never scored (STORAGE.md §4.5 rule 1). k is UNCODED_SCOPE_MAX_RECORDS, every vector such a scope can
 * hold, so each eligible vector gets its exact distance and the order (distance, then row id) is the coded path's.
 * The KNN is materialised first: vec0 refuses a KNN whose results another ORDER BY sorts.
 */
async function uncodedNeighbours<const C extends readonly (keyof RecordRow)[]>(
  reader: Reader, scopeKey: string, embedding: Float32Array, limit: number, columns: C,
): Promise<(Neighbour & Pick<RecordRow, C[number]>)[]> {
  const args = [vectorBytes(embedding), scopeKey, limit];
  const { rows } = await runShape(reader, `uncodedNeighbours:${columns.join(',')}`, args, ([vector, key, n]) => {
    const knn = sql`SELECT rowid, distance FROM fact_vec WHERE embedding MATCH ${vector}
      AND k = ${sql.lit(UNCODED_SCOPE_MAX_RECORDS)} AND scope_key = ${key} AND is_current = 1`;
    const nearest = sql`SELECT rowid, distance FROM knn ORDER BY distance, rowid LIMIT ${n}`;
    if (columns.length === 0) return sql<Neighbour>`WITH knn AS MATERIALIZED (${knn}) ${nearest}`.compile(reader);
    const selected = sql.join(columns.map((column) => sql.ref(`r.${column}`)));
    return sql`WITH knn AS MATERIALIZED (${knn}) SELECT n.rowid, n.distance, ${selected} FROM (${nearest}) AS n
      JOIN adapter_records r ON r.row_id = n.rowid ORDER BY n.distance, n.rowid`.compile(reader);
  });
  return rows as (Neighbour & Pick<RecordRow, C[number]>)[];
}

/**
 * Neighbours (`rowid`, `distance`, nearest first) joined to `columns` of their `adapter_records` rows, in one
 * statement. A neighbour whose record is gone has no row. `nearest` must not be flattened into the join (its LIMIT
 * keeps it a subquery of its own).
 */
function withRecordColumns<R>(nearest: RawBuilder<unknown>, columns: readonly string[]): RawBuilder<R> {
  const selected = sql.join(columns.map((column) => sql.ref(`r.${column}`)));
  return sql<R>`SELECT n.rowid, n.distance, ${selected} FROM (${nearest}) AS n
    JOIN adapter_records r ON r.row_id = n.rowid ORDER BY n.distance, n.rowid`;
}
