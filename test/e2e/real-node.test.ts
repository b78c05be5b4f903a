// The test bed's real node (issue 26, first part; docs/design/real-node.md): a real kubelet over containerd and
// runc runs pods at the restricted Pod Security level (uid 1000, RuntimeDefault seccomp, no capabilities, read-only
// root) from an image imported into its containerd. A pod that finishes: the uid the process prints is 1000, its
// termination message reaches the pod's status, `kubectl logs` (API server → kubelet at the node's address in its
// network namespace) returns what it printed. A pod that serves: the kubelet's TCP readiness probe reaches it at its
// pod address, `kubectl exec` runs in it, `kubectl port-forward` reaches its port.
// Needs `scripts/testbed up --real-node` (root, `scripts/install-node-runtime`).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  apiPath,
  freshNamespace,
  type Pod,
  PodSchema,
  pollUntil,
  type TestNamespace,
} from '../support/index.ts';
import { readRealNodeInfo, realNodeSkipReason } from '../support/real-node/info.ts';
import { kubectlBinary, restrictedPod } from '../support/real-node/pods.ts';
import { e2eCluster } from '../support/testbed.ts';

const cluster = e2eCluster();
const realNode = typeof cluster === 'string' ? undefined : readRealNodeInfo(cluster.kubeconfig);
const skip = typeof cluster === 'string' ? cluster : realNodeSkipReason(realNode);

function kubectl(kubeconfig: string, ...args: string[]): string {
  const r = spawnSync(kubectlBinary(), ['--kubeconfig', kubeconfig, ...args], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(r.status, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Polls the pod until `done` holds. */
function waitPod(ns: string, name: string, what: string, done: (p: Pod) => boolean): Promise<Pod> {
  if (typeof cluster === 'string') throw new Error(cluster);
  const path = apiPath('v1', 'pods', { namespace: ns, name });
  return pollUntil(
    async (observe) => {
      const p = await cluster.client.get(path, PodSchema);
      observe(p.status);
      return done(p) ? p : undefined;
    },
    { timeoutMs: 60_000, description: what },
  );
}

/** `kubectl port-forward` to a local port it picks; resolves with that port once it is forwarding. */
function portForward(
  kubeconfig: string,
  ns: string,
  pod: string,
  port: number,
): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn(
    kubectlBinary(),
    ['--kubeconfig', kubeconfig, 'port-forward', '--namespace', ns, `pod/${pod}`, `:${port}`],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out);
      if (m?.[1]) resolve({ port: Number(m[1]), child });
    });
    child.on('exit', (code) => reject(new Error(`kubectl port-forward exited ${code}: ${err}`)));
  });
}

/** The first line a TCP server on 127.0.0.1:`port` sends. */
function readLine(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    const socket = connect(port, '127.0.0.1');
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer in 10 s')));
    socket.on('data', (d) => {
      data += d.toString();
    });
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
}

describe('real node: a restricted pod on a real kubelet', { skip }, () => {
  if (typeof cluster === 'string' || realNode === undefined) return;
  let ns: TestNamespace;
  before(async () => {
    ns = await freshNamespace(cluster.client, 'real-node');
    // Pod Security admission at `restricted` checks the pods are what they say.
    await cluster.client.patch(apiPath('v1', 'namespaces', { name: ns.name }), {
      metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
    });
  });
  after(async () => {
    await ns?.cleanup();
    cluster.client.close();
  });

  it('runs as uid 1000; its termination message reaches status; kubectl logs returns its output', {
    timeout: 120_000,
  }, async () => {
    const message = `hello from ${ns.name}`;
    await cluster.client.create(
      apiPath('v1', 'pods', { namespace: ns.name }),
      restrictedPod(realNode, 'hello', realNode.images.hello, { args: [message] }),
    );
    const pod = await waitPod(ns.name, 'hello', 'the pod on the real node to finish', (p) =>
      ['Succeeded', 'Failed'].includes(p.status.phase ?? ''),
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

  it('a serving pod: Ready by the kubelet TCP probe; kubectl exec and kubectl port-forward reach it', {
    timeout: 120_000,
  }, async (t) => {
    await cluster.client.create(
      apiPath('v1', 'pods', { namespace: ns.name }),
      restrictedPod(realNode, 'server', realNode.images.hello, {
        args: ['--serve', '8080'],
        ports: [{ containerPort: 8080 }],
        readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
      }),
    );
    // The probe is the kubelet's own connection to the pod's address, from the node's network namespace.
    await waitPod(ns.name, 'server', 'the serving pod to be Ready', (p) =>
      p.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    const exec = kubectl(
      cluster.kubeconfig,
      'exec',
      '--namespace',
      ns.name,
      'server',
      '--',
      '/hello',
      'from exec',
    );
    assert.equal(exec, 'uid=1000 gid=1000\nfrom exec\n');

    const forward = await portForward(cluster.kubeconfig, ns.name, 'server', 8080);
    t.after(() => forward.child.kill());
    assert.equal(await readLine(forward.port), 'hello from uid=1000\n');
    assert.equal(
      kubectl(cluster.kubeconfig, 'logs', '--namespace', ns.name, 'server'),
      'uid=1000 gid=1000\nserving on 8080\n',
    );
  });
});
