// The controller itself in the cluster, on the real node (issue 26 §3; docs/design/real-node.md): two replicas of
// deploy/controller.yaml with deploy/components/realtime applied (as `kubectl apply -k` would, by the project's own
// kustomize reader scripts/helm/kustomize.ts: REALTIME_ENABLED, the prompt API on 8443 over TLS from the Secret
// agent-controller-api-tls, the Service agent-controller-api, the NetworkPolicy agent-realtime-prompt) and
// deploy/networkpolicy.yaml's default deny for run pods, from the assembled product image, as the ServiceAccount of
// deploy/rbac/controller-rbac.yaml (plus the realtime grants) with its in-cluster config (KUBERNETES_SERVICE_HOST/PORT
// set by the kubelet, the projected token and CA), in a namespace that enforces the restricted Pod Security level.
// One Deployment for the whole file (CI budget); its tests run in order on it.
// Checked: both replicas are admitted and Ready, run as uid 65532 on a read-only root; a realtime Agent's run pod on
// the real node answers two prompts sent by the product's CLI (`agent-controller prompt`, which port-forwards to a
// ready pod behind the Service and checks the API's certificate for agent-controller-api.<ns>.svc), so the
// controller reached the pod's port 8090 through the enforced NetworkPolicies, while another pod of the namespace
// cannot connect there (kube-router, docs/design/real-node.md) though it reaches a controller pod, which the run pod
// cannot (default deny); `close` ends the run Succeeded. Exactly one replica holds the Lease; it runs an exec Agent
// on the real node to Succeeded (under the default deny); when its pod is deleted another live replica (the standby
// or the replacement) takes the Lease over and runs the next one.
// Needs `scripts/testbed up --real-node` (with the `kubernetes` Service routed to the API server), root (the node's
// rules are read from its namespace), openssl and the built bundle; runs in the Node pass only (the image holds
// Node: the runtime under test is the one in the image).
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import { build, deployDir, type KubeDoc, loadBase, loadComponent } from '../../scripts/helm/kustomize.ts';
import {
  agentManifest,
  apiPath,
  applyCrds,
  applyRbacManifests,
  BUNDLE_PATH,
  e2eCluster,
  execDefinition,
  inScenario,
  LeaseObjectSchema,
  type Manifest,
  openScenario,
  PodSchema,
  pollUntil,
  type Scenario,
  stationManifest,
} from '../support/index.ts';
import type { RealNodeInfo } from '../support/real-node/info.ts';
import {
  IDLE_SCRIPT,
  IMAGE_NODE,
  probeFrom,
  restrictedPod,
  serviceAccountVolume,
  waitForRulesNaming,
} from '../support/real-node/pods.ts';
import {
  buildProductImages,
  importImages,
  MOCK_CLI_IMAGE,
  PRODUCT_IMAGE,
} from '../support/real-node/product-image.ts';
import { realNodeRuns, realNodeTemplate, runPod } from '../support/real-node/runs.ts';
import { bindPromptForwarder, realtimeDefinition, runCli } from '../support/realtime.ts';
import { selfSignedCert } from '../support/self-signed.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cluster = e2eCluster();
const { realNode, skip } = realNodeRuns(cluster);

const ControllerPodSchema = v.looseObject({
  metadata: v.looseObject({ name: v.string(), deletionTimestamp: v.optional(v.string()) }),
  spec: v.looseObject({
    nodeName: v.optional(v.string()),
    containers: v.array(
      v.looseObject({
        name: v.string(),
        securityContext: v.optional(v.looseObject({ readOnlyRootFilesystem: v.optional(v.boolean()) })),
      }),
    ),
    securityContext: v.optional(v.looseObject({ runAsUser: v.optional(v.number()) })),
  }),
  status: v.optional(
    v.looseObject({
      phase: v.optional(v.string()),
      podIP: v.optional(v.string()),
      conditions: v.optional(v.array(v.looseObject({ type: v.string(), status: v.string() }))),
      containerStatuses: v.optional(
        v.array(v.looseObject({ name: v.string(), ready: v.boolean(), containerID: v.optional(v.string()) })),
      ),
    }),
    {},
  ),
});
type ControllerPod = v.InferOutput<typeof ControllerPodSchema>;

const NamedObject = v.looseObject({
  metadata: v.looseObject({ name: v.string(), namespace: v.optional(v.string()) }),
});
const DeploymentDoc = v.looseObject({
  metadata: v.looseObject({ name: v.string(), labels: v.optional(v.record(v.string(), v.string())) }),
  spec: v.looseObject({
    replicas: v.number(),
    template: v.looseObject({
      spec: v.looseObject({
        containers: v.array(
          v.looseObject({
            env: v.array(v.looseObject({ name: v.string(), value: v.optional(v.string()) })),
            volumeMounts: v.optional(v.array(v.unknown()), []),
          }),
        ),
        volumes: v.optional(v.array(v.unknown()), []),
      }),
    }),
  }),
});

