// Host-level: a PodWorker runs real pods with native sidecars (init containers with restartPolicy Always) and
// projected ServiceAccount tokens as local processes (unshare + mount + setpriv, so it needs root; skipped
// otherwise). The API server is replaced by a recorder of the pods/status patches the worker sends and fake
// TokenRequest answers; the instant-mode test runs no process.
import assert from 'node:assert/strict';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as v from 'valibot';
import { createLogger } from '../../src/shared/log.ts';
import type { KubeClient } from '../support/kube-client.ts';
import { pollUntil } from '../support/poll.ts';
import { HAVE_OPENSSL, kubeClientOnTls } from '../support/self-signed.ts';
import { apiSources } from './agent.ts';
import type { ImageTable } from './images.ts';
import { INSTANT_ANNOTATION, INSTANT_DELAY_ANNOTATION } from './instant.ts';
import { IpPool } from './ip-pool.ts';
import { parseCriLog } from './logs.ts';
import { NodePodSchema } from './pod-spec.ts';
import { PodWorker } from './pod-worker.ts';
import { findHostTools, type HostTools } from './process.ts';
import type { VolumeSources } from './volumes.ts';

const root = typeof process.getuid === 'function' && process.getuid() === 0;
const skip = root ? false : 'needs root (unshare --mount, mount --bind, setpriv)';
const NODE = process.execPath;

interface ContainerStatus {
  readonly name: string;
  readonly ready: boolean;
  readonly started: boolean;
  readonly restartCount: number;
  readonly state: {
    running?: unknown;
    waiting?: { reason: string; message?: string };
    terminated?: { exitCode: number; reason: string };
  };
  readonly lastState: { terminated?: { exitCode: number } };
}
interface Status {
  readonly phase: string;
  readonly conditions: readonly { type: string; status: string }[];
  readonly initContainerStatuses: readonly ContainerStatus[];
  readonly containerStatuses: readonly ContainerStatus[];
}

const dir = mkdtempSync(join(tmpdir(), 'node-agent-worker-'));
// Searchable by anyone: containers running as another user than root reach their mount points under it.
chmodSync(dir, 0o755);
after(() => rmSync(dir, { recursive: true, force: true }));
const ips = new IpPool(2, 254, 2 + Math.floor(Math.random() * 253));
let seq = 0;

/** No Secrets, no ConfigMaps, every TokenRequest refused. */
const noSources: VolumeSources = {
  secret: async () => undefined,
  configMap: async () => undefined,
  serviceAccountToken: async () => {
    throw new Error('no tokens on this node');
  },
};

/** Starts a worker on `pod`; every status it sends is kept in `statuses`, in order. */
function startPod(
  spec: Record<string, unknown>,
  annotations: Record<string, string> = {},
  tools?: HostTools,
  sources: VolumeSources = noSources,
  images: () => ImageTable = () => ({}),
  volumeSyncMs?: number,
) {
  const uid = `uid-${process.pid}-${++seq}`;
  const pod = v.parse(NodePodSchema, {
    metadata: { name: `p${seq}`, namespace: 'ns', uid, annotations },
    spec: { terminationGracePeriodSeconds: 5, ...spec },
  });
  const statuses: Status[] = [];
  const client = {
    patch: async (_path: string, body: { status: Status }) => {
      statuses.push(structuredClone(body.status));
      return {};
    },
  } as unknown as KubeClient;
  const worker = new PodWorker(
    {
      client,
      log: createLogger('error', () => undefined),
      nodeName: 'test-node',
      hostIP: '127.0.0.1',
      podsDir: join(dir, 'pods'),
      ips,
      images,
      tools: tools ?? findHostTools(),
      apiserver: { host: '127.0.0.1', port: '6443' },
      sources,
      trackProcess: () => undefined,
      now: Date.now,
      ...(volumeSyncMs !== undefined ? { volumeSyncMs } : {}),
    },
    pod,
  );
  worker.start();
  const last = (): Status => {
    const s = statuses.at(-1);
    if (!s) throw new Error('no status sent yet');
    return s;
  };
  /** Where a file of the pod's `shared` emptyDir volume is on the host. */
  const sharedFile = (name: string): string => join(dir, 'pods', uid, 'volumes', 'shared', name);
  return { worker, statuses, last, sharedFile };
}

const status = (list: readonly ContainerStatus[], name: string): ContainerStatus => {
  const found = list.find((c) => c.name === name);
  if (!found) throw new Error(`no status for ${name}`);
  return found;
};

/**
 * An emptyDir `shared` mounted in the pod's containers at `path` (a fresh folder, so nothing of the host is
 * hidden); on the host its files are under the pod's volume folder (`sharedFile` of startPod).
 */
