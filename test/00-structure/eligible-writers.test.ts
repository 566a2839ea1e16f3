import t from 'tap';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT, typeScriptFiles } from '../helpers/storage.js';

// A search keeps a shard's codes while the shard's generation stays the same (docs/decisions/0054-shard-
// generations.md), which is sound only while every write of `eligible_codes` moves its shard's generation in the same
// transaction. The statements that do so are in src/storage/eligible-vectors.ts; a write of these tables anywhere
// else fails here, and its author moves the generation there or calls those functions instead.

const WRITE = /\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(eligible_codes|eligible_shards|eligible_vectors)\b/gi;
const BUILDER = /\b(insertInto|updateTable|deleteFrom)\(\s*'(eligible_codes|eligible_shards|eligible_vectors)'/g;

t.test('only eligible-vectors.ts writes the eligible forms, and each of its writes of a shard moves its generation',
  async (t) => {
  const writers = new Set<string>();
  for (const file of typeScriptFiles(join(REPO_ROOT, 'src'))) {
    const text = readFileSync(file, 'utf8');
    if ([...text.matchAll(WRITE), ...text.matchAll(BUILDER)].length > 0) writers.add(relative(REPO_ROOT, file));
  }
  t.strictSame([...writers], ['src/storage/eligible-vectors.ts'], 'the one writer of the eligible forms');
  const text = readFileSync(join(REPO_ROOT, 'src/storage/eligible-vectors.ts'), 'utf8');
  const shardWrites = [...text.matchAll(/(INSERT INTO|UPDATE) eligible_shards\b[^`]*/g)].map((match) => match[0]);
  t.ok(shardWrites.length >= 4, `the shard writes: ${shardWrites.length}`);
  for (const statement of shardWrites) {
    t.match(statement, /generation/, `moves the generation: ${statement.replace(/\s+/g, ' ').slice(0, 70)}…`);
  }
});
