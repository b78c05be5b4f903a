// The real Codex (test/clis, installed by scripts/install-clis) beyond one Job run, on the local control plane and
// against the loopback OpenAI Responses fake of test/support/model-api playing a scripted model
// (docs/reference/vendor-clis.md#codex-01710): its own retries of 429 and 500 and the failure with its message when
// they run out, the deadline killing it and its children (124), stdin never hanging a run (Codex reads stdin to EOF
// whenever it is not a terminal), the cost from the price table, a deny list refused (Codex cannot enforce one), a
// tool sidecar's MCP server called through it, and server mode answered by it for the official `openai` SDK.
// Node only: the Deno pass runs the same paths with the mock CLI.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  agentManifest,
  applyCrds,
  applyRbacManifests,
  e2eCluster,
  e2eRuntime,
  GROUP_VERSION,
  type Manifest,
  pollUntil,
  runScenario,
  stationManifest,
} from '../support/index.ts';
import { type ModelApiFake, startOpenAIModel, type Turn } from '../support/model-api/index.ts';
import {
  commandLines,
  firstCompletion,
  mcpToolImage,
  mcpToolLog,
  servingClient,
  streamedCompletion,
} from '../support/real-cli-checks.ts';
import { agentSecrets, agentTemplate, realCliImages, realCliSkipReason } from '../support/real-clis.ts';
import { createPolicy, startServerReplica } from '../support/server.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip = realCliSkipReason(cluster, runtime);

const MODEL = 'gpt-5.1-codex';

/** A Codex recipe pointed at `fake`, with the key from agent-secrets. */
function definition(
  name: string,
  fake: ModelApiFake,
  extra: Readonly<Record<string, unknown>> = {},
): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'AgentDefinition',
    metadata: { name },
    spec: {
      model: MODEL,
      prompt: 'Do what the model says.',
      resources: {
        env: [{ name: 'OPENAI_BASE_URL', value: fake.baseUrl }],
        secrets: [{ name: 'OPENAI_API_KEY', ref: 'openai' }],
      },
      ...extra,
    },
  };
}

/** The model requests of a fake's record. */
const modelRequests = (fake: ModelApiFake) =>
  fake.requests.filter((r) => r.method === 'POST' && r.path === '/v1/responses');