function shared(name: string): { path: string; volume: unknown; mount: unknown } {
  const path = join(dir, `mnt-${name}-${++seq}`);
  mkdirSync(path);
  return { path, volume: { name: 'shared', emptyDir: {} }, mount: { name: 'shared', mountPath: path } };
}
const lines = (file: string): string[] => readFileSync(file, 'utf8').trim().split('\n');
const randomPort = (): number => 20_000 + Math.floor(Math.random() * 20_000);

/** A shell sidecar that logs, then runs until SIGTERM, recording `<name>-term` in the shared order file. */
const graceful = (name: string, order: string) =>
  `trap 'echo ${name}-term >> ${order}; exit 0' TERM; echo hello-from-${name}; while :; do sleep 0.05; done`;

describe('PodWorker with native sidecars (host)', { skip }, () => {
  it('a Job-like pod: a sidecar gates the next init container by its startup probe, runs beside the app, and is stopped after it in reverse order; the pod succeeds', {
    timeout: 60_000,
  }, async () => {
    const s = shared('job');
    const order = join(s.path, 'order');
    const port = randomPort();
    // Listens only after 1.5 s, so the httpGet startup probe fails first; SIGTERM → records it, exits 0.
    const proxy = `
      const http = require('node:http'); const fs = require('node:fs');
      process.on('SIGTERM', () => { fs.appendFileSync(${JSON.stringify(order)}, 'proxy-term\\n'); process.exit(0); });
      setTimeout(() => http.createServer((q, r) => r.end('ok')).listen(${port}, process.env.POD_IP), 1500);`;
    // Exits 0 only when the proxy answers: run before its startup probe passed, it would fail the pod (Never).
    const reach = (mark: string) => `
      require('node:http').get('http://' + process.env.POD_IP + ':${port}/', (r) => {
        ${mark ? `require('node:fs').appendFileSync(${JSON.stringify(order)}, '${mark}\\n');` : ''} process.exit(r.statusCode === 200 ? 0 : 1);
      }).on('error', () => process.exit(1));`;
    const podIP = { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } };
    const { worker, statuses, last, sharedFile } = startPod({
      restartPolicy: 'Never',
      volumes: [s.volume],
      initContainers: [
        {
          name: 'proxy',
          restartPolicy: 'Always',
          command: [NODE, '-e', proxy],
          env: [podIP],
          ports: [{ name: 'http', containerPort: port }],
          volumeMounts: [s.mount],
          startupProbe: {
            httpGet: { port: 'http', path: '/healthz' },
            periodSeconds: 1,
            failureThreshold: 10,
          },
          readinessProbe: { tcpSocket: { port }, periodSeconds: 1 },
        },
        { name: 'check', command: [NODE, '-e', reach('')], env: [podIP] },
        {
          name: 'logger',
          restartPolicy: 'Always',
          command: ['sh', '-c', graceful('logger', order)],
          volumeMounts: [s.mount],
        },
      ],
      containers: [
        {
          name: 'agent',
          command: [NODE, '-e', reach('agent-saw-proxy')],
          env: [podIP],
          volumeMounts: [s.mount],
        },
      ],
    });
    await worker.done;
    const final = last();
    assert.equal(final.phase, 'Succeeded', JSON.stringify(final));
    assert.deepEqual(lines(sharedFile('order')), ['agent-saw-proxy', 'logger-term', 'proxy-term']);
    assert.equal(status(final.containerStatuses, 'agent').state.terminated?.exitCode, 0);
    for (const name of ['proxy', 'logger']) {
      const c = status(final.initContainerStatuses, name);
      assert.equal(c.state.terminated?.exitCode, 0, `${name} exited on SIGTERM`);
      assert.equal(c.restartCount, 0);
    }
    // While the startup probe failed, the sidecar ran unstarted and the next init container had not started.
    const probing = statuses.find((st) => {
      const p = status(st.initContainerStatuses, 'proxy');
      return p.state.running !== undefined && !p.started;
    });
    assert.ok(probing, 'a status with proxy running but not started');
    assert.equal(status(probing.initContainerStatuses, 'check').state.waiting?.reason, 'PodInitializing');
    assert.equal(probing.phase, 'Pending');
    assert.ok(
      probing.conditions.some((c) => c.type === 'Initialized' && c.status === 'False'),
      'not initialized yet',
    );
    // Later it started and became ready (readiness probe), and the pod was Running and Ready meanwhile.
    const readyTime = statuses.find((st) =>
      st.conditions.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    assert.ok(readyTime, 'the pod was Ready at some point');
    assert.equal(readyTime.phase, 'Running');
    const proxyThen = status(readyTime.initContainerStatuses, 'proxy');
    assert.deepEqual([proxyThen.started, proxyThen.ready], [true, true]);
    // The sidecar's log is served like any container's.
    const info = worker.logInfo('logger');
    assert.ok(info);
    const logged = parseCriLog(readFileSync(info.files[0] ?? '', 'utf8')).map((e) => e.content);
    assert.equal(logged[0], 'hello-from-logger', JSON.stringify(logged));
    assert.equal(info.running, false);
    worker.cleanup();
  });

  it('an app container with a readiness probe (a server) is Ready only once the probe passes', {
    timeout: 60_000,
  }, async () => {
    const port = randomPort();
    // Listens after 1.5 s, answers /healthz until SIGTERM.
    const server = `
      process.on('SIGTERM', () => process.exit(0));
      setTimeout(() => require('node:http').createServer((q, r) => r.end('ok')).listen(${port}, process.env.POD_IP), 1500);`;
    const { worker, statuses } = startPod({
      restartPolicy: 'Always',
      containers: [
        {
          name: 'agent',
          command: [NODE, '-e', server],
          env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
          ports: [{ name: 'http', containerPort: port }],
          readinessProbe: { httpGet: { path: '/healthz', port }, periodSeconds: 1 },
        },
      ],
    });
    const readyAt = await pollUntil(
      () =>
        Promise.resolve(
          statuses.findIndex((st) => st.conditions.some((c) => c.type === 'Ready' && c.status === 'True')),
        ).then((i) => (i >= 0 ? i : undefined)),
      { timeoutMs: 20_000, intervalMs: 50, description: 'the pod Ready' },
    );
    const runningUnready = statuses
      .slice(0, readyAt)
      .find((st) => status(st.containerStatuses, 'agent').state.running !== undefined);
    assert.ok(runningUnready, 'a status with the agent running before it was ready');
    assert.equal(status(runningUnready.containerStatuses, 'agent').ready, false);
    assert.ok(runningUnready.conditions.some((c) => c.type === 'Ready' && c.status === 'False'));
    assert.equal(status(statuses[readyAt]?.containerStatuses ?? [], 'agent').ready, true);
    await worker.terminate(2);
    await worker.done;
    worker.cleanup();
  });

  it('a failing startup probe kills and restarts the sidecar; an exiting sidecar is restarted under restartPolicy Never', {
    timeout: 60_000,
  }, async () => {
    const s = shared('restart');
    const runs = (name: string) => join(s.path, `${name}-runs`);
    const count = (name: string) =>
      `n=$(cat ${runs(name)} 2>/dev/null || echo 0); n=$((n+1)); echo $n > ${runs(name)}`;
    const okFile = join(s.path, 'ok');
    const { worker, statuses, last, sharedFile } = startPod({
      restartPolicy: 'Never',
      volumes: [s.volume],
      initContainers: [
        {
          // Becomes healthy only in its second run: the first is killed by the startup probe.
          name: 'flaky',
          restartPolicy: 'Always',
          command: [
            'sh',
            '-c',
            `${count('flaky')}; if [ $n -ge 2 ]; then touch ${okFile}; fi; exec sleep 1000`,
          ],
          volumeMounts: [s.mount],
          startupProbe: { exec: { command: ['test', '-e', okFile] }, periodSeconds: 1, failureThreshold: 2 },
        },
        {
          // Started as soon as it runs (no probe); its first run exits 3 at once.
          name: 'crashy',
          restartPolicy: 'Always',
          command: ['sh', '-c', `${count('crashy')}; if [ $n -lt 2 ]; then exit 3; fi; exec sleep 1000`],
          volumeMounts: [s.mount],
        },
      ],
      containers: [
        {
          // Succeeds once it sees crashy's second run (gives up after about 20 s).
          name: 'agent',
          command: [
            'sh',
            '-c',
            `test -e ${okFile} || exit 2; i=0; while [ "$(cat ${runs('crashy')})" != 2 ]; do i=$((i+1)); [ $i -gt 400 ] && exit 1; sleep 0.05; done`,
          ],
          volumeMounts: [s.mount],
        },
      ],
    });
    await worker.done;
    const final = last();
    assert.equal(final.phase, 'Succeeded', JSON.stringify(final));
    assert.equal(status(final.containerStatuses, 'agent').state.terminated?.exitCode, 0);
    const flaky = status(final.initContainerStatuses, 'flaky');
    assert.equal(flaky.restartCount, 1, 'killed once by its startup probe');
    assert.deepEqual(lines(sharedFile('flaky-runs')), ['2']);
    const crashy = status(final.initContainerStatuses, 'crashy');
    assert.equal(crashy.restartCount, 1, 'restarted once although the pod restartPolicy is Never');
    assert.equal(crashy.lastState.terminated?.exitCode, 3);
    // The first flaky run was killed (SIGTERM → 143) and backed off before crashy was created.
    const backoff = statuses.find(
      (st) => status(st.initContainerStatuses, 'flaky').state.waiting?.reason === 'CrashLoopBackOff',
    );
    assert.ok(backoff, 'flaky went through CrashLoopBackOff');
    assert.equal(status(backoff.initContainerStatuses, 'flaky').lastState.terminated?.exitCode, 143);
    assert.equal(status(backoff.initContainerStatuses, 'crashy').state.waiting?.reason, 'PodInitializing');
    worker.cleanup();
  });

  it('deletion: app containers are stopped first, then the sidecars in reverse order', {
    timeout: 60_000,
  }, async () => {
    const s = shared('delete');
    const order = join(s.path, 'order');
    const { worker, last, sharedFile } = startPod({
      restartPolicy: 'Always',
      volumes: [s.volume],
      initContainers: ['first', 'second'].map((name) => ({
        name,
        restartPolicy: 'Always',
        command: ['sh', '-c', graceful(name, order)],
        volumeMounts: [s.mount],
      })),
      containers: [
        {
          name: 'app',
          command: [
            'sh',
            '-c',
            `trap 'echo app-term >> ${order}; sleep 0.3; echo app-exit >> ${order}; exit 0' TERM; : > ${order}.app-ready; while :; do sleep 0.05; done`,
          ],
          volumeMounts: [s.mount],
        },
      ],
    });
    await pollUntil(
      () => {
        const st = last();
        return st.phase === 'Running' && status(st.containerStatuses, 'app').state.running ? true : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 20, description: 'the app container running' },
    );
    // Running is reported once the process starts; its shell traps SIGTERM a moment later (the marker says when).
    await pollUntil(() => (existsSync(sharedFile('order.app-ready')) ? true : undefined), {
      timeoutMs: 20_000,
      intervalMs: 20,
      description: 'the app trapping SIGTERM',
    });
    await worker.terminate(10);
    assert.deepEqual(lines(sharedFile('order')), ['app-term', 'app-exit', 'second-term', 'first-term']);
    const final = last();
    for (const name of ['first', 'second'])
      assert.equal(status(final.initContainerStatuses, name).state.terminated?.exitCode, 0);
    worker.cleanup();
  });

  it('a sidecar ignoring SIGTERM is killed when the grace period ends, without failing the pod', {
    timeout: 60_000,
  }, async () => {
    const began = Date.now();
    const { worker, last } = startPod({
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 2,
      initContainers: [
        {
          name: 'stubborn',
          restartPolicy: 'Always',
          command: ['sh', '-c', "trap '' TERM; while :; do sleep 0.05; done"],
        },
      ],
      containers: [{ name: 'agent', command: ['sh', '-c', 'exit 0'] }],
    });
    await worker.done;
    const final = last();
    assert.equal(final.phase, 'Succeeded', JSON.stringify(final));
    assert.equal(status(final.initContainerStatuses, 'stubborn').state.terminated?.exitCode, 137);
    assert.ok(Date.now() - began >= 1900, 'the sidecar got the full grace period');
    worker.cleanup();
  });

  it('a failed regular init container (restartPolicy Never) fails the pod and stops the sidecar before it', {
    timeout: 60_000,
  }, async () => {
    const { worker, last } = startPod({
      restartPolicy: 'Never',
      initContainers: [
        { name: 'side', restartPolicy: 'Always', command: ['sh', '-c', 'exec sleep 1000'] },
        { name: 'setup', command: ['sh', '-c', 'exit 4'] },
      ],
      containers: [{ name: 'agent', command: ['true'] }],
    });
    await worker.done;
    const final = last();
    assert.equal(final.phase, 'Failed');
    assert.equal(status(final.initContainerStatuses, 'setup').state.terminated?.exitCode, 4);
    assert.equal(status(final.initContainerStatuses, 'side').state.terminated?.exitCode, 143);
    assert.equal(status(final.containerStatuses, 'agent').state.waiting?.reason, 'PodInitializing');
    worker.cleanup();
  });
});

