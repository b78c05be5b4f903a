import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Agent, type Pod, parsePod } from '../../api/index.ts';
import { jobNameFor } from '../../jobs/index.ts';
import type { Action, AgentStatusPatch, Decision } from '../actions.ts';
import { findCondition } from '../conditions.ts';
import { CONDITION_READY, failureStart, REASON } from '../reasons.ts';
import type { PodCreateFailure, Snapshot, StartObservation } from '../snapshot.ts';
import { agent, at, definition, iso, job, NS, queueOf, running, station } from '../test-fixtures.ts';
import { decide } from './decide.ts';
import { podStartSignal, START_PROBLEM_REASONS, startState } from './starting.ts';

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
    ['a webhook', 'Error creating: admission webhook "deny.example.com" denied the request: no', true],
    [
      'a ValidatingAdmissionPolicy',
      "Error creating: pods \"x\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no",
      true,
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
): Snapshot {
  return {
    agent: a,
    station: station('stn', stationSpec),
    definition: definition(),
    job: { kind: 'present', job: JOB, evidence: { kind: 'notGathered' } },
    queue: queueOf(a, [a]),
    options: OPTIONS,
    ...(start !== undefined ? { start } : {}),
  };
}

function patchOf(d: Decision): AgentStatusPatch {
  const p = d.actions.find((a) => a.kind === 'patchStatus');
  assert.ok(p?.kind === 'patchStatus', 'a status patch');
  return p.status;
}
const eventsOf = (d: Decision) =>
  d.actions.filter((a): a is Extract<Action, { kind: 'recordEvent' }> => a.kind === 'recordEvent');

/** The Agent after `d`'s status patch landed (conditions and fields merged as the API server would). */
function applied(a: Agent, d: Decision): Agent {
  const status = patchOf(d);
  return agent('a', {
    rv: 'rv-2',
    status: { ...a.status, ...status, conditions: status.conditions },
  });
}

const AGENT = running('a', { started: 1 });
const PULL = obs([
  pod({ containers: [waiting('agent', 'ImagePullBackOff', 'Back-off pulling image "ghcr.io/x:1"')] }),
]);

