// The real Codex, Gemini CLI and OpenCode (test/clis, installed by scripts/install-clis) as the agents of Job runs
// on the local control plane, each against the loopback fake of the model API it speaks (test/support/model-api):
// the model asks for one shell command that writes the workspace, the CLI runs it in the pod and sends its output
// back, then answers; the Agent gets the answer and the tokens the fake sent, and the key reached the model API.
// What the product does for each CLI is in docs/reference/vendor-clis.md ("What the product does for …"). Node only:
// the Deno pass runs the same Job path with the mock CLI.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  agentManifest,
  applyCrds,
  e2eCluster,
  e2eRuntime,
  runScenario,
  stationManifest,
} from '../support/index.ts';
import {
  type ModelApiFake,
  startAnthropicModel,
  startGeminiModel,
  startOpenAIModel,
} from '../support/model-api/index.ts';
import {
  agentSecrets,
  agentTemplate,
  cliDefinition,
  realCliImages,
  realCliSkipReason,
} from '../support/real-clis.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip = realCliSkipReason(cluster, runtime);

/**
 * Whether a request to the fake carried the command's output back (the CLI's second turn): the working directory
 * and the marker the command wrote and read, in whatever wrapping the CLI gives a tool's output.
 */
function toolOutputSeen(fake: ModelApiFake, marker: string): boolean {
  return fake.requests.some((r) =>
    r.toolResults.some((t) => t.content.includes('/workspace') && t.content.includes(marker)),
  );
}

describe(`the real Codex, Gemini CLI and OpenCode in Job runs (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it('each runs a shell command in the workspace, answers, and reports the tokens the model API sent', {
    timeout: 300_000,
  }, async () => {
    const marker = `marker-${randomBytes(6).toString('hex')}`;
    const command = `echo ${marker} > marker.txt && pwd && cat marker.txt`;
    const keys = {
      openai: `sk-e2e-${randomBytes(16).toString('hex')}`,
      gemini: `AIza-e2e-${randomBytes(16).toString('hex')}`,
      anthropic: `sk-ant-e2e-${randomBytes(16).toString('hex')}`,
    };
    const usage = { input: 2000, output: 60, cacheRead: 500 };
    const codex = await startOpenAIModel({
      apiKey: keys.openai,
      turns: [
        { toolCall: { name: 'exec_command', input: { cmd: command } }, usage: { input: 900, output: 20 } },
        { text: 'Codex left the marker.', usage },
      ],
    });
    const gemini = await startGeminiModel({
      apiKey: keys.gemini,
      turns: [
        {
          toolCall: { name: 'run_shell_command', input: { command, description: 'write a marker' } },
          usage: { input: 900, output: 20 },
        },
        { text: 'Gemini left the marker.', usage },
      ],
    });
    const opencode = await startAnthropicModel({
      apiKey: keys.anthropic,
      conversations: [
        // OpenCode asks a small model for a session title beside the first turn.
        {
          match: (body) => JSON.stringify((body as { system?: unknown }).system ?? '').includes('title'),
          turns: [{ text: 'Marker', usage: { input: 1, output: 1 } }, { text: 'Marker' }],
        },
        {
          turns: [
            {
              toolCall: { name: 'bash', input: { command, description: 'write a marker' } },
              usage: { input: 900, output: 20 },
            },
            { text: 'OpenCode left the marker.', usage },
          ],
        },
      ],
    });
    try {
      await runScenario(cluster, 'real-others', async (s) => {
        const images = realCliImages(s, runtime);
        const template = agentTemplate(images.agent);
        await s.create(
          agentSecrets(keys),
          cliDefinition(
            'codex',
            'gpt-5.1-codex',
            { OPENAI_BASE_URL: codex.baseUrl },
            { name: 'OPENAI_API_KEY', ref: 'openai' },
          ),
          stationManifest('codex', 'codex', { template }),
          cliDefinition(
            'gemini',
            'gemini-3.5-flash',
            { GOOGLE_GEMINI_BASE_URL: gemini.baseUrl },
            { name: 'GEMINI_API_KEY', ref: 'gemini' },
            // Gemini CLI offers its shell tool only in yolo mode (docs/reference/vendor-clis.md).
            { permission_mode: 'bypass' },
          ),
          stationManifest('gemini', 'gemini', { template }),
          cliDefinition(
            'opencode',
            'opencode/anthropic/claude-sonnet-4-5',
            { ANTHROPIC_BASE_URL: opencode.baseUrl },
            { name: 'ANTHROPIC_API_KEY', ref: 'anthropic' },
          ),
          stationManifest('opencode', 'opencode', { template }),
          agentManifest('codex-run', 'codex'),
          agentManifest('gemini-run', 'gemini'),
          agentManifest('opencode-run', 'opencode'),
        );
        await s.startReplica({ env: { AGENT_IMAGE: images.init } });

        const cases = [
          ['codex-run', codex, 'Codex left the marker.', keys.openai],
          ['gemini-run', gemini, 'Gemini left the marker.', keys.gemini],
          ['opencode-run', opencode, 'OpenCode left the marker.', keys.anthropic],
        ] as const;
        const failures: string[] = [];
        for (const [name, fake, answer, key] of cases) {
          const run = await s.waitTerminal(name, 180_000);
          const status = run.status as Record<string, unknown>;
          const paths = fake.requests.map((r) => `${r.method} ${r.path} ${r.status}`);
          const problems: string[] = [];
          if (run.status.phase !== 'Succeeded') problems.push(`phase ${run.status.phase}`);
          if (status.result !== answer) problems.push(`result ${JSON.stringify(status.result)}`);
          if (!toolOutputSeen(fake, marker))
            problems.push(
              `the tool output did not reach the model: ${JSON.stringify(fake.requests.map((r) => r.toolResults))}`,
            );
          if (!fake.requests.some((r) => r.apiKey === key))
            problems.push('the key did not reach the model API');
          if (JSON.stringify(run).includes(key)) problems.push('the key is on the Agent');
          if (problems.length > 0)
            failures.push(
              `${name}: ${problems.join('; ')}\n  requests: ${paths.join(', ')}\n  status: ${JSON.stringify(run.status).slice(0, 3000)}`,
            );
        }
        assert.deepEqual(failures, []);

        // Tokens as each CLI adds up the two turns the fake sent (Codex and Gemini count cached tokens inside
        // their input: the Agent shows the uncached part as input).
        const usageOf = async (name: string) => {
          const agent = await s.agent(name);
          return (agent?.status as Record<string, unknown> | undefined)?.tokenUsage;
        };
        assert.deepEqual(await usageOf('codex-run'), {
          input: 900 + 2000 - 500,
          output: 20 + 60,
          cacheRead: 500,
          cacheWrite: 0,
          total: 900 + 2000 + 20 + 60,
        });
      });
    } finally {
      await Promise.all([codex.close(), gemini.close(), opencode.close()]);
    }
  });
});
