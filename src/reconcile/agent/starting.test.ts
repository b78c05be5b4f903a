import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Agent, type Pod, parsePod } from '../../api/index.ts';
import { jobNameFor } from '../../jobs/index.ts';
import type { Action, AgentStatusPatch, Decision } from '../actions.ts';
import { findCondition } from '../conditions.ts';
import { CONDITION_READY, CONDITION_START_BLOCKED, failureStart, REASON } from '../reasons.ts';
import type { PodCreateFailure, Snapshot, StartObservation } from '../snapshot.ts';
import { agent, at, definition, iso, job, NS, queueOf, running, station } from '../test-fixtures.ts';
import { decide } from './decide.ts';
import {
  leftoverStartJob,
  podStartSignal,
  START_GRACE_MS,
  START_PROBLEM_REASONS,
  showsStartProblem,
  startState,
} from './starting.ts';

const OPTIONS = {
  agentImage: 'agent-controller:e2e',
  maxOutputBytes: 262144,
  requeueMs: 60_000,
  batch: { enabled: true, pollMs: 60000 },
  realtime: { enabled: true },
};

const JOB = job('a');
const JOB_UID = JOB.metadata.uid;

interface PodOpts {
  readonly name?: string;
  readonly phase?: string;
  readonly conditions?: readonly Record<string, unknown>[];
  readonly init?: readonly Record<string, unknown>[];
  readonly containers?: readonly Record<string, unknown>[];
  readonly deleting?: boolean;
  readonly jobUid?: string;
}

