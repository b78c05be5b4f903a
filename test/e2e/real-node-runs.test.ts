// The product's runs on the real node (issue 26; docs/design/real-node.md): a controller replica (the bundle, as in
// every controller e2e) runs Agents whose Station template puts the run pod on `real-node` (its name, its label,
// its taint tolerated), where a real kubelet over containerd and runc runs it from images assembled from files
// (test/support/real-node/product-image.ts): the init container is the product image (distroless layout, Node and
// its libraries, the bundle) and copies the supervisor; the agent container's image carries the mock agent CLI.
// Checked: a Claude-style run ends Succeeded with its `status.result`; a failing one gets its exit code (status and
// Event) and the error of the supervisor's termination message (the run report) as `failureReason`; an exec run
// that exits 3 and one wedged past its deadline (killed, 124) end Failed with those codes; inside the agent
// container the uid is 1000, seccomp (RuntimeDefault) is in force, no capabilities, read from /proc/self/status.
// A server-mode Agent's Service answers a client pod on the real node at its ClusterIP (kube-proxy; the test writes
// the Service's EndpointSlice, the test bed runs no EndpointSlice controller).
// Needs `scripts/testbed up --real-node` and the built bundle; runs in the Node pass only.
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
import {
  agentCondition,
  agentManifest,
  applyCrds,
  applyRbacManifests,
  BUNDLE_PATH,
  createAgentPolicy,
  e2eCluster,
  execDefinition,
  GROUP_VERSION,
  type Manifest,
  type Pod,
  PodSchema,
  pollUntil,
  runScenario,
  stationManifest,
} from '../support/index.ts';
import type { RealNodeInfo } from '../support/real-node/info.ts';
import { nodeRules, POST_SCRIPT, restrictedPod } from '../support/real-node/pods.ts';
import {
  buildProductImages,
  importImages,
  MOCK_CLI_IMAGE,
  PRODUCT_IMAGE,
} from '../support/real-node/product-image.ts';
import { realNodeRuns, realNodeTemplate, runPod } from '../support/real-node/runs.ts';
import { createPolicy, endpointOf, startServerReplica } from '../support/server.ts';

const cluster = e2eCluster();
const { realNode, skip } = realNodeRuns(cluster);

