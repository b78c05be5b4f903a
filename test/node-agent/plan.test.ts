import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as v from 'valibot';
import type { ImageEntry } from './images.ts';
import {
  admitPod,
  appContainersDone,
  expandVars,
  findExecutable,
  hostPathFor,
  imagePullFailure,
  isApiDataVolume,
  isSidecar,
  NEW_TALLY,
  nextInitStep,
  type ProbeTally,
  planMounts,
  probeHandler,
  resolveArgv,
  resolveIdentity,
  resolveProbePort,
  restartBackoffMs,
  selectorMatches,
  shouldRestart,
  sidecarStopOrder,
  tallyProbe,
  unschedulableCondition,
  unschedulableMessage,
} from './plan.ts';
import { type Container, PodSpecSchema, type Probe } from './pod-spec.ts';
import type { ContainerRun, ContainerState } from './status.ts';

const spec = (extra: Record<string, unknown> = {}) =>
  v.parse(PodSpecSchema, { containers: [{ name: 'main', image: 'x' }], ...extra });
const container = (extra: Record<string, unknown> = {}): Container =>
  v.parse(PodSpecSchema, { containers: [{ name: 'main', image: 'img', ...extra }] })
    .containers[0] as Container;
const image = (entrypoint: string[], cmd: string[] = []): ImageEntry => ({
  entrypoint,
  cmd,
  env: {},
  workingDir: undefined,
  user: undefined,
  files: {},
});

describe('admitPod', () => {
  it('admits plain pods with emptyDir, secret and configMap volumes', () => {
    const s = spec({
      volumes: [
        { name: 'a', emptyDir: {} },
        { name: 'b', secret: { secretName: 's' } },
        { name: 'c', configMap: { name: 'c' } },
      ],
    });
    assert.equal(admitPod(s), undefined);
  });
  it('refuses hostPath volumes', () => {
    const r = admitPod(spec({ volumes: [{ name: 'h', hostPath: { path: '/' } }] }));
    assert.equal(r?.reason, 'HostPathVolumeRefused');
    assert.match(r?.message ?? '', /"h"/);
  });
  it('refuses privileged containers, init containers included', () => {
    const r = admitPod(
      spec({ initContainers: [{ name: 'i', image: 'x', securityContext: { privileged: true } }] }),
    );
    assert.equal(r?.reason, 'PrivilegedContainerRefused');
    assert.equal(
      admitPod(spec({ containers: [{ name: 'm', securityContext: { privileged: false } }] })),
      undefined,
    );
  });
  it('refuses unsupported volume types, naming the supported ones', () => {
    const r = admitPod(spec({ volumes: [{ name: 'p', persistentVolumeClaim: { claimName: 'x' } }] }));
    assert.deepEqual(r, {
      reason: 'UnsupportedPodFeature',
      message:
        'the test node supports only emptyDir, secret, configMap, downwardAPI and projected volumes (volume "p" is persistentVolumeClaim)',
    });
  });
  it('admits projected volumes (the kube-api-access volume of the ServiceAccount admission) and downwardAPI volumes', () => {
    const s = spec({
      volumes: [
        {
          name: 'kube-api-access-x7k2p',
          projected: {
            defaultMode: 420,
            sources: [
              { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
              { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
              {
                downwardAPI: {
                  items: [
                    { path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } },
                  ],
                },
              },
              { secret: { name: 's', optional: true } },
            ],
          },
        },
        {
          name: 'info',
          downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] },
        },
      ],
    });
    assert.equal(admitPod(s), undefined);
    const [projected] = s.volumes;
    assert.deepEqual(projected?.projected?.sources[0]?.serviceAccountToken, {
      audience: '',
      expirationSeconds: 3607,
      path: 'token',
    });
    assert.deepEqual(
      v.parse(PodSpecSchema, {
        containers: [],
        volumes: [{ name: 't', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } }],
      }).volumes[0]?.projected?.sources[0]?.serviceAccountToken?.expirationSeconds,
      3600,
      'expirationSeconds defaults to an hour',
    );
  });
  it('refuses projections the test node does not implement', () => {
    const r = admitPod(
      spec({
        volumes: [
          {
            name: 'bundle',
            projected: {
              sources: [
                { serviceAccountToken: { path: 'token' } },
                { clusterTrustBundle: { name: 'b', path: 'ca.pem' } },
              ],
            },
          },
        ],
      }),
    );
    assert.deepEqual(r, {
      reason: 'UnsupportedPodFeature',
      message:
        'the test node projects only serviceAccountToken, configMap, secret and downwardAPI sources (source #1 of volume "bundle" is clusterTrustBundle)',
    });
  });
  it('admits sidecars (init containers with restartPolicy Always) with exec/tcpSocket/httpGet probes', () => {
    const s = spec({
      initContainers: [
        {
          name: 'side',
          restartPolicy: 'Always',
          startupProbe: { tcpSocket: { port: 8080 } },
          readinessProbe: { httpGet: { port: 'http', path: '/ready' } },
        },
        { name: 'exec', restartPolicy: 'Always', startupProbe: { exec: { command: ['true'] } } },
      ],
    });
    assert.equal(admitPod(s), undefined);
  });
  it('refuses other init container restart policies, grpc sidecar probes and app container restart policies', () => {
    const never = admitPod(spec({ initContainers: [{ name: 'i', restartPolicy: 'Never' }] }));
    assert.equal(never?.reason, 'UnsupportedPodFeature');
    assert.match(never?.message ?? '', /"i" has Never/);
    const grpc = admitPod(
      spec({
        initContainers: [{ name: 'g', restartPolicy: 'Always', startupProbe: { grpc: { port: 9000 } } }],
      }),
    );
    assert.equal(grpc?.reason, 'UnsupportedPodFeature');
    assert.match(grpc?.message ?? '', /startupProbe of container "g"/);
    const app = admitPod(spec({ containers: [{ name: 'm', restartPolicy: 'Always' }] }));
    assert.equal(app?.reason, 'UnsupportedPodFeature');
    assert.match(app?.message ?? '', /"m"/);
  });
});

