// Server mode answered by the real Gemini CLI and OpenCode (test/clis): an Agent with `execution: server` becomes a
// Deployment whose pods run the CLI for each request, called through its Service's endpoint with OpenAI's official
// `openai` SDK (the model list, a plain and a streamed chat completion, a request that continues the first one's
// CLI session), while the CLI talks to the scripted fake of its model API (test/support/model-api). What the product
// does for each CLI: docs/reference/vendor-clis.md ("What the product does for …"). Node only: the Deno pass runs
// server mode with the mock CLI (controller-server).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type OpenAI from 'openai';
import {
  agentManifest,
  applyCrds,
  applyRbacManifests,
  e2eCluster,
  e2eRuntime,
  GROUP_VERSION,
  type Manifest,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';
import { type ModelApiFake, startAnthropicModel, startGeminiModel } from '../support/model-api/index.ts';
import { firstCompletion, servingClient, streamedCompletion } from '../support/real-cli-checks.ts';
import { agentSecrets, agentTemplate, realCliImages, realCliSkipReason } from '../support/real-clis.ts';
import { createPolicy, startServerReplica } from '../support/server.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip = realCliSkipReason(cluster, runtime);

/** A server-mode recipe of `model` whose CLI reads its model API's base URL and key from `env` and `secret`. */
function serverDefinition(
  model: string,
  env: { name: string; value: string },
  secret: { name: string; ref: string },
): Manifest {
  return {
    apiVersion: GROUP_VERSION,
    kind: 'AgentDefinition',
    metadata: { name: 'bot' },
    spec: {
      model,
      prompt: 'unused by servers',
      execution: 'server',
      resources: { env: [env], secrets: [secret] },
    },
  };
}

/**
 * Starts the server Agent `bot` of `definition` with the real-CLI images and checks what the SDK gets: the recipe's
 * model in `/v1/models`, `answers[0]` to a plain and to a streamed completion, then `answers[1]` to a third request
 * that continues the plain one's CLI session (its `session_id`). Returns the three prompts it sent.
 */
async function serveAndAsk(
  s: Scenario,
  definition: Manifest,
  keys: Readonly<Record<string, string>>,
  answers: readonly [string, string],
): Promise<readonly [string, string, string]> {
  await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
  await applyRbacManifests(s, 'deploy/rbac/policy-reader-rbac.yaml');
  await applyRbacManifests(s, 'deploy/components/server/server-rbac.yaml');
  const images = realCliImages(s, runtime);
  await startServerReplica(s, images.init);
  const policy = await createPolicy(s, 'serve', ['job', 'server']);
  await s.create(
    agentSecrets(keys),
    definition,
    stationManifest('bot', 'bot', { policyRef: policy, template: agentTemplate(images.agent) }),
    agentManifest('bot', 'bot'),
  );
  const model = String((definition.spec as { model: string }).model);
  const client = await servingClient(s, 'bot');
  const models = await client.models.list();
  assert.deepEqual(
    models.data.map((m) => m.id),
    [model],
  );
  const prompts = [
    `Who answers? ${randomBytes(4).toString('hex')}`,
    `Who answers, streamed? ${randomBytes(4).toString('hex')}`,
    `And again? ${randomBytes(4).toString('hex')}`,
  ] as const;
  const plain = await firstCompletion(client, model, prompts[0]);
  assert.equal(plain.choices[0]?.message.content, answers[0], JSON.stringify(plain));
  assert.equal(plain.choices[0]?.finish_reason, 'stop');
  assert.equal(await streamedCompletion(client, model, prompts[1]), answers[0]);
  // `session_id` is the server's extension of the request and the answer (docs/how-to/serve.md).
  const session = (plain as { session_id?: string }).session_id;
  assert.ok(session !== undefined && session !== '', JSON.stringify(plain));
  const resumed = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: prompts[2] }],
    session_id: session,
  } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
  assert.equal(resumed.choices[0]?.message.content, answers[1], JSON.stringify(resumed));
  assert.equal((resumed as { session_id?: string }).session_id, session);
  return prompts;
}

/**
 * The model turns `requests` (three: one per prompt, in order) carried the run's key; the first two were new
 * conversations, and the third carried the first prompt and its answer before its own prompt (the resumed session),
 * but not the second prompt.
 */
