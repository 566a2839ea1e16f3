#!/usr/bin/env node
import { PUBLIC_CONTRACT_REVISION, STORAGE_CONTRACT_VERSION } from '../../schema/constants.js';
import { MIGRATIONS_DIR, PACKAGE_VERSION } from '../core/package-info.js';
import { loadMigrationFiles } from '../storage/migration-files.js';

const USAGE = `usage: factlane --host-id LABEL [--db PATH] [options]
       factlane --version | --help

FactLane speaks MCP over stdio with five tools: memory_search, memory_get, memory_store,
memory_update, memory_status.
`;

const argv = process.argv.slice(2);
if (argv.includes('--version')) {
  const schemaVersion = loadMigrationFiles(MIGRATIONS_DIR).at(-1)?.version ?? 0;
  process.stdout.write(`factlane ${PACKAGE_VERSION}\npublic contract revision ${PUBLIC_CONTRACT_REVISION}\nstorage contract version ${STORAGE_CONTRACT_VERSION}\nschema version ${schemaVersion}\n`);
} else if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write(USAGE);
} else {
  // The MCP server lands with its own change; until then refuse plainly instead of pretending to serve.
  process.stderr.write('factlane: the stdio MCP server is not part of this build yet; only --version and --help work\n');
  process.exitCode = 1;
}
