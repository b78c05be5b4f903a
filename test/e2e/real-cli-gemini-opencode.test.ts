// The real Gemini CLI and OpenCode (test/clis, installed by scripts/install-clis) beyond the one Job run of
// real-cli-others.test.ts, each against the loopback fake of its model API (test/support/model-api): the tokens the
// fake sent and the cost land on the Agent, a tool on the deny list is never offered and a call anyway never runs,
// the CLI's own retries and failure message, and the deadline (exit 124, the CLI and its children gone).
// What the product does for each CLI: docs/reference/vendor-clis.md ("What the product does for …"). Node only: the
// Deno pass runs the same Job path with the mock CLI.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  agentManifest,
  applyCrds,
  e2eCluster,
  e2eRuntime,
  GROUP_VERSION,
  type Manifest,
  pollUntil,
  runScenario,
  stationManifest,
} from '../support/index.ts';
import {
  type ModelApiFake,
  type ModelRequest,
  startAnthropicModel,
  startGeminiModel,
} from '../support/model-api/index.ts';
import { agentSecrets, agentTemplate, realCliImages, realCliSkipReason } from '../support/real-clis.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip = realCliSkipReason(cluster, runtime);

const GEMINI_MODEL = 'gemini-3.5-flash';
const OPENCODE_MODEL = 'opencode/anthropic/claude-sonnet-4-5';

/** A Gemini CLI or OpenCode recipe on the fake at `baseUrl`, the key from agent-secrets. */
function definition(
  name: string,
  cli: 'gemini' | 'opencode',
  baseUrl: string,
  extra: Readonly<Record<string, unknown>> = {},
): Manifest {
  const gemini = cli === 'gemini';
  return {
    apiVersion: GROUP_VERSION,
    kind: 'AgentDefinition',
    metadata: { name },
    spec: {
      model: gemini ? GEMINI_MODEL : OPENCODE_MODEL,
      prompt: 'Leave a marker in the workspace, then say what you did.',
      resources: {
        env: [{ name: gemini ? 'GOOGLE_GEMINI_BASE_URL' : 'ANTHROPIC_BASE_URL', value: baseUrl }],
        secrets: [
          gemini
            ? { name: 'GEMINI_API_KEY', ref: 'gemini' }
            : { name: 'ANTHROPIC_API_KEY', ref: 'anthropic' },
        ],
      },
      // Gemini CLI offers its shell tool only in yolo mode (docs/reference/vendor-clis.md#tool-permissions-1).
      ...(gemini ? { permission_mode: 'bypass' } : {}),
      ...extra,
    },
  };
}

/** OpenCode asks a small model for a session title beside the first turn: that conversation of the fake. */
const titleConversation = {
  match: (body: unknown) => JSON.stringify((body as { system?: unknown }).system ?? '').includes('title'),
  turns: [{ text: 'Marker', usage: { input: 1, output: 1 } }, { text: 'Marker' }],
};

/** The fake's requests of the run's own conversation (OpenCode's title requests left out). */
const turnsOf = (fake: ModelApiFake): ModelRequest[] =>
  fake.requests.filter(
    (r) => r.method === 'POST' && !JSON.stringify(r.body ?? '').includes('You are a title generator'),
  );

