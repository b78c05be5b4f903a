/**
 * Runs that cannot start (issue 13 §4): a Running run whose Job has not finished, but whose pod is kept from
 * starting — the Job controller could not create it (admission refused it: Pod Security, a quota, a LimitRange, a
 * webhook), it cannot be scheduled, an image cannot be pulled, or a container cannot be created (a missing Secret
 * key). The cause shows on the Agent within seconds (Ready=False and StartBlocked=True with it, one Warning Event per
 * cause, no patch on every retry), and the run fails with it after the Station's `startTimeoutMinutes` (at once when
 * it is permanent; confirmed on a live pod listing), its Job deleted so that nothing starts behind a Failed Agent.
 */
import { type Agent, DEFAULT_START_TIMEOUT_MINUTES, type Job, type Pod } from '../../api/index.ts';
import type { Action, Decision } from '../actions.ts';
import type { ConditionUpdate } from '../conditions.ts';
import {
  CONDITION_FAILED,
  CONDITION_READY,
  CONDITION_START_BLOCKED,
  failureStart,
  REASON,
} from '../reasons.ts';
import type { JobSnapshot, StartObservation } from '../snapshot/job.ts';
import { AGENT_CONTAINER, type Completion, isJobFinished } from './outcome.ts';
import { agentRef, clip, event, MAX_CONDITION_MESSAGE, runningConditions, statusPatch } from './status.ts';

/** The reasons a run's pod is kept from starting (condition and Event reasons, `failureReason` prefixes). */
export const START_PROBLEM_REASONS: ReadonlySet<string> = new Set([
  REASON.podRefused,
  REASON.imagePullFailed,
  REASON.containerConfigError,
  REASON.unschedulable,
]);

/** What keeps the pod from starting. */
export interface StartProblem {
  readonly reason: string;
  /** The Kubernetes message, prefixed with the pod or container it concerns. */
  readonly message: string;
  /** Nothing will change it without a person: the run fails at once instead of after the start timeout. */
  readonly permanent: boolean;
}

/** Where a run's start stands. */
export type StartState =
  /** A container of the run ran (or the pod left Pending): nothing keeps it from starting any more. */
  | { readonly kind: 'started' }
  /** A pod exists and nothing is known to be wrong (being scheduled, pulling, initialising). */
  | { readonly kind: 'progressing' }
  /** Nothing known: no pod and no pod-creation failure (yet). */
  | { readonly kind: 'unknown' }
  | ({ readonly kind: 'blocked' } & StartProblem);

/** Waiting reasons of a container whose image cannot be pulled; the permanent ones need a new image name. */
const IMAGE_REASONS: ReadonlyMap<string, boolean> = new Map([
  ['ErrImagePull', false],
  ['ImagePullBackOff', false],
  ['RegistryUnavailable', false],
  ['InvalidImageName', true],
  ['ErrImageNeverPull', true],
]);
/** Waiting reasons of a container that cannot be created (a missing ConfigMap or Secret key, a bad mount…). */
const CONFIG_REASONS: ReadonlySet<string> = new Set(['CreateContainerConfigError', 'CreateContainerError']);

/**
 * Pod-creation refusals that stay until a person changes the Station or the namespace: Pod Security admission and a
 * LimitRange bound judge the pod alone. A quota may free up; a webhook or admission policy may judge other state
 * too; anything else may pass on a retry: those wait for the start timeout.
 */
const PERMANENT_REFUSAL =
  /violates PodSecurity|(maximum|minimum) (cpu|memory|ephemeral-storage) usage per (Container|Pod)|must be (less|greater) than or equal to/i;

/**
 * Whether the run's pod has started: it finished, or its agent container ran (a container the Station template
 * adds may run while the agent's image cannot be pulled). A pod without an agent container goes by its phase.
 */
function podStarted(pod: Pod): boolean {
  if (pod.status.phase === 'Succeeded' || pod.status.phase === 'Failed') return true;
  const agent = pod.status.containerStatuses.find((c) => c.name === AGENT_CONTAINER);
  if (agent === undefined) return pod.status.phase !== 'Pending';
  return agent.state.running !== undefined || agent.state.terminated !== undefined;
}