describe('PodWorker with projected ServiceAccount tokens (host)', { skip }, () => {
  /** A projected volume like the kube-api-access one, and a fresh mount point for it. */
  function tokenVolume(name: string) {
    const path = join(dir, `sa-${name}-${++seq}`);
    mkdirSync(path);
    chmodSync(path, 0o755);
    return {
      path,
      volume: {
        name: 'tok',
        projected: {
          defaultMode: 0o644,
          sources: [
            { serviceAccountToken: { path: 'token', expirationSeconds: 600 } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            {
              downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] },
            },
          ],
        },
      },
      mount: { name: 'tok', mountPath: path },
    };
  }
  const withCa = (serviceAccountToken: VolumeSources['serviceAccountToken']): VolumeSources => ({
    ...noSources,
    configMap: async (_ns, name) => (name === 'kube-root-ca.crt' ? { 'ca.crt': 'THE-CA' } : undefined),
    serviceAccountToken,
  });

  it('a container running as uid 1000 reads its token (its own, 0640 with the fsGroup), CA and namespace from a read-only mount, reaches the API server by the kubernetes Service env, and sees the token refreshed', {
    timeout: 60_000,
  }, async () => {
    const s = shared('token');
    const t = tokenVolume('read');
    const requests: unknown[] = [];
    // Two-second tokens: refreshed 1.6 s after each is issued.
    const sources = withCa(async (ns, sa, spec) => {
      requests.push({ ns, sa, spec });
      return { token: `tok-${requests.length}`, expiresAt: Date.now() + 2000, expirationSeconds: 2 };
    });
    const out = (f: string) => join(s.path, f);
    const script = [
      `d=${t.path}`,
      `cat $d/token > ${out('first')}`,
      `cat $d/ca.crt > ${out('ca')}`,
      `cat $d/namespace > ${out('ns')}`,
      `stat -L -c '%a %u %g' $d/token > ${out('stat')}`,
      `if touch $d/x 2>/dev/null; then echo writable; else echo read-only; fi > ${out('ro')}`,
      `echo "$KUBERNETES_SERVICE_HOST $KUBERNETES_SERVICE_PORT $KUBERNETES_PORT_6443_TCP_ADDR" > ${out('env')}`,
      // Waits (up to 20 s) for the refreshed token.
      `i=0; while [ "$(cat $d/token)" = "$(cat ${out('first')})" ]; do i=$((i+1)); [ $i -gt 400 ] && exit 1; sleep 0.05; done`,
      `cat $d/token > ${out('second')}`,
    ].join('\n');
    const { worker, last, sharedFile } = startPod(
      {
        restartPolicy: 'Never',
        serviceAccountName: 'sa1',
        securityContext: { runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000 },
        volumes: [s.volume, t.volume],
        containers: [{ name: 'agent', command: ['sh', '-c', script], volumeMounts: [s.mount, t.mount] }],
      },
      {},
      undefined,
      sources,
    );
    await worker.done;
    const final = last();
    assert.equal(final.phase, 'Succeeded', JSON.stringify(final));
    const read = (f: string) => readFileSync(sharedFile(f), 'utf8').trim();
    assert.equal(read('first'), 'tok-1');
    assert.match(read('second'), /^tok-[2-9]$/);
    assert.equal(read('ca'), 'THE-CA');
    assert.equal(read('ns'), 'ns');
    assert.equal(read('stat'), '640 1000 1000', 'owned by the pod user, readable by the fsGroup');
    assert.equal(read('ro'), 'read-only');
    assert.equal(read('env'), '127.0.0.1 6443 127.0.0.1');
    assert.deepEqual(requests[0], {
      ns: 'ns',
      sa: 'sa1',
      spec: {
        audiences: [],
        expirationSeconds: 600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: worker.name, uid: worker.uid },
      },
    });
    worker.cleanup();
  });

  it('a refused TokenRequest keeps the pod in ContainerCreating with the kubelet message; it starts once a token is issued', {
    timeout: 60_000,
  }, async () => {
    const t = tokenVolume('refused');
    let refuse = true;
    const sources = withCa(async () => {
      if (refuse) throw new Error('serviceaccounts "sa1" not found');
      return { token: 'ok', expiresAt: Date.now() + 600_000, expirationSeconds: 600 };
    });
    const { worker, last } = startPod(
      {
        restartPolicy: 'Never',
        serviceAccountName: 'sa1',
        volumes: [t.volume],
        containers: [
          {
            name: 'agent',
            command: ['sh', '-c', `test "$(cat ${t.path}/token)" = ok`],
            volumeMounts: [t.mount],
          },
        ],
      },
      {},
      undefined,
      sources,
    );
    const waiting = await pollUntil(
      () => {
        const st = status(last().containerStatuses, 'agent').state.waiting;
        return st?.message ? st : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 20, description: 'the agent waiting with a message' },
    );
    assert.deepEqual(waiting, {
      reason: 'ContainerCreating',
      message:
        'MountVolume.SetUp failed for volume "tok" : failed to fetch token: serviceaccounts "sa1" not found',
    });
    assert.equal(last().phase, 'Pending');
    refuse = false;
    await worker.done;
    const final = last();
    assert.equal(final.phase, 'Succeeded', JSON.stringify(final));
    worker.cleanup();
  });
});

