// Tool sidecars (issue 9 §4) on the local control plane, Node and Deno: an AgentDefinition's sidecar that declares
// `mcp` runs as a native sidecar of the run pod (after the init container, before the agent), the agent starts only
// once the tool listens (the tool waits a second before it does, so an ungated agent would fail), reaches it over
// localhost, and the Job completes when the agent does: the sidecar is stopped, not waited for, after the agent
// container ended (its status times and the timestamped logs, as the real node reports them).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { assertSidecarAroundAgent } from '../support/container-order.ts';
import {
  addTestImages,
  agentManifest,
  applyCrds,
  controllerSkipReason,
  e2eCluster,
  e2eRuntime,
  enforcePodSecurity,
  execDefinition,
  runScenario,
  stationManifest,
} from '../support/index.ts';

const cluster = e2eCluster();
const skip = controllerSkipReason(cluster);
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();

describe(`tool sidecars (${runtime})`, { skip }, () => {
  if (typeof cluster === 'string') return;
  before(() => applyCrds(cluster.client));
  after(() => cluster.client.close());

  it(
    'an MCP tool sidecar is up before the agent, answers it on localhost, and does not hold the Job open',
    { timeout: 180_000 },
    () =>
      runScenario(cluster, 'sidecar', async (s) => {
        // Every pod the controller builds here is admitted under the restricted Pod Security level.
        await enforcePodSecurity(s, 'restricted');
        // Pods of the test node share the host's loopback: a port of this scenario's own.
        const port = 20_000 + Math.floor(Math.random() * 20_000);
        const script = join(s.tempDir(), 'tool.mjs');
        writeFileSync(
          script,
          [
            "import { createServer } from 'node:http';",
            "const server = createServer((req, res) => res.end('hello from the tool at ' + req.url));",
            // Every address of the pod, as a tool in a container must (the kubelet probes the pod IP).
            `setTimeout(() => server.listen(${port}, () => console.log('tool listening')), 1000);`,
            "process.on('SIGTERM', () => { console.log('tool stopping'); process.exit(0); });",
          ].join('\n'),
        );
        const image = `tool-sidecar:${s.ns}`;
        s.defer(
          addTestImages(s.cluster, `tool-${s.ns}`, {
            [image]: { entrypoint: ['node', '/opt/tool.mjs'], files: { '/opt/tool.mjs': script } },
          }),
        );
        const fetchTool = `fetch('http://127.0.0.1:${port}/mcp').then((r) => r.text()).then((t) => console.log('tool said: ' + t))`;
        await s.create(
          execDefinition('with-tool', ['node', '-e', fetchTool], {
            sidecars: [{ name: 'search', image, mcp: { port } }],
          }),
          stationManifest('st', 'with-tool'),
          agentManifest('uses-tool', 'st'),
        );
        await s.startReplica();
        const done = await s.waitTerminal('uses-tool', 120_000);
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.match(done.status.output ?? '', /^tool said: hello from the tool at \/mcp$/m);

        const [pod] = await s.jobPods('agent-job-uses-tool');
        const spec = (pod as unknown as { spec: { initContainers: Record<string, unknown>[] } }).spec;
        assert.deepEqual(
          spec.initContainers.map((c) => [c.name, c.restartPolicy ?? null]),
          [
            ['init', null],
            ['search', 'Always'],
          ],
        );
        const statuses = (pod as unknown as { status: { initContainerStatuses: Record<string, unknown>[] } })
          .status.initContainerStatuses;
        const search = statuses.find((c) => c.name === 'search');
        assert.equal(search?.restartCount, 0, 'the tool ran once');
        assert.equal(search?.started !== undefined, true, 'reported as a sidecar');

        // The order a kubelet reports (test/e2e/real-node-observe.test.ts checks the same on the real node): the
        // sidecar's status ends terminated, started no later and finished no earlier than the agent container, and
        // the timestamped logs show it listening before the agent's first line and stopped after its last.
        await assertSidecarAroundAgent(s, 'agent-job-uses-tool', 'search', {
          listening: /^tool listening$/,
          stopping: /^tool stopping$/,
        });
      }),
  );
});