describe('pod spec validation of sidecar fields', () => {
  const probeOf = (probe: Record<string, unknown>): Probe | undefined =>
    v.parse(PodSpecSchema, {
      containers: [{ name: 'main' }],
      initContainers: [{ name: 's', restartPolicy: 'Always', startupProbe: probe }],
    }).initContainers[0]?.startupProbe;
  it('fills in the Kubernetes probe defaults', () => {
    assert.deepEqual(probeOf({ tcpSocket: { port: 80 } }), {
      tcpSocket: { port: 80 },
      initialDelaySeconds: 0,
      periodSeconds: 10,
      timeoutSeconds: 1,
      failureThreshold: 3,
      successThreshold: 1,
    });
    assert.deepEqual(probeOf({ httpGet: { port: 'http' } })?.httpGet, {
      port: 'http',
      path: '/',
      scheme: 'HTTP',
      httpHeaders: [],
    });
    assert.deepEqual(probeOf({ exec: {} })?.exec, { command: [] });
  });
  it('rejects malformed probes and restart policies', () => {
    const bad = (init: Record<string, unknown>) =>
      v.safeParse(PodSpecSchema, { containers: [{ name: 'main' }], initContainers: [{ name: 's', ...init }] })
        .success;
    assert.equal(bad({ restartPolicy: 'Sometimes' }), false);
    assert.equal(bad({ startupProbe: { tcpSocket: {} } }), false, 'tcpSocket needs a port');
    assert.equal(bad({ startupProbe: { tcpSocket: { port: 0 } } }), false);
    assert.equal(bad({ startupProbe: { tcpSocket: { port: 70000 } } }), false);
    assert.equal(bad({ startupProbe: { exec: { command: 'true' } } }), false);
    assert.equal(bad({ startupProbe: { httpGet: { port: 80, scheme: 'FTP' } } }), false);
    assert.equal(bad({ readinessProbe: { exec: { command: [] }, periodSeconds: 0 } }), false);
    assert.equal(bad({ readinessProbe: { exec: { command: [] }, failureThreshold: 1.5 } }), false);
    assert.equal(bad({ readinessProbe: { exec: { command: [] }, initialDelaySeconds: -1 } }), false);
    assert.equal(bad({ readinessProbe: { exec: { command: [] }, timeoutSeconds: 0 } }), false);
    assert.equal(bad({ readinessProbe: { exec: { command: [] }, successThreshold: 0 } }), false);
    assert.equal(bad({ restartPolicy: 'Always', readinessProbe: { exec: { command: ['true'] } } }), true);
  });
});

