import { resolveModel } from '../../api/index.ts';
import { capOutput, jobNameFor } from '../../jobs/index.ts';
import { sessionIdInOutput, vendorForModel } from '../../vendors/cli/index.ts';
import type { Action, Decision, RunFailureKind } from '../actions.ts';
import { isRealtime } from '../realtime/plan.ts';
import {
  FAILURE_JOB_GONE,
  FAILURE_POD_GONE,
  failureInit,
  failureOutputUnavailable,
  REASON,
} from '../reasons.ts';
import type { RunEvidence, Snapshot } from '../snapshot.ts';
import { agentExitCode, coherentExitCode, initFailure, parseJobOutcome } from './outcome.ts';
import { jobOwnership } from './pending.ts';
import {
  agentRef,
  event,
  failedConditions,
  formatStatusTime,
  statusPatch,
  succeededConditions,
} from './status.ts';
import { pruneAfter, secondsBetween } from './transition.ts';

/** Re-check period after an early Job verdict while the agent container is still stopping. */
export const EARLY_VERDICT_RETRY_MS = 2000;

/** The Running rows of the decision table (see `decide`). */
export function decideRunning(s: Snapshot, now: Date): Decision {
  const { agent } = s;
  const jobName = agent.status.jobName || jobNameFor(agent.metadata.name);
  if (s.job.kind === 'unknown') return { actions: [], needs: 'job' };
  if (s.job.kind === 'absent' || jobOwnership(s.job.job, agent) !== 'owned') {
    return finish(s, now, {
      phase: 'Failed',
      jobName,
      exitCode: 1,
      output: '',
      failureReason: FAILURE_JOB_GONE,
      reason: REASON.jobGarbageCollected,
      message: `Job ${jobName} was garbage-collected before its result was observed`,
      failureKinds: ['output_unavailable'],
      extraEvents: [],
    });
  }
  const outcome = parseJobOutcome(s.job.job);
  if (outcome.kind === 'running') return { actions: [], requeueAfterMs: s.options.requeueMs };
  const evidence = s.job.evidence;
  if (evidence.kind === 'notGathered') return { actions: [], needs: 'runEvidence' };
  if (outcome.early && evidence.kind === 'pod' && agentExitCode(evidence.pod) === undefined) {
    // FailureTarget / SuccessCriteriaMet while the agent container is still being stopped: its exit code and the
    // end of its log are not final yet. The final Complete / Failed condition follows once the pod is gone or
    // stopped, and is always accepted, so this wait cannot stall the run.
    return { actions: [], requeueAfterMs: Math.min(EARLY_VERDICT_RETRY_MS, s.options.requeueMs) };
  }
  const phase = outcome.kind === 'succeeded' ? 'Succeeded' : 'Failed';
  const read = readEvidence(evidence, s.options.maxOutputBytes);
  const exitCode = coherentExitCode(phase, read.podExitCode);
  const failureKinds: RunFailureKind[] = [];
  if (phase === 'Failed') failureKinds.push('job_failed');
  if (read.unavailable !== undefined) failureKinds.push('output_unavailable');
  const extraEvents =
    read.unavailable !== undefined
      ? [{ type: 'Warning' as const, reason: REASON.outputUnavailable, message: read.unavailable }]
      : [];
  if (outcome.kind === 'succeeded') {
    return finish(s, now, {
      phase,
      jobName,
      exitCode,
      output: read.output,
      ...(read.unavailable !== undefined ? { failureReason: read.unavailable } : {}),
      reason: REASON.succeeded,
      message: `Job ${jobName} completed`,
      failureKinds,
      extraEvents,
    });
  }
  // When the init container failed, the agent never ran: its own reason says more than the Job's.
  const init = evidence.kind === 'pod' ? initFailure(evidence.pod) : undefined;
  const failureReason = init !== undefined ? failureInit(init.exitCode, init.message) : outcome.reason;
  return finish(s, now, {
    phase,
    jobName,
    exitCode,
    output: read.output,
    failureReason,
    reason: REASON.jobFailed,
    message: `Job ${jobName} failed with exit code ${exitCode}: ${failureReason}`,
    failureKinds,
    extraEvents,
  });
}

