// A pod's short-lived Kubernetes identity on the local control plane, as a real cluster gives it: the test node
// materialises a projected volume (a TokenRequest-issued token of the pod's ServiceAccount bound to the pod, the
// cluster CA from the kube-root-ca.crt ConfigMap, the namespace from the downward API) where in-cluster clients look
// for it, and points the `kubernetes` Service variables at the API server. The mock agent (MOCK_CAN_I) then asks the
// real API server, over TLS verified with that CA, what its ServiceAccount may do (SelfSubjectAccessReview): with the
// `view` ClusterRole bound in its namespace it may get pods there, but not create pods, list secrets or look into
// another namespace. A pod whose ServiceAccount does not exist waits in ContainerCreating with the kubelet's reason
// and starts once it exists.
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  addTestImages,
  apiPath,
  type E2eCluster,
  freshNamespace,
  type Pod,
  PodSchema,
  pollUntil,
} from '../support/index.ts';
import { e2eCluster } from '../support/testbed.ts';

const cluster = e2eCluster();
const skip =
  typeof cluster === 'string'
    ? cluster
    : cluster.testbed === undefined
      ? 'needs the local testbed (its node runs the mock agent from an image table entry)'
      : process.env.AGENT_E2E_RUNTIME === 'deno'
        ? 'the projected token does not depend on the JavaScript runtime; it runs in the node pass only'
        : false;

const REPO_MOCK = join(dirname(fileURLToPath(import.meta.url)), '..', 'mock-agent', 'mock-agent.mjs');
/** Where in-cluster clients read the token, ca.crt and namespace. */
const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * A test image running the mock agent with the host's Node: a world-readable copy (the pod runs as uid 1000),
 * registered in the node's image table. Returns the image name and the function removing both.
 */
function mockImage(c: E2eCluster, ns: string): { image: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'projected-token-'));
  chmodSync(dir, 0o755);
  const copy = join(dir, 'mock-agent.mjs');
  copyFileSync(REPO_MOCK, copy);
  chmodSync(copy, 0o755);
  const image = `mock-agent:${ns}`;
  const unregister = addTestImages(c, `mock-agent-${ns}`, {
    [image]: {
      entrypoint: [process.execPath, '/opt/mock/mock-agent.mjs'],
      files: { '/opt/mock/mock-agent.mjs': copy },
    },
  });
  return {
    image,
    remove: () => {
      unregister();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A pod like a restricted run pod holding a token: uid 1000, no automounted token, the projected volume instead. */
function tokenPod(
  name: string,
  serviceAccountName: string,
  image: string,
  canI: string,
): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 2,
      serviceAccountName,
      automountServiceAccountToken: false,
      securityContext: { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000 },
      containers: [
        {
          name: 'agent',
          image,
          env: [{ name: 'MOCK_CAN_I', value: canI }],
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          volumeMounts: [{ name: 'token', mountPath: SA_DIR, readOnly: true }],
        },
      ],
      volumes: [
        {
          name: 'token',
          projected: {
            sources: [
              { serviceAccountToken: { path: 'token', expirationSeconds: 600 } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
              {
                downwardAPI: {
                  items: [
                    { path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } },
                  ],
                },
              },
            ],
          },
        },
      ],
    },
  };
}

/** The JSON lines of a log that are MOCK_CAN_I answers. */
function answers(log: string): unknown[] {
  return log
    .split('\n')
    .filter((l) => l.startsWith('{"canI"'))
    .map((l) => JSON.parse(l) as unknown);
}