describe('sidecar planning', () => {
  const c = (name: string, sidecar = false): Container =>
    container({ name, ...(sidecar ? { restartPolicy: 'Always' } : {}) });
  const init = [c('side-a', true), c('setup'), c('side-b', true), c('last')];
  it('isSidecar: restartPolicy Always only', () => {
    assert.deepEqual(init.map(isSidecar), [true, false, true, false]);
  });
  it('nextInitStep: in order; sidecars are launched, regular init containers run to completion', () => {
    assert.deepEqual(nextInitStep(init, [false, false, false, false]), { kind: 'launch', index: 0 });
    assert.deepEqual(nextInitStep(init, [true, false, false, false]), { kind: 'run', index: 1 });
    assert.deepEqual(nextInitStep(init, [true, true, false, false]), { kind: 'launch', index: 2 });
    assert.deepEqual(nextInitStep(init, [true, true, true, false]), { kind: 'run', index: 3 });
    assert.deepEqual(nextInitStep(init, [true, true, true, true]), { kind: 'initialized' });
    assert.deepEqual(nextInitStep([], []), { kind: 'initialized' });
  });
  it('sidecarStopOrder: reverse declaration order, sidecars only', () => {
    assert.deepEqual(sidecarStopOrder(init), [2, 0]);
    assert.deepEqual(sidecarStopOrder([c('x')]), []);
  });
  it('appContainersDone: all terminated and none restarting under the pod restartPolicy', () => {
    const t0 = 0;
    const exited = (exitCode: number): Pick<ContainerRun, 'state'> => ({
      state: { kind: 'terminated', exitCode, reason: 'x', startedAt: t0, finishedAt: t0 },
    });
    const running: Pick<ContainerRun, 'state'> = { state: { kind: 'running', startedAt: t0 } };
    const backingOff: Pick<ContainerRun, 'state'> = {
      state: { kind: 'waiting', reason: 'CrashLoopBackOff' },
    };
    assert.equal(appContainersDone('Never', [exited(0), exited(1)]), true);
    assert.equal(appContainersDone('Never', [exited(0), running]), false);
    assert.equal(appContainersDone('OnFailure', [exited(0), exited(0)]), true);
    assert.equal(appContainersDone('OnFailure', [exited(0), exited(2)]), false, 'the failed one restarts');
    assert.equal(appContainersDone('OnFailure', [exited(0), backingOff]), false);
    assert.equal(appContainersDone('Always', [exited(0)]), false);
  });
  it('probeHandler and resolveProbePort (numbers as is, names from the container ports)', () => {
    const probe = (p: Record<string, unknown>) => p as unknown as Probe;
    assert.equal(probeHandler(probe({ exec: { command: [] } })), 'exec');
    assert.equal(probeHandler(probe({ tcpSocket: { port: 1 } })), 'tcpSocket');
    assert.equal(probeHandler(probe({ httpGet: { port: 1 } })), 'httpGet');
    assert.equal(probeHandler(probe({ grpc: { port: 1 } })), undefined);
    const ports = [{ name: 'http', containerPort: 8080 }, { containerPort: 9090 }];
    assert.deepEqual(resolveProbePort(8081, ports), { ok: true, value: 8081 });
    assert.deepEqual(resolveProbePort('http', ports), { ok: true, value: 8080 });
    const missing = resolveProbePort('metrics', ports);
    assert.equal(missing.ok, false);
    assert.match(!missing.ok ? missing.error : '', /"metrics"/);
  });
  it('tallyProbe: the verdict flips after threshold consecutive results, and holds below it', () => {
    const probe = { successThreshold: 2, failureThreshold: 3 } as Probe;
    const feed = (results: boolean[]): ProbeTally['result'][] => {
      let t = NEW_TALLY;
      return results.map((r) => {
        t = tallyProbe(t, r, probe);
        return t.result;
      });
    };
    assert.deepEqual(feed([true, true, false, false, true, false, false, false, true, true]), [
      'unknown',
      'success',
      'success',
      'success',
      'success',
      'success',
      'success',
      'failure',
      'failure',
      'success',
    ]);
    const once = { successThreshold: 1, failureThreshold: 1 } as Probe;
    assert.equal(tallyProbe(NEW_TALLY, false, once).result, 'failure');
    assert.equal(tallyProbe(NEW_TALLY, true, once).result, 'success');
  });
});