describe('PodWorker token cache', () => {
  it('a pod waiting for another volume does not ask for its token again at each retry', {
    timeout: 30_000,
  }, async () => {
    let requests = 0;
    const sources: VolumeSources = {
      ...noSources,
      serviceAccountToken: async () => {
        requests++;
        return { token: 't', expiresAt: Date.now() + 600_000, expirationSeconds: 600 };
      },
    };
    const { worker, statuses, last } = startPod(
      {
        restartPolicy: 'Never',
        volumes: [
          { name: 'tok', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } },
          { name: 'creds', secret: { secretName: 'missing' } },
        ],
        containers: [{ name: 'agent', command: ['true'] }],
      },
      {},
      // Runs no process: it never gets past its volumes.
      { unshare: '/x', sh: '/x', mount: '/x', mkdir: '/x', setpriv: '/x' },
      sources,
    );
    const message = 'MountVolume.SetUp failed for volume "creds" : secret "missing" not found';
    const seen = await pollUntil(
      () =>
        status(last().containerStatuses, 'agent').state.waiting?.message === message
          ? statuses.length
          : undefined,
      { timeoutMs: 10_000, intervalMs: 20, description: 'the agent waiting for the secret' },
    );
    // Two more retries (a status write each).
    await pollUntil(() => (statuses.length >= seen + 2 ? true : undefined), {
      timeoutMs: 10_000,
      intervalMs: 20,
      description: 'two more volume retries',
    });
    assert.equal(requests, 1);
    await worker.terminate(0);
    worker.cleanup();
  });
});