describe('projected ServiceAccount tokens on the test node', { skip }, () => {
  if (typeof cluster === 'string') return;
  const { client } = cluster;
  after(() => client.close());

  async function finished(ns: string, name: string): Promise<Pod> {
    return pollUntil(
      async (observe) => {
        const p = await client.get(apiPath('v1', 'pods', { namespace: ns, name }), PodSchema);
        observe(p.status);
        return p.status.phase === 'Succeeded' || p.status.phase === 'Failed' ? p : undefined;
      },
      { timeoutMs: 60_000, description: `pod ${name} to finish` },
    );
  }

  async function serviceAccount(ns: string, name: string): Promise<void> {
    await client.create(apiPath('v1', 'serviceaccounts', { namespace: ns }), {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name },
    });
  }

  /** Binds a ClusterRole to a ServiceAccount in its namespace. */
  async function bind(ns: string, account: string, role: string): Promise<void> {
    await client.create(apiPath('rbac.authorization.k8s.io/v1', 'rolebindings', { namespace: ns }), {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `${account}-${role.replace(/[^a-z0-9-]/g, '-')}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name: account, namespace: ns }],
    });
  }

  /**
   * Gives `account` the ClusterRole `view` in `ns`. `view` is an aggregated role: its rules are filled in by
   * kube-controller-manager's clusterrole-aggregation controller, which a control plane may not run (the testbed's
   * does not); then the roles it aggregates (labelled aggregate-to-view) are bound as well, which grants what the
   * aggregated `view` would.
   */
  async function grantView(ns: string, account: string): Promise<void> {
    await bind(ns, account, 'view');
    const view = (await client.get(
      apiPath('rbac.authorization.k8s.io/v1', 'clusterroles', { name: 'view' }),
    )) as {
      rules?: unknown[] | null;
    };
    if ((view.rules ?? []).length > 0) return;
    const { items } = await client.list(apiPath('rbac.authorization.k8s.io/v1', 'clusterroles'), {
      labelSelector: 'rbac.authorization.k8s.io/aggregate-to-view=true',
    });
    for (const role of items) await bind(ns, account, role.metadata.name ?? '');
  }

  it('the agent asks the API server with its token: view in its namespace gets pods, but creates no pods, lists no secrets, sees no other namespace', {
    timeout: 120_000,
  }, async (t) => {
    const ns = await freshNamespace(client, 'projected-token');
    t.after(ns.cleanup);
    const mock = mockImage(cluster, ns.name);
    t.after(mock.remove);
    await serviceAccount(ns.name, 'sa1');
    await grantView(ns.name, 'sa1');
    await client.create(
      apiPath('v1', 'pods', { namespace: ns.name }),
      tokenPod('can-i', 'sa1', mock.image, 'get pods;create pods;list secrets;get pods -n kube-system'),
    );

    const pod = await finished(ns.name, 'can-i');
    const log = await client.logs(ns.name, 'can-i', { container: 'agent' });
    assert.equal(pod.status.phase, 'Succeeded', `${JSON.stringify(pod.status)}\n${log}`);
    assert.deepEqual(answers(log), [
      { canI: 'get pods', namespace: ns.name, allowed: true },
      { canI: 'create pods', namespace: ns.name, allowed: false },
      { canI: 'list secrets', namespace: ns.name, allowed: false },
      { canI: 'get pods', namespace: 'kube-system', allowed: false },
    ]);
  });

  it('a pod whose ServiceAccount does not exist waits in ContainerCreating with the reason, and starts once it exists', {
    timeout: 120_000,
  }, async (t) => {
    const ns = await freshNamespace(client, 'projected-token-wait');
    t.after(ns.cleanup);
    const mock = mockImage(cluster, ns.name);
    t.after(mock.remove);
    // kube-controller-manager publishes the cluster CA into a new namespace a moment after it exists; until then the
    // mount also names the missing kube-root-ca.crt. This test is about the ServiceAccount alone.
    await pollUntil(
      async () =>
        (await client.tryGet(
          apiPath('v1', 'configmaps', { namespace: ns.name, name: 'kube-root-ca.crt' }),
        )) !== undefined
          ? true
          : undefined,
      { timeoutMs: 30_000, description: 'kube-root-ca.crt in the new namespace' },
    );
    await client.create(
      apiPath('v1', 'pods', { namespace: ns.name }),
      tokenPod('early', 'late', mock.image, 'get pods'),
    );
    const waiting = await pollUntil(
      async (observe) => {
        const p = await client.get(apiPath('v1', 'pods', { namespace: ns.name, name: 'early' }), PodSchema);
        observe(p.status);
        const state = p.status.containerStatuses?.[0]?.state.waiting;
        return state?.message?.includes('failed to fetch token')
          ? { phase: p.status.phase, state }
          : undefined;
      },
      { timeoutMs: 60_000, description: 'the pod waiting for its token' },
    );
    assert.deepEqual(waiting, {
      phase: 'Pending',
      state: {
        reason: 'ContainerCreating',
        message:
          'MountVolume.SetUp failed for volume "token" : failed to fetch token: serviceaccounts "late" not found',
      },
    });

    await serviceAccount(ns.name, 'late');
    const pod = await finished(ns.name, 'early');
    const log = await client.logs(ns.name, 'early', { container: 'agent' });
    assert.equal(pod.status.phase, 'Succeeded', `${JSON.stringify(pod.status)}\n${log}`);
    // No RoleBinding: the token works (the API server answers) but grants nothing.
    assert.deepEqual(answers(log), [{ canI: 'get pods', namespace: ns.name, allowed: false }]);
  });
});
