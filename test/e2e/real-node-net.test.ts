// The real node's network as a cluster has it (issue 26; docs/design/real-node.md), on real pods:
// - Services routed by kube-proxy (iptables mode) in the node's network namespace, and the API server reached by pods
//   through the `kubernetes` Service: a restricted pod with only its projected ServiceAccount token and the
//   kubelet's KUBERNETES_SERVICE_HOST/PORT asks who it is and what it may do, allowed what a plain Role bound to its
//   ServiceAccount grants and refused the rest (a plain Role, not the product's per-run RBAC: that is checked on the
//   process node; this checks the path and the token); a ClusterIP Service in front of a serving pod answers
//   another pod.
// - NetworkPolicy enforced by kube-router's network-policy controller: the product's per-run policy (built by
//   src/jobs/run-network-policy.ts, as the controller builds it) lets a run pod reach the sink it names and not
//   another pod; deploy/networkpolicy.yaml's default deny blocks a run pod that has no policy of its own; a
//   realtime run's policy admits the controller's pods to port 8090 and refuses another pod.
// Probes run by `kubectl exec` in idle pods, each once kube-router has the pods it concerns in its rules (so a probe
// never races the policy's arrival). Needs `scripts/testbed up --real-node`, root (the node's rules are read from
// its namespace) and the built bundle (the pods run Node from the product image).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import * as v from 'valibot';
import { parseAgent, parseAgentDefinition, parseStation } from '../../src/api/index.ts';
import { LABEL_COMPONENT } from '../../src/jobs/names.ts';
import { buildRunNetworkPolicy } from '../../src/jobs/run-network-policy.ts';
import {
  apiPath,
  BUNDLE_PATH,
  e2eCluster,
  freshNamespace,
  type Pod,
  PodSchema,
  pollUntil,
  type TestNamespace,
} from '../support/index.ts';
import { readRealNodeInfo, realNodeSkipReason } from '../support/real-node/info.ts';
import {
  ACCESS_REVIEW_SCRIPT,
  CONNECT_SCRIPT,
  IDLE_SCRIPT,
  kubectlBinary,
  nodeRules,
  restrictedPod,
  serviceAccountVolume,
} from '../support/real-node/pods.ts';
import { buildProductImages, importImages, PRODUCT_IMAGE } from '../support/real-node/product-image.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cluster = e2eCluster();
const realNode = typeof cluster === 'string' ? undefined : readRealNodeInfo(cluster.kubeconfig);
const skip = typeof cluster === 'string' ? cluster : realNodeSkipReason(realNode);

const NODE = '/nodejs/bin/node';
const HELLO = 'hello from uid=1000';
const Probes = v.array(
  v.object({
    target: v.string(),
    connected: v.boolean(),
    line: v.optional(v.string()),
    error: v.optional(v.string()),
  }),
);
type Probes = v.InferOutput<typeof Probes>;
const ReviewResult = v.object({
  host: v.string(),
  port: v.string(),
  user: v.string(),
  allowed: v.record(v.string(), v.boolean()),
});
const NetworkPolicyObject = v.looseObject({
  metadata: v.looseObject({ name: v.string() }),
  spec: v.looseObject({ podSelector: v.looseObject({ matchLabels: v.record(v.string(), v.string()) }) }),
});

const must = <T>(r: { ok: true; value: T } | { ok: false; error: string }): T => {
  if (!r.ok) throw new Error(r.error);
  return r.value;
};

/**
 * The product's per-run NetworkPolicy for Agent `agent` in `ns`, from a definition with `spec`: built by the
 * controller's own (pure) builder, created without its ownerReference (no Agent object exists here).
 */
