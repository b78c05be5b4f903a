// The fallback of a timed-out batch run with `onTimeout: fallback` (src/reconcile/agent/batch.ts): it becomes a Job
// run. It reads both the batch protocol's observations (its vendor cleanup goes on) and the Job run's (./running.ts),
// so it sits with `decide` among the modules that see the whole snapshot, and no mode imports another's
// observations (issue 27 §3).

import { buildRunInput } from '../../jobs/index.ts';
import type { Action, Decision } from '../actions.ts';
import { holdsBatchFinalizer } from '../batch/plan.ts';
import { policyRefusal, runIntent, runLimits, withPolicyTools } from '../policy/check.ts';
import { failureInput, failureServiceAccount, REASON } from '../reasons.ts';
import type { Snapshot } from '../snapshot.ts';
import { decideAdmission } from '../station/admission.ts';
import { batchConditions, decideBatchCleanup } from './batch.ts';
import { finish } from './finish.ts';
import { runObjectActions } from './run-objects.ts';
import { decideRunning } from './running.ts';
import {
  type BuildRequest,
  type JobBuilder,
  preemptActions,
  runTracing,
  stationConcurrency,
} from './start.ts';
import { agentRef, event, statusPatch } from './status.ts';

const NOTHING: Decision = { actions: [] };

/**
 * A timed-out batch run with `onTimeout: fallback`: it waits in Running (not holding a slot) until admitted, then
 * its Job is created and the Job rows apply. Meanwhile, and after, the batch is cleaned up.
 */
export function decideFallback(s: Snapshot, now: Date, build: JobBuilder): Decision {
  const { agent, station, definition } = s;
  if ((agent.status.jobName ?? '') !== '') {
    const running = decideRunning(s, now);
    if (running.actions.length > 0 || running.needs !== undefined) return running;
    if (!holdsBatchFinalizer(agent)) return running;
    const cleanup = decideBatchCleanup(s, now);
    if (cleanup.actions.length > 0 || cleanup.needs !== undefined) return cleanup;
    const recheck = earliest(running.requeueAfterMs, cleanup.requeueAfterMs);
    return recheck === undefined ? running : { ...running, requeueAfterMs: recheck };
  }
  if (s.job.kind === 'unknown') return { actions: [], needs: 'job' };
  if (station === null || definition === null) {
    return finish(s, now, {
      phase: 'Failed',
      exitCode: 1,
      output: '',
      failureReason: 'Station or AgentDefinition not found',
      reason: REASON.missingReference,
      message: 'The Station or AgentDefinition of the fallback Job run is gone',
      failureKinds: ['missing_ref'],
      extraEvents: [],
    });
  }
  if (s.job.kind === 'present') {
    // Created by an earlier attempt whose jobName patch was lost.
    const job = s.job.job;
    const owner = job.metadata.ownerReferences.find((r) => r.controller === true);
    if (owner?.uid === agent.metadata.uid)
      return fallbackStarted(s, now, job.metadata.name, 'Adopted existing Job');
    return { actions: [], requeueAfterMs: 2000 };
  }
  // The fallback Job is a new pod-running run: the Station's policy applies to it as to any Job run (the recipe may
  // have changed since the batch was submitted), and a refused ServiceAccount fails it.
  const policy = s.policy ?? { kind: 'none' };
  // A batch run never holds Kubernetes access (refused at Pending), and neither does its fallback Job, whatever the
  // recipe says now: the Job, its objects and the policy check all use this RBAC-free copy.
  const { rbac: _rbac, ...spec } = definition.spec;
  const asJob = { ...definition, spec: { ...spec, execution: 'job' as const } };
  const objectRefusal =
    s.serviceAccountRefused !== undefined
      ? failureServiceAccount(s.serviceAccountRefused.message)
      : s.inputRefused !== undefined
        ? failureInput(s.inputRefused.message)
        : undefined;
  const refusal = objectRefusal ?? policyRefusal(policy, asJob, () => runIntent(agent, station, asJob));
  if (refusal !== undefined) {
    return finish(s, now, {
      phase: 'Failed',
      exitCode: 1,
      output: '',
      failureReason: refusal,
      reason: objectRefusal !== undefined ? REASON.buildFailed : REASON.policyViolation,
      message: refusal,
      failureKinds: [objectRefusal !== undefined ? 'build_error' : 'policy'],
      extraEvents: [],
    });
  }
  const request: BuildRequest = {
    agent,
    station,
    definition: withPolicyTools(asJob, policy.kind === 'found' ? policy.policy : undefined),
    agentImage: s.options.agentImage,
    now,
    limits: runLimits(policy.kind === 'found' ? policy.policy : undefined),
    ...runTracing(s),
  };
  const built = build(request);
  if (!built.ok) {
    const failureReason = `Job build failed: ${built.error}`;
    return finish(s, now, {
      phase: 'Failed',
      exitCode: 1,
      output: '',
      failureReason,
      reason: REASON.buildFailed,
      message: failureReason,
      failureKinds: ['build_error'],
      extraEvents: [],
    });
  }
  const verdict = decideAdmission(s.queue, stationConcurrency(station));
  if (verdict.kind === 'wait') {
    // Not re-checked for a slot (the queue wakes it), but a cleanup in progress keeps its own re-check.
    return holdsBatchFinalizer(agent) ? decideBatchCleanup(s, now) : NOTHING;
  }
  const actions: Action[] = verdict.kind === 'replace' ? preemptActions(agent, station, verdict.victims) : [];
  actions.push(...runObjectActions(s, station, asJob));
  actions.push(
    { kind: 'createRunInput', configMap: buildRunInput(request) },
    { kind: 'createJob', job: built.value },
  );
  const started = fallbackStarted(s, now, built.value.metadata.name, 'Created Job');
  return { ...started, actions: [...actions, ...started.actions], admits: true };
}

/** The sooner of two optional re-check delays. */
function earliest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

function fallbackStarted(s: Snapshot, now: Date, jobName: string, what: string): Decision {
  const { agent } = s;
  return {
    actions: [
      statusPatch(
        agent,
        { jobName },
        batchConditions(REASON.running, `Job ${jobName} is running (fallback after the batch timed out)`),
        now,
      ),
      event(
        agentRef(agent),
        'Normal',
        REASON.started,
        `${what} ${jobName} (fallback after the batch timed out)`,
      ),
    ],
    requeueAfterMs: s.options.requeueMs,
  };
}