describe('expandVars', () => {
  const env = new Map([
    ['A', 'alpha'],
    ['EMPTY', ''],
  ]);
  const lookup = (n: string) => env.get(n);
  const cases: [string, string][] = [
    ['$(A)', 'alpha'],
    ['x-$(A)-y', 'x-alpha-y'],
    ['$(MISSING)', '$(MISSING)'],
    ['$$(A)', '$(A)'],
    ['$$', '$'],
    ['$A', '$A'],
    ['$(EMPTY)!', '!'],
    ['$(A', '$(A'],
    ['$()', '$()'],
    ['end$', 'end$'],
    ['$(A)$(A)', 'alphaalpha'],
  ];
  for (const [input, expected] of cases) {
    it(`${JSON.stringify(input)} → ${JSON.stringify(expected)}`, () =>
      assert.equal(expandVars(input, lookup), expected));
  }
});

describe('resolveArgv (Kubernetes command/args semantics)', () => {
  const env = new Map([['WHO', 'world']]);
  const img = image(['/bin/entry', '--flag'], ['default-arg']);
  it('image entrypoint + image cmd when neither is set', () => {
    assert.deepEqual(resolveArgv(container(), img, env), {
      ok: true,
      value: ['/bin/entry', '--flag', 'default-arg'],
    });
  });
  it('args replace the image cmd only', () => {
    assert.deepEqual(resolveArgv(container({ args: ['x', '$(WHO)'] }), img, env), {
      ok: true,
      value: ['/bin/entry', '--flag', 'x', 'world'],
    });
  });
  it('command replaces the entrypoint and drops the image cmd', () => {
    assert.deepEqual(resolveArgv(container({ command: ['sh', '-c'] }), img, env), {
      ok: true,
      value: ['sh', '-c'],
    });
    assert.deepEqual(resolveArgv(container({ command: ['echo'], args: ['hi $(WHO)'] }), img, env), {
      ok: true,
      value: ['echo', 'hi world'],
    });
  });
  it('an unknown image runs its command from the host, or waits with ErrImagePull without one', () => {
    assert.deepEqual(resolveArgv(container({ command: ['true'] }), undefined, env), {
      ok: true,
      value: ['true'],
    });
    const r = resolveArgv(container(), undefined, env);
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.error.reason, 'ErrImagePull');
  });
});

describe('imagePullFailure (an image table entry with a pullError)', () => {
  const broken: ImageEntry = { ...image([]), pullError: 'manifest unknown' };
  const pull = {
    reason: 'ErrImagePull',
    message: 'failed to pull and unpack image "registry.test/app:v9": manifest unknown',
  };
  const backoff = {
    reason: 'ImagePullBackOff',
    message:
      'Back-off pulling image "registry.test/app:v9": ErrImagePull: failed to pull and unpack image "registry.test/app:v9": manifest unknown',
  };
  const waiting = (w: { reason: string; message?: string }): ContainerState => ({ kind: 'waiting', ...w });
  it('images without a pullError, listed or not, are pulled', () => {
    assert.equal(
      imagePullFailure('x', image(['/bin/x']), waiting({ reason: 'ContainerCreating' })),
      undefined,
    );
    assert.equal(imagePullFailure('x', undefined, waiting({ reason: 'ContainerCreating' })), undefined);
  });
  it('ErrImagePull on the first attempt, whatever the container waited with before', () => {
    for (const previous of [
      waiting({ reason: 'ContainerCreating' }),
      waiting({ reason: 'PodInitializing' }),
      waiting({ reason: 'CrashLoopBackOff', message: 'back-off 1s' }),
      waiting({ reason: 'ErrImagePull', message: 'image "x" is not in the test node\'s image table' }),
      { kind: 'running', startedAt: 0 } as const,
    ]) {
      assert.deepEqual(imagePullFailure('registry.test/app:v9', broken, previous), pull);
    }
  });
  it('ImagePullBackOff, wrapping the pull error, on every retry after that', () => {
    assert.deepEqual(imagePullFailure('registry.test/app:v9', broken, waiting(pull)), backoff);
    assert.deepEqual(imagePullFailure('registry.test/app:v9', broken, waiting(backoff)), backoff);
  });
  it('a changed pull error is a new failed pull', () => {
    const other: ImageEntry = { ...broken, pullError: 'unauthorized' };
    assert.deepEqual(imagePullFailure('registry.test/app:v9', other, waiting(backoff)), {
      reason: 'ErrImagePull',
      message: 'failed to pull and unpack image "registry.test/app:v9": unauthorized',
    });
  });
});

