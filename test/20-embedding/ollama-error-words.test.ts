import t from 'tap';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { EMBEDDING_PROFILES } from '../../src/embedding/embedding-profiles.js';
import { FakeOllama, fakeDigest } from '../helpers/fake-ollama.js';
import { FACTLANE_BIN } from '../helpers/mcp.js';
import type { Json } from '../helpers/writes.js';

// Ollama's own `error` words and a BLOCKED envelope (CONTRACT.md §14.4, §6.3): the member is EMBEDDING_UNAVAILABLE,
// and the message a fixed safe sentence: no path of Ollama's model files, no fact text Ollama quotes.

const NOMIC = EMBEDDING_PROFILES['nomic-768']!;
const SCOPE = { scope: 'PROJECT', project_id: 'ollama-words' };
const SOURCE = { source_class: 'repo_file', source_ref: 'package.json', source_hash: fakeDigest('src'),
  review_ref: 'review/1', extraction_method: 'manual_read' };

t.test('end to end: the envelope of a refused store quotes no path and no fact', async (t) => {
  const fake = await FakeOllama.start(NOMIC);
  t.teardown(() => fake.close());
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [FACTLANE_BIN, '--db', join(t.testdir(), 'words.sqlite3'), '--host-id', 'e2e', '--profile', 'nomic-768',
      '--ollama-url', fake.url, '--write-profile', 'owner-current'],
    stderr: 'pipe',
  });
  const client = new Client({ name: 'factlane-ollama-words', version: '0.0.0' });
  await client.connect(transport);
  t.teardown(() => client.close());
  const fact = 'The deploy key for staging lives in the team vault';
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  /** The envelope of a current store of `fact` while Ollama answers /api/embed with `words` as its error. */
  const storeWhileOllamaSays = async (words: string, key: string) => {
    fake.set({ errorMember: { '/api/embed': words } });
    const result = (await client.callTool({ name: 'memory_store', arguments: { request: {
      ...SCOPE, fact, memory_type: 'PROJECT_LEARNED_FACT', source_provenance: SOURCE,
      freshness_policy: { kind: 'never' }, idempotency_key: key, requested_lifecycle_state: 'VALIDATED_CURRENT',
      source_timestamp: now, last_verified_at: now,
    } } })) as CallToolResult;
    return result.structuredContent as Json;
  };
  // What Ollama says when its runner cannot load the model, and an Ollama (or a proxy) that quotes its input.
  const envelope = await storeWhileOllamaSays('llama runner process has terminated: error loading model: '
    + `/usr/share/ollama/.ollama/models/blobs/sha256-${'a'.repeat(64)}`, 'words-1');
  t.match(envelope, { status: 'BLOCKED', error_code: 'EMBEDDING_UNAVAILABLE' });
  t.notMatch(envelope.message, /\/usr\/share/, 'no path in the message');
  t.match(envelope.message, /^Ollama could not load nomic-embed-text/, 'but what it means');
  const quoted = await storeWhileOllamaSays(`cannot embed "search_document: ${fact}": input too long`, 'words-2');
  t.match(quoted, { status: 'BLOCKED', error_code: 'EMBEDDING_UNAVAILABLE' });
  t.notMatch(quoted.message, /team vault/, 'no fact text in the message');
  t.equal(quoted.message, 'Ollama refused /api/embed (HTTP 500)');
});
