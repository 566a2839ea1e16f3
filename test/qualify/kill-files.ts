import { existsSync, readdirSync } from 'node:fs';
import { RawDatabase } from '../helpers/storage.js';
import type { PublicRecord } from './server-fleet.js';

// The database files of the kills part, read and prepared on raw connections: the live records a burst picks from,
// a consistent copy taken back to schema 1 for migrate up, and what a killed backup or restore left behind.

/** The live records of the scope on disk (raw read-only), which bursts pick from. */
export function liveRecords(
  dbPath: string, projectId: string, lifecycle: 'CANDIDATE' | 'VALIDATED_CURRENT',
): PublicRecord[] {
  const db = new RawDatabase(dbPath, { readonly: true });
  try {
    return db.prepare('SELECT record_id, memory_id, revision, lifecycle_state, fact FROM adapter_records WHERE ' +
      'project_id = ? AND lifecycle_state = ? ORDER BY row_id')
      .all(projectId, lifecycle) as PublicRecord[];
  } finally {
    db.close();
  }
}

/** SUPERSEDED records of the scope housekeep can compact. */
export function compactable(dbPath: string, projectId: string): number {
  const db = new RawDatabase(dbPath, { readonly: true });
  try {
    return (db.prepare(
      "SELECT count(*) AS n FROM adapter_records WHERE project_id = ? AND lifecycle_state = 'SUPERSEDED'",
    ).get(projectId) as { n: number }).n;
  } finally {
    db.close();
  }
}

/** A consistent copy of `from` (SQLite online backup), taken while no server writes it. */
export async function copyDatabase(from: string, to: string): Promise<void> {
  const db = new RawDatabase(from, { readonly: true });
  try {
    await db.backup(to);
  } finally {
    db.close();
  }
}

/**
 * What a killed backup, restore or migrate run left: its temporary files, and whether its outputs were published in
 * full, in part or not at all.
 */
export interface Leftovers { temporaries: number; complete_outputs: number; partial_outputs: number }

export function leftoversIn(dir: string, published: readonly string[]): Leftovers {
  const names = existsSync(dir) ? readdirSync(dir) : [];
  const present = published.filter((path) => existsSync(path)).length;
  return {
    temporaries: names.filter((name) => name.startsWith('.') && /\.tmp(-wal|-shm)?$/.test(name)).length,
    complete_outputs: present > 0 && present === published.length ? 1 : 0,
    partial_outputs: present > 0 && present < published.length ? 1 : 0,
  };
}

/** The newest version in a database's migration ledger (raw read-only). */
export function schemaVersionOf(dbPath: string): number {
  const db = new RawDatabase(dbPath, { readonly: true });
  try {
    return (db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number }).v;
  } finally {
    db.close();
  }
}
