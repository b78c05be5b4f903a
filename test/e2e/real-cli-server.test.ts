// Server mode answered by the real Claude Code (test/clis): an Agent with `execution: server` becomes a Deployment
// whose pods run the CLI for each request, called through its Service's endpoint with OpenAI's official `openai` SDK
// (plain and streamed), while the CLI talks to the scripted Anthropic fake (test/support/model-api). Node only: the
// Deno pass runs server mode with the mock CLI (controller-server).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  agentManifest,
  applyCrds,
  applyRbacManifests,
  e2eCluster,
  e2eRuntime,
  GROUP_VERSION,
  runScenario,
  stationManifest,
} from '../support/index.ts';
import { startAnthropicModel } from '../support/model-api/index.ts';
import { firstCompletion, servingClient, streamedCompletion } from '../support/real-cli-checks.ts';
import { agentSecrets, realCliImages, realCliSkipReason } from '../support/real-clis.ts';
import { createPolicy, startServerReplica } from '../support/server.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip = realCliSkipReason(cluster, runtime);

describe(`the real Claude Code behind server mode (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it("answers the openai SDK's plain and streamed chat completions", { timeout: 300_000 }, async () => {
    const apiKey = `sk-ant-e2e-${randomBytes(16).toString('hex')}`;
    const fake = await startAnthropicModel({
      apiKey,
      // Each request is a conversation of its own: the first step of the script answers both.
      turns: [{ text: 'Served by the real Claude Code.', usage: { input: 40, output: 8 } }],
    });
    try {
      await runScenario(cluster, 'real-server', async (s) => {
        await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
        await applyRbacManifests(s, 'deploy/rbac/policy-reader-rbac.yaml');
        await applyRbacManifests(s, 'deploy/components/server/server-rbac.yaml');
        const images = realCliImages(s, runtime);
        await startServerReplica(s, images.init);
        const policy = await createPolicy(s, 'serve', ['job', 'server']);
        await s.create(
          agentSecrets({ anthropic: apiKey }),
          {
            apiVersion: GROUP_VERSION,
            kind: 'AgentDefinition',
            metadata: { name: 'bot' },
            spec: {
              model: 'claude-sonnet-4-5',
              prompt: 'unused by servers',
              execution: 'server',
              resources: {
                env: [{ name: 'ANTHROPIC_BASE_URL', value: fake.baseUrl }],
                secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'anthropic' }],
              },
            },
          },
          stationManifest('bot', 'bot', {
            policyRef: policy,
            template: {
              spec: {
                terminationGracePeriodSeconds: 2,
                containers: [{ name: 'agent', image: images.agent }],
              },
            },
          }),
          agentManifest('bot', 'bot'),
        );
        const client = await servingClient(s, 'bot');
        const plain = await firstCompletion(client, 'claude-sonnet-4-5', 'Who answers?');
        assert.equal(plain.choices[0]?.message.content, 'Served by the real Claude Code.');
        assert.equal(plain.choices[0]?.finish_reason, 'stop');
        assert.equal(
          await streamedCompletion(client, 'claude-sonnet-4-5', 'Who answers, streamed?'),
          'Served by the real Claude Code.',
        );

        // Both prompts reached the model through the CLI, with the run's key.
        const asked = fake.requests.filter((r) => r.path === '/v1/messages');
        assert.equal(asked.length, 2, JSON.stringify(fake.requests.map((r) => r.path)));
        for (const r of asked) assert.equal(r.apiKey, apiKey);
        const prompts = asked.map((r) => JSON.stringify(r.body));
        assert.ok(prompts[0]?.includes('Who answers?'));
        assert.ok(prompts[1]?.includes('Who answers, streamed?'));
      });
    } finally {
      await fake.close();
    }
  });
});