/** The pod ran on the real node: init container (the injection) exited 0, the agent container ran in containerd. */
function assertRanOnRealNode(node: RealNodeInfo, pod: Pod, agentExit: number): void {
  assert.equal(pod.spec.nodeName, node.nodeName);
  const init = pod.status.initContainerStatuses.find((c) => c.name === 'init')?.state.terminated;
  assert.equal(init?.exitCode, 0, `init: ${JSON.stringify(pod.status.initContainerStatuses)}`);
  const agent = pod.status.containerStatuses.find((c) => c.name === 'agent')?.state.terminated as
    | { exitCode?: number; containerID?: string }
    | undefined;
  assert.equal(agent?.exitCode, agentExit, JSON.stringify(pod.status.containerStatuses));
  assert.match(agent?.containerID ?? '', /^containerd:\/\//);
}

/** Prints the lines of /proc/self/status the checks read (the exec recipe's prompt is a trailing argument). */
const PROBE = `const s = require('node:fs').readFileSync('/proc/self/status', 'utf8');
for (const k of ['Uid', 'Gid', 'NoNewPrivs', 'Seccomp', 'CapEff']) {
  const m = new RegExp('^' + k + ':\\\\s*(.*)$', 'm').exec(s);
  console.log(JSON.stringify({ [k]: m ? m[1].split(/\\s+/) : null }));
}`;

describe('real node: the product runs Agents on a real kubelet', { skip }, () => {
  if (typeof cluster === 'string' || realNode === undefined) return;
  before(async () => {
    await applyCrds(cluster.client);
    // The images hold the bundle under test, so they are assembled and imported here (the same bytes again are a
    // no-op for containerd), not at `testbed up`.
    const dir = join(dirname(cluster.kubeconfig), 'real-node', 'product-images');
    importImages(realNode.containerdSocket, buildProductImages(dir, BUNDLE_PATH));
  });
  after(() => cluster.client.close());

  it(
    'the product image as init: exec runs see uid 1000 and seccomp; exit 3 keeps its code; a deadline kill is 124',
    { timeout: 300_000 },
    () =>
      runScenario(cluster, 'rn-runs', async (s) => {
        const template = realNodeTemplate(realNode, MOCK_CLI_IMAGE);
        await s.create(
          execDefinition('probe', ['/nodejs/bin/node', '-e', PROBE]),
          stationManifest('probe', 'probe', { template }),
          agentManifest('probe', 'probe'),
          execDefinition('fails', ['/usr/local/bin/mock-agent'], {
            resources: { env: [{ name: 'MOCK_EXIT', value: '3' }] },
          }),
          stationManifest('fails', 'fails', { template }),
          agentManifest('fails', 'fails'),
          execDefinition('wedge', ['/usr/local/bin/mock-agent'], {
            resources: { env: [{ name: 'MOCK_MODE', value: 'wedge' }] },
          }),
          stationManifest('wedge', 'wedge', { template, deadlineMinutes: 1 }),
          agentManifest('wedged', 'wedge'),
        );
        await s.startReplica({ env: { AGENT_IMAGE: PRODUCT_IMAGE } });

        const probe = await s.waitTerminal('probe');
        assert.equal(probe.status.phase, 'Succeeded', JSON.stringify(probe.status));
        const seen = Object.assign(
          {},
          ...(probe.status.output ?? '')
            .split('\n')
            .filter((l) => l.startsWith('{'))
            .map((l) => JSON.parse(l) as Record<string, string[]>),
        ) as Record<string, string[] | null>;
        assert.deepEqual(seen.Uid, ['1000', '1000', '1000', '1000'], 'uid 1000, not root');
        assert.deepEqual(seen.Gid, ['1000', '1000', '1000', '1000']);
        assert.deepEqual(seen.Seccomp, ['2'], 'seccomp in filter mode (RuntimeDefault)');
        assert.deepEqual(seen.NoNewPrivs, ['1'], 'allowPrivilegeEscalation: false');
        assert.deepEqual(seen.CapEff, ['0000000000000000'], 'no capabilities');
        assertRanOnRealNode(realNode, await runPod(s, 'probe'), 0);

        const fails = await s.waitTerminal('fails');
        assert.equal(fails.status.phase, 'Failed', JSON.stringify(fails.status));
        assert.equal(fails.status.exitCode, 3);
        const failedPod = await runPod(s, 'fails');
        assertRanOnRealNode(realNode, failedPod, 3);
        // An exec run's CLI has no failure event: the Job's verdict is the reason, as on the process node.
        assert.match(fails.status.failureReason ?? '', /^BackoffLimitExceeded: /, fails.status.failureReason);

        const wedged = await s.waitTerminal('wedged', 180_000);
        assert.equal(wedged.status.phase, 'Failed', JSON.stringify(wedged.status));
        assert.equal(wedged.status.exitCode, 124);
        assert.match(wedged.status.output ?? '', /run deadline expired with no terminal event/);
        assertRanOnRealNode(realNode, await runPod(s, 'wedged'), 124);
      }),
  );

  it(
    'Claude-style runs with the mock CLI: Succeeded with status.result; a failure event becomes failureReason, exit code 3',
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'rn-claude', async (s) => {
        const definition = (name: string, env: Record<string, string>): Manifest => ({
          apiVersion: GROUP_VERSION,
          kind: 'AgentDefinition',
          metadata: { name },
          spec: {
            model: 'claude-opus-5-5',
            prompt: 'run {name}',
            resources: {
              env: Object.entries({ MOCK_STYLE: 'claude', ...env }).map(([n, value]) => ({ name: n, value })),
            },
          },
        });
        const template = realNodeTemplate(realNode, MOCK_CLI_IMAGE);
        await s.create(
          definition('claude', { MOCK_TEXT: 'done on the real node' }),
          stationManifest('claude', 'claude', { template }),
          agentManifest('claude-run', 'claude'),
          // Claude Code's failure result as it ends a run the API refused (docs/reference/vendor-cli-events.md).
          definition('claude-error', {
            MOCK_PRINT: JSON.stringify({
              type: 'result',
              subtype: 'success',
              is_error: true,
              result: 'API Error: 529 overloaded on the real node',
            }),
            MOCK_EXIT: '3',
          }),
          stationManifest('claude-error', 'claude-error', { template }),
          agentManifest('claude-error', 'claude-error'),
        );
        // The init image must have the CLI on PATH (else it would install it, and nothing can be downloaded here).
        await s.startReplica({ env: { AGENT_IMAGE: MOCK_CLI_IMAGE } });
        const done = await s.waitTerminal('claude-run');
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.equal(done.status.exitCode, 0);
        assert.equal((done.status as Record<string, unknown>).result, 'done on the real node');
        assertRanOnRealNode(realNode, await runPod(s, 'claude-run'), 0);

        // The CLI's failure event: the supervisor's termination message (the run report) carries its error, which
        // becomes failureReason; the exit code is the agent container's.
        const failed = await s.waitTerminal('claude-error');
        assert.equal(failed.status.phase, 'Failed', JSON.stringify(failed.status));
        assert.equal(failed.status.exitCode, 3);
        const pod = await runPod(s, 'claude-error');
        assertRanOnRealNode(realNode, pod, 3);
        const message = pod.status.containerStatuses.find((c) => c.name === 'agent')?.state.terminated
          ?.message;
        assert.ok(message, 'the supervisor wrote its termination message');
        const report = JSON.parse(message) as { error?: string };
        assert.equal(report.error, 'API Error: 529 overloaded on the real node', message);
        assert.equal(failed.status.failureReason, report.error);
        const events = await s.waitForEvents('claude-error', failed.metadata.uid, ['Warning/JobFailed']);
        assert.ok(
          events.some((e) => e.message?.includes('exit code 3')),
          `the Failed Event names exit code 3: ${events.map((e) => e.message).join(' | ')}`,
        );
      }),
  );

  it(
    "server mode: the Agent's Service answers a pod on the real node at its ClusterIP",
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'rn-server', async (s) => {
        await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
        await applyRbacManifests(s, 'deploy/rbac/policy-reader-rbac.yaml');
        await applyRbacManifests(s, 'deploy/components/server/server-rbac.yaml');
        const policy = await createPolicy(s, 'serve', ['job', 'server']);
        await s.create(
          {
            apiVersion: GROUP_VERSION,
            kind: 'AgentDefinition',
            metadata: { name: 'def' },
            spec: {
              model: 'claude-opus-5-5',
              prompt: 'unused by servers',
              execution: 'server',
              resources: {
                env: [
                  { name: 'MOCK_STYLE', value: 'claude' },
                  { name: 'MOCK_ECHO_PROMPT', value: '1' },
                ],
              },
            },
          },
          stationManifest('st', 'def', {
            policyRef: policy,
            template: realNodeTemplate(realNode, MOCK_CLI_IMAGE),
          }),
          agentManifest('bot', 'st'),
        );
        // The init image must have the CLI on PATH (else it would install it, and nothing can be downloaded here).
        await startServerReplica(s, MOCK_CLI_IMAGE);
        await s.waitForAgent(
          'bot',
          (a) => a.status.phase === 'Serving' && agentCondition(a, 'Ready')?.status === 'True',
          'Serving and Ready',
          180_000,
        );
        const service = await s.client.get(
          `/api/v1/namespaces/${s.ns}/services/bot-server`,
          v.looseObject({
            spec: v.looseObject({
              clusterIP: v.string(),
              ports: v.array(v.looseObject({ name: v.optional(v.string()), port: v.number() })),
            }),
          }),
        );
        const [servicePort] = service.spec.ports;
        assert.ok(servicePort, 'the Service has a port');
        // The test bed runs no EndpointSlice controller (docs/design/real-node.md, "Services"): the slice it would
        // write from the Service's selector (the ready pod's address, the target port) is written here.
        const endpoint = await endpointOf(s, 'bot-server');
        const [podIP, targetPort] = endpoint.split(':');
        await s.client.create(`/apis/discovery.k8s.io/v1/namespaces/${s.ns}/endpointslices`, {
          apiVersion: 'discovery.k8s.io/v1',
          kind: 'EndpointSlice',
          metadata: { name: 'bot-server-1', labels: { 'kubernetes.io/service-name': 'bot-server' } },
          addressType: 'IPv4',
          endpoints: [{ addresses: [podIP], conditions: { ready: true } }],
          ports: [
            {
              ...(servicePort.name ? { name: servicePort.name } : {}),
              port: Number(targetPort),
              protocol: 'TCP',
            },
          ],
        });
        await pollUntil(
          () => (nodeRules(realNode).includes(`--to-destination ${endpoint}`) ? true : undefined),
          {
            timeoutMs: 30_000,
            description: "kube-proxy's rule for the server's endpoint",
          },
        );
        // A client pod on the real node, the generated key from its Secret in its environment, the plain OpenAI shape.
        const url = `http://${service.spec.clusterIP}:${servicePort.port}/v1/chat/completions`;
        const body = JSON.stringify({
          model: 'claude-opus-5-5',
          messages: [{ role: 'user', content: 'what is one plus one' }],
        });
        await s.client.create(
          `/api/v1/namespaces/${s.ns}/pods`,
          restrictedPod(realNode, 'client', PRODUCT_IMAGE, {
            command: ['/nodejs/bin/node', '-e', POST_SCRIPT, url, body],
            env: [
              {
                name: 'API_KEY',
                valueFrom: { secretKeyRef: { name: 'bot-server-api-key', key: 'api-key' } },
              },
            ],
          }),
        );
        const client = await pollUntil(
          async (observe) => {
            const p = await s.client.get(`/api/v1/namespaces/${s.ns}/pods/client`, PodSchema);
            observe(p.status);
            return ['Succeeded', 'Failed'].includes(p.status.phase ?? '') ? p : undefined;
          },
          { timeoutMs: 90_000, description: 'the client pod to finish' },
        );
        assert.equal(client.status.phase, 'Succeeded', JSON.stringify(client.status));
        const answer = v.parse(
          v.object({ status: v.number(), body: v.string() }),
          JSON.parse(client.status.containerStatuses[0]?.state.terminated?.message ?? '{}'),
        );
        assert.equal(answer.status, 200, answer.body);
        const completion = v.parse(
          v.looseObject({
            choices: v.array(v.looseObject({ message: v.looseObject({ content: v.string() }) })),
          }),
          JSON.parse(answer.body),
        );
        assert.match(completion.choices[0]?.message.content ?? '', /echo: what is one plus one/);
      }),
  );
  it(
    "per-run RBAC: the run's projected token reaches the API server through the kubernetes Service; its SSARs get what the policy grants",
    { timeout: 240_000 },
    () =>
      runScenario(cluster, 'rn-rbac', async (s) => {
        const renamed = await applyRbacManifests(s, 'deploy/components/run-rbac/run-rbac.yaml');
        const reader = renamed.get('agent-run-pod-reader');
        assert.ok(reader !== undefined, 'the component ships agent-run-pod-reader');
        const policy = await createAgentPolicy(s, 'grants', { rbac: { roles: [reader] } });
        await s.create(
          execDefinition('reader', ['/usr/local/bin/mock-agent'], {
            resources: { env: [{ name: 'MOCK_CAN_I', value: 'get pods;create pods;list secrets' }] },
            rbac: { roles: [reader] },
          }),
          stationManifest('reader', 'reader', {
            policyRef: policy,
            template: realNodeTemplate(realNode, MOCK_CLI_IMAGE),
          }),
          agentManifest('reader-run', 'reader'),
        );
        await s.startReplica({ env: { AGENT_IMAGE: PRODUCT_IMAGE } });
        const done = await s.waitTerminal('reader-run', 180_000);
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assertRanOnRealNode(realNode, await runPod(s, 'reader-run'), 0);
        // The mock agent's answers, one JSON line per check (test/mock-agent: MOCK_CAN_I), asked from inside the pod
        // at KUBERNETES_SERVICE_HOST:PORT as the kubelet set them, with the run's own projected token.
        const got = new Map(
          (done.status.output ?? '')
            .split('\n')
            .filter((l) => l.startsWith('{"canI"'))
            .map((l) => JSON.parse(l) as { canI: string; allowed?: boolean; error?: string })
            .map((a) => [a.canI, a] as const),
        );
        assert.equal(got.get('get pods')?.allowed, true, `the role grants it: ${done.status.output}`);
        assert.equal(got.get('create pods')?.allowed, false, 'nothing the role does not give');
        assert.equal(got.get('list secrets')?.allowed, false, 'nothing the role does not give');
      }),
  );
});