const COMPONENT = 'agents.re-cinq.com/component';
const API_SERVICE = 'agent-controller-api';

/** deploy/ with the realtime component, as `kubectl apply -k` of an overlay that names it would apply it. */
function realtimeInstall(): KubeDoc[] {
  const dir = deployDir(ROOT);
  return build(loadBase(dir), [loadComponent(dir, 'realtime')]);
}

/** The object `kind`/`name` of `docs`, without its namespace (the scenario's namespace takes deploy/'s place). */
function pick(docs: readonly KubeDoc[], kind: string, name: string): Manifest {
  const doc = docs.find((d) => d.kind === kind && v.parse(NamedObject, d).metadata.name === name);
  assert.ok(doc, `deploy/ with the realtime component has ${kind} ${name}`);
  const { metadata } = v.parse(NamedObject, doc);
  const { namespace: _, ...rest } = metadata;
  return { ...doc, apiVersion: String(doc.apiVersion), kind, metadata: rest };
}

/** The controller's Deployment of `docs`, moved onto the real node, running the assembled image. */
function controllerDeployment(docs: readonly KubeDoc[], node: RealNodeInfo): Manifest {
  const deployment = v.parse(DeploymentDoc, pick(docs, 'Deployment', 'agent-controller'));
  assert.equal(deployment.spec.replicas, 2, 'deploy/controller.yaml runs two replicas');
  const pod = deployment.spec.template.spec;
  // The in-cluster credentials a cluster's ServiceAccount admission plugin adds to the pod (the test bed's API
  // server runs without it; docs/design/real-node.md, "The token").
  const sa = serviceAccountVolume();
  const containers = pod.containers.map((c) => ({
    ...c,
    image: PRODUCT_IMAGE,
    imagePullPolicy: 'Never',
    volumeMounts: [...c.volumeMounts, sa.mount],
    // The run pods' init image, as a release's AGENT_IMAGE is the release's image: here the product image with the
    // mock CLI on PATH, so a Claude run's init installs nothing (nothing can be downloaded on the test bed).
    env: c.env.map((e) => (e.name === 'AGENT_IMAGE' ? { name: e.name, value: MOCK_CLI_IMAGE } : e)),
  }));
  return {
    ...deployment,
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: deployment.metadata.name, labels: deployment.metadata.labels ?? {} },
    spec: {
      ...deployment.spec,
      template: {
        ...deployment.spec.template,
        spec: {
          ...pod,
          containers,
          volumes: [...pod.volumes, sa.volume],
          // The test bed runs no scheduler for the real node: the pod names it, selects its label and tolerates
          // its taint (docs/design/real-node.md).
          nodeName: node.nodeName,
          nodeSelector: { [node.taint.key]: node.taint.value },
          tolerations: [{ ...node.taint, operator: 'Equal' }],
          terminationGracePeriodSeconds: 10,
        },
      },
    },
  };
}

async function controllerPods(s: Scenario): Promise<ControllerPod[]> {
  const { items } = await s.client.list(
    apiPath('v1', 'pods', { namespace: s.ns }),
    { labelSelector: `${COMPONENT}=controller` },
    ControllerPodSchema,
  );
  return items.filter((p) => p.metadata.deletionTimestamp === undefined);
}