describe('PodWorker keeps secret and configMap volumes in step with their objects, as the kubelet does', () => {
  it('a changed Secret or ConfigMap is swapped in, an unchanged one is not rewritten, a deleted one leaves its files; nothing after the pod ended', {
    timeout: 30_000,
  }, async () => {
    const noTools: HostTools = { unshare: '/x', sh: '/x', mount: '/x', mkdir: '/x', setpriv: '/x' };
    let key: Record<string, string> | undefined = { 'api-key': 'one', other: 'not mounted' };
    let cfg: Record<string, string> | undefined = { mode: 'fast' };
    let reads = 0;
    const sources: VolumeSources = {
      ...noSources,
      secret: async (_ns, name) => {
        if (name !== 'key') return undefined;
        reads++;
        return key;
      },
      configMap: async (_ns, name) => (name === 'cfg' ? cfg : undefined),
    };
    const { worker } = startPod(
      {
        restartPolicy: 'Never',
        volumes: [
          {
            name: 'key',
            secret: { secretName: 'key', defaultMode: 0o440, items: [{ key: 'api-key', path: 'api-key' }] },
          },
          { name: 'cfg', projected: { sources: [{ configMap: { name: 'cfg' } }] } },
        ],
        containers: [{ name: 'agent', image: 'x' }],
      },
      // Runs no process: "runs" for a minute, until it is stopped.
      { [INSTANT_ANNOTATION]: 'true', [INSTANT_DELAY_ANNOTATION]: '60000' },
      noTools,
      sources,
      () => ({}),
      50,
    );
    const volume = (name: string) => join(dir, 'pods', worker.uid, 'volumes', name);
    const read = (name: string, file: string): string | undefined => {
      try {
        return readFileSync(join(volume(name), file), 'utf8');
      } catch {
        return undefined;
      }
    };
    const dataOf = (name: string): string => readlinkSync(join(volume(name), '..data'));
    /** Resolves once `n` more reads of the Secret (syncs) have happened. */
    const syncs = async (n: number): Promise<void> => {
      const target = reads + n;
      await pollUntil(() => (reads >= target ? true : undefined), {
        timeoutMs: 10_000,
        intervalMs: 10,
        description: `${n} more volume syncs`,
      });
    };
    const until = (name: string, file: string, want: string | undefined, what: string) =>
      pollUntil(() => (read(name, file) === want ? true : undefined), {
        timeoutMs: 10_000,
        intervalMs: 10,
        description: what,
      });
    try {
      await until('key', 'api-key', 'one', 'the Secret written');
      assert.equal(read('key', 'other'), undefined, 'only the listed key');
      // Unchanged: several syncs, the same data folder (nothing rewritten).
      const first = dataOf('key');
      await syncs(3);
      assert.equal(dataOf('key'), first, 'an unchanged Secret is not rewritten');
      // Changed: swapped in behind ..data, the old data folder gone.
      key = { 'api-key': 'two' };
      await until('key', 'api-key', 'two', 'the changed Secret');
      const second = dataOf('key');
      assert.notEqual(second, first);
      assert.ok(!readdirSync(volume('key')).includes(first), 'the previous data folder is removed');
      cfg = { mode: 'slow' };
      await until('cfg', 'mode', 'slow', 'the changed ConfigMap of a projected volume');
      // Deleted: the last files stay.
      key = undefined;
      await syncs(3);
      assert.equal(read('key', 'api-key'), 'two', 'a deleted Secret leaves its files');
      assert.equal(dataOf('key'), second);
      // Back again, with a new value: written.
      key = { 'api-key': 'three' };
      await until('key', 'api-key', 'three', 'the Secret made again');
    } finally {
      await worker.terminate(0);
    }
    const after = reads;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(reads, after, 'no syncs once the pod has ended');
    worker.cleanup();
  });
});

