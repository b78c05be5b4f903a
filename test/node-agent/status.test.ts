import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildPodStatus,
  type ContainerRun,
  kubeTime,
  type PodRun,
  podConditions,
  podPhase,
} from './status.ts';

const T0 = Date.parse('2026-01-02T03:04:05.678Z');
const waiting = (name: string, reason = 'ContainerCreating'): ContainerRun => ({
  name,
  image: 'img',
  state: { kind: 'waiting', reason },
  restartCount: 0,
});
const running = (name: string): ContainerRun => ({
  name,
  image: 'img',
  state: { kind: 'running', startedAt: T0 },
  restartCount: 0,
});
const exited = (name: string, exitCode: number): ContainerRun => ({
  name,
  image: 'img',
  state: {
    kind: 'terminated',
    exitCode,
    reason: exitCode === 0 ? 'Completed' : 'Error',
    startedAt: T0,
    finishedAt: T0 + 1000,
  },
  restartCount: 0,
});
const pod = (extra: Partial<PodRun>): PodRun => ({
  restartPolicy: 'Never',
  hostIP: '127.0.0.1',
  podIP: '127.0.0.5',
  startTime: T0,
  sandboxReady: true,
  init: [],
  containers: [],
  finished: false,
  ...extra,
});

describe('podPhase', () => {
  const cases: [string, Partial<PodRun>, string][] = [
    ['nothing started yet', { containers: [waiting('a')] }, 'Pending'],
    ['init running', { init: [running('i')], containers: [waiting('a', 'PodInitializing')] }, 'Pending'],
    ['init failed, Never', { init: [exited('i', 1)], containers: [waiting('a')] }, 'Failed'],
    [
      'init failed, OnFailure (will restart)',
      { restartPolicy: 'OnFailure', init: [exited('i', 1)], containers: [waiting('a')] },
      'Pending',
    ],
    [
      'init failed, OnFailure, finished',
      { restartPolicy: 'OnFailure', init: [exited('i', 1)], containers: [waiting('a')], finished: true },
      'Failed',
    ],
    ['one running', { init: [exited('i', 0)], containers: [running('a')] }, 'Running'],
    [
      'one running, one waiting',
      { containers: [running('a'), waiting('b', 'CreateContainerConfigError')] },
      'Pending',
    ],
    ['one running, one exited', { containers: [running('a'), exited('b', 1)] }, 'Running'],
    ['all succeeded', { containers: [exited('a', 0), exited('b', 0)] }, 'Succeeded'],
    ['one failed, Never', { containers: [exited('a', 0), exited('b', 3)] }, 'Failed'],
    [
      'one failed, OnFailure (will restart)',
      { restartPolicy: 'OnFailure', containers: [exited('a', 3)] },
      'Running',
    ],
    ['exited, Always', { restartPolicy: 'Always', containers: [exited('a', 0)] }, 'Running'],
    [
      'finished with a failure',
      { restartPolicy: 'Always', containers: [exited('a', 137)], finished: true },
      'Failed',
    ],
    [
      'finished, all succeeded',
      { restartPolicy: 'Always', containers: [exited('a', 0)], finished: true },
      'Succeeded',
    ],
    [
      'pod-level failure wins',
      { containers: [exited('a', 0)], failure: { reason: 'DeadlineExceeded', message: 'm' } },
      'Failed',
    ],
    [
      'crash-looping counts as stopped, not waiting',
      {
        restartPolicy: 'OnFailure',
        containers: [
          {
            ...waiting('a', 'CrashLoopBackOff'),
            lastState: { kind: 'terminated', exitCode: 1, reason: 'Error', startedAt: T0, finishedAt: T0 },
          },
        ],
      },
      'Running',
    ],
  ];
  for (const [name, run, phase] of cases)
    it(`${name} → ${phase}`, () => assert.equal(podPhase(pod(run)), phase));
});