/** A pod of the Job of Agent `a`, Pending unless `phase` says otherwise. */
function pod(o: PodOpts = {}): Pod {
  const r = parsePod({
    metadata: {
      name: o.name ?? `${jobNameFor('a')}-x1`,
      namespace: NS,
      uid: `uid-${o.name ?? 'p'}`,
      resourceVersion: '3',
      creationTimestamp: iso(2),
      ...(o.deleting ? { deletionTimestamp: iso(30) } : {}),
      labels: {
        'batch.kubernetes.io/job-name': jobNameFor('a'),
        'batch.kubernetes.io/controller-uid': o.jobUid ?? JOB_UID,
      },
    },
    spec: { containers: [{ name: 'agent' }] },
    status: {
      phase: o.phase ?? 'Pending',
      ...(o.conditions !== undefined ? { conditions: o.conditions } : {}),
      ...(o.init !== undefined ? { initContainerStatuses: o.init } : {}),
      ...(o.containers !== undefined ? { containerStatuses: o.containers } : {}),
    },
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

const waiting = (name: string, reason: string, message?: string) => ({
  name,
  state: { waiting: { reason, ...(message !== undefined ? { message } : {}) } },
});
const unschedulable = {
  type: 'PodScheduled',
  status: 'False',
  reason: 'Unschedulable',
  message: "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
};
const PSA =
  'Error creating: pods "a-x2" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true (pod or container "init" must set securityContext.runAsNonRoot=true)';
const QUOTA =
  'Error creating: pods "a-x3" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=0, limited: pods=0';
const refused = (message: string, lastSeen = iso(5), jobUid = JOB_UID): PodCreateFailure => ({
  jobUid,
  message,
  lastSeen,
});
const obs = (pods: readonly Pod[], createFailures: readonly PodCreateFailure[] = []): StartObservation => ({
  pods,
  createFailures,
});

describe('startState', () => {
  it('knows nothing without pods or pod-creation failures', () => {
    assert.deepEqual(startState(JOB, obs([])), { kind: 'unknown' });
  });

  it('is progressing when the Job counts an active pod the cache has not seen yet', () => {
    assert.deepEqual(startState(job('a', { active: 1 }), obs([])), { kind: 'progressing' });
  });

  it('is progressing while a pod is being created, pulled or initialised without a known problem', () => {
    const p = pod({
      containers: [waiting('agent', 'ContainerCreating')],
      init: [waiting('init', 'PodInitializing')],
    });
    assert.deepEqual(startState(JOB, obs([p])), { kind: 'progressing' });
  });

  it('a FailedCreate of the Job is a PodRefused; Pod Security is permanent, a quota is not', () => {
    const psa = startState(JOB, obs([], [refused(PSA)]));
    assert.equal(psa.kind, 'blocked');
    assert.ok(psa.kind === 'blocked');
    assert.equal(psa.reason, REASON.podRefused);
    assert.equal(psa.permanent, true);
    assert.match(psa.message, /could not create its pod: Error creating: .*violates PodSecurity/);
    const quota = startState(JOB, obs([], [refused(QUOTA)]));
    assert.ok(quota.kind === 'blocked');
    assert.equal(quota.permanent, false);
  });

  for (const [name, message, permanent] of [
    [
      'a LimitRange maximum',
      'Error creating: pods "x" is forbidden: maximum cpu usage per Container is 1, but limit is 2',
      true,
    ],
    ['a webhook', 'Error creating: admission webhook "deny.example.com" denied the request: no', false],
    [
      'a ValidatingAdmissionPolicy',
      "Error creating: pods \"x\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no",
      false,
    ],
    [
      'a missing ServiceAccount',
      'Error creating: pods "x" is forbidden: error looking up service account team/run: serviceaccount "run" not found',
      false,
    ],
  ] as const) {
    it(`a refusal by ${name} is ${permanent ? 'permanent' : 'retried until the start timeout'}`, () => {
      const s = startState(JOB, obs([], [refused(message)]));
      assert.ok(s.kind === 'blocked');
      assert.equal(s.permanent, permanent);
    });
  }

  it('the latest FailedCreate speaks; those of an earlier Job of the same name do not count', () => {
    const s = startState(JOB, obs([], [refused(PSA, iso(9)), refused(QUOTA, iso(3))]));
    assert.ok(s.kind === 'blocked');
    assert.match(s.message, /PodSecurity/);
    assert.deepEqual(startState(JOB, obs([], [refused(PSA, iso(9), 'uid-old-job')])), { kind: 'unknown' });
  });

  it('a pod of the Job wins over earlier FailedCreate Events (the refusal passed)', () => {
    assert.deepEqual(startState(JOB, obs([pod()], [refused(QUOTA)])), { kind: 'progressing' });
  });

  it('an unschedulable pod is Unschedulable with the scheduler message', () => {
    const s = startState(JOB, obs([pod({ conditions: [unschedulable] })]));
    assert.ok(s.kind === 'blocked');
    assert.equal(s.reason, REASON.unschedulable);
    assert.equal(s.permanent, false);
    assert.match(s.message, /^pod [a-z0-9-]+: 0\/1 nodes are available/);
  });

  it('a scheduled pod or one still being scheduled is not Unschedulable', () => {
    const s = startState(JOB, obs([pod({ conditions: [{ type: 'PodScheduled', status: 'True' }] })]));
    assert.equal(s.kind, 'progressing');
    const pending = startState(
      JOB,
      obs([pod({ conditions: [{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated' }] })]),
    );
    assert.equal(pending.kind, 'progressing');
  });

  for (const [reason, permanent] of [
    ['ErrImagePull', false],
    ['ImagePullBackOff', false],
    ['RegistryUnavailable', false],
    ['InvalidImageName', true],
    ['ErrImageNeverPull', true],
  ] as const) {
    it(`a container waiting with ${reason} is ImagePullFailed (${permanent ? 'permanent' : 'retried'})`, () => {
      const s = startState(JOB, obs([pod({ containers: [waiting('agent', reason, 'no such image "x"')] })]));
      assert.ok(s.kind === 'blocked');
      assert.equal(s.reason, REASON.imagePullFailed);
      assert.equal(s.permanent, permanent);
      assert.match(s.message, new RegExp(`container agent: ${reason}: no such image "x"$`));
    });
  }

  for (const reason of ['CreateContainerConfigError', 'CreateContainerError']) {
    it(`an init container waiting with ${reason} is ContainerConfigError`, () => {
      const s = startState(
        JOB,
        obs([
          pod({
            init: [
              waiting('init', reason, "couldn't find key ANTHROPIC_API_KEY in Secret team/agent-secrets"),
            ],
          }),
        ]),
      );
      assert.ok(s.kind === 'blocked');
      assert.equal(s.reason, REASON.containerConfigError);
      assert.equal(s.permanent, false);
      assert.match(
        s.message,
        /container init: CreateContainer(Config)?Error: couldn't find key ANTHROPIC_API_KEY/,
      );
    });
  }

  it('a waiting reason without a message is reported by its reason alone', () => {
    const s = startState(JOB, obs([pod({ containers: [waiting('agent', 'ErrImagePull')] })]));
    assert.ok(s.kind === 'blocked');
    assert.match(s.message, /container agent: ErrImagePull$/);
  });

  it('a pod that left Pending, or whose container ran, has started (a late waiting state does not matter)', () => {
    assert.deepEqual(startState(JOB, obs([pod({ phase: 'Running' })])), { kind: 'started' });
    assert.deepEqual(startState(JOB, obs([pod({ phase: 'Failed' })])), { kind: 'started' });
    const ran = pod({
      containers: [
        { name: 'agent', state: { terminated: { exitCode: 0 } } },
        waiting('side', 'ErrImagePull'),
      ],
    });
    assert.deepEqual(startState(JOB, obs([ran])), { kind: 'started' });
    const runs = pod({ containers: [{ name: 'agent', state: { running: {} } }] });
    assert.deepEqual(startState(JOB, obs([runs])), { kind: 'started' });
  });

  it('a Running pod whose agent container cannot pull its image (a template container runs) is blocked', () => {
    const p = pod({
      phase: 'Running',
      containers: [
        { name: 'side', state: { running: {} } },
        waiting('agent', 'ImagePullBackOff', 'Back-off'),
      ],
    });
    const s = startState(JOB, obs([p]));
    assert.ok(s.kind === 'blocked');
    assert.equal(s.reason, REASON.imagePullFailed);
  });

  it('a pod being deleted is no cause; pods of another Job of the same name are ignored', () => {
    const gone = pod({ deleting: true, containers: [waiting('agent', 'ErrImagePull')] });
    assert.deepEqual(startState(JOB, obs([gone])), { kind: 'unknown' });
    const other = pod({ jobUid: 'uid-old-job', conditions: [unschedulable] });
    assert.deepEqual(startState(JOB, obs([other])), { kind: 'unknown' });
  });
});

describe('podStartSignal', () => {
  it('changes only with what the start decision reads', () => {
    assert.equal(podStartSignal(pod()), 'pending');
    assert.equal(podStartSignal(pod({ containers: [waiting('agent', 'ContainerCreating')] })), 'pending');
    assert.equal(
      podStartSignal(pod({ containers: [waiting('agent', 'ErrImagePull')] })),
      REASON.imagePullFailed,
    );
    assert.equal(
      podStartSignal(pod({ containers: [waiting('agent', 'ImagePullBackOff', 'Back-off pulling image')] })),
      REASON.imagePullFailed,
    );
    assert.equal(podStartSignal(pod({ conditions: [unschedulable] })), REASON.unschedulable);
    assert.equal(podStartSignal(pod({ deleting: true })), 'deleting');
    assert.equal(podStartSignal(pod({ phase: 'Running' })), 'started');
  });
});

// --- the decision ------------------------------------------------------------------------------------------------

function snap(
  a: Agent,
  start: StartObservation | undefined,
  stationSpec: Record<string, unknown> = {},
  j = JOB,
): Snapshot {
  return {
    agent: a,
    station: station('stn', stationSpec),
    definition: definition(),
    job: { kind: 'present', job: j, evidence: { kind: 'notGathered' } },
    queue: queueOf(a, [a]),
    options: OPTIONS,
    ...(start !== undefined ? { start } : {}),
  };
}

function patchOf(d: Decision): AgentStatusPatch {
  const p = d.actions.find((a) => a.kind === 'patchStatus');
  assert.ok(p?.kind === 'patchStatus', `a status patch in ${JSON.stringify(d)}`);
  return p.status;
}
const eventsOf = (d: Decision) =>
  d.actions.filter((a): a is Extract<Action, { kind: 'recordEvent' }> => a.kind === 'recordEvent');

/** The Agent after `d`'s status patch landed (conditions and fields merged as the API server would). */
function applied(a: Agent, d: Decision): Agent {
  const status = patchOf(d);
  return agent('a', { rv: 'rv-2', status: { ...a.status, ...status, conditions: status.conditions } });
}
const live = (o: StartObservation): StartObservation => ({ ...o, live: true });

const AGENT = running('a', { started: 1 });
const PULL = obs([
  pod({ containers: [waiting('agent', 'ImagePullBackOff', 'Back-off pulling image "ghcr.io/x:1"')] }),
]);
/** AGENT once the pull failure was shown at `t` seconds. */
const shownAt = (t: number, o = PULL, stationSpec: Record<string, unknown> = {}) =>
  applied(AGENT, decide(snap(AGENT, o, stationSpec), at(t)));

describe('decide: a Running run whose pod cannot start', () => {
  it('without an observation waits for the Job as before', () => {
    assert.deepEqual(decide(snap(AGENT, undefined), at(20)), {
      actions: [],
      requeueAfterMs: OPTIONS.requeueMs,
    });
  });

  it('nothing known, or a pod progressing: nothing written', () => {
    const idle = { actions: [], requeueAfterMs: OPTIONS.requeueMs };
    assert.deepEqual(decide(snap(AGENT, obs([])), at(20)), idle);
    assert.deepEqual(decide(snap(AGENT, obs([pod()])), at(20)), idle);
  });

  it('a cause shows at once: Ready=False and StartBlocked=True with it, one Warning Event', () => {
    const d = decide(snap(AGENT, PULL), at(20));
    const status = patchOf(d);
    assert.equal(status.phase, undefined, 'still Running');
    const ready = findCondition(status.conditions, CONDITION_READY);
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, REASON.imagePullFailed);
    assert.match(
      ready?.message ?? '',
      /ImagePullBackOff: Back-off pulling image "ghcr.io\/x:1" \(the run fails if it is still blocked 5m after its Job was created\)$/,
    );
    const blocked = findCondition(status.conditions, CONDITION_START_BLOCKED);
    assert.equal(blocked?.status, 'True');
    assert.equal(blocked?.reason, REASON.imagePullFailed);
    assert.equal(blocked?.lastTransitionTime, '2025-03-01T12:00:20Z');
    const events = eventsOf(d);
    assert.deepEqual(
      events.map((e) => [e.type, e.reason]),
      [['Warning', REASON.imagePullFailed]],
    );
    assert.equal(d.requeueAfterMs, OPTIONS.requeueMs);
    assert.ok(!d.actions.some((a) => a.kind === 'deleteJob'));
  });

  it('is idempotent: the kubelet retrying (ErrImagePull ↔ ImagePullBackOff) patches nothing more', () => {
    const again = decide(
      snap(shownAt(20), obs([pod({ containers: [waiting('agent', 'ErrImagePull', 'manifest unknown')] })])),
      at(40),
    );
    assert.deepEqual(again.actions, []);
    assert.equal(again.requeueAfterMs, OPTIONS.requeueMs);
  });

  it('re-checks exactly when the failure falls due', () => {
    const after = shownAt(20);
    // The Job was created at 1 s; 5 minutes later is 301 s.
    assert.equal(decide(snap(after, PULL), at(280)).requeueAfterMs, 21_000);
    assert.equal(decide(snap(after, PULL), at(300.5)).requeueAfterMs, 1000, 'never less than a second');
  });

  it('another cause replaces the first: one more patch and Event, StartBlocked keeps its time', () => {
    const d = decide(snap(shownAt(20), obs([pod({ conditions: [unschedulable] })])), at(30));
    assert.equal(findCondition(patchOf(d).conditions, CONDITION_READY)?.reason, REASON.unschedulable);
    const blocked = findCondition(patchOf(d).conditions, CONDITION_START_BLOCKED);
    assert.equal(blocked?.reason, REASON.unschedulable);
    assert.equal(blocked?.lastTransitionTime, '2025-03-01T12:00:20Z', 'blocked since the first cause');
    assert.deepEqual(
      eventsOf(d).map((e) => e.reason),
      [REASON.unschedulable],
    );
  });

  it('once the pod starts (or a new pod progresses), Ready goes back to Running and StartBlocked goes', () => {
    const after = shownAt(20);
    for (const [p, text] of [
      [pod({ phase: 'Running' }), 'the pod started'],
      [pod({ name: 'a-x9' }), 'the pod is starting'],
    ] as const) {
      const d = decide(snap(after, obs([p])), at(30));
      const ready = findCondition(patchOf(d).conditions, CONDITION_READY);
      assert.equal(ready?.reason, REASON.running);
      assert.match(ready?.message ?? '', new RegExp(text));
      assert.equal(findCondition(patchOf(d).conditions, CONDITION_START_BLOCKED), undefined);
      assert.deepEqual(eventsOf(d), []);
    }
    // A Job that counts an active pod the cache does not hold (it left Pending): the pod is starting.
    const gone = decide(snap(after, obs([]), {}, job('a', { active: 1 })), at(30));
    assert.equal(findCondition(patchOf(gone).conditions, CONDITION_READY)?.reason, REASON.running);
    // Nothing known any more (no pod, no active count): the cause stays shown.
    assert.deepEqual(decide(snap(after, obs([])), at(30)).actions, []);
  });

  it('past the start timeout: the pods are listed live, then the run fails with the cause and its Job goes', () => {
    const after = shownAt(20);
    assert.deepEqual(decide(snap(after, PULL), at(301)), { actions: [], needs: 'livePods' });
    const d = decide(snap(after, live(PULL)), at(301));
    const status = patchOf(d);
    assert.equal(status.phase, 'Failed');
    assert.equal(status.exitCode, 1);
    assert.equal(status.jobName, jobNameFor('a'));
    assert.equal(
      status.failureReason,
      failureStart(
        REASON.imagePullFailed,
        `pod ${jobNameFor('a')}-x1: container agent: ImagePullBackOff: Back-off pulling image "ghcr.io/x:1"`,
        5,
      ),
    );
    assert.match(status.failureReason ?? '', /\(the pod did not start within 5m\)$/);
    assert.equal(findCondition(status.conditions, 'Failed')?.reason, REASON.imagePullFailed);
    const kinds = d.actions.map((a) => a.kind);
    assert.ok(kinds.indexOf('deleteJob') > kinds.indexOf('patchStatus'), 'the Job goes after the patch');
    assert.deepEqual(
      d.actions.find((a) => a.kind === 'deleteJob'),
      { kind: 'deleteJob', namespace: NS, name: jobNameFor('a'), uid: JOB_UID },
    );
    assert.ok(
      d.actions.some(
        (a) =>
          a.kind === 'observeMetric' &&
          a.observation.metric === 'runFailure' &&
          a.observation.kind === 'start_failed',
      ),
    );
    assert.equal(eventsOf(d).find((e) => e.reason === REASON.imagePullFailed)?.type, 'Warning');
  });

  it('the live listing finds the pod started: no failure, Ready back to Running', () => {
    const d = decide(snap(shownAt(20), live(obs([pod({ phase: 'Running' })]))), at(301));
    assert.equal(patchOf(d).phase, undefined);
    assert.equal(findCondition(patchOf(d).conditions, CONDITION_READY)?.reason, REASON.running);
    assert.ok(!d.actions.some((a) => a.kind === 'deleteJob'));
  });

  it('a cause first seen past the timeout is shown first and fails only a grace minute later', () => {
    const d = decide(snap(AGENT, live(PULL)), at(400));
    assert.equal(patchOf(d).phase, undefined, 'shown, not failed');
    assert.equal(d.requeueAfterMs, START_GRACE_MS);
    const after = applied(AGENT, d);
    assert.equal(decide(snap(after, live(PULL)), at(459)).actions.length, 0);
    assert.equal(patchOf(decide(snap(after, live(PULL)), at(460))).phase, 'Failed');
  });

  it("the Station's startTimeoutMinutes sets the timeout", () => {
    const after = shownAt(1, PULL, { startTimeoutMinutes: 1 });
    assert.equal(decide(snap(after, live(PULL), { startTimeoutMinutes: 1 }), at(60)).actions.length, 0);
    const d = decide(snap(after, live(PULL), { startTimeoutMinutes: 1 }), at(61));
    assert.match(patchOf(d).failureReason ?? '', /within 1m\)$/);
    const ten = shownAt(1, PULL, { startTimeoutMinutes: 10 });
    assert.equal(decide(snap(ten, live(PULL), { startTimeoutMinutes: 10 }), at(400)).actions.length, 0);
  });

  it("counts from the Job's creation: a batch run's fallback Job gets its whole start timeout", () => {
    const late = job('a', { created: 3600 });
    const shown = applied(AGENT, decide(snap(AGENT, PULL, {}, late), at(3605)));
    assert.equal(findCondition(shown.status.conditions, CONDITION_START_BLOCKED)?.status, 'True');
    const d = decide(snap(shown, live(PULL), {}, late), at(3700));
    assert.deepEqual(d.actions, []);
    assert.equal(d.requeueAfterMs, OPTIONS.requeueMs);
    assert.equal(patchOf(decide(snap(shown, live(PULL), {}, late), at(3900))).phase, 'Failed');
  });

  it('a permanent cause fails at once (on a live listing), without the timeout in its reason', () => {
    const refusedNow = obs([], [refused(PSA)]);
    assert.deepEqual(decide(snap(AGENT, refusedNow), at(3)), { actions: [], needs: 'livePods' });
    const d = decide(snap(AGENT, live(refusedNow)), at(3));
    const status = patchOf(d);
    assert.equal(status.phase, 'Failed');
    assert.match(
      status.failureReason ?? '',
      /^PodRefused: Job [a-z0-9-]+ could not create its pod: Error creating: .*violates PodSecurity/,
    );
    assert.doesNotMatch(status.failureReason ?? '', /within/);
    assert.ok(d.actions.some((a) => a.kind === 'deleteJob'));
    // A pod that appeared meanwhile (the namespace label was changed): no failure.
    const passed = decide(snap(AGENT, live(obs([pod()], [refused(PSA)]))), at(3));
    assert.deepEqual(passed.actions, []);
  });

  it('a transient refusal (quota, a webhook) waits for the timeout', () => {
    for (const message of [QUOTA, 'Error creating: admission webhook "x" denied the request: busy']) {
      const d = decide(snap(AGENT, live(obs([], [refused(message)]))), at(3));
      assert.equal(patchOf(d).phase, undefined);
      assert.equal(findCondition(patchOf(d).conditions, CONDITION_READY)?.reason, REASON.podRefused);
    }
  });

  it('a finished Job is judged by its verdict, not by its start', () => {
    const done = job('a', { conditions: [{ type: 'Complete', status: 'True' }] });
    assert.deepEqual(decide(snap(AGENT, PULL, {}, done), at(400)), { actions: [], needs: 'runEvidence' });
  });

  it('showsStartProblem follows StartBlocked: shown with a cause, gone once the pod starts', () => {
    assert.equal(showsStartProblem(AGENT), false);
    const shown = shownAt(20);
    assert.equal(showsStartProblem(shown), true);
    assert.equal(
      showsStartProblem(applied(shown, decide(snap(shown, obs([pod({ phase: 'Running' })])), at(30)))),
      false,
    );
  });

  it('START_PROBLEM_REASONS lists every reason a start can be blocked by', () => {
    assert.deepEqual(
      [...START_PROBLEM_REASONS].sort(),
      [REASON.containerConfigError, REASON.imagePullFailed, REASON.podRefused, REASON.unschedulable].sort(),
    );
  });
});

describe('leftoverStartJob', () => {
  const failedOf = (reason: string) =>
    agent('a', {
      status: {
        phase: 'Failed',
        conditions: [{ type: 'Failed', status: 'True', reason, message: 'm', lastTransitionTime: iso(5) }],
      },
    });

  it('deletes the unfinished Job of a run that failed because its pod could not start', () => {
    assert.deepEqual(leftoverStartJob(failedOf(REASON.imagePullFailed), JOB), {
      kind: 'deleteJob',
      namespace: NS,
      name: jobNameFor('a'),
      uid: JOB_UID,
    });
  });

  it('leaves everything else alone', () => {
    assert.equal(leftoverStartJob(failedOf(REASON.jobFailed), JOB), undefined, 'another failure');
    assert.equal(leftoverStartJob(AGENT, JOB), undefined, 'still Running');
    const done = job('a', { conditions: [{ type: 'Failed', status: 'True' }] });
    assert.equal(leftoverStartJob(failedOf(REASON.podRefused), done), undefined, 'the Job finished');
    assert.equal(leftoverStartJob(failedOf(REASON.podRefused), job('a', { deleting: true })), undefined);
    const other = job('a', { owner: { name: 'a', uid: 'uid-someone-else' } });
    assert.equal(leftoverStartJob(failedOf(REASON.podRefused), other), undefined, 'not its Job');
  });
});