describe('PodWorker with native sidecars (instant mode)', () => {
  it('an instant sidecar runs until the agent container is done, then exits 0; the pod succeeds', {
    timeout: 20_000,
  }, async () => {
    const noTools: HostTools = { unshare: '/x', sh: '/x', mount: '/x', mkdir: '/x', setpriv: '/x' };
    const { worker, statuses, last } = startPod(
      {
        restartPolicy: 'Never',
        initContainers: [{ name: 'side', restartPolicy: 'Always', image: 'x' }],
        containers: [{ name: 'agent', image: 'x' }],
      },
      { [INSTANT_ANNOTATION]: 'true', [INSTANT_DELAY_ANNOTATION]: '200' },
      noTools,
    );
    await worker.done;
    const final = last();
    assert.equal(final.phase, 'Succeeded', JSON.stringify(final));
    const side = status(final.initContainerStatuses, 'side');
    assert.deepEqual([side.state.terminated?.exitCode, side.state.terminated?.reason], [0, 'Completed']);
    const both = statuses.find(
      (st) =>
        status(st.initContainerStatuses, 'side').state.running !== undefined &&
        status(st.containerStatuses, 'agent').state.running !== undefined,
    );
    assert.ok(both, 'the sidecar ran beside the agent');
    assert.equal(status(both.initContainerStatuses, 'side').ready, true);
    worker.cleanup();
  });
});