describe('podConditions', () => {
  it('reports incomplete init containers and unready containers by name', () => {
    const conds = podConditions(pod({ init: [running('i')], containers: [waiting('a'), waiting('b')] }));
    assert.deepEqual(conds, [
      { type: 'PodReadyToStartContainers', status: 'True' },
      {
        type: 'Initialized',
        status: 'False',
        reason: 'ContainersNotInitialized',
        message: 'containers with incomplete status: [i]',
      },
      {
        type: 'Ready',
        status: 'False',
        reason: 'ContainersNotReady',
        message: 'containers with unready status: [a b]',
      },
      {
        type: 'ContainersReady',
        status: 'False',
        reason: 'ContainersNotReady',
        message: 'containers with unready status: [a b]',
      },
    ]);
  });
  it('all running → Ready; terminal → PodCompleted and the sandbox is gone', () => {
    const ready = podConditions(pod({ containers: [running('a')] }));
    assert.deepEqual(
      ready.map((c) => [c.type, c.status]),
      [
        ['PodReadyToStartContainers', 'True'],
        ['Initialized', 'True'],
        ['Ready', 'True'],
        ['ContainersReady', 'True'],
      ],
    );
    const done = podConditions(pod({ containers: [exited('a', 0)] }));
    assert.deepEqual(
      done.map((c) => [c.type, c.status, c.reason]),
      [
        ['PodReadyToStartContainers', 'False', undefined],
        ['Initialized', 'True', undefined],
        ['Ready', 'False', 'PodCompleted'],
        ['ContainersReady', 'False', 'PodCompleted'],
      ],
    );
  });
});

describe('buildPodStatus', () => {
  it('shapes container statuses like the kubelet', () => {
    const { status } = buildPodStatus(pod({ containers: [exited('a', 3)] }), new Map(), T0 + 5000);
    assert.equal(status.phase, 'Failed');
    assert.equal(status.podIP, '127.0.0.5');
    assert.deepEqual(status.podIPs, [{ ip: '127.0.0.5' }]);
    assert.deepEqual(status.hostIPs, [{ ip: '127.0.0.1' }]);
    assert.equal(status.startTime, '2026-01-02T03:04:05Z');
    assert.deepEqual(status.containerStatuses, [
      {
        name: 'a',
        image: 'img',
        imageID: 'testbed://img',
        ready: false,
        started: false,
        restartCount: 0,
        state: {
          terminated: {
            exitCode: 3,
            reason: 'Error',
            startedAt: '2026-01-02T03:04:05Z',
            finishedAt: '2026-01-02T03:04:06Z',
          },
        },
        lastState: {},
      },
    ]);
  });
  it('keeps lastTransitionTime while a condition keeps its status', () => {
    const first = buildPodStatus(pod({ containers: [running('a')] }), new Map(), T0);
    const second = buildPodStatus(pod({ containers: [running('a')] }), first.times, T0 + 60_000);
    const ready = (s: Record<string, unknown>) =>
      (s.conditions as { type: string; lastTransitionTime: string }[]).find((c) => c.type === 'Ready');
    assert.equal(ready(second.status)?.lastTransitionTime, kubeTime(T0));
    const third = buildPodStatus(pod({ containers: [exited('a', 0)] }), second.times, T0 + 120_000);
    assert.equal(ready(third.status)?.lastTransitionTime, kubeTime(T0 + 120_000));
  });
  it('adds the pod-level reason and message on failure', () => {
    const { status } = buildPodStatus(
      pod({ failure: { reason: 'DeadlineExceeded', message: 'too long' } }),
      new Map(),
      T0,
    );
    assert.equal(status.reason, 'DeadlineExceeded');
    assert.equal(status.message, 'too long');
    assert.equal(status.phase, 'Failed');
  });
});