function ready(p: ControllerPod): boolean {
  return (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

async function leaseHolder(s: Scenario): Promise<string | undefined> {
  const lease = await s.client.tryGet(
    apiPath('coordination.k8s.io/v1', 'leases', { namespace: s.ns, name: 'agent-controller' }),
    LeaseObjectSchema,
  );
  return lease?.spec.holderIdentity ?? undefined;
}

describe('real node: the controller in the cluster (two replicas, in-cluster config, restricted, realtime)', {
  skip,
}, () => {
  if (typeof cluster === 'string' || realNode === undefined) return;
  let s: Scenario | undefined;
  /** The prompt API's certificate (self-signed: also its CA), for the CLI's --certificate-authority. */
  let apiCa = '';

  /** The scenario the tests share; each dumps the controllers' logs and the pods when it fails. */
  const step = (body: (s: Scenario) => Promise<void>) => {
    if (s === undefined) throw new Error('the controller was not deployed (see before)');
    return inScenario(s, body);
  };

  before(async () => {
    await applyCrds(cluster.client);
    const dir = join(dirname(cluster.kubeconfig), 'real-node', 'product-images');
    importImages(realNode.containerdSocket, buildProductImages(dir, BUNDLE_PATH));
    s = await openScenario(cluster, 'rn-ctl');
    await step(async (s) => {
      await s.client.patch(
        apiPath('v1', 'namespaces', { name: s.ns }),
        {
          metadata: {
            labels: {
              'pod-security.kubernetes.io/enforce': 'restricted',
              'pod-security.kubernetes.io/enforce-version': 'latest',
            },
          },
        },
        'merge',
      );
      for (const file of [
        'deploy/rbac/controller-rbac.yaml',
        'deploy/rbac/crd-reader-rbac.yaml',
        'deploy/rbac/policy-reader-rbac.yaml',
        'deploy/rbac/caller-rbac.yaml',
        'deploy/components/realtime/realtime-rbac.yaml',
        'deploy/components/realtime/realtime-cli-rbac.yaml',
      ])
        await applyRbacManifests(s, file);
      // The CLI's caller: agent-launcher (prompt and close) may also port-forward to the prompt API.
      await bindPromptForwarder(s, 'agent-launcher');
      // The prompt API's certificate, for the name the CLI checks through its port-forward.
      const tls = selfSignedCert(s.tempDir(), [`DNS:${API_SERVICE}.${s.ns}.svc`]);
      apiCa = tls.certFile;
      const b64 = (text: string) => Buffer.from(text).toString('base64');
      const docs = realtimeInstall();
      await s.create(
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'agent-controller-api-tls' },
          type: 'kubernetes.io/tls',
          data: { 'tls.crt': b64(tls.cert), 'tls.key': b64(tls.key) },
        },
        pick(docs, 'Service', API_SERVICE),
        pick(docs, 'NetworkPolicy', 'agent-realtime-prompt'),
        // deploy/networkpolicy.yaml: run pods get nothing in or out but what their own policy admits.
        pick(docs, 'NetworkPolicy', 'agent-job-default-deny'),
        execDefinition('hello', ['/usr/local/bin/mock-agent']),
        stationManifest('hello', 'hello', { template: realNodeTemplate(realNode, MOCK_CLI_IMAGE) }),
        // The mock Claude CLI answers each prompt with `echo: <prompt>`.
        realtimeDefinition('live', {
          resources: {
            env: [
              { name: 'MOCK_STYLE', value: 'claude' },
              { name: 'MOCK_ECHO_PROMPT', value: '1' },
            ],
          },
        }),
        stationManifest('live', 'live', { template: realNodeTemplate(realNode, MOCK_CLI_IMAGE) }),
        controllerDeployment(docs, realNode),
      );
      const both = await pollUntil(
        async (observe) => {
          const pods = await controllerPods(s);
          observe(pods.map((p) => ({ name: p.metadata.name, phase: p.status.phase, ready: ready(p) })));
          return pods.length === 2 && pods.every(ready) ? pods : undefined;
        },
        { timeoutMs: 120_000, description: 'both controller replicas Ready on the real node' },
      );
      for (const p of both) {
        assert.equal(p.spec.nodeName, realNode.nodeName);
        assert.equal(p.spec.securityContext?.runAsUser, 65532);
        assert.equal(p.spec.containers[0]?.securityContext?.readOnlyRootFilesystem, true);
        assert.match(p.status.containerStatuses?.[0]?.containerID ?? '', /^containerd:\/\//);
      }
    });
  });
  after(async () => {
    await s?.finish();
    cluster.client.close();
  });

  it(
    'realtime: two prompts by `agent-controller prompt` through the Service to the run pod; agent-realtime-prompt refuses another pod',
    { timeout: 300_000 },
    () =>
      step(async (s) => {
        await s.create(agentManifest('talk', 'live', { parameters: { topic: 'the real node' } }));
        const kubeconfig = await s.kubeconfigAs('agent-launcher');
        const cli = (...args: string[]) =>
          runCli('node', [
            ...args,
            '--kubeconfig',
            kubeconfig,
            '-n',
            s.ns,
            '--controller-namespace',
            s.ns,
            '--certificate-authority',
            apiCa,
          ]);
        // Exit 6 while the run pod does not listen yet (503), 5 while its first turn (the rendered prompt) runs.
        const first = await pollUntil(
          async (observe) => {
            const r = await cli('prompt', 'talk', 'what is one plus one');
            observe(r);
            return r.code === 6 || r.code === 5 ? undefined : r;
          },
          { timeoutMs: 120_000, intervalMs: 1000, description: 'the run pod to take the first prompt' },
        );
        assert.equal(first.code, 0, first.stderr);
        assert.equal(first.stdout.trim(), 'echo: what is one plus one');
        const second = await cli('prompt', 'talk', 'and two plus two');
        assert.equal(second.code, 0, second.stderr);
        assert.equal(second.stdout.trim(), 'echo: and two plus two');

        // The run pod is on the real node, selected by the component's policy (and by the run's own).
        const run = await runPod(s, 'talk');
        assert.equal(run.spec.nodeName, realNode.nodeName);
        const runIP = run.status.podIP ?? '';
        const policies = await s.client.list(
          apiPath('networking.k8s.io/v1', 'networkpolicies', { namespace: s.ns }),
          {},
          v.looseObject({
            metadata: v.looseObject({ name: v.string() }),
            spec: v.looseObject({
              podSelector: v.looseObject({ matchLabels: v.optional(v.record(v.string(), v.string()), {}) }),
            }),
          }),
        );
        const labels = run.metadata.labels ?? {};
        const selecting = policies.items
          .filter((p) =>
            Object.entries(p.spec.podSelector.matchLabels).every(([k, val]) => labels[k] === val),
          )
          .map((p) => p.metadata.name);
        assert.deepEqual(
          [...selecting].sort(),
          ['agent-job-default-deny', 'agent-job-talk', 'agent-realtime-prompt'],
          "the default deny, the run's own policy and the component's",
        );

        // Another pod of the namespace: refused at the run pod's prompt port, though it reaches a controller pod.
        await s.create(
          restrictedPod(realNode, 'stranger', PRODUCT_IMAGE, { command: [IMAGE_NODE, '-e', IDLE_SCRIPT] }),
        );
        const stranger = await pollUntil(
          async (observe) => {
            const p = await s.client.get(
              apiPath('v1', 'pods', { namespace: s.ns, name: 'stranger' }),
              PodSchema,
            );
            observe(p.status);
            return p.status.phase === 'Running' ? p : undefined;
          },
          { timeoutMs: 60_000, description: 'the other pod Running' },
        );
        await waitForRulesNaming(realNode, runIP);
        await waitForRulesNaming(realNode, stranger.status.podIP ?? '');
        const controllerIP = (await controllerPods(s))[0]?.status.podIP ?? '';
        const [toRun, toController] = probeFrom(
          cluster.kubeconfig,
          s.ns,
          'stranger',
          `${runIP}:8090`,
          `${controllerIP}:8081`,
        );
        assert.equal(toRun?.connected, false, JSON.stringify(toRun));
        assert.match(toRun?.error ?? '', /^(ETIMEDOUT|ECONNREFUSED)$/, JSON.stringify(toRun));
        assert.equal(toController?.connected, true, JSON.stringify(toController));
        // And the run pod itself cannot reach the controller pod's port the other pod reached (default deny;
        // its own policy admits DNS, public addresses on 443 and the controller's way in, nothing else).
        const [fromRun] = probeFrom(
          cluster.kubeconfig,
          s.ns,
          { pod: run.metadata.name ?? '', container: 'agent' },
          `${controllerIP}:8081`,
        );
        assert.equal(fromRun?.connected, false, JSON.stringify(fromRun));

        const closed = await cli('close', 'talk');
        assert.equal(closed.code, 0, closed.stderr);
        assert.equal(closed.stdout.trim(), 'closed talk');
        const done = await s.waitTerminal('talk', 60_000);
        assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
        assert.match(done.status.output ?? '', /echo: and two plus two/);
      }),
  );

  it('two replicas hold the Lease in turn and run exec Agents on the real node', { timeout: 420_000 }, () =>
    step(async (s) => {
      const names = (await controllerPods(s)).map((p) => p.metadata.name);
      const leader = await pollUntil(
        async (observe) => {
          const holder = await leaseHolder(s);
          observe(holder);
          return holder !== undefined && names.includes(holder) ? holder : undefined;
        },
        { timeoutMs: 60_000, description: 'one replica holds the Lease' },
      );

      await s.create(agentManifest('first', 'hello'));
      const first = await s.waitTerminal('first', 180_000);
      assert.equal(first.status.phase, 'Succeeded', JSON.stringify(first.status));

      await s.client.delete(apiPath('v1', 'pods', { namespace: s.ns, name: leader }));
      // The leader releases the Lease as it stops; the standby (retrying every 5 s) or the ReplicaSet's
      // replacement pod (it tries at start) takes it over, whichever comes first, as in any cluster.
      const successor = await pollUntil(
        async (observe) => {
          const holder = await leaseHolder(s);
          const live = (await controllerPods(s)).map((p) => p.metadata.name);
          observe({ holder, live });
          return holder !== undefined && holder !== leader && live.includes(holder) ? holder : undefined;
        },
        { timeoutMs: 90_000, description: `a live replica other than ${leader} takes the Lease over` },
      );
      assert.notEqual(successor, leader);
      await s.create(agentManifest('second', 'hello'));
      const second = await s.waitTerminal('second', 180_000);
      assert.equal(second.status.phase, 'Succeeded', JSON.stringify(second.status));
    }),
  );
});
