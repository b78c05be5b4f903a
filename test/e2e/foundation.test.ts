// e2e: alone — it compacts etcd, which ends every watch of the files beside it with 410 Gone
// Proof that the local control plane behaves like a real cluster where this project depends on it:
// Job verdicts and pod exit codes, pods/log through the kubelet endpoint, garbage collection, TTL,
// 410 Gone after an etcd compaction, and the test node's volumes, env and per-pod IPs.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import * as v from 'valibot';
import {
  apiPath,
  freshNamespace,
  type Job,
  JobSchema,
  KubeError,
  type Pod,
  PodSchema,
  pollUntil,
  type WatchEvent,
} from '../support/index.ts';
import { e2eCluster } from '../support/testbed.ts';

const cluster = e2eCluster();
const skip =
  typeof cluster === 'string'
    ? cluster
    : process.env.AGENT_E2E_RUNTIME === 'deno'
      ? 'foundation tests do not depend on the JavaScript runtime; they run in the node pass only'
      : false;

/** A host program: images not in the node's image table run `command` from the host. */
const HOST_IMAGE = 'docker.io/library/busybox:1.37';

function jobManifest(
  name: string,
  script: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name },
    spec: {
      backoffLimit: 0,
      template: {
        spec: {
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 2,
          containers: [{ name: 'main', image: HOST_IMAGE, command: ['sh', '-c', script] }],
        },
      },
      ...extra,
    },
  };
}

function condition(job: Job, type: string): boolean {
  return job.status.conditions?.some((c) => c.type === type && c.status === 'True') === true;
}

