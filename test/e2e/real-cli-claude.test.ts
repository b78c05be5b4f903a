// The real Claude Code (test/clis, installed by scripts/install-clis) as the agent of Job runs on the local control
// plane, talking to the loopback Anthropic Messages fake of test/support/model-api playing a scripted model
// (docs/reference/vendor-clis.md#claude-code-21332). What a user sees: the tool the model asks for really runs in
// the pod's workspace and its output reaches the model, the final answer, the tokens and the CLI's cost land on the
// Agent, the key reaches the model API and nothing else; a tool on the deny list is never offered and never runs.
// Node only: the Deno pass runs the same Job path with the mock CLI (run-results, pod-runtime).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
import {
  agentManifest,
  apiPath,
  applyCrds,
  e2eCluster,
  e2eRuntime,
  GROUP_VERSION,
  type Manifest,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';
import { type ModelRequest, startAnthropicModel, type Turn } from '../support/model-api/index.ts';
import { claudeMarkerScript, commandLines, mcpToolImage, mcpToolLog } from '../support/real-cli-checks.ts';
import { agentSecrets, agentTemplate, realCliImages, realCliSkipReason } from '../support/real-clis.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip = realCliSkipReason(cluster, runtime);

const PodSchema = v.looseObject({ metadata: v.looseObject({ name: v.string() }) });
const EventSchema = v.looseObject({ message: v.optional(v.string(), '') });

/** A Claude recipe pointed at the fake, with the key from agent-secrets (and more literal env). */
function definition(
  name: string,
  baseUrl: string,
  extra: Readonly<Record<string, unknown>>,
  env: Readonly<Record<string, string>> = {},
): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'AgentDefinition',
    metadata: { name },
    spec: {
      model: 'claude-sonnet-4-5',
      prompt: 'Leave a marker in the workspace, then say what you did.',
      resources: {
        env: Object.entries({ ANTHROPIC_BASE_URL: baseUrl, ...env }).map(([k, value]) => ({
          name: k,
          value,
        })),
        secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'anthropic' }],
      },
      ...extra,
    },
  };
}

const secret = (apiKey: string): Manifest => agentSecrets({ anthropic: apiKey });

/** The model requests (not the CLI's other calls) of a fake's record. */
const modelRequests = (requests: readonly ModelRequest[]) =>
  requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages');

/** Every text a user could read about the runs: the Agents, Events, controller and pod logs. */
async function everythingVisible(s: Scenario, controllerLog: string): Promise<string> {
  const texts = [controllerLog, JSON.stringify(await s.agents())];
  const events = await s.client.list(apiPath('v1', 'events', { namespace: s.ns }), {}, EventSchema);
  texts.push(...events.items.map((e) => e.message));
  const pods = await s.client.list(apiPath('v1', 'pods', { namespace: s.ns }), {}, PodSchema);
  for (const pod of pods.items) {
    for (const container of ['agent', 'init']) {
      texts.push(await s.client.logs(s.ns, pod.metadata.name, { container }));
    }
  }
  return texts.join('\n');
}