function assertAsked(
  requests: ModelApiFake['requests'],
  prompts: readonly [string, string, string],
  apiKey: string,
  detail: string,
): void {
  assert.equal(requests.length, 3, detail);
  const bodies = requests.map((r) => JSON.stringify(r.body ?? ''));
  for (const r of requests) assert.equal(r.apiKey, apiKey);
  assert.deepEqual(
    bodies.map((b) => prompts.map((p) => b.includes(p))),
    [
      [true, false, false],
      [false, true, false],
      [true, false, true],
    ],
    detail,
  );
  assert.deepEqual(
    requests.map((r) => r.step),
    [0, 0, 1],
    detail,
  );
}

describe(`the real Gemini CLI and OpenCode behind server mode (${runtime})`, {
  skip,
  concurrency: true,
}, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it("Gemini CLI answers the openai SDK's model list, plain and streamed chat completions and a resumed session", {
    timeout: 300_000,
  }, async () => {
    const apiKey = `AIza-e2e-${randomBytes(16).toString('hex')}`;
    const answers = ['Served by the real Gemini CLI.', 'Still the real Gemini CLI.'] as const;
    // The plain and the streamed request are new conversations (step 0 of the script); the resumed one is at step 1.
    const fake = await startGeminiModel({
      apiKey,
      turns: [{ text: answers[0], usage: { input: 40, output: 8 } }, { text: answers[1] }],
    });
    try {
      await runScenario(cluster, 'real-gem-server', async (s) => {
        const prompts = await serveAndAsk(
          s,
          serverDefinition(
            'gemini-3.5-flash',
            { name: 'GOOGLE_GEMINI_BASE_URL', value: fake.baseUrl },
            { name: 'GEMINI_API_KEY', ref: 'gemini' },
          ),
          { gemini: apiKey },
          answers,
        );
        const turns = fake.requests.filter((r) => r.method === 'POST');
        const detail = JSON.stringify(turns.map((r) => [r.path, r.status, r.step]));
        // With `--model` the CLI asks no routing classifier: one streamed request per prompt. (Gemini CLI 0.61.0
        // sends `gemini-3.5-flash` as `gemini-3.8-flash`: docs/reference/vendor-clis.md#server-mode.)
        for (const r of turns)
          assert.match(r.path, /^\/v1beta\/models\/gemini-[^/]+:streamGenerateContent$/, detail);
        assertAsked(turns, prompts, apiKey, detail);
      });
    } finally {
      await fake.close();
    }
  });

  it("OpenCode answers the openai SDK's model list, plain and streamed chat completions and a resumed session", {
    timeout: 300_000,
  }, async () => {
    const apiKey = `sk-ant-e2e-${randomBytes(16).toString('hex')}`;
    const answers = ['Served by the real OpenCode.', 'Still the real OpenCode.'] as const;
    const fake = await startAnthropicModel({
      apiKey,
      conversations: [
        // OpenCode asks a small model for a title beside each new session's first turn.
        {
          match: (body) => JSON.stringify((body as { system?: unknown }).system ?? '').includes('title'),
          turns: [{ text: 'Who answers' }],
        },
        { turns: [{ text: answers[0], usage: { input: 40, output: 8 } }, { text: answers[1] }] },
      ],
    });
    try {
      await runScenario(cluster, 'real-oc-server', async (s) => {
        const prompts = await serveAndAsk(
          s,
          serverDefinition(
            'opencode/anthropic/claude-sonnet-4-5',
            { name: 'ANTHROPIC_BASE_URL', value: fake.baseUrl },
            { name: 'ANTHROPIC_API_KEY', ref: 'anthropic' },
          ),
          { anthropic: apiKey },
          answers,
        );
        const turns = fake.requests.filter(
          (r) =>
            r.path === '/v1/messages' && !JSON.stringify(r.body ?? '').includes('You are a title generator'),
        );
        const detail = JSON.stringify(fake.requests.map((r) => [r.path, r.status, r.model, r.step]));
        assertAsked(turns, prompts, apiKey, detail);
        // The prompt reached the model as sent: on stdin, not wrapped in the quotes OpenCode puts around an argument.
        for (const prompt of prompts)
          assert.ok(!JSON.stringify(turns).includes(`\\"${prompt}\\"`), `${prompt} arrived quoted`);
      });
    } finally {
      await fake.close();
    }
  });
});
