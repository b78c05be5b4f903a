// The test bed's real node (issue 26, first part; docs/design/real-node.md): a real kubelet over containerd and
// runc runs a pod at the restricted Pod Security level (uid 1000, RuntimeDefault seccomp, no capabilities, read-only
// root) from an image imported into its containerd; the uid the process prints is 1000, its termination message
// reaches the pod's status, and `kubectl logs` (API server → kubelet on the node's address in its network
// namespace) returns what it printed. Needs `scripts/testbed up --real-node` (root, `scripts/install-node-runtime`).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { apiPath, freshNamespace, PodSchema, pollUntil } from '../support/index.ts';
import { readRealNodeInfo } from '../support/real-node/info.ts';
import { e2eCluster } from '../support/testbed.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
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

/** kubectl of the control plane's release (already built: the test bed runs its binaries). */
function kubectl(kubeconfig: string, ...args: string[]): string {
  const bin = spawnSync('bash', [join(ROOT, 'scripts', 'build-kube-binaries')], { encoding: 'utf8' });
  assert.equal(bin.status, 0, bin.stderr);
  const folder = bin.stdout.trim().split('\n').at(-1) ?? '';
  const r = spawnSync(join(folder, 'kubectl'), ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8' });
  assert.equal(r.status, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

describe('real node: a restricted pod on a real kubelet', { skip }, () => {
  if (typeof cluster === 'string' || realNode === undefined) return;
  after(() => cluster.client.close());

  it('runs as uid 1000; its termination message reaches status; kubectl logs returns its output', {
    timeout: 120_000,
  }, async (t) => {
    const client = cluster.client;
    const ns = await freshNamespace(client, 'real-node');
    t.after(ns.cleanup);
    // Pod Security admission at `restricted` checks the pod is what it says.
    await client.patch(apiPath('v1', 'namespaces', { name: ns.name }), {
      metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
    });
    const message = `hello from ${ns.name}`;
    await client.create(apiPath('v1', 'pods', { namespace: ns.name }), {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'hello' },
      spec: {
        // The test bed has no scheduler for the real node: the pod names it, and tolerates its taint.
        nodeName: realNode.nodeName,
        tolerations: [{ ...realNode.taint, operator: 'Equal' }],
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 2,
        securityContext: {
          runAsNonRoot: true,
          runAsUser: 1000,
          runAsGroup: 1000,
          seccompProfile: { type: 'RuntimeDefault' },
        },
        containers: [
          {
            name: 'hello',
            image: realNode.images.hello,
            imagePullPolicy: 'Never',
            args: [message],
            securityContext: {
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              capabilities: { drop: ['ALL'] },
            },
          },
        ],
      },
    });
    const path = apiPath('v1', 'pods', { namespace: ns.name, name: 'hello' });
    const pod = await pollUntil(
      async (observe) => {
        const p = await client.get(path, PodSchema);
        observe(p.status);
        return p.status.phase === 'Succeeded' || p.status.phase === 'Failed' ? p : undefined;
      },
      { timeoutMs: 60_000, description: 'the pod on the real node to finish' },
    );
    assert.equal(pod.status.phase, 'Succeeded', JSON.stringify(pod.status));
    assert.equal(pod.spec.nodeName, realNode.nodeName);
    assert.equal(pod.status.hostIP, realNode.nodeIP);
    const podNet = realNode.podCIDR.replace(/\.0\/24$/, '.');
    assert.ok(pod.status.podIP?.startsWith(podNet), `pod IP ${pod.status.podIP} in ${realNode.podCIDR}`);
    const terminated = pod.status.containerStatuses[0]?.state.terminated;
    assert.equal(terminated?.exitCode, 0);
    assert.equal(terminated?.message, `${message} uid=1000`);
    assert.match(terminated?.containerID ?? '', /^containerd:\/\//);

    const logs = kubectl(cluster.kubeconfig, 'logs', '--namespace', ns.name, 'hello');
    assert.equal(logs, `uid=1000 gid=1000\n${message}\n`);
  });
});