/** What keeps one Pending pod from starting, if anything known does. */
function podProblem(pod: Pod): StartProblem | undefined {
  const name = pod.metadata.name;
  const scheduled = pod.status.conditions.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
    return {
      reason: REASON.unschedulable,
      message: `pod ${name}: ${scheduled.message ?? 'no node can run it'}`,
      permanent: false,
    };
  }
  for (const c of [...pod.status.initContainerStatuses, ...pod.status.containerStatuses]) {
    const waiting = c.state.waiting;
    if (waiting?.reason === undefined) continue;
    const detail = `pod ${name}: container ${c.name}: ${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`;
    const permanent = IMAGE_REASONS.get(waiting.reason);
    if (permanent !== undefined) return { reason: REASON.imagePullFailed, message: detail, permanent };
    if (CONFIG_REASONS.has(waiting.reason))
      return { reason: REASON.containerConfigError, message: detail, permanent: false };
  }
  return undefined;
}

/** Whether a pod belongs to this Job (not to an earlier Job of the same name): its controller-uid label. */
function ofJob(pod: Pod, job: Job): boolean {
  const uid =
    pod.metadata.labels['batch.kubernetes.io/controller-uid'] ?? pod.metadata.labels['controller-uid'];
  return uid === undefined || uid === job.metadata.uid;
}

/** Where the start of `job`'s run stands, from the pods and pod-creation failures the shell observed. */
export function startState(job: Job, start: StartObservation): StartState {
  const pods = start.pods.filter((p) => ofJob(p, job));
  if (pods.some(podStarted)) return { kind: 'started' };
  const live = pods.filter((p) => p.metadata.deletionTimestamp === undefined);
  for (const pod of live) {
    const problem = podProblem(pod);
    if (problem !== undefined) return { kind: 'blocked', ...problem };
  }
  if (live.length > 0 || (job.status.active ?? 0) > 0) return { kind: 'progressing' };
  const failures = start.createFailures
    .filter((f) => f.jobUid === job.metadata.uid)
    .sort((a, b) => (a.lastSeen ?? '').localeCompare(b.lastSeen ?? ''));
  const latest = failures[failures.length - 1];
  if (latest === undefined) return { kind: 'unknown' };
  return {
    kind: 'blocked',
    reason: REASON.podRefused,
    message: `Job ${job.metadata.name} could not create its pod: ${latest.message}`,
    permanent: PERMANENT_REFUSAL.test(latest.message),
  };
}

/** The Agent's StartBlocked condition while it is True: a cause keeps its pod from starting. */
function startBlocked(agent: Agent) {
  return (agent.status.conditions ?? []).find(
    (c) => c.type === CONDITION_START_BLOCKED && c.status === 'True',
  );
}

/** Whether the Agent shows a cause keeping its pod from starting (the shell then wakes it when its pods change). */
export function showsStartProblem(agent: Agent): boolean {
  return startBlocked(agent) !== undefined;
}

/**
 * A blocked run fails no sooner than this after its cause was first shown (`StartBlocked` since), even past the
 * start timeout: a cause first seen late (a registry blip after a long pull) gets a chance to pass.
 */
export const START_GRACE_MS = 60_000;