interface EvidenceRead {
  readonly output: string;
  readonly podExitCode: number | undefined;
  /** Why the output is unavailable (a `status.failureReason` text), when it is. */
  readonly unavailable: string | undefined;
}

function readEvidence(
  evidence: Exclude<RunEvidence, { kind: 'notGathered' }>,
  maxOutputBytes: number,
): EvidenceRead {
  switch (evidence.kind) {
    case 'podGone':
      return { output: '', podExitCode: undefined, unavailable: FAILURE_POD_GONE };
    case 'unavailable':
      return { output: '', podExitCode: undefined, unavailable: failureOutputUnavailable(evidence.detail) };
    case 'pod': {
      const podExitCode = agentExitCode(evidence.pod);
      if (evidence.log.kind === 'unavailable') {
        return { output: '', podExitCode, unavailable: failureOutputUnavailable(evidence.log.detail) };
      }
      return { output: capOutput(evidence.log.text, maxOutputBytes), podExitCode, unavailable: undefined };
    }
  }
}

export interface Completion {
  readonly phase: 'Succeeded' | 'Failed';
  /** The run's Job; absent for a batch run. */
  readonly jobName?: string;
  readonly exitCode: number;
  readonly output: string;
  readonly failureReason?: string;
  /** Condition and Event reason of the transition. */
  readonly reason: string;
  readonly message: string;
  readonly failureKinds: readonly RunFailureKind[];
  readonly extraEvents: readonly { type: 'Normal' | 'Warning'; reason: string; message: string }[];
  /** Actions that must follow the status patch at once (sink notifications: only once the patch succeeded). */
  readonly afterPatch?: readonly Action[];
}

/** The terminal transition of a run that started: status, events, metrics, then the history sweep. */
export function finish(s: Snapshot, now: Date, c: Completion): Decision {
  const { agent } = s;
  const completedAt = formatStatusTime(now);
  const ref = agentRef(agent);
  const conditions =
    c.phase === 'Succeeded' ? succeededConditions(c.message) : failedConditions(c.reason, c.message);
  const duration = secondsBetween(agent.status.startedAt, now);
  // A realtime run's session id, read from its output as the final check (the prompt API records it as it goes).
  const sessionId =
    s.definition !== null && isRealtime(s.definition)
      ? sessionIdInOutput(vendorForModel(resolveModel(agent, s.definition)), c.output)
      : undefined;
  const actions: Action[] = [
    statusPatch(
      agent,
      {
        phase: c.phase,
        ...(sessionId !== undefined && sessionId !== agent.status.sessionId ? { sessionId } : {}),
        ...(c.jobName !== undefined ? { jobName: c.jobName } : {}),
        exitCode: c.exitCode,
        output: c.output,
        ...(c.failureReason !== undefined ? { failureReason: c.failureReason } : {}),
        completedAt,
      },
      conditions,
      now,
    ),
    ...(c.afterPatch ?? []),
    event(ref, c.phase === 'Succeeded' ? 'Normal' : 'Warning', c.reason, c.message),
    ...c.extraEvents.map((e) => event(ref, e.type, e.reason, e.message)),
    { kind: 'observeMetric', observation: { metric: 'runCompleted', phase: c.phase, exitCode: c.exitCode } },
    ...(duration !== undefined
      ? [
          {
            kind: 'observeMetric' as const,
            observation: { metric: 'runDuration' as const, phase: c.phase, seconds: duration },
          },
        ]
      : []),
    ...c.failureKinds.map(
      (kind): Action => ({ kind: 'observeMetric', observation: { metric: 'runFailure', kind } }),
    ),
    ...pruneAfter(s, c.phase, completedAt),
  ];
  return { actions };
}
