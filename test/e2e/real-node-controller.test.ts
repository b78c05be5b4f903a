// The controller itself in the cluster, on the real node (issue 26 §3; docs/design/real-node.md): two replicas of
// deploy/controller.yaml from the assembled product image, as the ServiceAccount of deploy/rbac/controller-rbac.yaml
// with its in-cluster config (KUBERNETES_SERVICE_HOST/PORT set by the kubelet, the projected token and CA), in a
// namespace that enforces the restricted Pod Security level. Checked: both replicas are admitted and Ready, run as
// uid 65532 on a read-only root; exactly one holds the Lease; it runs an Agent on the real node to Succeeded; when
// its pod is deleted the other replica takes the Lease over and runs the next Agent.
// Needs `scripts/testbed up --real-node` (with the `kubernetes` Service routed to the API server) and the built
// bundle; runs in the Node pass only (the image holds Node: the runtime under test is the one in the image).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';
import * as v from 'valibot';
import {
  agentManifest,
  apiPath,
  applyCrds,
  applyRbacManifests,
  BUNDLE_PATH,
  e2eCluster,
  execDefinition,
  LeaseObjectSchema,
  type Manifest,
  pollUntil,
  runScenario,
  type Scenario,
  stationManifest,
} from '../support/index.ts';
import type { RealNodeInfo } from '../support/real-node/info.ts';
import { serviceAccountVolume } from '../support/real-node/pods.ts';
import {
  buildProductImages,
  importImages,
  MOCK_CLI_IMAGE,
  PRODUCT_IMAGE,
} from '../support/real-node/product-image.ts';
import { realNodeRuns, realNodeTemplate } from '../support/real-node/runs.ts';

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
      conditions: v.optional(v.array(v.looseObject({ type: v.string(), status: v.string() }))),
      containerStatuses: v.optional(
        v.array(v.looseObject({ name: v.string(), ready: v.boolean(), containerID: v.optional(v.string()) })),
      ),
    }),
    {},
  ),
});
type ControllerPod = v.InferOutput<typeof ControllerPodSchema>;

const COMPONENT = 'agents.re-cinq.com/component';

/** deploy/controller.yaml's Deployment, moved onto the real node, running the assembled image. */
function controllerDeployment(node: RealNodeInfo): Manifest {
  const docs = loadAll(readFileSync(join(ROOT, 'deploy', 'controller.yaml'), 'utf8')) as Record<
    string,
    unknown
  >[];
  const deployment = docs.find((d) => d.kind === 'Deployment') as {
    metadata: { name: string; labels?: Record<string, string> };
    spec: {
      replicas: number;
      template: { spec: Record<string, unknown> & { containers: Record<string, unknown>[] } };
    };
  };
  assert.ok(deployment, 'deploy/controller.yaml has the Deployment');
  assert.equal(deployment.spec.replicas, 2, 'deploy/controller.yaml runs two replicas');
  const pod = deployment.spec.template.spec;
  // The test bed's API server runs without the ServiceAccount admission plugin, so the pod gets here the projected
  // volume that plugin adds in a cluster (token, the cluster's CA, the namespace) at the same path.
  const sa = serviceAccountVolume();
  const containers = pod.containers.map((c) => ({
    ...c,
    volumeMounts: [...((c.volumeMounts as unknown[] | undefined) ?? []), sa.mount],
    image: PRODUCT_IMAGE,
    imagePullPolicy: 'Never',
    env: (c.env as { name: string; value?: string }[]).map((e) =>
      // The run pods' init image: the product image, as a release's AGENT_IMAGE is the release's image.
      e.name === 'AGENT_IMAGE' ? { name: e.name, value: PRODUCT_IMAGE } : e,
    ),
  }));
  const manifest: Manifest = {
    ...deployment,
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    // s.create puts it in the scenario's namespace: deploy/'s `ai-agents` is left out.
    metadata: { name: deployment.metadata.name, labels: deployment.metadata.labels ?? {} },
    spec: {
      ...deployment.spec,
      template: {
        ...deployment.spec.template,
        spec: {
          ...pod,
          containers,
          volumes: [...((pod.volumes as unknown[] | undefined) ?? []), sa.volume],
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
  return manifest;
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

describe('real node: the controller in the cluster (two replicas, in-cluster config, restricted)', {
  skip,
}, () => {
  if (typeof cluster === 'string' || realNode === undefined) return;
  before(async () => {
    await applyCrds(cluster.client);
    const dir = join(dirname(cluster.kubeconfig), 'real-node', 'product-images');
    importImages(realNode.containerdSocket, buildProductImages(dir, BUNDLE_PATH));
  });
  after(() => cluster.client.close());

  it(
    'two replicas from the product image hold the Lease in turn and run Agents on the real node',
    { timeout: 420_000 },
    () =>
      runScenario(cluster, 'rn-ctl', async (s) => {
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
        await applyRbacManifests(s, 'deploy/rbac/controller-rbac.yaml');
        await applyRbacManifests(s, 'deploy/rbac/crd-reader-rbac.yaml');
        await applyRbacManifests(s, 'deploy/rbac/policy-reader-rbac.yaml');
        const template = realNodeTemplate(realNode, MOCK_CLI_IMAGE);
        await s.create(
          execDefinition('hello', ['/usr/local/bin/mock-agent']),
          stationManifest('hello', 'hello', { template }),
          controllerDeployment(realNode),
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
        const names = both.map((p) => p.metadata.name);
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
        const other = names.find((n) => n !== leader);
        await pollUntil(
          async (observe) => {
            const holder = await leaseHolder(s);
            observe(holder);
            return holder === other ? holder : undefined;
          },
          { timeoutMs: 90_000, description: `the other replica (${other}) takes the Lease over` },
        );
        await s.create(agentManifest('second', 'hello'));
        const second = await s.waitTerminal('second', 180_000);
        assert.equal(second.status.phase, 'Succeeded', JSON.stringify(second.status));
      }),
  );
});