describe('sidecars (init containers with restartPolicy Always)', () => {
  const side = (name: string, extra: Partial<ContainerRun> = {}): ContainerRun => ({
    ...running(name),
    sidecar: true,
    ...extra,
  });
  /** A sidecar stopped at the end: SIGTERM (143) or the grace-period SIGKILL (137). */
  const sigterm = (name: string, exitCode = 143): ContainerRun => ({
    ...exited(name, exitCode),
    sidecar: true,
  });
  const crashLooping = (name: string): ContainerRun => ({
    ...waiting(name, 'CrashLoopBackOff'),
    sidecar: true,
    restartCount: 1,
    lastState: { kind: 'terminated', exitCode: 1, reason: 'Error', startedAt: T0, finishedAt: T0 },
  });
  const phases: [string, Partial<PodRun>, string][] = [
    [
      'sidecar running, startup probe pending',
      { init: [side('s', { started: false, ready: false }), waiting('i', 'PodInitializing')] },
      'Pending',
    ],
    [
      'sidecar not created yet',
      { init: [{ ...waiting('s', 'PodInitializing'), sidecar: true }], containers: [waiting('a')] },
      'Pending',
    ],
    [
      'sidecar started, regular init running',
      { init: [side('s'), running('i')], containers: [waiting('a', 'PodInitializing')] },
      'Pending',
    ],
    ['sidecar and app running', { init: [side('s'), exited('i', 0)], containers: [running('a')] }, 'Running'],
    [
      'app succeeded, sidecar still running (being stopped)',
      { init: [side('s')], containers: [exited('a', 0)] },
      'Running',
    ],
    [
      'app succeeded, sidecar stopped by SIGTERM',
      { init: [sigterm('s')], containers: [exited('a', 0)] },
      'Succeeded',
    ],
    [
      'finished: app succeeded, sidecars killed 143/137',
      {
        init: [sigterm('s'), sigterm('t', 137)],
        containers: [exited('a', 0)],
        finished: true,
      },
      'Succeeded',
    ],
    ['app failed, sidecar stopped', { init: [sigterm('s')], containers: [exited('a', 2)] }, 'Failed'],
    [
      'sidecar restarting after the app started',
      { init: [side('s', { started: false })], containers: [running('a')] },
      'Running',
    ],
    [
      'sidecar crash-looping beside a running app',
      { init: [crashLooping('s')], containers: [running('a')] },
      'Running',
    ],
    [
      'regular init failed (Never) while a sidecar runs',
      { init: [side('s'), exited('i', 1)], containers: [waiting('a', 'PodInitializing')] },
      'Failed',
    ],
  ];
  for (const [name, run, phase] of phases)
    it(`${name} → ${phase}`, () => assert.equal(podPhase(pod(run)), phase));

  const cond = (run: Partial<PodRun>) =>
    Object.fromEntries(podConditions(pod(run)).map((c) => [c.type, [c.status, c.message]]));

  it('Initialized waits for sidecars to start and regular init containers to succeed', () => {
    assert.deepEqual(
      cond({ init: [side('s', { started: false, ready: false }), waiting('i')], containers: [waiting('a')] })
        .Initialized,
      ['False', 'containers with incomplete status: [s i]'],
    );
    assert.deepEqual(cond({ init: [side('s'), running('i')], containers: [waiting('a')] }).Initialized, [
      'False',
      'containers with incomplete status: [i]',
    ]);
    assert.deepEqual(cond({ init: [side('s'), exited('i', 0)], containers: [waiting('a')] }).Initialized, [
      'True',
      undefined,
    ]);
    // Once an app container ran, a restarting sidecar does not undo initialization; nor does stopping it at the end.
    assert.deepEqual(cond({ init: [crashLooping('s')], containers: [running('a')] }).Initialized, [
      'True',
      undefined,
    ]);
    assert.deepEqual(cond({ init: [sigterm('s')], containers: [exited('a', 0)] }).Initialized, [
      'True',
      undefined,
    ]);
  });

  it('Ready and ContainersReady count sidecar readiness as well as the app containers', () => {
    const notReady = cond({ init: [side('s', { ready: false })], containers: [running('a')] });
    assert.deepEqual(notReady.Ready, ['False', 'containers with unready status: [s]']);
    assert.deepEqual(notReady.ContainersReady, ['False', 'containers with unready status: [s]']);
    const down = cond({ init: [crashLooping('s'), exited('i', 0)], containers: [waiting('a')] });
    assert.deepEqual(
      down.Ready,
      ['False', 'containers with unready status: [s a]'],
      'regular init not listed',
    );
    const ready = cond({
      init: [side('s', { started: true, ready: true }), exited('i', 0)],
      containers: [running('a')],
    });
    assert.deepEqual(ready.Ready, ['True', undefined]);
    assert.deepEqual(ready.ContainersReady, ['True', undefined]);
  });

  it('initContainerStatuses report started, ready and restartCount of sidecars', () => {
    const { status } = buildPodStatus(
      pod({
        init: [
          side('probing', { started: false, ready: false }),
          side('warming', { started: true, ready: false, restartCount: 2 }),
          side('ok', { started: true, ready: true }),
          crashLooping('down'),
        ],
        containers: [waiting('a')],
      }),
      new Map(),
      T0,
    );
    const rows = (status.initContainerStatuses as Record<string, unknown>[]).map((s) => [
      s.name,
      s.started,
      s.ready,
      s.restartCount,
      Object.keys(s.state as object)[0],
    ]);
    assert.deepEqual(rows, [
      ['probing', false, false, 0, 'running'],
      ['warming', true, false, 2, 'running'],
      ['ok', true, true, 0, 'running'],
      ['down', false, false, 1, 'waiting'],
    ]);
  });
});
