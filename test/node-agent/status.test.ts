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