describe(`the real Codex: retries, deadline, stdin, cost, tool rules, MCP, server mode (${runtime})`, {
  skip,
}, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it('retries 429, 500 and 503 (overloaded) itself, fails with its message past its retries, is killed at the deadline (124); stdin never hangs a run; the cost comes from the price table; a deny list is refused', {
    timeout: 420_000,
  }, async () => {
    const apiKey = `sk-e2e-${randomBytes(16).toString('hex')}`;
    const sleeper = `tail -f /dev/null # wait-${randomBytes(6).toString('hex')}`;
    const tail = `end-of-prompt-${randomBytes(6).toString('hex')}`;
    // Over one argument's 131071 bytes: the supervisor hands it to Codex on stdin (`-- -`), then closes stdin.
    const longPrompt = `Answer briefly. ${'lorem ipsum '.repeat(12_000)}${tail}`;
    const priced = await startOpenAIModel({
      apiKey,
      turns: [{ text: 'Priced.', usage: { input: 3000, output: 200, cacheRead: 1000 } }],
    });
    const long = await startOpenAIModel({ apiKey, turns: [{ text: 'Read it all.' }] });
    const flaky = await startOpenAIModel({
      apiKey,
      turns: [
        { error: { status: 429, retryAfter: 1 } },
        { error: { status: 500, retryAfter: 1 } },
        { error: { status: 503, retryAfter: 1, message: 'The engine is currently overloaded.' } },
        { text: 'recovered' },
      ],
    });
    const limited = await startOpenAIModel({
      apiKey,
      turns: [
        ...Array.from({ length: 6 }, (): Turn => ({ error: { status: 429, retryAfter: 1 } })),
        { text: 'not reached' },
      ],
    });
    // Codex's exec_command hands back a still-running command after a while: the model asks again, turn after turn.
    const slow = await startOpenAIModel({
      apiKey,
      turns: Array.from(
        { length: 30 },
        (): Turn => ({ toolCall: { name: 'exec_command', input: { cmd: sleeper } } }),
      ),
    });
    const denied = await startOpenAIModel({ apiKey, turns: [{ text: 'not reached' }] });
    const fakes = [priced, long, flaky, limited, slow, denied];
    try {
      await runScenario(cluster, 'real-codex', async (s) => {
        const images = realCliImages(s, runtime);
        const template = agentTemplate(images.agent);
        const prices = join(s.tempDir(), 'prices.json');
        writeFileSync(
          prices,
          JSON.stringify({ [MODEL]: { inputPerMTok: 2, outputPerMTok: 10, cacheReadPerMTok: 0.5 } }),
        );
        await s.create(
          agentSecrets({ openai: apiKey }),
          definition('priced', priced),
          stationManifest('priced', 'priced', { template }),
          definition('long', long, { prompt: longPrompt }),
          stationManifest('long', 'long', { template }),
          definition('flaky', flaky),
          stationManifest('flaky', 'flaky', { template }),
          definition('limited', limited),
          stationManifest('limited', 'limited', { template }),
          definition('slow', slow),
          stationManifest('slow', 'slow', { template, deadlineMinutes: 1 }),
          definition('denied', denied, { disallowed_tools: ['exec_command'] }),
          stationManifest('denied', 'denied', { template }),
          agentManifest('priced-run', 'priced'),
          agentManifest('long-run', 'long'),
          agentManifest('flaky-run', 'flaky'),
          agentManifest('limited-run', 'limited'),
          agentManifest('slow-run', 'slow'),
          agentManifest('denied-run', 'denied'),
        );
        await s.startReplica({ env: { AGENT_IMAGE: images.init, PRICES_FILE: prices } });
        const st = (a: { status: unknown }) => a.status as Record<string, unknown>;

        // A deny list Codex cannot enforce is refused before anything runs, with the reason.
        const refused = await s.waitTerminal('denied-run', 180_000);
        assert.equal(refused.status.phase, 'Failed', JSON.stringify(refused.status));
        assert.match(
          String(st(refused).failureReason),
          /disallowed_tools \(exec_command\): the codex CLI cannot enforce a tool deny list/,
        );
        assert.deepEqual(denied.requests, [], 'no request reached the model');

        // Codex prices nothing itself: tokens × the table's price. Codex counts cached tokens inside input_tokens:
        // 2000 uncached × $2 + 200 × $10 + 1000 cached × $0.50 per million tokens.
        const cost = await s.waitTerminal('priced-run', 180_000);
        assert.equal(cost.status.phase, 'Succeeded', JSON.stringify(cost.status));
        assert.equal(st(cost).result, 'Priced.');
        assert.deepEqual(st(cost).tokenUsage, {
          input: 2000,
          output: 200,
          cacheRead: 1000,
          cacheWrite: 0,
          total: 3200,
        });
        assert.deepEqual(st(cost).costEstimate, { usd: '0.0065', source: 'priceTable', model: MODEL });
        // The prompt went as an argument and stdin was closed: nothing was appended from it.
        const [asked] = modelRequests(priced);
        const body = JSON.stringify(asked?.body);
        assert.ok(body.includes('Do what the model says.'), 'the prompt reached the model');
        assert.ok(!body.includes('<stdin>'), 'nothing read from stdin');
        assert.equal(asked?.apiKey, apiKey);

        // The long prompt went on stdin, which was closed after it: Codex read it and went on.
        const read = await s.waitTerminal('long-run', 180_000);
        assert.equal(read.status.phase, 'Succeeded', JSON.stringify(read.status));
        assert.equal(st(read).result, 'Read it all.');
        assert.ok(
          JSON.stringify(modelRequests(long)[0]?.body).includes(tail),
          'the whole prompt reached the model',
        );

        const recovered = await s.waitTerminal('flaky-run', 180_000);
        assert.equal(recovered.status.phase, 'Succeeded', JSON.stringify(recovered.status));
        assert.equal(st(recovered).result, 'recovered');
        assert.deepEqual(
          modelRequests(flaky).map((r) => r.status),
          [429, 500, 503, 200],
        );

        const failed = await s.waitTerminal('limited-run', 180_000);
        assert.equal(failed.status.phase, 'Failed', JSON.stringify(failed.status));
        assert.equal(failed.status.exitCode, 1);
        assert.match(
          String(failed.status.failureReason),
          /exceeded retry limit, last status: 429 Too Many Requests/,
        );
        assert.deepEqual(
          modelRequests(limited).map((r) => r.status),
          [429, 429, 429, 429, 429, 429],
          'the first try and 5 retries',
        );

        const killed = await s.waitTerminal('slow-run', 240_000);
        assert.equal(killed.status.phase, 'Failed', JSON.stringify(killed.status));
        assert.equal(killed.status.exitCode, 124);
        assert.ok(modelRequests(slow).length >= 1, 'the tool was asked for');
        // Codex's children went with it: no process of its tool calls is left.
        await pollUntil(() => (commandLines().some((l) => l.includes(sleeper)) ? undefined : true), {
          timeoutMs: 30_000,
          description: 'the tool processes of the killed run to be gone',
        });
      });
    } finally {
      await Promise.all(fakes.map((f) => f.close()));
    }
  });

  it("calls a tool sidecar's MCP server and hands its answer to the model", {
    timeout: 300_000,
  }, async () => {
    const where = `shelf-${randomBytes(4).toString('hex')}`;
    const apiKey = `sk-e2e-${randomBytes(16).toString('hex')}`;
    const fake = await startOpenAIModel({
      apiKey,
      turns: [
        // Codex offers an MCP server's tools as the namespace `mcp__<server>` (docs/reference/vendor-clis.md#mcp-1).
        { toolCall: { namespace: 'mcp__lookup', name: 'lookup', input: { q: 'the keys' } } },
        { text: 'The keys are where the tool said.' },
      ],
    });
    try {
      await runScenario(cluster, 'real-codex-mcp', async (s) => {
        const images = realCliImages(s, runtime);
        const tool = mcpToolImage(s, where);
        await s.create(
          agentSecrets({ openai: apiKey }),
          definition('mcp', fake, {
            sidecars: [{ name: 'lookup', image: tool.image, mcp: { port: tool.port } }],
          }),
          stationManifest('mcp', 'mcp', { template: agentTemplate(images.agent) }),
          agentManifest('mcp-run', 'mcp'),
        );
        await s.startReplica({ env: { AGENT_IMAGE: images.init } });
        const run = await s.waitTerminal('mcp-run', 180_000);
        assert.equal(run.status.phase, 'Succeeded', JSON.stringify(run.status));
        assert.equal((run.status as Record<string, unknown>).result, 'The keys are where the tool said.');
        const requests = modelRequests(fake);
        assert.equal(requests.length, 2, JSON.stringify(fake.requests.map((r) => r.path)));
        assert.ok(requests[0]?.tools.includes('mcp__lookup'), `tools: ${requests[0]?.tools.join(',')}`);
        const [result] = requests[1]?.toolResults ?? [];
        assert.ok(result?.content.includes(`found the keys at ${where}`), `tool result: ${result?.content}`);
        const toolLog = await mcpToolLog(s, 'lookup');
        // Codex sends its own `_meta` (turn metadata) before the name.
        assert.match(toolLog, /^mcp tools\/call \{.*"name":"lookup","arguments":\{"q":"the keys"\}\}$/m);
      });
    } finally {
      await fake.close();
    }
  });

  it("answers the openai SDK's plain and streamed chat completions in server mode", {
    timeout: 300_000,
  }, async () => {
    const apiKey = `sk-e2e-${randomBytes(16).toString('hex')}`;
    const fake = await startOpenAIModel({
      apiKey,
      // Each request is a conversation of its own: the first step of the script answers both.
      turns: [{ text: 'Served by the real Codex.', usage: { input: 40, output: 8 } }],
    });
    try {
      await runScenario(cluster, 'real-codex-server', async (s) => {
        await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
        await applyRbacManifests(s, 'deploy/rbac/policy-reader-rbac.yaml');
        await applyRbacManifests(s, 'deploy/components/server/server-rbac.yaml');
        const images = realCliImages(s, runtime);
        await startServerReplica(s, images.init);
        const policy = await createPolicy(s, 'serve', ['job', 'server']);
        await s.create(
          agentSecrets({ openai: apiKey }),
          definition('bot', fake, { execution: 'server', prompt: 'unused by servers' }),
          stationManifest('bot', 'bot', { policyRef: policy, template: agentTemplate(images.agent) }),
          agentManifest('bot', 'bot'),
        );
        const client = await servingClient(s, 'bot');
        const plain = await firstCompletion(client, MODEL, 'Who answers?');
        assert.equal(plain.choices[0]?.message.content, 'Served by the real Codex.');
        assert.equal(plain.choices[0]?.finish_reason, 'stop');
        assert.equal(
          await streamedCompletion(client, MODEL, 'Who answers, streamed?'),
          'Served by the real Codex.',
        );

        // Both prompts reached the model through the CLI, with the run's key, and nothing from stdin.
        const asked = modelRequests(fake);
        assert.equal(asked.length, 2, JSON.stringify(fake.requests.map((r) => r.path)));
        for (const r of asked) assert.equal(r.apiKey, apiKey);
        const prompts = asked.map((r) => JSON.stringify(r.body));
        assert.ok(prompts[0]?.includes('Who answers?'));
        assert.ok(prompts[1]?.includes('Who answers, streamed?'));
        assert.ok(!prompts.some((p) => p.includes('<stdin>')), 'nothing read from stdin');
      });
    } finally {
      await fake.close();
    }
  });
});