describe(`the real Claude Code in Job runs (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it('runs a tool in the workspace, answers, and reports tokens and cost; a denied tool never runs', {
    timeout: 300_000,
  }, async () => {
    const marker = `marker-${randomBytes(6).toString('hex')}`;
    const work = claudeMarkerScript(marker);
    const denied: Turn[] = [
      { toolCall: { name: 'Bash', input: { command: `echo denied-${marker}`, description: 'try anyway' } } },
      { text: 'I could not run that.' },
    ];
    const apiKey = `sk-ant-e2e-${randomBytes(16).toString('hex')}`;
    const workFake = await startAnthropicModel({ turns: work.turns, apiKey });
    const deniedFake = await startAnthropicModel({ turns: denied, apiKey });
    try {
      await runScenario(cluster, 'real-claude', async (s) => {
        const images = realCliImages(s, runtime);
        const template = agentTemplate(images.agent);
        await s.create(
          agentSecrets({ anthropic: apiKey }),
          definition('work', workFake.baseUrl, { allowed_tools: ['Bash'] }),
          stationManifest('work', 'work', { template }),
          definition('denied', deniedFake.baseUrl, { disallowed_tools: ['Bash'] }),
          stationManifest('denied', 'denied', { template }),
          agentManifest('work-run', 'work'),
          agentManifest('denied-run', 'denied'),
        );
        const ctl = await s.startReplica({ env: { AGENT_IMAGE: images.init } });

        const run = await s.waitTerminal('work-run', 180_000);
        const status = run.status as Record<string, unknown>;
        assert.equal(run.status.phase, 'Succeeded', JSON.stringify(run.status));
        assert.equal(run.status.exitCode, 0);
        assert.equal(status.result, work.answer);
        // The CLI adds up its turns: the two answers' usage as the fake sent them.
        assert.deepEqual(status.tokenUsage, work.tokenUsage);
        const cost = status.costEstimate as { usd: string; source: string; model: string };
        assert.equal(cost.source, 'cli');
        assert.equal(cost.model, 'claude-sonnet-4-5');
        assert.match(cost.usd, /^\d+(\.\d+)?$/);
        assert.ok(Number(cost.usd) > 0, `a cost: ${cost.usd}`);

        // The tool ran in the pod's workspace, and its output went back to the model.
        const requests = modelRequests(workFake.requests);
        assert.equal(requests.length, 2, JSON.stringify(workFake.requests.map((r) => r.path)));
        // Nothing but model requests (no connectivity check: the supervisor switches non-essential traffic off).
        assert.deepEqual(
          workFake.requests.map((r) => `${r.method} ${r.path}`),
          ['POST /v1/messages', 'POST /v1/messages'],
        );
        for (const r of requests) {
          assert.equal(r.apiKey, apiKey, 'the key reached the model API');
          assert.equal(r.model, 'claude-sonnet-4-5');
          assert.equal(r.stream, true);
          assert.ok(r.tools.includes('Bash'), `Bash offered: ${r.tools.join(',')}`);
        }
        const [result] = requests[1]?.toolResults ?? [];
        assert.ok(result?.content.includes(`/workspace\n${marker}`), `tool result: ${result?.content}`);

        // A tool on the deny list is not offered, and the call the model makes anyway is refused by the CLI.
        const refused = await s.waitTerminal('denied-run', 180_000);
        assert.equal(refused.status.phase, 'Succeeded', JSON.stringify(refused.status));
        assert.equal((refused.status as Record<string, unknown>).result, 'I could not run that.');
        const deniedRequests = modelRequests(deniedFake.requests);
        assert.equal(deniedRequests.length, 2);
        assert.ok(!deniedRequests[0]?.tools.includes('Bash'), `tools: ${deniedRequests[0]?.tools.join(',')}`);
        const [refusal] = deniedRequests[1]?.toolResults ?? [];
        assert.ok(refusal !== undefined, 'the CLI answered the call');
        assert.ok(
          !refusal.content.includes(`denied-${marker}`),
          `the denied command ran: ${refusal.content}`,
        );

        // The key is nowhere a user can read.
        const visible = await everythingVisible(s, ctl.logText());
        assert.ok(visible.includes(marker), 'the check reads the runs (the marker is in the output)');
        assert.ok(!visible.includes(apiKey), 'the vendor key is visible');
      });
    } finally {
      await Promise.all([workFake.close(), deniedFake.close()]);
    }
  });

  it("calls a tool sidecar's MCP server and hands its answer to the model", {
    timeout: 300_000,
  }, async () => {
    const where = `shelf-${randomBytes(4).toString('hex')}`;
    const apiKey = `sk-ant-e2e-${randomBytes(16).toString('hex')}`;
    const fake = await startAnthropicModel({
      apiKey,
      turns: [
        { toolCall: { name: 'mcp__lookup__lookup', input: { q: 'the keys' } } },
        { text: 'The keys are where the tool said.' },
      ],
    });
    try {
      await runScenario(cluster, 'real-claude-mcp', async (s) => {
        const images = realCliImages(s, runtime);
        const tool = mcpToolImage(s, where);
        const template = agentTemplate(images.agent);
        await s.create(
          secret(apiKey),
          definition('mcp', fake.baseUrl, {
            allowed_tools: ['mcp__lookup__lookup'],
            sidecars: [{ name: 'lookup', image: tool.image, mcp: { port: tool.port } }],
          }),
          stationManifest('mcp', 'mcp', { template }),
          agentManifest('mcp-run', 'mcp'),
        );
        await s.startReplica({ env: { AGENT_IMAGE: images.init } });
        const run = await s.waitTerminal('mcp-run', 180_000);
        assert.equal(run.status.phase, 'Succeeded', JSON.stringify(run.status));
        assert.equal((run.status as Record<string, unknown>).result, 'The keys are where the tool said.');
        const requests = modelRequests(fake.requests);
        assert.equal(requests.length, 2);
        const [result] = requests[1]?.toolResults ?? [];
        assert.ok(result?.content.includes(`found the keys at ${where}`), `tool result: ${result?.content}`);
        const toolLog = await mcpToolLog(s, 'lookup');
        assert.match(toolLog, /^mcp initialize$/m);
        assert.match(toolLog, /^mcp tools\/list$/m);
        assert.match(toolLog, /^mcp tools\/call \{"name":"lookup","arguments":\{"q":"the keys"\}/m);
      });
    } finally {
      await fake.close();
    }
  });

  it('retries 429 and 500 itself; fails with its message when retries run out; is killed at the deadline (124)', {
    timeout: 300_000,
  }, async () => {
    const apiKey = `sk-ant-e2e-${randomBytes(16).toString('hex')}`;
    const sleeper = `tail -f /dev/null # wait-${randomBytes(6).toString('hex')}`;
    const flaky = await startAnthropicModel({
      apiKey,
      turns: [{ error: { status: 429, retryAfter: 1 } }, { error: { status: 500 } }, { text: 'recovered' }],
    });
    const overloaded = await startAnthropicModel({
      apiKey,
      turns: [
        { error: { status: 529 } },
        { error: { status: 529 } },
        { error: { status: 529 } },
        { text: 'not reached' },
      ],
    });
    const slow = await startAnthropicModel({
      apiKey,
      turns: [
        { toolCall: { name: 'Bash', input: { command: sleeper, description: 'wait', timeout: 600000 } } },
      ],
    });
    // Whether the tool call's process was ever seen running (sampled while the runs go on).
    let toolRan = false;
    const sampler = setInterval(() => {
      toolRan ||= commandLines().some((l) => l.includes(sleeper));
    }, 500);
    try {
      await runScenario(cluster, 'real-claude-fail', async (s) => {
        const images = realCliImages(s, runtime);
        const template = agentTemplate(images.agent);
        await s.create(
          secret(apiKey),
          definition('flaky', flaky.baseUrl, {}),
          stationManifest('flaky', 'flaky', { template }),
          definition('overloaded', overloaded.baseUrl, {}, { CLAUDE_CODE_MAX_RETRIES: '2' }),
          stationManifest('overloaded', 'overloaded', { template }),
          definition('slow', slow.baseUrl, { allowed_tools: ['Bash'] }),
          stationManifest('slow', 'slow', { template, deadlineMinutes: 1 }),
          agentManifest('flaky-run', 'flaky'),
          agentManifest('overloaded-run', 'overloaded'),
          agentManifest('slow-run', 'slow'),
        );
        await s.startReplica({ env: { AGENT_IMAGE: images.init } });

        const recovered = await s.waitTerminal('flaky-run', 180_000);
        assert.equal(recovered.status.phase, 'Succeeded', JSON.stringify(recovered.status));
        assert.equal((recovered.status as Record<string, unknown>).result, 'recovered');
        assert.deepEqual(
          modelRequests(flaky.requests).map((r) => r.status),
          [429, 500, 200],
        );

        const failed = await s.waitTerminal('overloaded-run', 180_000);
        assert.equal(failed.status.phase, 'Failed', JSON.stringify(failed.status));
        assert.equal(failed.status.exitCode, 1);
        assert.match(String(failed.status.failureReason), /overloaded/i);
        assert.equal(
          modelRequests(overloaded.requests).length,
          3,
          'the first try and CLAUDE_CODE_MAX_RETRIES=2',
        );

        const killed = await s.waitTerminal('slow-run', 180_000);
        assert.equal(killed.status.phase, 'Failed', JSON.stringify(killed.status));
        assert.equal(killed.status.exitCode, 124);
        // The deadline came while the tool call ran: the CLI asked for it, and no later request carried its result.
        // (Claude Code may send side requests of its own, such as a title or a topic; they carry no tool result,
        // so the count of requests is not the claim.)
        const slowRequests = modelRequests(slow.requests);
        const seen = JSON.stringify(
          slowRequests.map((r) => ({
            model: r.model,
            stream: r.stream,
            status: r.status,
            results: r.toolResults,
          })),
        );
        assert.ok(slowRequests.length >= 1, `the CLI asked for the tool call: ${seen}`);
        assert.ok(toolRan, 'the tool call was running before the deadline');
        assert.deepEqual(
          slowRequests.flatMap((r) => r.toolResults),
          [],
          `no request carried the tool's result, so the tool was still running at the deadline: ${seen}`,
        );
        // The CLI's children went with it: no process of the tool call is left.
        await pollUntil(() => (commandLines().some((l) => l.includes(sleeper)) ? undefined : true), {
          timeoutMs: 20_000,
          description: 'the tool process of the killed run to be gone',
        });
      });
    } finally {
      clearInterval(sampler);
      await Promise.all([flaky.close(), overloaded.close(), slow.close()]);
    }
  });
});
