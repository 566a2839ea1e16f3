import { sql, type RawBuilder } from 'kysely';
import { UNCODED_SCOPE_MAX_RECORDS } from '@factlane/schema';
import { sawCoded, vectorBytes } from './eligible-vectors.js';
import { hammingDistances, nearestPositions } from './hamming-scan.js';
import { inSnapshot } from './read-snapshot.js';
import type { Reader } from './record-repository.js';
import type { RecordRow } from './record-rows.js';
import { scopeCodes } from './scope-codes.js';
import { simhashCode } from './simhash-projection.js';
import { runShape } from './statement-shapes.js';

// CURRENT semantic search (STORAGE.md §4.5 rules 1 and 2): a coded scope is read from the eligible forms that
// eligible-vectors.ts keeps, a first pass over the SimHash codes of each shard (in memory, decision 0053) re-scored
// exactly on the float vectors;
// a scope too small to be coded is read exactly from `fact_vec`, with the eligibility filter before k.

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

/** A vector neighbour: the record's row id and its exact cosine distance on the stored float vector. */
export interface Neighbour {
  readonly rowid: number;
  readonly distance: number;
}

/**
 * CURRENT semantic neighbours of `embedding` in the exact scope, nearest first (ties by row id), at most `limit`.
 * A coded scope (one with `eligible_shards` rows) is searched on its eligible forms only: each shard returns its
 * nearest codes by Hamming distance (k in proportion to its size, at least MIN_SHARD_K), and those candidates are
 * re-scored on their float vectors by exact cosine distance. A coded scope of at most EXACT_SCOPE_ROWS eligible
 * vectors sends all of them to the re-scoring: exact search. The first pass runs in memory (decision 0053): the
 * scope's codes as this connection last read them from vec0 (scopeCodes: a shard's again when its generation moved),
 * their Hamming distances from the query's code in WebAssembly, each shard's k nearest (hamming-scan.ts). A scope not
 * coded (at most UNCODED_SCOPE_MAX_RECORDS records) is searched exactly on `fact_vec` (uncodedNeighbours).
 * `columns` of each neighbour's `adapter_records` row come back in the same statement (a search ranks on them); a
 * neighbour whose record is gone is left out.
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
  type Shard = { shard: number; size: number; generation: number };
  const shards = (await runShape(reader, 'eligibleShards', [scopeKey], ([key]) => sql<Shard>`
    SELECT shard, size, generation FROM eligible_shards WHERE scope_key = ${key} ORDER BY shard`
    .compile(reader))).rows;
  if (shards.length === 0) return uncodedNeighbours(reader, scopeKey, embedding, limit, columns);
  sawCoded(scopeKey);
  const total = shards.reduce((sum, shard) => sum + shard.size, 0);
  if (total === 0) return [];
  const codes = await scopeCodes(reader, scopeKey, shards);
  // A small scope asks each shard for EXACT_SCOPE_ROWS, every code it holds.
  const shardK = (size: number) => (total <= EXACT_SCOPE_ROWS ? EXACT_SCOPE_ROWS
    : Math.max(firstPass.minShardK, Math.ceil((firstPass.rows * size) / total)));
  // The shards' codes, in shard order: the first pass's distances come in the same order, run after run.
  const served = shards.filter(({ shard }) => codes.has(shard));
  const distances = hammingDistances(served.map(({ shard }) => codes.get(shard)!.codes), simhashCode(embedding));
  const candidateRowIds: number[] = [];
  const positions: number[] = [];
  let from = 0;
  for (const { shard, size } of served) {
    const { rowIds } = codes.get(shard)!;
    positions.length = 0;
    nearestPositions(distances, from, from + rowIds.length, shardK(size), positions);
    for (const position of positions) candidateRowIds.push(Number(rowIds[position - from]!));
    from += rowIds.length;
  }
  if (candidateRowIds.length === 0) return [];
  // The exact cosine distance on the stored float32 vectors of the first pass's candidates (STORAGE.md §4.5 rule 2),
  // the same distance vec0 computes. In row id order: consecutive lookups share the primary key's pages (0.17
  // against 0.24 ms for 150 candidates, in process).
  const candidates = JSON.stringify(candidateRowIds.sort((a, b) => a - b));
  const args = [vectorBytes(embedding), candidates, limit];
  const { rows } = await runShape(reader, `eligibleNeighbours:${columns.join(',')}`, args, ([vector, ids, n]) => {
    const nearest = sql`SELECT row_id AS rowid, vec_distance_cosine(embedding, ${vector}) AS distance
      FROM eligible_vectors WHERE row_id IN (SELECT value FROM json_each(${ids}))
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
