// Codex (pinned, installed from npm into the host cache) lists FactLane as configured in
// `$CODEX_HOME/config.toml` and runs a whole scripted tool session against it with `codex exec`, driven by the
// model stand-in over the OpenAI Responses API. Skipped with the reason when the install fails.
import t from 'tap';
import { join } from 'node:path';
import { FACTLANE_BIN } from '../helpers/mcp.js';
import {
  approveFactLaneTools, codexHome, configureHost, factLaneArgs, hostEnv, pointCodexAtStandIn, runHost,
} from './host-config.js';
import { installHosts } from './host-install.js';
import { checkDatabase, checkEnvelopes, envelopeOf, FINAL_TEXT, hostScript, PROMPT, sandbox } from './host-script.js';
import { ModelStandIn } from './model-stand-in.js';
import { CODEX_TOOL_NAMESPACE, factLaneToolsOf, functionCallOutputsOf, functionCallsOf } from './openai-responses.js';

const HOST = 'codex';
const FIVE_TOOLS = ['memory_get', 'memory_search', 'memory_status', 'memory_store', 'memory_update'];
const outcome = installHosts();

if (!outcome.ok) {
  t.comment(`hosts not installed: ${outcome.reason}`);
  t.plan(0, `Codex could not be installed: ${outcome.reason}`);
} else {
  const { install } = outcome;

  t.test('codex mcp list shows the factlane entry from config.toml, enabled, with the absolute command', async (t) => {
    const box = sandbox(t.testdir());
    configureHost(install, HOST, box);
    const standIn = await ModelStandIn.start({ script: [], finalText: FINAL_TEXT });
    t.teardown(() => standIn.close());
    const env = hostEnv(HOST, box.home, standIn.origin);
    const table = await runHost(install.codex, ['mcp', 'list'], box.work, env);
    t.equal(table.status, 0, table.stderr);
    const row = new RegExp(`^factlane +${FACTLANE_BIN} +${factLaneArgs(HOST, box).join(' ')} .*enabled`, 'm');
    t.match(table.stdout, row, 'the table row');
    const listed = await runHost(install.codex, ['mcp', 'list', '--json'], box.work, env);
    t.equal(listed.status, 0, listed.stderr);
    t.match(JSON.parse(listed.stdout), [{
      name: 'factlane', enabled: true,
      transport: { type: 'stdio', command: FACTLANE_BIN, args: factLaneArgs(HOST, box) },
    }], '--json: the stdio entry');
    t.same(standIn.foreign, [], 'nothing went to another host');
  });

  t.test('codex exec runs the scripted calls against FactLane and sends each envelope back', async (t) => {
    const box = sandbox(t.testdir());
    configureHost(install, HOST, box);
    const standIn = await ModelStandIn.start({ script: hostScript(HOST), finalText: FINAL_TEXT });
    t.teardown(() => standIn.close());
    pointCodexAtStandIn(box.home, standIn.origin);
    t.equal(codexHome(box.home), join(box.home, '.codex'));
    const args = ['exec', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', PROMPT];
    const run = await runHost(install.codex, args, box.work, hostEnv(HOST, box.home, standIn.origin));
    if (run.status !== 0) t.comment(run.stderr.slice(-2000));
    t.equal(run.status, 0, 'codex exits 0');
    t.equal(run.stdout.trim(), FINAL_TEXT, 'codex exec prints the final text');

    const turns = standIn.requestsTo('POST', '/v1/responses');
    const last = turns.at(-1)?.body as { stream?: boolean } | undefined;
    t.equal(last?.stream, true, 'streaming requests');
    t.match(factLaneToolsOf(last), [{ type: 'namespace', name: CODEX_TOOL_NAMESPACE }], 'one namespace tool');
    const inner = (factLaneToolsOf(last)[0]?.tools as { name: string }[] | undefined) ?? [];
    t.same(inner.map((tool) => tool.name).sort(), FIVE_TOOLS, 'the five tools in the namespace');
    const calls = functionCallsOf(last);
    const scripted = hostScript(HOST).map((call) => `${CODEX_TOOL_NAMESPACE}/${call.tool}`);
    t.same(calls.map((call) => `${call.namespace}/${call.name}`), scripted, 'the scripted calls, in order');
    const outputs = functionCallOutputsOf(last);
    checkEnvelopes(t, HOST, calls.map((call) => outputs.find((output) => output.callId === call.call_id)?.text ?? ''));
    checkDatabase(t, HOST, box.db);
    t.same(standIn.foreign, [], 'nothing went to another host');
  });

  t.test('codex exec without the bypass flag runs the read tools (readOnlyHint) and a write only once it is ' +
    'pre-approved', async (t) => {
    const box = sandbox(t.testdir());
    configureHost(install, HOST, box);
    const standIn = await ModelStandIn.start({ script: hostScript(HOST).slice(0, 2), finalText: FINAL_TEXT });
    t.teardown(() => standIn.close());
    pointCodexAtStandIn(box.home, standIn.origin);
    const env = hostEnv(HOST, box.home, standIn.origin);
    const lastOutputs = () => functionCallOutputsOf(standIn.requests.at(-1)?.body);

    const refused = await runHost(install.codex, ['exec', '--skip-git-repo-check', PROMPT], box.work, env);
    if (refused.status !== 0) t.comment(refused.stderr.slice(-2000));
    t.equal(refused.status, 0, 'codex exits 0');
    const [read, write] = lastOutputs();
    t.match(
      envelopeOf(read?.text ?? ''), { status: 'OK', audit: { request_id: `${HOST}-1` } }, 'memory_status runs unasked',
    );
    t.match(
      write, { text: /MCP tool call requires approval, but approval policy is never/ },
      'memory_store is refused by Codex',
    );

    approveFactLaneTools(HOST, box.home);
    const approved = await runHost(install.codex, ['exec', '--skip-git-repo-check', PROMPT], box.work, env);
    if (approved.status !== 0) t.comment(approved.stderr.slice(-2000));
    t.equal(approved.status, 0, 'codex exits 0');
    t.match(
      envelopeOf(lastOutputs()[1]?.text ?? ''), { status: 'OK', audit: { request_id: `${HOST}-2` } },
      'the write runs once approved',
    );
    t.same(standIn.foreign, [], 'nothing went to another host');
  });
}
