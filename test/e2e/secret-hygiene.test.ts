// Secret hygiene (issue 13 §5), on the local control plane, Node and Deno: with known secret values in
// `agent-secrets` (the vendor API key the CLI gets, and an http sink's Authorization header), none of them appears in
// any controller log line, the run pod's logs (agent and init), any Event, any Agent, Job, Pod or ConfigMap of the
// namespace, any sink delivery body, or the command line of any process on the node while the run is going
// (`/proc/*/cmdline`: the test node runs containers as local processes). Positive controls make the check live: the
// sink is sent the header, and the run's processes are seen in /proc.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
import {
  agentManifest,
  apiPath,
  applyCrds,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  fakeClaudeImages,
  GROUP_VERSION,
  runScenario,
  startHttpSink,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

/** The command line of every process on this machine now (processes that end while read are skipped). */
function commandLines(): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      out.push(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' '));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

const PodSchema = v.looseObject({
  metadata: v.looseObject({ name: v.string() }),
  spec: v.looseObject({ initContainers: v.optional(v.array(v.looseObject({ name: v.string() }))) }),
});

describe(`secret hygiene: secret values appear nowhere (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it('not in logs, Events, objects, sink bodies or process command lines; the run still gets them', {
    timeout: 240_000,
  }, async () => {
    const sink = await startHttpSink();
    try {
      await runScenario(cluster, 'hygiene', async (s) => {
        const apiKey = `sk-ant-e2e-${randomBytes(16).toString('hex')}`;
        const bearer = `bearer-e2e-${randomBytes(16).toString('hex')}`;
        const secrets = [apiKey, bearer];
        await s.create({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'agent-secrets' },
          stringData: { anthropic: apiKey, SINK_AUTH: `Authorization: Bearer ${bearer}\n` },
        });
        const images = fakeClaudeImages(s, runtime);
        await s.create(
          {
            apiVersion: GROUP_VERSION,
            kind: 'AgentDefinition',
            metadata: { name: 'careful' },
            spec: {
              model: 'claude-opus-5-5',
              prompt: 'do it',
              resources: {
                env: [
                  { name: 'MOCK_LINES', value: '20' },
                  { name: 'MOCK_DELAY_MS', value: '150' },
                  { name: 'MOCK_TOOL', value: 'Bash' },
                ],
                secrets: [{ name: 'ANTHROPIC_API_KEY', ref: 'anthropic' }],
              },
              output: {
                sinks: [{ type: 'http', url: sink.url(`/hook/${s.ns}`), headers_secret: 'SINK_AUTH' }],
                select: [{ event: 'result' }],
              },
            },
          },
          stationManifest('careful', 'careful', {
            template: {
              spec: {
                terminationGracePeriodSeconds: 2,
                containers: [{ name: 'agent', image: images.agent }],
              },
            },
          }),
        );
        const ctl = await s.startReplica({ env: { AGENT_IMAGE: images.init } });
        await s.create(agentManifest('careful-run', 'careful'));

        // While the run goes: every process's command line, until the Agent is terminal.
        let sawRun = false;
        for (const deadline = Date.now() + 120_000; ; ) {
          for (const line of commandLines()) {
            for (const secret of secrets)
              assert.ok(!line.includes(secret), `a secret in a command line: ${line}`);
            if (line.includes('mock-agent.mjs') && line.includes('stream-json')) sawRun = true;
          }
          const a = await s.agent('careful-run');
          if (a?.status.phase === 'Succeeded' || a?.status.phase === 'Failed') break;
          assert.ok(Date.now() < deadline, 'the run to end');
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        assert.ok(sawRun, "the run's CLI process was seen in /proc (the check is live)");
        const done = await s.waitTerminal('careful-run');
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));

        // The sink was given the header (the secret reached the supervisor), never in a body.
        const posts = sink.posts(`/hook/${s.ns}`);
        assert.ok(posts.length > 0, 'the sink got deliveries');
        for (const p of posts) {
          assert.equal(p.headers.authorization, `Bearer ${bearer}`);
          for (const secret of secrets) assert.ok(!p.body.includes(secret), 'a secret in a sink body');
        }

        // Logs: the controller's, and every container of the run pod.
        const texts: [string, string][] = [['controller log', ctl.logText()]];
        const pods = await s.client.list(apiPath('v1', 'pods', { namespace: s.ns }), {}, PodSchema);
        for (const pod of pods.items) {
          for (const container of ['agent', ...(pod.spec.initContainers ?? []).map((c) => c.name)]) {
            const log = await s.client.logs(s.ns, pod.metadata.name, { container });
            texts.push([`log of ${pod.metadata.name}/${container}`, log]);
          }
        }
        assert.ok(
          texts.some(([, t]) => t.includes('"phase":"agent","status":"started"')),
          'the pod log was read',
        );
        // Objects: Events, Agents, Jobs, Pods, ConfigMaps (the run input among them).
        for (const kind of ['events', 'pods', 'configmaps'] as const) {
          const listed = await s.client.list(apiPath('v1', kind, { namespace: s.ns }));
          texts.push([kind, JSON.stringify(listed)]);
        }
        texts.push(['jobs', JSON.stringify(await s.jobs())], ['agents', JSON.stringify(await s.agents())]);
        for (const [where, text] of texts) {
          for (const secret of secrets) assert.ok(!text.includes(secret), `a secret value in the ${where}`);
        }
      });
    } finally {
      await sink.close();
    }
  });
});
