import type { Job } from '../../api/index.ts';
import { buildRunInput, runHoldsToken } from '../../jobs/index.ts';
import type { Action, Decision } from '../actions.ts';
import { policyRefusal, runIntent, runLimits, withPolicyTools } from '../policy/check.ts';
import { isRealtime, promptTokenSecretName, realtimeProblem } from '../realtime/plan.ts';
import {
  FAILURE_MISSING_REF,
  failureBinding,
  failureBuild,
  failureInput,
  failureInvalidReference,
  failureMemory,
  failureNotMemory,
  failureNotOwned,
  failureRejected,
  failureServiceAccount,
  REASON,
} from '../reasons.ts';
import { decideServerStart, isServer, serverBuildTime, serverProblem } from '../serving/decide.ts';
import type { Snapshot } from '../snapshot.ts';
import { decideAdmission } from '../station/admission.ts';
import { decideBatchPending, holdsBatchFinalizer } from './batch.ts';
import { addCleanupFinalizer, holdsCleanupFinalizer } from './cleanup.ts';
import { dependencyGate } from './dependencies.ts';
import { runObjectActions, runObjectWarnings } from './run-objects.ts';
import {
  type BuildRequest,
  buildError,
  failBeforeStart,
  type JobBuilder,
  jobOwnership,
  preemptActions,
  queuedDecision,
  runTracing,
  stationConcurrency,
  traceIdOf,
} from './start.ts';
import { agentRef, event, formatStatusTime, runningConditions, statusPatch } from './status.ts';
import { secondsBetween } from './transition.ts';

/** Re-check period while a Job left by an earlier Agent of the same name waits for garbage collection. */
export const STALE_JOB_RETRY_MS = 2000;