/** The command lines of every process on the machine (the test node's containers are local processes). */
function commandLines(): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      out.push(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

describe(`the real Gemini CLI and OpenCode beyond the Job run (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it('report the tokens the model API sent and the cost; a denied tool is not offered and never runs', {
    timeout: 400_000,
  }, async () => {
    const marker = `marker-${randomBytes(6).toString('hex')}`;
    const command = `echo ${marker} > marker.txt && pwd && cat marker.txt`;
    const deniedCommand = `echo denied-${marker} > denied.txt`;
    const keys = {
      gemini: `AIza-e2e-${randomBytes(16).toString('hex')}`,
      anthropic: `sk-ant-e2e-${randomBytes(16).toString('hex')}`,
    };
    const gemini = await startGeminiModel({
      apiKey: keys.gemini,
      turns: [
        {
          toolCall: { name: 'run_shell_command', input: { command, description: 'write a marker' } },
          usage: { input: 900, output: 20 },
        },
        { text: 'Gemini left the marker.', usage: { input: 2000, output: 60, cacheRead: 500 } },
      ],
    });
    const geminiDenied = await startGeminiModel({
      apiKey: keys.gemini,
      turns: [
        { toolCall: { name: 'run_shell_command', input: { command: deniedCommand, description: 'try' } } },
        { text: 'I could not run that.' },
      ],
    });
    const opencode = await startAnthropicModel({
      apiKey: keys.anthropic,
      conversations: [
        titleConversation,
        {
          turns: [
            {
              toolCall: { name: 'bash', input: { command, description: 'write a marker' } },
              usage: { input: 900, output: 20, cacheWrite: 100 },
            },
            { text: 'OpenCode left the marker.', usage: { input: 2000, output: 60, cacheRead: 500 } },
          ],
        },
      ],
    });
    const opencodeDenied = await startAnthropicModel({
      apiKey: keys.anthropic,
      conversations: [
        titleConversation,
        {
          turns: [
            { toolCall: { name: 'bash', input: { command: deniedCommand, description: 'try' } } },
            { text: 'I could not run that.' },
          ],
        },
      ],
    });
    try {
      await runScenario(cluster, 'real-gem-oc', async (s) => {
        const images = realCliImages(s, runtime);
        const template = agentTemplate(images.agent);
        // The product ships no Gemini price (docs/reference/vendor-apis.md#models-and-prices): the operator's
        // price file prices it, as the ConfigMap agent-prices would.
        const prices = join(s.tempDir(), 'prices.json');
        writeFileSync(prices, JSON.stringify({ 'gemini-3.5-*': { inputPerMTok: 0.5, outputPerMTok: 3 } }));
        await s.create(
          agentSecrets(keys),
          definition('gemini', 'gemini', gemini.baseUrl),
          stationManifest('gemini', 'gemini', { template }),
          definition('gemini-denied', 'gemini', geminiDenied.baseUrl, {
            disallowed_tools: ['run_shell_command'],
          }),
          stationManifest('gemini-denied', 'gemini-denied', { template }),
          definition('opencode', 'opencode', opencode.baseUrl),
          stationManifest('opencode', 'opencode', { template }),
          definition('opencode-denied', 'opencode', opencodeDenied.baseUrl, { disallowed_tools: ['bash'] }),
          stationManifest('opencode-denied', 'opencode-denied', { template }),
          agentManifest('gemini-run', 'gemini'),
          agentManifest('gemini-denied-run', 'gemini-denied'),
          agentManifest('opencode-run', 'opencode'),
          agentManifest('opencode-denied-run', 'opencode-denied'),
        );
        await s.startReplica({ env: { AGENT_IMAGE: images.init, PRICES_FILE: prices } });

        // Gemini CLI: the prompt count of a Gemini answer includes its cached tokens, so the Agent shows the uncached
        // part as input; the cost is the price file's, as the operator set it.
        const g = await s.waitTerminal('gemini-run', 240_000);
        const gs = g.status as Record<string, unknown>;
        assert.equal(g.status.phase, 'Succeeded', JSON.stringify(g.status));
        assert.equal(gs.result, 'Gemini left the marker.');
        assert.deepEqual(gs.tokenUsage, {
          input: 900 + 2000 - 500,
          output: 20 + 60,
          cacheRead: 500,
          cacheWrite: 0,
          total: 900 + 20 + 2000 + 60,
        });
        // (2400 × $0.50 + 80 × $3 + 500 × $0.05, cache reads at a tenth of input) per million tokens.
        assert.deepEqual(gs.costEstimate, { usd: '0.001465', source: 'priceTable', model: GEMINI_MODEL });

        // OpenCode adds up its steps and prices them itself.
        const o = await s.waitTerminal('opencode-run', 240_000);
        const os = o.status as Record<string, unknown>;
        assert.equal(o.status.phase, 'Succeeded', JSON.stringify(o.status));
        assert.equal(os.result, 'OpenCode left the marker.');
        assert.deepEqual(os.tokenUsage, {
          input: 900 + 2000,
          output: 20 + 60,
          cacheRead: 500,
          cacheWrite: 100,
          total: 900 + 2000 + 20 + 60 + 500 + 100,
        });
        // Claude Sonnet 4.5 at OpenCode's prices ($3 input, $15 output, $0.30 cache read, $3.75 cache write per
        // million tokens; docs/reference/vendor-clis.md#what-the-product-does-for-opencode).
        assert.deepEqual(os.costEstimate, {
          usd: String((2900 * 3 + 80 * 15 + 500 * 0.3 + 100 * 3.75) / 1e6),
          source: 'cli',
          model: OPENCODE_MODEL,
        });

        // A denied tool: not offered, and the call the model makes anyway is answered by the CLI, not run.
        for (const [name, fake, tool] of [
          ['gemini-denied-run', geminiDenied, 'run_shell_command'],
          ['opencode-denied-run', opencodeDenied, 'bash'],
        ] as const) {
          const run = await s.waitTerminal(name, 240_000);
          const requests = turnsOf(fake);
          const detail = JSON.stringify({ status: run.status, paths: requests.map((r) => r.path) });
          assert.ok(requests.length >= 1, detail);
          assert.ok(!requests[0]?.tools.includes(tool), `${name}: ${tool} offered: ${requests[0]?.tools}`);
          const answers = requests.flatMap((r) => r.toolResults);
          assert.ok(
            answers.every((a) => !a.content.includes(`denied-${marker}`)),
            `${name}: ${JSON.stringify(answers)}`,
          );
          assert.ok(
            !commandLines().some((l) => l.includes(`denied-${marker}`)),
            `${name}: the denied command is running`,
          );
        }
        const gd = await s.waitTerminal('gemini-denied-run', 10_000);
        assert.equal(gd.status.phase, 'Succeeded', JSON.stringify(gd.status));
        const [refusal] = turnsOf(geminiDenied)[1]?.toolResults ?? [];
        assert.match(String(refusal?.content), /not found/, JSON.stringify(refusal));
        const od = await s.waitTerminal('opencode-denied-run', 10_000);
        assert.equal(od.status.phase, 'Succeeded', JSON.stringify(od.status));
        const [invalid] = turnsOf(opencodeDenied)[1]?.toolResults ?? [];
        assert.match(String(invalid?.content), /unavailable tool 'bash'/, JSON.stringify(invalid));
      });
    } finally {
      await Promise.all([gemini.close(), geminiDenied.close(), opencode.close(), opencodeDenied.close()]);
    }
  });
});