describe('foundation: the local control plane', { skip }, () => {
  if (typeof cluster === 'string') return;
  const { client } = cluster;
  after(() => client.close());

  async function jobPods(ns: string, job: string): Promise<Pod[]> {
    const { items } = await client.list(
      apiPath('v1', 'pods', { namespace: ns }),
      { labelSelector: `batch.kubernetes.io/job-name=${job}` },
      PodSchema,
    );
    return items;
  }

  it('a failing Job ends Failed, reports exit code 3, and its log is readable through pods/log', async (t) => {
    const ns = await freshNamespace(client, 'foundation-job');
    t.after(ns.cleanup);
    const jobs = apiPath('batch/v1', 'jobs', { namespace: ns.name });
    await client.create(jobs, jobManifest('fails', 'echo hello; exit 3'));

    const job = await pollUntil(
      async (observe) => {
        const j = await client.get(`${jobs}/fails`, JobSchema);
        observe(j.status);
        return condition(j, 'Failed') ? j : undefined;
      },
      { timeoutMs: 60_000, description: 'the Job to get the Failed condition' },
    );
    assert.equal(job.status.conditions?.find((c) => c.type === 'Failed')?.reason, 'BackoffLimitExceeded');
    assert.equal(job.status.failed, 1);
    assert.equal(condition(job, 'Complete'), false);

    const [pod] = await jobPods(ns.name, 'fails');
    assert.ok(pod?.metadata.name, 'the Job created a pod');
    assert.equal(pod.status.phase, 'Failed');
    const terminated = pod.status.containerStatuses?.[0]?.state.terminated;
    assert.equal(terminated?.exitCode, 3);
    assert.equal(terminated?.reason, 'Error');
    assert.ok(terminated?.startedAt && terminated.finishedAt, 'startedAt and finishedAt are reported');
    assert.match(pod.status.podIP ?? '', /^127\.0\.0\.\d+$/);

    const name = pod.metadata.name;
    assert.equal(await client.logs(ns.name, name, { container: 'main' }), 'hello\n');
    assert.equal(
      await client.logs(ns.name, name),
      'hello\n',
      'a single-container pod needs no container name',
    );
    assert.equal(await client.logs(ns.name, name, { container: 'main', limitBytes: 3 }), 'hel');
    assert.equal(await client.logs(ns.name, name, { container: 'main', tailLines: 1 }), 'hello\n');
    const stamped = await client.logs(ns.name, name, { container: 'main', timestamps: true });
    assert.match(stamped, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z hello\n$/);
  });

  it('pods/log honours tailLines and limitBytes, and reports a container that never started', async (t) => {
    const ns = await freshNamespace(client, 'foundation-logs');
    t.after(ns.cleanup);
    const pods = apiPath('v1', 'pods', { namespace: ns.name });
    await client.create(pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'lines' },
      spec: {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'main',
            image: HOST_IMAGE,
            command: ['sh', '-c', 'for i in 1 2 3 4 5; do echo line-$i; done'],
          },
          { name: 'broken', image: HOST_IMAGE, command: ['/nonexistent/program'] },
        ],
      },
    });
    const pod = await pollUntil(
      async (observe) => {
        const p = await client.get(`${pods}/lines`, PodSchema);
        observe(p.status);
        return p.status.phase === 'Failed' ? p : undefined;
      },
      { timeoutMs: 30_000, description: 'the pod to fail' },
    );
    const broken = pod.status.containerStatuses?.find((c) => c.name === 'broken')?.state.terminated;
    assert.equal(broken?.reason, 'StartError');
    assert.equal(broken?.exitCode, 128);
    assert.equal(pod.status.containerStatuses?.find((c) => c.name === 'main')?.state.terminated?.exitCode, 0);

    const all = await client.logs(ns.name, 'lines', { container: 'main' });
    assert.equal(all, 'line-1\nline-2\nline-3\nline-4\nline-5\n');
    assert.equal(
      await client.logs(ns.name, 'lines', { container: 'main', tailLines: 2 }),
      'line-4\nline-5\n',
    );
    assert.equal(await client.logs(ns.name, 'lines', { container: 'main', limitBytes: 10 }), 'line-1\nlin');
    assert.equal(
      await client.logs(ns.name, 'lines', { container: 'main', tailLines: 2, limitBytes: 7 }),
      'line-4\n',
    );
    await assert.rejects(
      client.logs(ns.name, 'lines'),
      (e: unknown) =>
        e instanceof KubeError && e.status === 400 && /container name must be specified/i.test(e.body),
    );
    await assert.rejects(
      client.logs(ns.name, 'lines', { container: 'broken' }),
      (e: unknown) => e instanceof KubeError && e.status === 400,
    );
  });

  it('a Job owned by a ConfigMap is garbage-collected (with its running pod) when the ConfigMap is deleted', async (t) => {
    const ns = await freshNamespace(client, 'foundation-gc');
    t.after(ns.cleanup);
    const cms = apiPath('v1', 'configmaps', { namespace: ns.name });
    const owner = await client.create(cms, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'owner' },
    });
    const jobs = apiPath('batch/v1', 'jobs', { namespace: ns.name });
    const job = jobManifest('owned', 'sleep 300');
    await client.create(jobs, {
      ...job,
      metadata: {
        name: 'owned',
        ownerReferences: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            name: 'owner',
            uid: owner.metadata.uid,
            blockOwnerDeletion: true,
          },
        ],
      },
    });
    await pollUntil(
      async (observe) => {
        const pods = await jobPods(ns.name, 'owned');
        observe(pods.map((p) => p.status.phase));
        return pods.some((p) => p.status.phase === 'Running') ? true : undefined;
      },
      { timeoutMs: 30_000, description: "the Job's pod to run" },
    );

    assert.equal(await client.delete(`${cms}/owner`, { propagationPolicy: 'Background' }), true);
    await pollUntil(async () => ((await client.tryGet(`${jobs}/owned`)) === undefined ? true : undefined), {
      timeoutMs: 60_000,
      description: 'the garbage collector to delete the Job',
    });
    await pollUntil(
      async (observe) => {
        const pods = await jobPods(ns.name, 'owned');
        observe(pods.map((p) => `${p.metadata.name}:${p.status.phase}`));
        return pods.length === 0 ? true : undefined;
      },
      { timeoutMs: 60_000, description: "the Job's pod to be stopped and deleted" },
    );
  });

  it('a finished Job with ttlSecondsAfterFinished: 3 disappears', async (t) => {
    const ns = await freshNamespace(client, 'foundation-ttl');
    t.after(ns.cleanup);
    const jobs = apiPath('batch/v1', 'jobs', { namespace: ns.name });
    // 3 s, not 1: the TTL counts from completionTime, which has whole seconds, so a 1 s TTL can delete the Job a
    // moment after Complete shows, between two polls of a loaded CI machine (seen once).
    await client.create(jobs, jobManifest('short', 'exit 0', { ttlSecondsAfterFinished: 3 }));
    let sawComplete = false;
    await pollUntil(
      async (observe) => {
        const j = await client.tryGet(`${jobs}/short`, JobSchema);
        observe(j?.status ?? 'gone');
        if (j && condition(j, 'Complete')) sawComplete = true;
        return j === undefined ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 50, description: 'the TTL controller to delete the finished Job' },
    );
    assert.ok(sawComplete, 'the Job completed before it was deleted');
  });

  it('a watch from a compacted resourceVersion gets 410 Gone', async (t) => {
    const testbed = cluster.testbed;
    if (!testbed) {
      t.skip('needs the local testbed (etcd URL in testbed.json)');
      return;
    }
    const ns = await freshNamespace(client, 'foundation-410');
    t.after(ns.cleanup);
    // Watches on this resource bypass the apiserver's watch cache (which keeps its own history for
    // minutes regardless of compaction), so they are served by etcd itself.
    const resource = testbed.uncachedResource;
    const coll = apiPath('v1', resource, { namespace: ns.name });
    const first = await client.create(coll, {
      apiVersion: 'v1',
      kind: 'PodTemplate',
      metadata: { name: 'tpl', labels: { round: '0' } },
      template: { spec: { containers: [{ name: 'c', image: HOST_IMAGE }] } },
    });
    const oldRv = first.metadata.resourceVersion;
    assert.ok(oldRv);
    for (let i = 1; i <= 3; i++)
      await client.patch(`${coll}/tpl`, { metadata: { labels: { round: String(i) } } });

    const etcd = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
      const res = await fetch(`${testbed.etcd}${path}`, { method: 'POST', body: JSON.stringify(body) });
      assert.equal(res.status, 200, `etcd ${path}: ${res.status}`);
      return (await res.json()) as Record<string, unknown>;
    };
    const statusReply = await etcd('/v3/maintenance/status', {});
    const revision = (statusReply.header as { revision?: string } | undefined)?.revision;
    assert.ok(revision && Number(revision) > Number(oldRv), `etcd revision ${revision} is past ${oldRv}`);
    await etcd('/v3/kv/compaction', { revision, physical: true });

    // Before compaction this watch would replay the three updates; now the history is gone.
    const events: WatchEvent[] = [];
    const end = await client.watch(coll, { resourceVersion: oldRv, timeoutSeconds: 10 }, (e) => {
      events.push(e);
    });
    const httpGone = end.kind === 'http-error' && end.status === 410;
    const streamGone = events.some((e) => e.type === 'ERROR' && e.object.code === 410);
    assert.ok(
      httpGone || streamGone,
      `expected 410 Gone, got ${JSON.stringify({ end, events }).slice(0, 500)}`,
    );
    assert.equal(
      events.filter((e) => e.type !== 'ERROR').length,
      0,
      'no events are replayed from a compacted revision',
    );
  });

  it('a pod sees its emptyDir, a secret-backed env var and its own pod IP', async (t) => {
    const ns = await freshNamespace(client, 'foundation-pod');
    t.after(ns.cleanup);
    await client.create(apiPath('v1', 'secrets', { namespace: ns.name }), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'creds' },
      stringData: { token: 's3cr3t-value' },
    });
    const mountPath = '/testbed-scratch';
    const pods = apiPath('v1', 'pods', { namespace: ns.name });
    await client.create(pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'probe' },
      spec: {
        restartPolicy: 'Never',
        securityContext: { fsGroup: 1000 },
        volumes: [{ name: 'scratch', emptyDir: {} }],
        initContainers: [
          {
            name: 'writer',
            image: HOST_IMAGE,
            command: ['sh', '-c', `echo from-init > ${mountPath}/handoff`],
            volumeMounts: [{ name: 'scratch', mountPath }],
          },
        ],
        containers: [
          {
            name: 'main',
            image: HOST_IMAGE,
            command: [
              'sh',
              '-c',
              [
                `echo "mounted=$(grep -c ' ${mountPath} ' /proc/self/mountinfo)"`,
                `echo "handoff=$(cat ${mountPath}/handoff)"`,
                `echo "secret=$TOKEN"`,
                `echo "podip=$POD_IP"`,
                `echo "uid=$(id -u)"`,
                `echo from-main > ${mountPath}/mine`,
              ].join('; '),
            ],
            env: [
              { name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'creds', key: 'token' } } },
              { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
            ],
            securityContext: { runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true },
            volumeMounts: [{ name: 'scratch', mountPath }],
          },
        ],
      },
    });
    const pod = await pollUntil(
      async (observe) => {
        const p = await client.get(`${pods}/probe`, PodSchema);
        observe(p.status);
        return p.status.phase === 'Succeeded' || p.status.phase === 'Failed' ? p : undefined;
      },
      { timeoutMs: 30_000, description: 'the probe pod to finish' },
    );
    const logs = await client.logs(ns.name, 'probe', { container: 'main' });
    assert.equal(pod.status.phase, 'Succeeded', `pod failed; log:\n${logs}`);
    const podIP = pod.status.podIP ?? '';
    assert.match(podIP, /^127\.0\.0\.\d+$/);
    assert.notEqual(podIP, '127.0.0.1', 'the pod has its own address, not the node address');
    assert.deepEqual(pod.status.podIPs, [{ ip: podIP }]);
    assert.equal(
      logs,
      ['mounted=1', 'handoff=from-init', 'secret=s3cr3t-value', `podip=${podIP}`, 'uid=1000', ''].join('\n'),
    );
    assert.equal(
      existsSync(`${mountPath}/handoff`),
      false,
      'the emptyDir is mounted privately, not on the host',
    );
    assert.deepEqual(
      pod.status.initContainerStatuses?.map((c) => [c.name, c.state.terminated?.reason]),
      [['writer', 'Completed']],
    );
  });

  it('a missing secret key keeps the container waiting with CreateContainerConfigError', async (t) => {
    const ns = await freshNamespace(client, 'foundation-cfgerr');
    t.after(ns.cleanup);
    const pods = apiPath('v1', 'pods', { namespace: ns.name });
    await client.create(apiPath('v1', 'secrets', { namespace: ns.name }), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'partial' },
      stringData: { other: 'x' },
    });
    await client.create(pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'waits' },
      spec: {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'main',
            image: HOST_IMAGE,
            command: ['sh', '-c', 'echo "got=$TOKEN"'],
            env: [{ name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'partial', key: 'token' } } }],
          },
        ],
      },
    });
    const waiting = await pollUntil(
      async (observe) => {
        const p = await client.get(`${pods}/waits`, PodSchema);
        observe(p.status);
        const w = p.status.containerStatuses?.[0]?.state.waiting;
        return w?.reason === 'CreateContainerConfigError' ? { pod: p, w } : undefined;
      },
      { timeoutMs: 30_000, description: 'CreateContainerConfigError' },
    );
    assert.equal(waiting.pod.status.phase, 'Pending');
    assert.match(waiting.w.message ?? '', /couldn't find key token in Secret/);
    // Like the kubelet, the node retries: once the key exists the container runs.
    await client.patch(apiPath('v1', 'secrets', { namespace: ns.name, name: 'partial' }), {
      stringData: { token: 'arrived' },
    });
    await pollUntil(
      async (observe) => {
        const p = await client.get(`${pods}/waits`, PodSchema);
        observe(p.status);
        return p.status.phase === 'Succeeded' ? true : undefined;
      },
      { timeoutMs: 30_000, description: 'the pod to run once the key exists' },
    );
    assert.equal(await client.logs(ns.name, 'waits'), 'got=arrived\n');
  });

  it('two pods listening on the same port on their own pod IPs do not collide', async (t) => {
    const ns = await freshNamespace(client, 'foundation-ports');
    t.after(ns.cleanup);
    const pods = apiPath('v1', 'pods', { namespace: ns.name });
    const port = 18080;
    const server = `require('node:http').createServer((q, s) => s.end(process.env.NAME)).listen(${port}, process.env.POD_IP)`;
    for (const name of ['left', 'right']) {
      await client.create(pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        spec: {
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'server',
              image: HOST_IMAGE,
              command: [process.execPath, '-e', server],
              env: [
                { name: 'NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
              ],
            },
          ],
        },
      });
    }
    const ips = new Map<string, string>();
    for (const name of ['left', 'right']) {
      const ip = await pollUntil(
        async (observe) => {
          const p = await client.get(`${pods}/${name}`, PodSchema);
          observe(p.status);
          assert.notEqual(
            p.status.phase,
            'Failed',
            `${name} failed: ${JSON.stringify(p.status.containerStatuses)}`,
          );
          return p.status.phase === 'Running' ? p.status.podIP : undefined;
        },
        { timeoutMs: 30_000, description: `${name} to run` },
      );
      ips.set(name, ip);
    }
    assert.notEqual(ips.get('left'), ips.get('right'));
    for (const [name, ip] of ips) {
      const body = await pollUntil(
        async () => {
          const res = await fetch(`http://${ip}:${port}/`);
          return res.ok ? await res.text() : undefined;
        },
        { timeoutMs: 20_000, description: `${name} to answer on ${ip}:${port}` },
      );
      assert.equal(body, name);
    }
    // Both are still running: neither hit EADDRINUSE.
    for (const name of ips.keys()) {
      const p = await client.get(`${pods}/${name}`, PodSchema);
      assert.equal(p.status.phase, 'Running');
      assert.equal(p.status.containerStatuses?.[0]?.restartCount, 0);
    }
  });

  it('the image table runs the built bundle for the controller images, on Node and on Deno', async (t) => {
    const ns = await freshNamespace(client, 'foundation-images');
    t.after(ns.cleanup);
    const pods = apiPath('v1', 'pods', { namespace: ns.name });
    const images = [
      ['node', 'agent-controller:e2e', /^agent-controller \S+ \(node v\d+\.\d+\.\d+\)\n$/],
      ['deno', 'agent-controller:e2e-deno', /^agent-controller \S+ \(deno 2\.\d+\.\d+\)\n$/],
    ] as const;
    for (const [name, image] of images) {
      await client.create(pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        spec: {
          restartPolicy: 'Never',
          securityContext: { fsGroup: 1000 },
          // No command: the image entrypoint (the bundle) runs with these args, as in a run pod.
          containers: [
            {
              name: 'main',
              image,
              args: ['version'],
              securityContext: { runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true },
            },
          ],
        },
      });
    }
    for (const [name, , expected] of images) {
      const pod = await pollUntil(
        async (observe) => {
          const p = await client.get(`${pods}/${name}`, PodSchema);
          observe(p.status);
          return p.status.phase === 'Succeeded' || p.status.phase === 'Failed' ? p : undefined;
        },
        { timeoutMs: 60_000, description: `the ${name} pod to finish` },
      );
      const log = await client.logs(ns.name, name);
      assert.equal(pod.status.phase, 'Succeeded', `${name}: ${log}`);
      assert.match(log, expected);
    }
  });

  it('the node enforces activeDeadlineSeconds and stops deleted pods gracefully', async (t) => {
    const ns = await freshNamespace(client, 'foundation-stop');
    t.after(ns.cleanup);
    const pods = apiPath('v1', 'pods', { namespace: ns.name });
    const container = { name: 'main', image: HOST_IMAGE };
    await client.create(pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'deadline' },
      spec: {
        restartPolicy: 'Never',
        activeDeadlineSeconds: 1,
        terminationGracePeriodSeconds: 1,
        containers: [{ ...container, command: ['sleep', '60'] }],
      },
    });
    // Traps SIGTERM and exits 0: a graceful stop shows up as a clean exit before the pod disappears.
    await client.create(pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'graceful' },
      spec: {
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 10,
        containers: [
          {
            ...container,
            command: [
              'sh',
              '-c',
              "trap 'echo got-term; exit 0' TERM; echo ready; while :; do sleep 0.1; done",
            ],
          },
        ],
      },
    });

    const deadline = await pollUntil(
      async (observe) => {
        const p = await client.get(`${pods}/deadline`, PodSchema);
        observe(p.status);
        return p.status.phase === 'Failed' ? p : undefined;
      },
      { timeoutMs: 30_000, description: 'the deadline pod to fail' },
    );
    assert.equal(deadline.status.reason, 'DeadlineExceeded');
    assert.equal(
      deadline.status.containerStatuses?.[0]?.state.terminated?.exitCode,
      143,
      'sleep got SIGTERM',
    );

    const running = await pollUntil(
      async () => {
        const p = await client.get(`${pods}/graceful`, PodSchema);
        return p.status.phase === 'Running' && (await client.logs(ns.name, 'graceful')) === 'ready\n'
          ? p
          : undefined;
      },
      { timeoutMs: 30_000, description: 'the graceful pod to run' },
    );
    const statuses: Pod[] = [];
    const watching = new AbortController();
    const watchDone = client.watch(
      pods,
      {
        resourceVersion: running.metadata.resourceVersion ?? '0',
        fieldSelector: 'metadata.name=graceful',
        signal: watching.signal,
      },
      (e) => {
        if (e.type === 'MODIFIED' || e.type === 'DELETED') statuses.push(v.parse(PodSchema, e.object));
        if (e.type === 'DELETED') watching.abort();
      },
    );
    await client.delete(`${pods}/graceful`);
    await pollUntil(
      async () => ((await client.tryGet(`${pods}/graceful`)) === undefined ? true : undefined),
      {
        timeoutMs: 30_000,
        description: 'the graceful pod to be deleted',
      },
    );
    watching.abort();
    await watchDone;
    const final = statuses.at(-1);
    assert.equal(
      final?.status.phase,
      'Succeeded',
      'the trap exited 0 on SIGTERM, before the grace period ended',
    );
    assert.equal(final?.status.containerStatuses?.[0]?.state.terminated?.exitCode, 0);
  });

  it('restartPolicy OnFailure restarts a failed container and keeps the previous log', async (t) => {
    const ns = await freshNamespace(client, 'foundation-restart');
    t.after(ns.cleanup);
    const pods = apiPath('v1', 'pods', { namespace: ns.name });
    await client.create(pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'flaky' },
      spec: {
        restartPolicy: 'OnFailure',
        volumes: [{ name: 'state', emptyDir: {} }],
        containers: [
          {
            name: 'main',
            image: HOST_IMAGE,
            command: [
              'sh',
              '-c',
              'if [ -f /flaky-state/seen ]; then echo second; else touch /flaky-state/seen; echo first; exit 1; fi',
            ],
            volumeMounts: [{ name: 'state', mountPath: '/flaky-state' }],
          },
        ],
      },
    });
    const pod = await pollUntil(
      async (observe) => {
        const p = await client.get(`${pods}/flaky`, PodSchema);
        observe(p.status);
        return p.status.phase === 'Succeeded' ? p : undefined;
      },
      { timeoutMs: 30_000, description: 'the flaky pod to succeed after a restart' },
    );
    const status = pod.status.containerStatuses?.[0];
    assert.equal(status?.restartCount, 1);
    assert.equal(status?.lastState.terminated?.exitCode, 1);
    assert.equal(status?.state.terminated?.exitCode, 0);
    assert.equal(await client.logs(ns.name, 'flaky'), 'second\n');
    assert.equal(await client.logs(ns.name, 'flaky', { previous: true }), 'first\n');
  });

  it('the node refuses hostPath volumes and privileged containers', async (t) => {
    const ns = await freshNamespace(client, 'foundation-refuse');
    t.after(ns.cleanup);
    const pods = apiPath('v1', 'pods', { namespace: ns.name });
    const base = { name: 'main', image: HOST_IMAGE, command: ['true'] };
    await client.create(pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'hostpath' },
      spec: {
        restartPolicy: 'Never',
        volumes: [{ name: 'host', hostPath: { path: '/etc' } }],
        containers: [{ ...base, volumeMounts: [{ name: 'host', mountPath: '/host-etc' }] }],
      },
    });
    await client.create(pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'privileged' },
      spec: { restartPolicy: 'Never', containers: [{ ...base, securityContext: { privileged: true } }] },
    });
    for (const [name, reason] of [
      ['hostpath', 'HostPathVolumeRefused'],
      ['privileged', 'PrivilegedContainerRefused'],
    ] as const) {
      const p = await pollUntil(
        async (observe) => {
          const pod = await client.get(`${pods}/${name}`, PodSchema);
          observe(pod.status);
          return pod.status.phase === 'Failed' ? pod : undefined;
        },
        { timeoutMs: 30_000, description: `${name} to be refused` },
      );
      assert.equal(p.status.reason, reason);
      assert.match(p.status.message ?? '', /refuses/);
      assert.equal(p.status.containerStatuses?.[0]?.state.terminated, undefined, 'nothing ran');
    }
  });
});