describe('PodWorker with images that cannot be pulled', () => {
  // No process can start with these tools: a container that got past its image pull would end in StartError.
  const noTools: HostTools = { unshare: '/x', sh: '/x', mount: '/x', mkdir: '/x', setpriv: '/x' };
  const GONE = 'registry.test/gone:1';
  const entry = (pullError?: string): ImageTable[string] => ({
    entrypoint: ['/bin/app'],
    cmd: [],
    env: {},
    workingDir: undefined,
    user: undefined,
    files: {},
    ...(pullError !== undefined ? { pullError } : {}),
  });
  const pulling = {
    reason: 'ErrImagePull',
    message: `failed to pull and unpack image "${GONE}": manifest unknown`,
  };
  const backingOff = {
    reason: 'ImagePullBackOff',
    message: `Back-off pulling image "${GONE}": ErrImagePull: failed to pull and unpack image "${GONE}": manifest unknown`,
  };
  /** The waiting states a container went through, consecutive repeats collapsed. */
  const waits = (
    statuses: readonly Status[],
    pick: (s: Status) => readonly ContainerStatus[],
    name: string,
  ) =>
    statuses
      .map((st) => status(pick(st), name).state)
      .map((state) =>
        state.waiting ? `${state.waiting.reason}: ${state.waiting.message ?? ''}` : 'not waiting',
      )
      .filter((w, i, all) => i === 0 || w !== all[i - 1]);

  it('an app container never starts, whatever its command: ErrImagePull, then ImagePullBackOff with no status write per retry; the pod stays Pending', {
    timeout: 20_000,
  }, async () => {
    const { worker, statuses, last } = startPod(
      { restartPolicy: 'Never', containers: [{ name: 'app', image: GONE, command: ['true'] }] },
      {},
      noTools,
      noSources,
      () => ({ [GONE]: entry('manifest unknown') }),
    );
    await pollUntil(
      () =>
        status(last().containerStatuses, 'app').state.waiting?.reason === 'ImagePullBackOff'
          ? true
          : undefined,
      {
        timeoutMs: 10_000,
        intervalMs: 20,
        description: 'the app container in ImagePullBackOff',
      },
    );
    const written = statuses.length;
    // Three more retries (one a second): no status write.
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal(statuses.length, written, 'no status write per retry');
    assert.deepEqual(
      waits(statuses, (st) => st.containerStatuses, 'app'),
      [
        'ContainerCreating: ',
        `${pulling.reason}: ${pulling.message}`,
        `${backingOff.reason}: ${backingOff.message}`,
      ],
    );
    assert.ok(
      statuses.every((st) => st.phase === 'Pending'),
      'Pending throughout',
    );
    const app = status(last().containerStatuses, 'app');
    assert.deepEqual([app.started, app.ready, app.restartCount], [false, false, 0]);
    assert.equal(worker.logInfo('app')?.waitingReason, 'ImagePullBackOff');
    await worker.terminate(0);
    worker.cleanup();
  });

  it('an init container likewise: the app containers stay PodInitializing, the pod Pending and not Initialized', {
    timeout: 20_000,
  }, async () => {
    const { worker, statuses, last } = startPod(
      {
        restartPolicy: 'Always',
        initContainers: [{ name: 'setup', image: GONE, command: ['true'] }],
        containers: [{ name: 'app', image: 'fine:1' }],
      },
      {},
      noTools,
      noSources,
      () => ({ [GONE]: entry('manifest unknown'), 'fine:1': entry() }),
    );
    await pollUntil(
      () =>
        status(last().initContainerStatuses, 'setup').state.waiting?.reason === 'ImagePullBackOff'
          ? true
          : undefined,
      {
        timeoutMs: 10_000,
        intervalMs: 20,
        description: 'the init container in ImagePullBackOff',
      },
    );
    assert.deepEqual(
      waits(statuses, (st) => st.initContainerStatuses, 'setup'),
      [
        'PodInitializing: ',
        `${pulling.reason}: ${pulling.message}`,
        `${backingOff.reason}: ${backingOff.message}`,
      ],
    );
    assert.deepEqual(
      waits(statuses, (st) => st.containerStatuses, 'app'),
      ['PodInitializing: '],
    );
    assert.ok(
      statuses.every((st) => st.phase === 'Pending'),
      'Pending throughout',
    );
    assert.equal(last().conditions.find((c) => c.type === 'Initialized')?.status, 'False');
    await worker.terminate(0);
    worker.cleanup();
  });

  it('instant pods too; once the image can be pulled the container starts', { timeout: 20_000 }, async () => {
    let table: ImageTable = { [GONE]: entry('manifest unknown') };
    const { worker, statuses, last } = startPod(
      { restartPolicy: 'Never', containers: [{ name: 'agent', image: GONE }] },
      { [INSTANT_ANNOTATION]: 'true' },
      noTools,
      noSources,
      () => table,
    );
    await pollUntil(
      () =>
        status(last().containerStatuses, 'agent').state.waiting?.reason === 'ImagePullBackOff'
          ? true
          : undefined,
      {
        timeoutMs: 10_000,
        intervalMs: 20,
        description: 'the instant container in ImagePullBackOff',
      },
    );
    assert.ok(
      statuses.every((st) => st.phase === 'Pending'),
      'Pending while the image cannot be pulled',
    );
    table = { [GONE]: entry() };
    await worker.done;
    const final = last();
    assert.equal(final.phase, 'Succeeded', JSON.stringify(final));
    assert.deepEqual(waits(statuses, (st) => st.containerStatuses, 'agent').slice(0, 3), [
      'ContainerCreating: ',
      `${pulling.reason}: ${pulling.message}`,
      `${backingOff.reason}: ${backingOff.message}`,
    ]);
    worker.cleanup();
  });
});