describe('resolveIdentity', () => {
  const ref = 'p_ns(uid)';
  it('defaults to root with the default capability set', () => {
    const r = resolveIdentity(spec(), container(), undefined, ref);
    assert.ok(r.ok);
    assert.equal(r.value.uid, 0);
    assert.equal(r.value.gid, 0);
    assert.deepEqual(r.value.groups, []);
    assert.ok(r.value.capabilities.includes('chown'));
    assert.equal(r.value.noNewPrivs, false);
  });
  it('container settings win over pod settings; fsGroup and supplementalGroups become groups', () => {
    const s = spec({
      securityContext: { runAsUser: 5, runAsGroup: 6, fsGroup: 1000, supplementalGroups: [7, 1000] },
    });
    const r = resolveIdentity(s, container({ securityContext: { runAsUser: 1000 } }), undefined, ref);
    assert.ok(r.ok);
    assert.deepEqual([r.value.uid, r.value.gid, r.value.groups], [1000, 6, [1000, 7]]);
  });
  it('drop ALL + add gives exactly the added capabilities; no escalation sets no_new_privs', () => {
    const c = container({
      securityContext: {
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'], add: ['CHOWN', 'CAP_SETUID'] },
      },
    });
    const r = resolveIdentity(spec(), c, undefined, ref);
    assert.ok(r.ok);
    assert.deepEqual(r.value.capabilities, ['chown', 'setuid']);
    assert.equal(r.value.noNewPrivs, true);
  });
  it('runAsNonRoot with uid 0 is a CreateContainerConfigError', () => {
    const r = resolveIdentity(spec({ securityContext: { runAsNonRoot: true } }), container(), undefined, ref);
    assert.equal(r.ok, false);
    assert.equal(!r.ok && r.error.reason, 'CreateContainerConfigError');
    assert.match(!r.ok ? r.error.message : '', /runAsNonRoot and image will run as root/);
    const img = { ...image(['x']), user: 1000 };
    assert.ok(resolveIdentity(spec({ securityContext: { runAsNonRoot: true } }), container(), img, ref).ok);
  });
});

describe('planMounts / hostPathFor / findExecutable', () => {
  const dirs = new Map([
    ['agent', '/state/pod/volumes/agent'],
    ['ws', '/state/pod/volumes/ws'],
  ]);
  it('plans parents before children, with subPath and readOnly', () => {
    const r = planMounts(
      [
        { name: 'ws', mountPath: '/agent/work/', subPath: 'repo' },
        { name: 'agent', mountPath: '/agent', readOnly: true },
      ],
      dirs,
    );
    assert.deepEqual(r, {
      ok: true,
      value: [
        { source: '/state/pod/volumes/agent', target: '/agent', readOnly: true },
        { source: '/state/pod/volumes/ws/repo', target: '/agent/work', readOnly: false },
      ],
    });
  });
  it('mounts API data volumes read-only whatever the volumeMount says', () => {
    const volumes = spec({
      volumes: [
        { name: 'agent', emptyDir: {} },
        { name: 'ws', projected: { sources: [] } },
        { name: 's', secret: { secretName: 's' } },
        { name: 'c', configMap: { name: 'c' } },
        { name: 'd', downwardAPI: { items: [] } },
      ],
    }).volumes;
    assert.deepEqual(
      volumes.map((vol) => isApiDataVolume(vol)),
      [false, true, true, true, true],
    );
    const readOnly = new Set(volumes.filter(isApiDataVolume).map((vol) => vol.name));
    const r = planMounts(
      [
        { name: 'agent', mountPath: '/agent' },
        { name: 'ws', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: false },
      ],
      dirs,
      readOnly,
    );
    assert.deepEqual(r, {
      ok: true,
      value: [
        { source: '/state/pod/volumes/agent', target: '/agent', readOnly: false },
        {
          source: '/state/pod/volumes/ws',
          target: '/var/run/secrets/kubernetes.io/serviceaccount',
          readOnly: true,
        },
      ],
    });
  });
  it('rejects unknown volumes, relative mount paths and escaping subPaths', () => {
    assert.equal(planMounts([{ name: 'nope', mountPath: '/x' }], dirs).ok, false);
    assert.equal(planMounts([{ name: 'ws', mountPath: 'rel' }], dirs).ok, false);
    assert.equal(planMounts([{ name: 'ws', mountPath: '/x', subPath: '../up' }], dirs).ok, false);
    assert.equal(planMounts([{ name: 'ws', mountPath: '/x', subPath: '/abs' }], dirs).ok, false);
  });
  it('translates container paths through the innermost mount', () => {
    const mounts = [
      { source: '/h/agent', target: '/agent', readOnly: false },
      { source: '/h/bin', target: '/agent/bin', readOnly: false },
    ];
    assert.equal(hostPathFor('/agent/bin/node', mounts), '/h/bin/node');
    assert.equal(hostPathFor('/agent/x', mounts), '/h/agent/x');
    assert.equal(hostPathFor('/agent', mounts), '/h/agent');
    assert.equal(hostPathFor('/agentx/y', mounts), '/agentx/y');
    assert.equal(hostPathFor('/usr/bin/sh', mounts), '/usr/bin/sh');
  });
  it('finds executables by path (through mounts) or in PATH', () => {
    const mounts = [{ source: '/h/agent', target: '/agent', readOnly: false }];
    const exists = new Set(['/h/agent/bin/node', '/usr/bin/sh']);
    const isExe = (p: string) => exists.has(p);
    assert.equal(findExecutable('/agent/bin/node', '/usr/bin', '/', mounts, isExe), '/agent/bin/node');
    assert.equal(findExecutable('sh', '/usr/local/bin:/usr/bin', '/', mounts, isExe), '/usr/bin/sh');
    assert.equal(findExecutable('bin/node', '', '/agent', mounts, isExe), '/agent/bin/node');
    assert.equal(findExecutable('missing', '/usr/bin', '/', mounts, isExe), undefined);
    assert.equal(findExecutable('', '/usr/bin', '/', mounts, isExe), undefined);
  });
});