function runPolicy(ns: string, agent: string, spec: Record<string, unknown>) {
  const meta = (name: string) => ({
    name,
    namespace: ns,
    uid: `uid-${name}`,
    resourceVersion: '1',
    creationTimestamp: '2026-01-01T00:00:00Z',
  });
  const policy = buildRunNetworkPolicy({
    agent: must(
      parseAgent({
        apiVersion: 'agents.re-cinq.com/v1alpha1',
        kind: 'Agent',
        metadata: meta(agent),
        spec: { stationRef: 'st' },
      }),
    ),
    station: must(
      parseStation({
        apiVersion: 'agents.re-cinq.com/v1alpha1',
        kind: 'Station',
        metadata: meta('st'),
        spec: { agentDefRef: 'def', template: { spec: { containers: [{ name: 'agent', image: 'x' }] } } },
      }),
    ),
    definition: must(
      parseAgentDefinition({
        apiVersion: 'agents.re-cinq.com/v1alpha1',
        kind: 'AgentDefinition',
        metadata: meta('def'),
        spec: { prompt: 'go', ...spec },
      }),
    ),
    controllerNamespace: ns,
  });
  return { ...policy, metadata: { name: policy.metadata.name, labels: policy.metadata.labels } };
}

describe('real node: Services through kube-proxy, NetworkPolicy through kube-router', { skip }, () => {
  if (typeof cluster === 'string' || realNode === undefined) return;
  const kubectl = kubectlBinary();
  let ns: TestNamespace;
  let denyNs: TestNamespace;
  /** Pod IPs of the two servers on 8080 (A is the sink the run's policy names, B is not) and of the idle pod. */
  let serverA: string;
  let serverB: string;

  /** Creates a pod in `namespace` and waits until it is Ready (servers, by their probe) or Running (idle pods). */
  async function startPod(namespace: string, pod: { metadata: { name: string } }): Promise<Pod> {
    if (typeof cluster === 'string') throw new Error(cluster);
    await cluster.client.create(apiPath('v1', 'pods', { namespace }), pod);
    const path = apiPath('v1', 'pods', { namespace, name: pod.metadata.name });
    return pollUntil(
      async (observe) => {
        const p = await cluster.client.get(path, PodSchema);
        observe(p.status);
        return p.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True') ? p : undefined;
      },
      { timeoutMs: 60_000, description: `pod ${pod.metadata.name} to be Ready` },
    );
  }

  const server = (name: string, port: number, labels: Record<string, string> = {}) =>
    restrictedPod(
      realNode,
      name,
      realNode.images.hello,
      {
        args: ['--serve', String(port)],
        ports: [{ containerPort: port }],
        readinessProbe: { tcpSocket: { port }, periodSeconds: 1 },
      },
      {},
      labels,
    );
  const idle = (name: string, labels: Record<string, string> = {}) =>
    restrictedPod(realNode, name, PRODUCT_IMAGE, { command: [NODE, '-e', IDLE_SCRIPT] }, {}, labels);

  /** Connects from inside pod `name` to each target (`ip:port`), by `kubectl exec`. */
  function probe(namespace: string, name: string, ...targets: string[]): Probes {
    if (typeof cluster === 'string') throw new Error(cluster);
    const r = spawnSync(
      kubectl,
      [
        '--kubeconfig',
        cluster.kubeconfig,
        'exec',
        '--namespace',
        namespace,
        name,
        '--',
        NODE,
        '-e',
        CONNECT_SCRIPT,
        ...targets,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(r.status, 0, `kubectl exec ${name}: ${r.stderr}`);
    return v.parse(Probes, JSON.parse(r.stdout));
  }

  /** Waits until the node namespace's rules or ipsets name `ip` (kube-router: the pod is in its policies). */
  function rulesName(ip: string): Promise<true> {
    return pollUntil(
      () => {
        if (realNode === undefined) throw new Error('no real node');
        const rules = nodeRules(realNode);
        return rules.includes(`${ip}/32`) || rules.split('\n').includes(ip) ? true : undefined;
      },
      { timeoutMs: 30_000, description: `the node's rules to name ${ip}` },
    );
  }

  before(async () => {
    // The product image carries Node, which the pods below run; the same bytes again are a no-op for containerd.
    const dir = join(dirname(cluster.kubeconfig), 'real-node', 'product-images');
    importImages(realNode.containerdSocket, buildProductImages(dir, BUNDLE_PATH));
    [ns, denyNs] = await Promise.all([
      freshNamespace(cluster.client, 'rn-net'),
      freshNamespace(cluster.client, 'rn-deny'),
    ]);
    for (const n of [ns, denyNs])
      await cluster.client.patch(apiPath('v1', 'namespaces', { name: n.name }), {
        metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
      });
    const [a, b] = await Promise.all([
      startPod(ns.name, server('server-a', 8080, { app: 'hello' })),
      startPod(ns.name, server('server-b', 8080)),
      startPod(ns.name, idle('plain')),
    ]);
    serverA = a.status.podIP ?? '';
    serverB = b.status.podIP ?? '';
  });
  after(async () => {
    await Promise.all([ns?.cleanup(), denyNs?.cleanup()]);
    cluster.client.close();
  });

  it('a pod with only its ServiceAccount token reaches the API server: allowed what its Role grants, refused the rest', {
    timeout: 120_000,
  }, async () => {
    const api = (group: string, resource: string) => apiPath(group, resource, { namespace: ns.name });
    await cluster.client.create(api('v1', 'serviceaccounts'), {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'reader' },
    });
    await cluster.client.create(api('rbac.authorization.k8s.io/v1', 'roles'), {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'reader' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
    });
    await cluster.client.create(api('rbac.authorization.k8s.io/v1', 'rolebindings'), {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns.name }],
    });
    const sa = serviceAccountVolume();
    const pod = restrictedPod(
      realNode,
      'reviewer',
      PRODUCT_IMAGE,
      {
        command: [NODE, '-e', ACCESS_REVIEW_SCRIPT, 'list:configmaps', 'get:secrets', 'create:configmaps'],
        volumeMounts: [sa.mount],
      },
      { serviceAccountName: 'reader', volumes: [sa.volume] },
    );
    await cluster.client.create(api('v1', 'pods'), pod);
    const done = await pollUntil(
      async (observe) => {
        const p = await cluster.client.get(
          apiPath('v1', 'pods', { namespace: ns.name, name: 'reviewer' }),
          PodSchema,
        );
        observe(p.status);
        return ['Succeeded', 'Failed'].includes(p.status.phase ?? '') ? p : undefined;
      },
      { timeoutMs: 60_000, description: 'the reviewing pod to finish' },
    );
    assert.equal(done.status.phase, 'Succeeded', JSON.stringify(done.status));
    const message = done.status.containerStatuses[0]?.state.terminated?.message ?? '';
    const seen = v.parse(ReviewResult, JSON.parse(message));
    // The kubelet's in-cluster environment names the kubernetes Service's ClusterIP, not the forwarder.
    assert.deepEqual([seen.host, seen.port], ['10.0.0.1', '443']);
    assert.equal(seen.user, `system:serviceaccount:${ns.name}:reader`);
    assert.deepEqual(seen.allowed, {
      'list:configmaps': true,
      'get:secrets': false,
      'create:configmaps': false,
    });
  });

  it('a ClusterIP Service in front of a serving pod answers another pod at its ClusterIP', {
    timeout: 120_000,
  }, async () => {
    const service = await cluster.client.create(
      apiPath('v1', 'services', { namespace: ns.name }),
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'hello' },
        spec: { type: 'ClusterIP', ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] },
      },
      v.looseObject({ spec: v.looseObject({ clusterIP: v.string() }) }),
    );
    // The test bed runs no EndpointSlice controller (the process node's pod addresses are loopback addresses, which
    // EndpointSlices may not hold), so the Service has no selector and this test writes its EndpointSlice, as the
    // controller would from a selector: the ready pod's address and port. kube-proxy routes from it.
    await cluster.client.create(apiPath('discovery.k8s.io/v1', 'endpointslices', { namespace: ns.name }), {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'hello-1', labels: { 'kubernetes.io/service-name': 'hello' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [serverA], conditions: { ready: true } }],
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    });
    const clusterIP = service.spec.clusterIP;
    assert.match(clusterIP, /^10\.0\.0\.\d+$/);
    // kube-proxy has programmed the Service's endpoint (its DNAT rule to the pod), then one probe.
    await pollUntil(
      () => (nodeRules(realNode).includes(`--to-destination ${serverA}:8080`) ? true : undefined),
      { timeoutMs: 30_000, description: "kube-proxy's rule for the Service's endpoint" },
    );
    assert.deepEqual(probe(ns.name, 'plain', `${clusterIP}:80`), [
      { target: `${clusterIP}:80`, connected: true, line: HELLO },
    ]);
  });

  it("the product's per-run policy: the run pod reaches the sink it names, not another pod", {
    timeout: 120_000,
  }, async () => {
    const policy = runPolicy(ns.name, 'egress-run', {
      output: { sinks: [{ type: 'http', url: `http://${serverA}:8080/results` }] },
    });
    await cluster.client.create(
      apiPath('networking.k8s.io/v1', 'networkpolicies', { namespace: ns.name }),
      policy,
    );
    const run = await startPod(ns.name, idle('run', policy.spec.podSelector.matchLabels));
    await rulesName(run.status.podIP ?? '');
    const [toA, toB] = probe(ns.name, 'run', `${serverA}:8080`, `${serverB}:8080`);
    assert.deepEqual(toA, { target: `${serverA}:8080`, connected: true, line: HELLO });
    assert.equal(toB?.connected, false, JSON.stringify(toB));
    // Both servers answer a pod no policy selects: the policy is what stops the run.
    assert.deepEqual(
      probe(ns.name, 'plain', `${serverA}:8080`, `${serverB}:8080`).map((r) => r.connected),
      [true, true],
    );
  });

  it("deploy/networkpolicy.yaml's default deny blocks a run pod that has no policy of its own", {
    timeout: 120_000,
  }, async () => {
    const deny = v.parse(
      NetworkPolicyObject,
      load(readFileSync(join(ROOT, 'deploy', 'networkpolicy.yaml'), 'utf8')),
    );
    await cluster.client.create(
      apiPath('networking.k8s.io/v1', 'networkpolicies', { namespace: denyNs.name }),
      {
        ...deny,
        metadata: { name: deny.metadata.name },
      },
    );
    const run = await startPod(denyNs.name, idle('run', deny.spec.podSelector.matchLabels));
    await rulesName(run.status.podIP ?? '');
    const [toA] = probe(denyNs.name, 'run', `${serverA}:8080`);
    assert.equal(toA?.connected, false, JSON.stringify(toA));
  });

  it("a realtime run's policy admits the controller's pods to port 8090 and refuses another pod", {
    timeout: 120_000,
  }, async () => {
    const policy = runPolicy(ns.name, 'live-run', { execution: 'realtime', model: 'claude-opus-5-5' });
    await cluster.client.create(
      apiPath('networking.k8s.io/v1', 'networkpolicies', { namespace: ns.name }),
      policy,
    );
    const [live, controller] = await Promise.all([
      startPod(ns.name, server('live', 8090, policy.spec.podSelector.matchLabels)),
      startPod(ns.name, idle('controller', { [LABEL_COMPONENT]: 'controller' })),
    ]);
    const liveIP = live.status.podIP ?? '';
    await rulesName(liveIP);
    await rulesName(controller.status.podIP ?? '');
    assert.deepEqual(probe(ns.name, 'controller', `${liveIP}:8090`), [
      { target: `${liveIP}:8090`, connected: true, line: HELLO },
    ]);
    const [fromPlain] = probe(ns.name, 'plain', `${liveIP}:8090`);
    assert.equal(fromPlain?.connected, false, JSON.stringify(fromPlain));
  });
});
