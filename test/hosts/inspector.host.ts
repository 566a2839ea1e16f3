// The MCP Inspector's CLI (pinned, installed from npm into the host cache) launches the built FactLane over stdio,
// lists exactly the five tools, and calls memory_status. Skipped with the reason when the install fails.
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { FACTLANE_BIN } from '../helpers/mcp.js';
import { hostEnv, runHost } from './host-config.js';
import { installHosts } from './host-install.js';
import { envelopeOf } from './host-script.js';
import { ModelStandIn } from './model-stand-in.js';

const TOOL_ORDER = ['memory_search', 'memory_get', 'memory_store', 'memory_update', 'memory_status'];
const outcome = installHosts();

if (!outcome.ok) {
  t.comment(`hosts not installed: ${outcome.reason}`);
  t.plan(0, `the MCP Inspector could not be installed: ${outcome.reason}`);
} else {
  const { install } = outcome;

  /** Runs `inspector --cli node dist/bin/factlane.js --db … --host-id inspector <method args>` in a temp home. */
  async function inspect(dir: string, methodArgs: readonly string[]) {
    const home = join(dir, 'home');
    mkdirSync(home, { recursive: true });
    const standIn = await ModelStandIn.start({ script: [], finalText: '' });
    try {
      const launch = [process.execPath, FACTLANE_BIN, '--db', join(dir, 'factlane.sqlite3'), '--host-id', 'inspector'];
      const args = ['--cli', ...launch, ...methodArgs];
      const run = await runHost(install.inspector, args, dir, hostEnv('inspector', home, standIn.origin));
      return { ...run, foreign: [...standIn.foreign] };
    } finally {
      await standIn.close();
    }
  }

  t.test('inspector --cli --method tools/list lists exactly the five tools', async (t) => {
    const run = await inspect(t.testdir(), ['--method', 'tools/list']);
    t.equal(run.status, 0, run.stderr);
    const { tools } = JSON.parse(run.stdout) as { tools: { name: string; inputSchema: { required?: string[] } }[] };
    t.same(tools.map((tool) => tool.name), TOOL_ORDER);
    t.ok(tools.every((tool) => tool.inputSchema.required?.includes('request')), 'each takes one `request` argument');
    t.match(run.stderr, /Schema portability: 0 errors/, 'the Inspector finds no error-severity schema problem');
    t.same(run.foreign, [], 'nothing went to another host');
  });

  t.test('inspector --cli --method tools/call calls memory_status and gets the OK envelope', async (t) => {
    const run = await inspect(t.testdir(), ['--method', 'tools/call', '--tool-name', 'memory_status',
      '--tool-arg', `request=${JSON.stringify({ scope: 'GLOBAL_USER', request_id: 'inspector-1' })}`]);
    t.equal(run.status, 0, run.stderr);
    const result =
      JSON.parse(run.stdout) as { content: { text: string }[]; structuredContent: unknown; isError?: boolean };
    t.notOk(result.isError);
    t.same(
      result.structuredContent, envelopeOf(result.content[0]?.text ?? ''), 'structuredContent is the text envelope',
    );
    t.match(result.structuredContent, {
      status: 'OK', launcher: { write_profile: 'read-only' },
      audit: { request_id: 'inspector-1', host_binding: { host_id: 'inspector', transport: 'stdio' } },
    });
    t.same(run.foreign, [], 'nothing went to another host');
  });

  t.test('inspector --cli reports a refused call as the BLOCKED envelope, not an MCP error', async (t) => {
    const run = await inspect(t.testdir(), ['--method', 'tools/call', '--tool-name', 'memory_status',
      '--tool-arg', `request=${JSON.stringify({ scope: 'GLOBAL_USER', host_id: 'someone-else' })}`]);
    t.equal(run.status, 0, run.stderr);
    const result = JSON.parse(run.stdout) as { structuredContent: unknown; isError?: boolean };
    t.notOk(result.isError);
    t.match(result.structuredContent, {
      status: 'BLOCKED', error_code: 'HOST_IDENTITY_CLAIM_DENIED', audit: { host_binding: { host_id: 'inspector' } },
    });
  });
}
