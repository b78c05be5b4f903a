// Sessions that outlive their pod (issue 29 §2, §3, §5) with the real Claude Code (test/clis) and the scripted
// Anthropic fake (test/support/model-api), the controller holding the test bed's real S3-compatible store (versitygw):
// a two-turn session suspends when idle (0 pods), a third prompt wakes it and the model's request for turn 3 carries
// turns 1–2; the pod killed mid-turn ends that turn's stream with an error line and the session goes on in a new pod
// from the last saved turn, without the lost prompt; deleting the Agent deletes its objects in the store. Node only:
// the real CLIs run in the Node pass.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { sessionStoreFromConfig } from '../../src/sessions/store.ts';
import {
  agentManifest,
  applyCrds,
  e2eCluster,
  e2eRuntime,
  GROUP_VERSION,
  runScenario,
  stationManifest,
} from '../support/index.ts';
import { apiPath } from '../support/kube-client.ts';
import { startAnthropicModel } from '../support/model-api/index.ts';
import { pollUntil } from '../support/poll.ts';
import { agentSecrets, realCliImages, realCliSkipReason } from '../support/real-clis.ts';
import { agentPath, apiUrl, applyRealtimeRbac, call, promptWhenReady } from '../support/realtime.ts';
import { testbedSessionStore } from '../support/testbed.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip =
  realCliSkipReason(cluster, runtime) ||
  (typeof cluster !== 'string' && cluster.testbed?.sessionStore === undefined
    ? 'the e2e cluster is not a testbed with a session store (run scripts/testbed up)'
    : false);

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

/**
 * A loopback proxy in front of the model fake that can hold requests (a turn kept in flight): while `hold` is on,
 * each request is kept open, unanswered, until `dropHeld()` closes it.
 */