describe('decide: a Running run whose pod cannot start', () => {
  it('without an observation waits for the Job as before', () => {
    assert.deepEqual(decide(snap(AGENT, undefined), at(20)), {
      actions: [],
      requeueAfterMs: OPTIONS.requeueMs,
    });
  });

  it('nothing known, or a pod progressing: nothing written', () => {
    assert.deepEqual(decide(snap(AGENT, obs([])), at(20)), {
      actions: [],
      requeueAfterMs: OPTIONS.requeueMs,
    });
    assert.deepEqual(decide(snap(AGENT, obs([pod()])), at(20)), {
      actions: [],
      requeueAfterMs: OPTIONS.requeueMs,
    });
  });

  it('a cause shows at once: Ready=False with it, one Warning Event, re-checked by the start timeout', () => {
    const d = decide(snap(AGENT, PULL), at(20));
    const status = patchOf(d);
    assert.equal(status.phase, undefined, 'still Running');
    const ready = findCondition(status.conditions, CONDITION_READY);
    assert.equal(ready?.status, 'False');
    assert.equal(ready?.reason, REASON.imagePullFailed);
    assert.match(
      ready?.message ?? '',
      /ImagePullBackOff: Back-off pulling image "ghcr.io\/x:1" \(the run fails if its pod has not started 5m after its Job was created\)/,
    );
    const events = eventsOf(d);
    assert.equal(events.length, 1);
    assert.equal(events[0]?.type, 'Warning');
    assert.equal(events[0]?.reason, REASON.imagePullFailed);
    assert.equal(d.requeueAfterMs, OPTIONS.requeueMs);
    assert.ok(!d.actions.some((a) => a.kind === 'deleteJob'));
  });

  it('is idempotent: the kubelet retrying (ErrImagePull ↔ ImagePullBackOff) patches nothing more', () => {
    const after = applied(AGENT, decide(snap(AGENT, PULL), at(20)));
    const again = decide(
      snap(after, obs([pod({ containers: [waiting('agent', 'ErrImagePull', 'manifest unknown')] })])),
      at(40),
    );
    assert.deepEqual(again.actions, []);
    assert.equal(again.requeueAfterMs, OPTIONS.requeueMs);
  });

  it('re-checks exactly when the start timeout falls due', () => {
    const after = applied(AGENT, decide(snap(AGENT, PULL), at(20)));
    // startedAt = 1 s; 5 minutes later is 301 s.
    assert.equal(decide(snap(after, PULL), at(280)).requeueAfterMs, 21_000);
    assert.equal(decide(snap(after, PULL), at(300.5)).requeueAfterMs, 1000, 'never less than a second');
  });

  it('another cause replaces the first: one more patch and Event', () => {
    const after = applied(AGENT, decide(snap(AGENT, PULL), at(20)));
    const d = decide(snap(after, obs([pod({ conditions: [unschedulable] })])), at(30));
    assert.equal(findCondition(patchOf(d).conditions, CONDITION_READY)?.reason, REASON.unschedulable);
    assert.deepEqual(
      eventsOf(d).map((e) => e.reason),
      [REASON.unschedulable],
    );
  });

  it('once the pod starts (or a new pod progresses), Ready goes back to Running', () => {
    const after = applied(AGENT, decide(snap(AGENT, PULL), at(20)));
    for (const [p, text] of [
      [pod({ phase: 'Running' }), 'the pod started'],
      [pod({ name: 'a-x9' }), 'the pod is starting'],
    ] as const) {
      const d = decide(snap(after, obs([p])), at(30));
      const ready = findCondition(patchOf(d).conditions, CONDITION_READY);
      assert.equal(ready?.reason, REASON.running);
      assert.match(ready?.message ?? '', new RegExp(text));
      assert.deepEqual(eventsOf(d), []);
    }
    // Nothing known any more (the pod vanished): the cause stays shown.
    assert.deepEqual(decide(snap(after, obs([])), at(30)).actions, []);
  });

  it('after the start timeout the run fails with the cause, and its Job is deleted after the patch', () => {
    const after = applied(AGENT, decide(snap(AGENT, PULL), at(20)));
    const d = decide(snap(after, PULL), at(301));
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

  it("the Station's startTimeoutMinutes sets the timeout", () => {
    assert.equal(
      decide(snap(AGENT, PULL, { startTimeoutMinutes: 1 }), at(60)).actions.some(
        (a) => a.kind === 'deleteJob',
      ),
      false,
    );
    const d = decide(snap(AGENT, PULL, { startTimeoutMinutes: 1 }), at(61));
    assert.match(patchOf(d).failureReason ?? '', /within 1m\)$/);
    assert.equal(
      decide(snap(AGENT, PULL, { startTimeoutMinutes: 10 }), at(400)).actions.some(
        (a) => a.kind === 'deleteJob',
      ),
      false,
    );
  });

  it('a permanent cause fails at once, without the timeout in its reason', () => {
    const d = decide(snap(AGENT, obs([], [refused(PSA)])), at(3));
    const status = patchOf(d);
    assert.equal(status.phase, 'Failed');
    assert.match(
      status.failureReason ?? '',
      /^PodRefused: Job [a-z0-9-]+ could not create its pod: Error creating: .*violates PodSecurity/,
    );
    assert.doesNotMatch(status.failureReason ?? '', /within/);
    assert.ok(d.actions.some((a) => a.kind === 'deleteJob'));
  });

  it('a transient refusal (quota) waits for the timeout', () => {
    const d = decide(snap(AGENT, obs([], [refused(QUOTA)])), at(3));
    assert.equal(patchOf(d).phase, undefined);
    assert.equal(findCondition(patchOf(d).conditions, CONDITION_READY)?.reason, REASON.podRefused);
  });

  it('a finished Job is judged by its verdict, not by its start', () => {
    const done = job('a', { conditions: [{ type: 'Complete', status: 'True' }] });
    const s: Snapshot = {
      ...snap(AGENT, PULL),
      job: { kind: 'present', job: done, evidence: { kind: 'notGathered' } },
    };
    assert.deepEqual(decide(s, at(400)), { actions: [], needs: 'runEvidence' });
  });

  it('START_PROBLEM_REASONS lists every reason a start can be blocked by', () => {
    assert.deepEqual(
      [...START_PROBLEM_REASONS].sort(),
      [REASON.containerConfigError, REASON.imagePullFailed, REASON.podRefused, REASON.unschedulable].sort(),
    );
  });
});
