// Claude Code (pinned, installed from npm into the host cache) launches FactLane as configured by
// `claude mcp add --scope user`, reports it Connected, and runs a whole scripted tool session against it, driven
// by the model stand-in over the Anthropic Messages API. Skipped with the reason when the install fails.
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { FACTLANE_BIN } from '../helpers/mcp.js';
import { CLAUDE_FACTLANE_TOOLS, CLAUDE_TOOL_PREFIX, toolResultsOf, toolUsesOf } from './anthropic-messages.js';
import { approveFactLaneTools, configureHost, hostEnv, runHost } from './host-config.js';
import { installHosts } from './host-install.js';
import {
  checkDatabase, checkEnvelopes, envelopeOf, FINAL_TEXT, hostScript, HOST_WRITE_PROFILE, PROMPT, sandbox,
} from './host-script.js';
import { ModelStandIn } from './model-stand-in.js';

const HOST = 'claude-code';
const outcome = installHosts();

if (!outcome.ok) {
  t.comment(`hosts not installed: ${outcome.reason}`);
  t.plan(0, `Claude Code could not be installed: ${outcome.reason}`);
} else {
  const { install } = outcome;

  t.test('claude mcp list shows the factlane entry, launched from the absolute path, as Connected', async (t) => {
    const box = sandbox(t.testdir());
    mkdirSync(box.home, { recursive: true });
    configureHost(install, HOST, box);
    const standIn = await ModelStandIn.start({ script: [], finalText: FINAL_TEXT });
    t.teardown(() => standIn.close());
    const listed = await runHost(install.claude, ['mcp', 'list'], box.work, hostEnv(HOST, box.home, standIn.origin));
    t.equal(listed.status, 0, listed.stderr);
    const entry = `factlane: ${FACTLANE_BIN} --db ${box.db} --host-id ${HOST} --write-profile ${HOST_WRITE_PROFILE}`;
    t.match(listed.stdout, new RegExp(`^${entry} - ✔ Connected$`, 'm'));
    t.same(standIn.foreign, [], 'nothing went to another host');
  });

  t.test('claude -p runs the scripted calls against FactLane and sends each envelope back', async (t) => {
    const box = sandbox(t.testdir());
    mkdirSync(box.home, { recursive: true });
    configureHost(install, HOST, box);
    const standIn = await ModelStandIn.start({ script: hostScript(HOST), finalText: FINAL_TEXT });
    t.teardown(() => standIn.close());
    const env = hostEnv(HOST, box.home, standIn.origin);
    const run = await runHost(
      install.claude, ['-p', PROMPT, '--allowedTools', 'mcp__factlane', '--output-format', 'json'], box.work, env,
    );
    if (run.status !== 0) t.comment(run.stderr.slice(-2000));
    t.equal(run.status, 0, 'claude exits 0');
    const result = JSON.parse(run.stdout) as Record<string, unknown>;
    t.match(result, { type: 'result', subtype: 'success', is_error: false, result: FINAL_TEXT },
      'the session ends with the final text');

    const turns = standIn.requestsTo('POST', '/v1/messages');
    t.ok(turns.every((turn) => turn.path === '/v1/messages?beta=true'), 'Claude Code calls /v1/messages?beta=true');
    const last = turns.at(-1)?.body as { tools?: { name: string }[]; stream?: boolean } | undefined;
    t.equal(last?.stream, true, 'streaming requests');
    const offered = (last?.tools ?? []).map((tool) => tool.name).filter((name) => name.startsWith(CLAUDE_TOOL_PREFIX));
    t.same(offered.sort(), CLAUDE_FACTLANE_TOOLS, 'the five tools, loaded through ToolSearch');
    const calls = toolUsesOf(last).filter((use) => String(use.name).startsWith(CLAUDE_TOOL_PREFIX));
    const scripted = hostScript(HOST).map((call) => `${CLAUDE_TOOL_PREFIX}${call.tool}`);
    t.same(calls.map((use) => use.name), scripted, 'the scripted calls, in order');
    const results = toolResultsOf(last);
    const texts = calls.map((use) => results.find((r) => r.toolUseId === use.id));
    t.same(
      texts.map((r) => r?.isError), [false, false, false, false], 'no tool_result is an error: BLOCKED is a result',
    );
    checkEnvelopes(t, HOST, texts.map((r) => r?.text ?? ''));
    checkDatabase(t, HOST, box.db);
    t.same(standIn.foreign, [], 'nothing went to another host');
  });

  t.test('claude -p without --allowedTools runs FactLane tools only once settings.json allows them', async (t) => {
    const box = sandbox(t.testdir());
    mkdirSync(box.home, { recursive: true });
    configureHost(install, HOST, box);
    const standIn = await ModelStandIn.start({ script: hostScript(HOST).slice(0, 1), finalText: FINAL_TEXT });
    t.teardown(() => standIn.close());
    const env = hostEnv(HOST, box.home, standIn.origin);
    const lastResult = () => {
      const body = standIn.requestsTo('POST', '/v1/messages').at(-1)?.body;
      const use = toolUsesOf(body).find((u) => String(u.name).startsWith(CLAUDE_TOOL_PREFIX));
      return toolResultsOf(body).find((r) => r.toolUseId === use?.id);
    };

    const refused = await runHost(install.claude, ['-p', PROMPT, '--output-format', 'json'], box.work, env);
    if (refused.status !== 0) t.comment(refused.stderr.slice(-2000));
    t.equal(refused.status, 0, 'claude exits 0');
    t.match(
      lastResult(), { isError: true, text: /requested permissions to use mcp__factlane__memory_status/ },
      'refused by Claude Code',
    );

    approveFactLaneTools(HOST, box.home);
    const approved = await runHost(install.claude, ['-p', PROMPT, '--output-format', 'json'], box.work, env);
    if (approved.status !== 0) t.comment(approved.stderr.slice(-2000));
    t.equal(approved.status, 0, 'claude exits 0');
    t.match(lastResult(), { isError: false }, 'the call runs once allowed');
    t.match(
      envelopeOf(lastResult()?.text ?? ''), { status: 'OK', audit: { request_id: `${HOST}-1` } },
      'and FactLane answers',
    );
    t.same(standIn.foreign, [], 'nothing went to another host');
  });
}