describe('PodWorker when the API server ends the connection mid-request (its restart)', {
  skip: HAVE_OPENSSL ? false : 'needs openssl',
}, () => {
  // The node agent's own sources (agent.ts) on a real KubeClient, against a TLS server that closes the
  // connection (FIN, no answer) on the first reads of the Secret: the client's 'socket hang up' (ECONNRESET
  // from socketOnEnd), as while `scripts/testbed restart kube-apiserver` stops the API server.
  let client: KubeClient;
  let close = (): void => undefined;
  let secretReads = 0;
  const hangUps = 2;
  const certDir = mkdtempSync(join(tmpdir(), 'node-agent-hangup-'));
  before(async () => {
    ({ client, close } = await kubeClientOnTls(certDir, (req, res) => {
      if (req.url !== '/api/v1/namespaces/ns/secrets/creds') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"kind":"Status","code":404,"reason":"NotFound"}');
        return;
      }
      if (++secretReads <= hangUps) {
        req.socket.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          metadata: { name: 'creds' },
          data: { key: Buffer.from('s3cret').toString('base64') },
        }),
      );
    }));
  });
  after(() => {
    close();
    rmSync(certDir, { recursive: true, force: true });
  });

  it('an env var from a Secret: the container waits in CreateContainerConfigError (socket hang up) and starts once the read succeeds; no unhandled rejection', {
    timeout: 20_000,
  }, async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown): void => {
      rejections.push(reason);
    };
    process.on('unhandledRejection', onRejection);
    try {
      // No process can start with these tools: a container that got past its env ends in StartError.
      const noTools: HostTools = { unshare: '/x', sh: '/x', mount: '/x', mkdir: '/x', setpriv: '/x' };
      const { worker, statuses, last } = startPod(
        {
          restartPolicy: 'Never',
          containers: [
            {
              name: 'app',
              image: 'app:1',
              command: ['/no/such/app'],
              env: [{ name: 'KEY', valueFrom: { secretKeyRef: { name: 'creds', key: 'key' } } }],
            },
          ],
        },
        {},
        noTools,
        apiSources(client),
      );
      await worker.done;
      const waiting = statuses
        .map((st) => status(st.containerStatuses, 'app').state.waiting)
        .filter((w) => w?.reason === 'CreateContainerConfigError');
      assert.ok(waiting.length > 0, 'waited in CreateContainerConfigError');
      assert.deepEqual(
        [...new Set(waiting.map((w) => w?.message))],
        ['socket hang up'],
        'the waiting message is the client error',
      );
      const app = status(last().containerStatuses, 'app');
      assert.equal(app.state.terminated?.reason, 'StartError', JSON.stringify(app));
      assert.equal(last().phase, 'Failed');
      assert.equal(secretReads, hangUps + 1, 'read again until it succeeded, then no more');
      assert.deepEqual(rejections, []);
      worker.cleanup();
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });
});