/** The Pending rows of the decision table (see `decide`). */
export function decidePending(s: Snapshot, now: Date, build: JobBuilder): Decision {
  const { agent, station, definition } = s;
  if (s.invalidReference !== undefined) {
    const { kind, name, message } = s.invalidReference;
    const failureReason = failureInvalidReference(kind, name, message);
    return buildError(s, now, REASON.invalidReference, failureReason);
  }
  if (station === null || definition === null) {
    const message =
      station === null
        ? `Station ${agent.spec.stationRef} not found`
        : `AgentDefinition ${station.spec.agentDefRef} of Station ${station.metadata.name} not found`;
    return failBeforeStart(s, now, {
      kind: 'missing_ref',
      reason: REASON.missingReference,
      failureReason: FAILURE_MISSING_REF,
      message,
    });
  }
  const policy = s.policy ?? { kind: 'none' };
  const refusal = holdsBatchFinalizer(agent)
    ? undefined
    : policyRefusal(policy, definition, () => runIntent(agent, station, definition));
  if (refusal !== undefined) {
    // A run whose Job already exists started under the policy it saw then (its Running patch was lost): it is
    // adopted below, never failed by a policy changed since.
    if (s.job.kind === 'unknown' && definition.spec.execution !== 'batch')
      return { actions: [], needs: 'job' };
    if (s.job.kind !== 'present') {
      return failBeforeStart(s, now, {
        kind: 'policy',
        reason: REASON.policyViolation,
        failureReason: refusal,
        message: refusal,
      });
    }
  }
  const realtime = holdsBatchFinalizer(agent)
    ? undefined
    : realtimeProblem(agent, definition, s.options.realtime.enabled);
  if (realtime !== undefined) {
    return buildError(s, now, REASON.realtimeRefused, realtime);
  }
  const serving = serverProblem(
    agent,
    definition,
    s.options.server?.enabled === true,
    policy.kind === 'found' ? policy.policy : undefined,
  );
  if (serving !== undefined) return buildError(s, now, REASON.serverRefused, serving);
  if (definition.spec.execution === 'batch' || holdsBatchFinalizer(agent)) {
    return decideBatchPending(s, now, station, definition);
  }
  if (s.serviceAccountRefused !== undefined) {
    const failureReason = failureServiceAccount(s.serviceAccountRefused.message);
    return buildError(s, now, REASON.buildFailed, failureReason);
  }
  if (s.inputRefused !== undefined) {
    return buildError(s, now, REASON.buildFailed, failureInput(s.inputRefused.message));
  }
  if (s.bindingRefused !== undefined) {
    const failureReason = failureBinding(s.bindingRefused.message);
    return buildError(s, now, REASON.rbacRefused, failureReason);
  }
  if (s.jobRejected !== undefined) {
    const failureReason = failureRejected(s.jobRejected.message);
    return buildError(s, now, REASON.buildFailed, failureReason);
  }
  if (s.job.kind === 'present') {
    const job = s.job.job;
    switch (jobOwnership(job, agent)) {
      case 'owned':
        return adopt(s, job, now);
      case 'stale':
        return { actions: [], requeueAfterMs: STALE_JOB_RETRY_MS };
      case 'foreign': {
        const failureReason = failureNotOwned(job.metadata.name);
        return buildError(s, now, REASON.jobNotOwned, failureReason);
      }
    }
  }
  // The memory is read only for a run about to start (below); until then the Job is built, and checked, without it.
  const memory = s.memory?.kind === 'read' ? s.memory : undefined;
  const request: BuildRequest = {
    agent,
    station,
    definition: withPolicyTools(definition, policy.kind === 'found' ? policy.policy : undefined),
    agentImage: s.options.agentImage,
    // A server's objects never move by themselves: they are built as of the Agent's creation.
    now: isServer(definition) ? serverBuildTime(agent) : now,
    limits: runLimits(policy.kind === 'found' ? policy.policy : undefined),
    ...(memory !== undefined
      ? { memory: { content: memory.content, resourceVersion: memory.resourceVersion } }
      : {}),
    ...runTracing(s),
  };
  const built = build(request);
  if (!built.ok) {
    const failureReason = failureBuild(built.error);
    return buildError(s, now, REASON.buildFailed, failureReason);
  }
  // The Services it depends on have ready endpoints (it waits before admission: no slot is taken meanwhile).
  const gate = dependencyGate(s, definition, now);
  if (gate !== undefined) return gate;
  // A server takes no run slot: it is not a run of the Station's queue (issue 12).
  if (isServer(definition)) {
    return decideServerStart(s, now, station, definition, { request, job: built.value }, (reason, failure) =>
      buildError(s, now, reason, failure),
    );
  }
  const verdict = decideAdmission(s.queue, stationConcurrency(station));
  if (verdict.kind === 'wait') return queuedDecision(s, station, verdict, now);
  // A run that will hold bindings holds the cleanup finalizer first (issue 9 §6): no binding can outlive its
  // Agent unnoticed. The finalizer patch wakes this Agent again, and admission is decided afresh then.
  if (runHoldsToken(definition) && !holdsCleanupFinalizer(agent)) {
    return { actions: [addCleanupFinalizer(agent)] };
  }
  // A run with memory reads it right before its Job is created (issue 10 §3): the prompt carries that version.
  const memorySpec = definition.spec.memory;
  if (memorySpec !== undefined) {
    if (s.memory === undefined) return { actions: [], needs: 'memory' };
    if (s.memory.kind === 'forbidden' || s.memory.kind === 'notMemory') {
      const failureReason =
        s.memory.kind === 'forbidden'
          ? failureMemory(memorySpec.configMap, s.memory.message)
          : failureNotMemory(memorySpec.configMap);
      return buildError(s, now, REASON.memoryUnreadable, failureReason);
    }
  }
  const actions: Action[] = verdict.kind === 'replace' ? preemptActions(agent, station, verdict.victims) : [];
  const jobName = built.value.metadata.name;
  // The run's own NetworkPolicy (issue 9 §3, docs/design/reference-behaviour.md#d-i-networkpolicy-per-run) exists
  // before its pods can start.
  actions.push(...runObjectActions(s, station, definition));
  if (isRealtime(definition)) {
    actions.push({
      kind: 'createPromptToken',
      ref: agentRef(agent),
      uid: agent.metadata.uid,
      secretName: promptTokenSecretName(agent.metadata.name),
    });
  }
  actions.push(
    { kind: 'createRunInput', configMap: buildRunInput(request) },
    { kind: 'createJob', job: built.value },
    ...startActions(s, jobName, formatStatusTime(now), `Created Job ${jobName}`, now, now),
    ...runObjectWarnings(s, definition),
  );
  return { actions, requeueAfterMs: s.options.requeueMs };
}

/** Running + jobName + startedAt, the Started event and the queue-time metric. */
function startActions(
  s: Snapshot,
  jobName: string,
  startedAt: string,
  message: string,
  jobCreated: Date,
  now: Date,
): Action[] {
  const { agent } = s;
  const queued = secondsBetween(agent.metadata.creationTimestamp, jobCreated);
  return [
    statusPatch(
      agent,
      { phase: 'Running', jobName, startedAt, ...traceIdOf(s) },
      runningConditions(`Job ${jobName} is running`),
      now,
    ),
    event(agentRef(agent), 'Normal', REASON.started, message),
    ...(queued !== undefined
      ? [{ kind: 'observeMetric' as const, observation: { metric: 'runQueue' as const, seconds: queued } }]
      : []),
  ];
}

function adopt(s: Snapshot, job: Job, now: Date): Decision {
  const created = Date.parse(job.metadata.creationTimestamp);
  const jobCreated = Number.isNaN(created) ? now : new Date(created);
  const startedAt = s.agent.status.startedAt ?? formatStatusTime(jobCreated);
  return {
    actions: startActions(
      s,
      job.metadata.name,
      startedAt,
      `Adopted existing Job ${job.metadata.name}`,
      jobCreated,
      now,
    ),
    requeueAfterMs: s.options.requeueMs,
  };
}