describe('scheduling and restarts', () => {
  it('nodeSelector must match every label', () => {
    const labels = { 'kubernetes.io/os': 'linux', zone: 'a' };
    assert.equal(selectorMatches({}, labels), true);
    assert.equal(selectorMatches({ zone: 'a' }, labels), true);
    assert.equal(selectorMatches({ zone: 'b' }, labels), false);
    assert.equal(selectorMatches({ gpu: 'yes' }, labels), false);
  });
  it("unschedulableMessage: kube-scheduler's words for a nodeSelector no node matches", () => {
    assert.equal(
      unschedulableMessage(1),
      "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    );
    assert.match(unschedulableMessage(3), /^0\/3 nodes are available: 3 node\(s\) didn't match/);
  });
  it('unschedulableCondition: PodScheduled False/Unschedulable, once', () => {
    const now = Date.parse('2026-03-04T05:06:07.890Z');
    const expected = {
      type: 'PodScheduled',
      status: 'False',
      reason: 'Unschedulable',
      message: unschedulableMessage(1),
      lastProbeTime: null,
      lastTransitionTime: '2026-03-04T05:06:07Z',
    };
    assert.deepEqual(unschedulableCondition([], 1, now), expected);
    // Other conditions do not count; a PodScheduled True (bound once) is a transition.
    assert.deepEqual(
      unschedulableCondition(
        [
          { type: 'Ready', status: 'False', reason: 'Unschedulable', message: unschedulableMessage(1) },
          { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
        ],
        1,
        now,
      ),
      expected,
    );
    // Already there: no patch, whatever its transition time.
    assert.equal(
      unschedulableCondition([{ ...expected, lastTransitionTime: '2026-01-01T00:00:00Z' }], 1, now),
      undefined,
    );
    // Same status, another message (e.g. from a real scheduler): updated, keeping the transition time.
    assert.deepEqual(
      unschedulableCondition(
        [
          {
            type: 'PodScheduled',
            status: 'False',
            reason: 'Unschedulable',
            message: '0/2 nodes are available: 2 Insufficient cpu.',
            lastTransitionTime: '2026-01-01T00:00:00Z',
          },
        ],
        1,
        now,
      ),
      { ...expected, lastTransitionTime: '2026-01-01T00:00:00Z' },
    );
    // A SchedulingGated condition without a transition time gets `now`.
    assert.deepEqual(
      unschedulableCondition([{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated' }], 1, now),
      expected,
    );
  });
  it('restart policy decides restarts', () => {
    assert.equal(shouldRestart('Never', 1), false);
    assert.equal(shouldRestart('OnFailure', 0), false);
    assert.equal(shouldRestart('OnFailure', 2), true);
    assert.equal(shouldRestart('Always', 0), true);
  });
  it('restart back-off doubles from 1 s and caps at 10 s', () => {
    assert.deepEqual([0, 1, 2, 3, 4, 50].map(restartBackoffMs), [1000, 2000, 4000, 8000, 10000, 10000]);
  });
});
