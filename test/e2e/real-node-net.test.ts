// The real node's network as a cluster has it (issue 26; docs/design/real-node.md): Services routed by kube-proxy
// (iptables mode) in the node's network namespace, the API server reached by pods through the `kubernetes` Service.
// A restricted pod with only its projected ServiceAccount token and the kubelet's KUBERNETES_SERVICE_HOST/PORT asks
// the API server who it is and what it may do: allowed what a plain Role bound to its ServiceAccount grants, refused
// the rest (a plain Role, not the product's per-run RBAC: the product's run RBAC is checked on the process node,
// this checks the path and the token). A ClusterIP Service in front of a serving pod answers another pod.
// Needs `scripts/testbed up --real-node` and the built bundle (the pods run Node from the product image).
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
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
import { readRealNodeInfo } from '../support/real-node/info.ts';
import {
  ACCESS_REVIEW_SCRIPT,
  CONNECT_SCRIPT,
  restrictedPod,
  serviceAccountVolume,
} from '../support/real-node/pods.ts';
import { buildProductImages, importImages, PRODUCT_IMAGE } from '../support/real-node/product-image.ts';

const cluster = e2eCluster();
const realNode = typeof cluster === 'string' ? undefined : readRealNodeInfo(cluster.kubeconfig);
const skip =
  typeof cluster === 'string'
    ? cluster
    : process.env.AGENT_E2E_RUNTIME === 'deno'
      ? 'the real node does not depend on the JavaScript runtime; it runs in the node pass only'
      : realNode === undefined
        ? 'the real node is not up (sudo scripts/install-node-runtime, then scripts/testbed up --real-node)'
        : false;

const NODE = '/nodejs/bin/node';
const ConnectResult = v.object({
  connected: v.boolean(),
  line: v.optional(v.string()),
  error: v.optional(v.string()),
});
const ReviewResult = v.object({
  host: v.string(),
  port: v.string(),
  user: v.string(),
  allowed: v.record(v.string(), v.boolean()),
});

describe('real node: Services through kube-proxy, the API server through the kubernetes Service', {
  skip,
}, () => {
  if (typeof cluster === 'string' || realNode === undefined) return;
  let ns: TestNamespace;
  before(async () => {
    // The product image carries Node, which the pods below run; the same bytes again are a no-op for containerd.
    const dir = join(dirname(cluster.kubeconfig), 'real-node', 'product-images');
    importImages(realNode.containerdSocket, buildProductImages(dir, BUNDLE_PATH));
    ns = await freshNamespace(cluster.client, 'rn-net');
    await cluster.client.patch(apiPath('v1', 'namespaces', { name: ns.name }), {
      metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
    });
  });
  after(async () => {
    await ns?.cleanup();
    cluster.client.close();
  });

  /** Creates a pod and waits until it has finished; returns it. */
  async function runToEnd(pod: { metadata: { name: string } }): Promise<Pod> {
    if (typeof cluster === 'string') throw new Error(cluster);
    await cluster.client.create(apiPath('v1', 'pods', { namespace: ns.name }), pod);
    const path = apiPath('v1', 'pods', { namespace: ns.name, name: pod.metadata.name });
    return pollUntil(
      async (observe) => {
        const p = await cluster.client.get(path, PodSchema);
        observe(p.status);
        return ['Succeeded', 'Failed'].includes(p.status.phase ?? '') ? p : undefined;
      },
      { timeoutMs: 90_000, description: `pod ${pod.metadata.name} to finish` },
    );
  }

  function terminationMessage(pod: Pod): unknown {
    const message = pod.status.containerStatuses[0]?.state.terminated?.message;
    assert.ok(message, `a termination message: ${JSON.stringify(pod.status)}`);
    return JSON.parse(message);
  }

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
    const pod = await runToEnd(
      restrictedPod(
        realNode,
        'reviewer',
        PRODUCT_IMAGE,
        {
          command: [NODE, '-e', ACCESS_REVIEW_SCRIPT, 'list:configmaps', 'get:secrets', 'create:configmaps'],
          volumeMounts: [sa.mount],
        },
        { serviceAccountName: 'reader', volumes: [sa.volume] },
      ),
    );
    assert.equal(pod.status.phase, 'Succeeded', JSON.stringify(pod.status));
    const seen = v.parse(ReviewResult, terminationMessage(pod));
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
    await cluster.client.create(
      apiPath('v1', 'pods', { namespace: ns.name }),
      restrictedPod(
        realNode,
        'server',
        realNode.images.hello,
        {
          args: ['--serve', '8080'],
          ports: [{ containerPort: 8080 }],
          readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
        },
        {},
        { app: 'hello' },
      ),
    );
    const server = await pollUntil(
      async (observe) => {
        const p = await cluster.client.get(
          apiPath('v1', 'pods', { namespace: ns.name, name: 'server' }),
          PodSchema,
        );
        observe(p.status);
        return p.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True') ? p : undefined;
      },
      { timeoutMs: 60_000, description: 'the serving pod to be Ready' },
    );
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
      endpoints: [{ addresses: [server.status.podIP], conditions: { ready: true } }],
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    });
    const clusterIP = service.spec.clusterIP;
    assert.match(clusterIP, /^10\.0\.0\.\d+$/);
    // kube-proxy programs the Service within its minimum sync period; a client that came too early is retried.
    const answer = await pollUntil(
      async (observe) => {
        const name = `client-${Date.now().toString(36)}`;
        const pod = await runToEnd(
          restrictedPod(realNode, name, PRODUCT_IMAGE, {
            command: [NODE, '-e', CONNECT_SCRIPT, clusterIP, '80'],
          }),
        );
        const r = v.parse(ConnectResult, terminationMessage(pod));
        observe(r);
        return r.connected ? r : undefined;
      },
      { timeoutMs: 60_000, description: 'a client pod to reach the ClusterIP' },
    );
    assert.deepEqual(answer, { connected: true, line: 'hello from uid=1000' });
  });
});
