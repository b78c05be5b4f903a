// A realtime session answered by the real Claude Code (test/clis) through the controller's prompt API, against the
// scripted Anthropic fake (test/support/model-api): two prompts, the second continuing the session the first one
// started after the definition's opening prompt (the supervisor resumes the CLI's own session, so the model sees the first turn again), the CLI's session
// id on the Agent, close → Succeeded. Node only: the Deno pass runs the same path with the mock CLI
// (controller-realtime).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  agentManifest,
  applyCrds,
  e2eCluster,
  e2eRuntime,
  GROUP_VERSION,
  runScenario,
  stationManifest,
} from '../support/index.ts';
import { startAnthropicModel } from '../support/model-api/index.ts';
import { agentSecrets, realCliImages, realCliSkipReason } from '../support/real-clis.ts';
import {
  agentPath,
  apiUrl,
  applyRealtimeRbac,
  call,
  promptWhenReady,
  startRealtimeReplica,
} from '../support/realtime.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip = realCliSkipReason(cluster, runtime);

/** Every text of a request's messages (content strings and text blocks), in order. */
function texts(body: unknown): string[] {
  const messages = (body as { messages?: { content?: unknown }[] }).messages ?? [];
  const out: string[] = [];
  for (const m of messages) {
    if (typeof m.content === 'string') out.push(m.content);
    else if (Array.isArray(m.content))
      for (const block of m.content as { type?: string; text?: unknown }[])
        if (block.type === 'text' && typeof block.text === 'string') out.push(block.text);
  }
  return out;
}

describe(`the real Claude Code in a realtime session (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it('answers two prompts in one session (the second sees the first), records the session id, closes', {
    timeout: 300_000,
  }, async () => {
    const apiKey = `sk-ant-e2e-${randomBytes(16).toString('hex')}`;
    const fake = await startAnthropicModel({
      apiKey,
      // The session starts with the definition's prompt (its own turn), then the two prompts.
      turns: [{ text: 'Ready.' }, { text: 'The first answer.' }, { text: 'The second answer.' }],
    });
    try {
      await runScenario(cluster, 'real-rt', async (s) => {
        await applyRealtimeRbac(s);
        const images = realCliImages(s, runtime);
        const ctl = await startRealtimeReplica(s, { agentImage: images.init });
        await s.create(
          agentSecrets({ anthropic: apiKey }),
          {
            apiVersion: GROUP_VERSION,
            kind: 'AgentDefinition',
            metadata: { name: 'live' },
            spec: {
              model: 'claude-sonnet-4-5',
              prompt: 'You are a helpful assistant.',
              execution: 'realtime',
              resources: {
                env: [{ name: 'ANTHROPIC_BASE_URL', value: fake.baseUrl }],
                secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'anthropic' }],
              },
            },
          },
          stationManifest('live', 'live', {
            template: {
              spec: {
                terminationGracePeriodSeconds: 2,
                containers: [{ name: 'agent', image: images.agent }],
              },
            },
          }),
          agentManifest('live-run', 'live'),
        );
        const launcher = await s.serviceAccountToken('agent-launcher');
        const base = await apiUrl(ctl);
        const path = agentPath(s, 'live-run', 'prompt');

        const first = await promptWhenReady(base, path, launcher, 'What is the first thing?');
        assert.equal(first.status, 200, first.text);
        const firstResult = first.lines.find((l) => l.type === 'result');
        assert.equal(firstResult?.result, 'The first answer.', first.text);
        const session = String(firstResult?.session_id ?? '');
        assert.match(session, /^[0-9a-f-]{36}$/, 'the CLI names its session');

        const second = await call(base, path, launcher, { prompt: 'And the second?' });
        assert.equal(second.status, 200, second.text);
        const secondResult = second.lines.find((l) => l.type === 'result');
        assert.equal(secondResult?.result, 'The second answer.', second.text);
        assert.equal(secondResult?.session_id, session, 'the same session goes on');

        // The model got the first turn back with the second prompt.
        const requests = fake.requests.filter((r) => r.path === '/v1/messages');
        const last = texts(requests.at(-1)?.body);
        const opening = last.findIndex((t) => t.includes('You are a helpful assistant.'));
        assert.ok(opening !== -1, 'the opening prompt is in the history');
        assert.ok(last.indexOf('Ready.') > opening, 'then its answer');
        const asked = last.findIndex((t) => t.includes('What is the first thing?'));
        assert.ok(asked > last.indexOf('Ready.'), 'then the first prompt');
        assert.ok(asked !== -1, `the first prompt is in the history: ${JSON.stringify(last).slice(0, 2000)}`);
        assert.ok(last.indexOf('The first answer.') > asked, 'then its answer');
        assert.ok(last.at(-1)?.includes('And the second?'), 'then the new prompt');

        const recorded = await s.waitForAgent(
          'live-run',
          (a) => a.status.sessionId === session,
          'status.sessionId',
          30_000,
        );
        assert.equal(recorded.status.phase, 'Running');

        const closed = await call(base, agentPath(s, 'live-run', 'close'), launcher, {});
        assert.ok(closed.status === 200 || closed.status === 202, closed.text);
        const done = await s.waitTerminal('live-run', 120_000);
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
      });
    } finally {
      await fake.close();
    }
  });
});