async function startHoldingProxy(target: string) {
  const upstream = new URL(target);
  const held: ServerResponse[] = [];
  let hold = false;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (hold) {
      held.push(res);
      req.resume();
      return;
    }
    const out = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: `${upstream.pathname.replace(/\/$/, '')}${req.url ?? '/'}`,
        method: req.method,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    held,
    setHold(on: boolean) {
      hold = on;
    },
    dropHeld() {
      for (const r of held.splice(0)) r.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe(`sessions that outlive their pod, with the real Claude Code (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it('suspends when idle, wakes on a prompt with turns 1–2, survives a pod killed mid-turn, deletes its state', {
    timeout: 480_000,
  }, async () => {
    const apiKey = `sk-ant-e2e-${randomBytes(16).toString('hex')}`;
    const fake = await startAnthropicModel({
      apiKey,
      turns: [
        { text: 'Ready.' },
        { text: 'The first answer.' },
        { text: 'The second answer.' },
        { text: 'The third answer.' },
        { text: 'The fourth answer.' },
      ],
    });
    const proxy = await startHoldingProxy(fake.baseUrl);
    const store = testbedSessionStore(cluster.testbed);
    const prefix = `e2e-sessions-${randomBytes(4).toString('hex')}/`;
    const sessions = sessionStoreFromConfig({ ...store, prefix });
    try {
      await runScenario(cluster, 'sessions', async (s) => {
        await applyRealtimeRbac(s);
        const images = realCliImages(s, runtime);
        const ctl = await s.startReplica({
          kubeconfig: await s.kubeconfigAs('agent-controller'),
          env: {
            REALTIME_ENABLED: 'true',
            API_PORT: '0',
            AGENT_IMAGE: images.init,
            AGENT_SESSION_STORE_URL: store.endpoint,
            AGENT_SESSION_STORE_BUCKET: store.bucket,
            AGENT_SESSION_STORE_REGION: store.region,
            AGENT_SESSION_STORE_PREFIX: prefix,
            AGENT_SESSION_STORE_ACCESS_KEY_ID: store.credentials.accessKeyId,
            AGENT_SESSION_STORE_SECRET_ACCESS_KEY: store.credentials.secretAccessKey,
            AGENT_SESSION_WAKE_WAIT_SECONDS: '150',
          },
        });
        const baseUrl = fake.baseUrl.replace(/:\d+/, `:${proxy.port}`);
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
              idleTimeoutSeconds: 6,
              resources: {
                env: [{ name: 'ANTHROPIC_BASE_URL', value: baseUrl }],
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

        // Two turns, each saved.
        const first = await promptWhenReady(base, path, launcher, 'What is the first thing?');
        assert.equal(first.status, 200, first.text);
        assert.equal(first.lines.find((l) => l.type === 'result')?.result, 'The first answer.', first.text);
        const second = await call(base, path, launcher, { prompt: 'And the second?' });
        assert.equal(
          second.lines.find((l) => l.type === 'result')?.result,
          'The second answer.',
          second.text,
        );
        const running = await s.waitForAgent(
          'live-run',
          (a) => a.status.session?.savedTurn === 3,
          'status.session.savedTurn 3 (the opening prompt is turn 1)',
          60_000,
        );
        const uid = running.metadata.uid ?? '';
        const jobName = running.status.jobName ?? '';

        // Idle past 6 s: Suspended, no pod, two turns in the store.
        const suspended = await s.waitForAgent(
          'live-run',
          (a) => a.status.phase === 'Suspended',
          'phase Suspended',
          90_000,
        );
        assert.equal(suspended.status.conditions?.find((c) => c.type === 'Ready')?.reason, 'Suspended');
        await pollUntil(
          async (observe) => {
            const pods = await s.jobPods(jobName);
            observe(`${pods.length} pods`);
            return pods.length === 0 ? true : undefined;
          },
          { timeoutMs: 60_000, intervalMs: 500, description: 'the suspended session to hold no pod' },
        );
        const stored = await sessions.listTurns({ namespace: s.ns, uid });
        assert.ok(stored.ok, JSON.stringify(stored));
        assert.deepEqual(
          stored.value.map((t) => t.turn),
          // The opening prompt's turn (1) ended before any prompt reached the session: saved with turn 2.
          [2, 3],
        );

        // The third prompt wakes it (held until the new pod has the state) and the model sees turns 1–2.
        const third = await call(base, path, launcher, { prompt: 'And the third?' });
        assert.equal(third.status, 200, third.text);
        assert.equal(third.lines.find((l) => l.type === 'result')?.result, 'The third answer.', third.text);
        const history = texts(fake.requests.filter((r) => r.path === '/v1/messages').at(-1)?.body);
        const order = [
          'What is the first thing?',
          'The first answer.',
          'And the second?',
          'The second answer.',
        ].map((t) => history.findIndex((h) => h.includes(t)));
        assert.ok(
          order.every((i, k) => i !== -1 && (k === 0 || i > (order[k - 1] ?? -1))),
          `turns 1–2 in order in the request: ${JSON.stringify(history).slice(0, 2000)}`,
        );
        assert.ok(history.at(-1)?.includes('And the third?'), 'then the new prompt');
        const woken = await s.waitForAgent(
          'live-run',
          (a) => a.status.phase === 'Running' && a.status.session?.savedTurn === 4,
          'Running with turn 4 saved',
          60_000,
        );
        const events = (await s.agentEvents('live-run', uid)).map((e) => e.reason);
        for (const reason of ['Suspended', 'Woken', 'SessionRestored'])
          assert.ok(events.includes(reason), `Event ${reason} in ${events.join(', ')}`);

        // A turn in flight whose pod is killed: its stream ends with an error line; never replayed.
        proxy.setHold(true);
        const lost = call(base, path, launcher, { prompt: 'A prompt that is lost.' });
        await pollUntil(async () => (proxy.held.length > 0 ? true : undefined), {
          timeoutMs: 60_000,
          intervalMs: 200,
          description: 'the lost turn to reach the model',
        });
        const pods = await s.jobPods(woken.status.jobName ?? jobName);
        for (const pod of pods)
          await s.client.delete(apiPath('v1', 'pods', { namespace: s.ns, name: pod.metadata.name ?? '' }), {
            gracePeriodSeconds: 0,
          });
        const lostAnswer = await lost;
        assert.equal(lostAnswer.status, 200, lostAnswer.text);
        const errorLine = lostAnswer.lines.at(-1);
        assert.equal(errorLine?.type, 'error', lostAnswer.text);
        assert.match(String(errorLine?.message), /pod was lost/);
        proxy.dropHeld();
        proxy.setHold(false);
        await s.waitForAgent(
          'live-run',
          (a) => (a.status.session?.restarts ?? 0) === 1,
          'status.session.restarts 1',
          120_000,
        );
        const fourth = await promptWhenReady(base, path, launcher, 'And the fourth?');
        assert.equal(fourth.status, 200, fourth.text);
        assert.equal(
          fourth.lines.find((l) => l.type === 'result')?.result,
          'The fourth answer.',
          fourth.text,
        );
        const after = texts(fake.requests.filter((r) => r.path === '/v1/messages').at(-1)?.body);
        assert.ok(
          after.some((t) => t.includes('The third answer.')),
          'turn 3 goes on',
        );
        assert.equal(
          after.some((t) => t.includes('A prompt that is lost.')),
          false,
          'the lost turn is not replayed',
        );

        // Deleting the Agent deletes its objects in the store.
        await s.client.delete(apiPath(GROUP_VERSION, 'agents', { namespace: s.ns, name: 'live-run' }));
        await pollUntil(async () => ((await s.agent('live-run')) === undefined ? true : undefined), {
          timeoutMs: 90_000,
          intervalMs: 500,
          description: 'the Agent to go',
        });
        const left = await sessions.listTurns({ namespace: s.ns, uid });
        assert.ok(left.ok, JSON.stringify(left));
        assert.deepEqual(left.value, []);
      });
    } finally {
      await proxy.close();
      await fake.close();
    }
  });
});
