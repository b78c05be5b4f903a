// Suspend and wake of a realtime session on the runtime named by AGENT_E2E_RUNTIME (the Deno pass included), with the
// mock agent CLI (an echo) and the test bed's session store (versitygw): two turns saved, `agent-controller suspend`
// → Suspended with no pod, a prompt held while the session wakes and answered by the new pod, `resume` of a running
// session changes nothing, and deleting the Agent deletes its stored turns.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sessionStoreFromConfig } from '../../src/sessions/store.ts';
import {
  agentManifest,
  applyCrds,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  fakeClaudeImages,
  GROUP_VERSION,
  pollUntil,
  runScenario,
  stationManifest,
} from '../support/index.ts';
import { apiPath } from '../support/kube-client.ts';
import {
  agentPath,
  apiUrl,
  applyRealtimeRbac,
  call,
  promptWhenReady,
  realtimeDefinition,
  runCli,
} from '../support/realtime.ts';
import { testbedSessionStore } from '../support/testbed.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip =
  controllerSkipReason(cluster) ||
  (typeof cluster !== 'string' && cluster.testbed?.sessionStore === undefined
    ? 'the e2e cluster is not a testbed with a session store (run scripts/testbed up)'
    : false);

describe(`sessions: suspend and wake with the mock CLI (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it('suspend → Suspended with no pod; a prompt wakes it and is answered; delete → nothing stored', {
    timeout: 300_000,
  }, async () => {
    const store = testbedSessionStore(cluster.testbed);
    const prefix = `e2e-smoke-${runtime}-${randomBytes(4).toString('hex')}/`;
    const sessions = sessionStoreFromConfig({ ...store, prefix });
    await runScenario(cluster, 'sess-smoke', async (s) => {
      await applyRealtimeRbac(s);
      const images = fakeClaudeImages(s, runtime, {
        MOCK_ECHO_PROMPT: '1',
        MOCK_SESSION: 'smoke-session-0001',
      });
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
          AGENT_SESSION_WAKE_WAIT_SECONDS: '120',
        },
      });
      await s.create(
        realtimeDefinition('def', { idleTimeoutSeconds: 3600 }),
        stationManifest('st', 'def', {
          template: {
            spec: { terminationGracePeriodSeconds: 2, containers: [{ name: 'agent', image: images.agent }] },
          },
        }),
        agentManifest('live', 'st', { parameters: { topic: 'world' } }),
      );
      const launcher = await s.serviceAccountToken('agent-launcher');
      const base = await apiUrl(ctl);
      const path = agentPath(s, 'live', 'prompt');
      const first = await promptWhenReady(base, path, launcher, 'one');
      assert.match(JSON.stringify(first.lines), /echo: one/);
      const second = await call(base, path, launcher, { prompt: 'two' });
      assert.match(JSON.stringify(second.lines), /echo: two/);
      const saved = await s.waitForAgent(
        'live',
        (a) => (a.status.session?.savedTurn ?? 0) >= 2,
        'two turns saved',
        60_000,
      );
      const uid = saved.metadata.uid ?? '';
      const jobName = saved.status.jobName ?? '';

      const cli = ['--kubeconfig', cluster.kubeconfig, '-n', s.ns];
      const suspended = await runCli(runtime, ['suspend', 'live', ...cli]);
      assert.equal(suspended.code, 0, suspended.stderr);
      assert.equal(suspended.stdout, 'live suspend requested\n');
      await s.waitForAgent('live', (a) => a.status.phase === 'Suspended', 'Suspended', 60_000);
      await pollUntil(async () => ((await s.jobPods(jobName)).length === 0 ? true : undefined), {
        timeoutMs: 60_000,
        intervalMs: 500,
        description: 'no pod while Suspended',
      });

      const third = await call(base, path, launcher, { prompt: 'three' });
      assert.equal(third.status, 200, third.text);
      assert.match(JSON.stringify(third.lines), /echo: three/);
      const woken = await s.waitForAgent('live', (a) => a.status.phase === 'Running', 'Running', 30_000);
      assert.equal(woken.status.session?.wakeRequest !== undefined, true);
      const again = await runCli(runtime, ['resume', 'live', ...cli]);
      assert.equal(again.code, 0, again.stderr);
      assert.equal(again.stdout, 'live is running already\n');

      await s.client.delete(apiPath(GROUP_VERSION, 'agents', { namespace: s.ns, name: 'live' }));
      await pollUntil(async () => ((await s.agent('live')) === undefined ? true : undefined), {
        timeoutMs: 90_000,
        intervalMs: 500,
        description: 'the Agent to go',
      });
      const left = await sessions.listTurns({ namespace: s.ns, uid });
      assert.ok(left.ok, JSON.stringify(left));
      assert.deepEqual(left.value, []);
    });
  });
});