/** Milliseconds of an RFC 3339 time, or undefined. */
function timeOf(t: string | undefined): number | undefined {
  const ms = t === undefined ? Number.NaN : Date.parse(t);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * The decision for a Running run whose Job has not finished: show or clear what keeps its pod from starting (Ready
 * False with the cause and `StartBlocked` True, one Warning Event per cause), and fail the run (through `finish`)
 * once the cause is permanent, or has lasted past the start timeout (counted from the Job's creation) and at least
 * START_GRACE_MS since it was first shown. A failure is decided only on pods listed live (`needs: 'livePods'`).
 */
export function decideStarting(
  s: JobSnapshot,
  now: Date,
  job: Job,
  finish: (c: Completion) => Decision,
): Decision {
  const { agent } = s;
  const idle: Decision = { actions: [], requeueAfterMs: s.options.requeueMs };
  if (s.start === undefined) return idle;
  const state = startState(job, s.start);
  const conditions = agent.status.conditions ?? [];
  const ready = conditions.find((c) => c.type === CONDITION_READY);
  const blocked = startBlocked(agent);
  const jobName = job.metadata.name;
  if (state.kind !== 'blocked') {
    if (blocked === undefined || state.kind === 'unknown') return idle;
    // The cause went away (the pod was created, scheduled, pulled): Ready goes back to Running.
    const message =
      state.kind === 'started' ? `Job ${jobName}: the pod started` : `Job ${jobName}: the pod is starting`;
    return {
      actions: [statusPatch(agent, {}, runningConditions(message), now, [CONDITION_START_BLOCKED])],
      requeueAfterMs: s.options.requeueMs,
    };
  }
  const timeoutMinutes = s.station?.spec.startTimeoutMinutes ?? DEFAULT_START_TIMEOUT_MINUTES;
  // From the Job's creation: a batch run's fallback Job starts long after the run did.
  const created = timeOf(job.metadata.creationTimestamp) ?? timeOf(agent.status.startedAt) ?? now.getTime();
  const shownSince =
    blocked === undefined ? now.getTime() : (timeOf(blocked.lastTransitionTime) ?? now.getTime());
  const failAt = Math.max(created + timeoutMinutes * 60_000, shownSince + START_GRACE_MS);
  if (state.permanent || (blocked !== undefined && now.getTime() >= failAt)) {
    // Decided on the pods as the API server has them now, not as the cache had them a moment ago.
    if (s.start.live !== true) return { actions: [], needs: 'livePods' };
    return finish({
      phase: 'Failed',
      jobName,
      exitCode: 1,
      output: '',
      failureReason: failureStart(state.reason, state.message, state.permanent ? undefined : timeoutMinutes),
      reason: state.reason,
      message: state.permanent
        ? `Job ${jobName}: the pod cannot start: ${state.message}`
        : `Job ${jobName}: the pod did not start within ${timeoutMinutes}m: ${state.message}`,
      failureKinds: ['start_failed'],
      extraEvents: [],
      // Once the Agent records the failure its Job goes, so nothing starts behind a Failed Agent (each poll deletes
      // it again should this delete not land: see leftoverStartJob).
      afterPatch: [
        { kind: 'deleteJob', namespace: job.metadata.namespace, name: jobName, uid: job.metadata.uid },
      ],
    });
  }
  const requeueAfterMs = Math.max(1000, Math.min(s.options.requeueMs, failAt - now.getTime()));
  // One patch and one Event per cause; the kubelet's and the Job controller's retries change nothing here.
  if (blocked?.reason === state.reason && ready?.reason === state.reason)
    return { actions: [], requeueAfterMs };
  const message = clip(state.message, MAX_CONDITION_MESSAGE);
  const updates: ConditionUpdate[] = [
    {
      type: CONDITION_READY,
      status: 'False',
      reason: state.reason,
      message: clip(
        `${state.message} (the run fails if it is still blocked ${timeoutMinutes}m after its Job was created)`,
        MAX_CONDITION_MESSAGE,
      ),
    },
    { type: CONDITION_START_BLOCKED, status: 'True', reason: state.reason, message },
  ];
  return {
    actions: [
      statusPatch(agent, {}, updates, now),
      event(agentRef(agent), 'Warning', state.reason, state.message),
    ],
    requeueAfterMs,
  };
}

/**
 * The delete of a Job left behind by a run that failed because its pod could not start (the delete after the
 * failure did not land: an API error, a crash between the two): the shell asks on every poll, so nothing starts
 * behind a Failed Agent. Undefined for anything else.
 */
export function leftoverStartJob(agent: Agent, job: Job): Action | undefined {
  if (agent.status.phase !== 'Failed' || job.metadata.deletionTimestamp !== undefined || isJobFinished(job))
    return undefined;
  const failed = (agent.status.conditions ?? []).find(
    (c) => c.type === CONDITION_FAILED && c.status === 'True',
  );
  if (failed === undefined || !START_PROBLEM_REASONS.has(failed.reason)) return undefined;
  const owner = job.metadata.ownerReferences.find((o) => o.controller === true);
  if (owner?.uid !== agent.metadata.uid) return undefined;
  return {
    kind: 'deleteJob',
    namespace: job.metadata.namespace,
    name: job.metadata.name,
    uid: job.metadata.uid,
  };
}

/**
 * What about one pod can change a run's start state: `started`, the reason keeping it from starting, `pending`, or
 * `deleting`. The shell wakes the run's Agent only when this changes, not on every status update of its pod.
 */
export function podStartSignal(pod: Pod): string {
  if (podStarted(pod)) return 'started';
  if (pod.metadata.deletionTimestamp !== undefined) return 'deleting';
  return podProblem(pod)?.reason ?? 'pending';
}
