/** One released migration file (STORAGE.md §12.1): its version, name and the SHA-256 of its bytes as shipped. */
export interface ReleasedMigration {
  readonly version: number;
  readonly name: string;
  readonly checksum: string;
}

/**
 * The migration list with checksums (STORAGE.md §12.5). A released file never changes (§12.1): the runner refuses a
 * file of a version listed here whose bytes differ, so an altered install cannot migrate a database into a schema the
 * genuine release refuses. A new migration joins the list in the change that releases it; SCHEMA_VERSION is the last.
 */
export const RELEASED_MIGRATIONS: readonly ReleasedMigration[] = Object.freeze([
  { version: 1, name: 'initial',
    checksum: '58472e45762754c7c4e3864a7082a710aab44f4dcb2e49628294a98187722685' },
  { version: 2, name: 'eligible_vectors',
    checksum: '056624d04d7c29ba1f7c15d085f7b006183d0474480bc6ec97454c26bb3c01ea' },
  { version: 3, name: 'small_scope_vectors',
    checksum: '749431a5355ba6c51c444f11179cff68fdc6f3e85124689434b762b43b91f3f2' },
  { version: 4, name: 'vec0_chunks', checksum: 'a7743dd00bceec11f18f8b2296311e58567b71bbb5e91ea3edcc4c0d2b24696a' },
  { version: 5, name: 'record_token_counts',
    checksum: '7fafee257f19928233bec84133fe16cd488601138218d83f9bb90effb6b2433d' },
  { version: 6, name: 'shard_generations',
    checksum: '7348a4490a6a52f5d0eb7a64a50584110609e11010b6be02271001f1690a1895' },
].map((migration) => Object.freeze(migration)));
