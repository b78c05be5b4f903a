import type { Job } from '../../api/index.ts';
import { capOutput, jobNameFor } from '../../jobs/index.ts';
import { parseRunReport, type RunResult } from '../../vendors/cli/run-report.ts';
import type { Decision, RunFailureKind } from '../actions.ts';
import { recordSession } from '../realtime/session.ts';
import { podLossDecision, recordProgress, sessionLostEvents, suspendDecision } from '../realtime/suspend.ts';
import {
  FAILURE_JOB_GONE,
  FAILURE_POD_GONE,
  failureInit,
  failureOutputUnavailable,
  REASON,
} from '../reasons.ts';
import type { RunEvidence } from '../snapshot/common.ts';
import type { JobSnapshot } from '../snapshot/job.ts';
import { finish } from './finish.ts';
import { recordMeteredUsage } from './metering.ts';
import {
  agentExitCode,
  agentTerminationMessage,
  coherentExitCode,
  initFailure,
  parseJobOutcome,
} from './outcome.ts';
import { jobOwnership } from './start.ts';
import { decideStarting } from './starting.ts';

/** Re-read period of a finished run's pod and log after a transient failure (issue 13 §1: found by the chaos run). */
export const EVIDENCE_RETRY_MS = 3000;
/** How long after its Job finished a run's evidence is read again after transient failures before it is given up. */
export const EVIDENCE_RETRY_WINDOW_MS = 5 * 60_000;

/** Whether the evidence failed in a way that asking again may mend. */
function transientlyUnavailable(evidence: RunEvidence): boolean {
  if (evidence.kind === 'unavailable') return evidence.transient === true;
  return evidence.kind === 'pod' && evidence.log.kind === 'unavailable' && evidence.log.transient === true;
}

/** Whether the Job's verdict (its latest terminal condition) is younger than EVIDENCE_RETRY_WINDOW_MS. */
function withinEvidenceRetry(job: Job, now: Date): boolean {
  const times = (job.status.conditions ?? [])
    .filter((c) => c.status === 'True' && TERMINAL_JOB_CONDITIONS.has(c.type))
    .map((c) => Date.parse(c.lastTransitionTime ?? ''))
    .filter((t) => !Number.isNaN(t));
  if (times.length === 0) return false;
  return now.getTime() - Math.max(...times) < EVIDENCE_RETRY_WINDOW_MS;
}

const TERMINAL_JOB_CONDITIONS: ReadonlySet<string> = new Set([
  'Complete',
  'Failed',
  'SuccessCriteriaMet',
  'FailureTarget',
]);

/** Re-check period after an early Job verdict while the agent container is still stopping. */
export const EARLY_VERDICT_RETRY_MS = 2000;

/** The Running rows of the decision table (see `decide`). */
export function decideRunning(s: JobSnapshot, now: Date): Decision {
  const { agent } = s;
  const jobName = agent.status.jobName || jobNameFor(agent.metadata.name);
  // The session id the prompt API saw first: recorded and announced on its own (issue 27 §2).
  const session = recordSession(s, now);
  if (session !== undefined) return session;
  // What the prompt API reported after each turn (issue 29): turns, the saved turn, the last prompt.
  const progress = recordProgress(s, now);
  if (progress !== undefined) return progress;
  if (s.job.kind === 'unknown') return { actions: [], needs: 'job' };
  // What the model gateway measured so far (issue 28), recorded while the run goes on.
  if (s.job.kind === 'present' && parseJobOutcome(s.job.job).kind === 'running') {
    const metered = recordMeteredUsage(s, now);
    if (metered !== undefined) return metered;
  }
  if (s.job.kind === 'absent' || jobOwnership(s.job.job, agent) !== 'owned') {
    // A realtime session with a saved turn goes on in a new pod (issue 29 §3).
    const restore = podLossDecision(s, now, `Job ${jobName} is gone`);
    if (restore !== undefined) return restore;
    return finish(s, now, {
      phase: 'Failed',
      jobName,
      exitCode: 1,
      output: '',
      failureReason: FAILURE_JOB_GONE,
      reason: REASON.jobGarbageCollected,
      message: `Job ${jobName} was garbage-collected before its result was observed`,
      failureKinds: ['output_unavailable'],
      extraEvents: sessionLostEvents(s),
    });
  }
  const outcome = parseJobOutcome(s.job.job);
  if (outcome.kind === 'running') {
    // An idle or asked-for suspend of a realtime session (issue 29 §2); else a re-check by its idle deadline.
    const idle = suspendDecision(s, s.job.job, now);
    if (idle !== undefined && idle.actions.length > 0) return idle;
    return withEarlierRequeue(
      decideStarting(s, now, s.job.job, (c) => finish(s, now, c)),
      idle?.requeueAfterMs,
    );
  }
  // A realtime session whose pod was lost (it failed; a close ends it well), not by its deadline: restored.
  if (outcome.kind === 'failed' && !deadlineExceeded(s.job.job)) {
    const restore = podLossDecision(s, now, outcome.reason);
    if (restore !== undefined) return restore;
  }
  const evidence = s.job.evidence;
  if (evidence.kind === 'notGathered') return { actions: [], needs: 'runEvidence' };
  // A result is never given up for an outage: the pod list or the log read failed in a way asking again may mend
  // (the API server restarting, a timeout, 5xx), so it is asked again for a while before the run ends without it.
  if (transientlyUnavailable(evidence) && withinEvidenceRetry(s.job.job, now))
    return { actions: [], requeueAfterMs: Math.min(EVIDENCE_RETRY_MS, s.options.requeueMs) };
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
      report: read.report,
      ...(read.unavailable !== undefined ? { failureReason: read.unavailable } : {}),
      reason: REASON.succeeded,
      message: `Job ${jobName} completed`,
      failureKinds,
      extraEvents,
    });
  }
  // When the init container failed, the agent never ran: its own reason says more than the Job's. When the CLI
  // ended on a failure event, its own message says more than the Job's backoff-limit condition.
  const init = evidence.kind === 'pod' ? initFailure(evidence.pod) : undefined;
  const failureReason =
    init !== undefined ? failureInit(init.exitCode, init.message) : (read.report?.error ?? outcome.reason);
  return finish(s, now, {
    phase,
    jobName,
    exitCode,
    output: read.output,
    report: read.report,
    failureReason,
    reason: REASON.jobFailed,
    message: `Job ${jobName} failed with exit code ${exitCode}: ${failureReason}`,
    failureKinds,
    extraEvents: [...extraEvents, ...sessionLostEvents(s)],
  });
}

/** True when the Job failed by its activeDeadlineSeconds (a session past its deadline is not restored). */
function deadlineExceeded(job: Job): boolean {
  return (job.status.conditions ?? []).some(
    (c) =>
      (c.type === 'Failed' || c.type === 'FailureTarget') &&
      c.status === 'True' &&
      c.reason === 'DeadlineExceeded',
  );
}

/** `decision` with its re-check no later than `ms` (a decision that asks for more is left as it is). */
function withEarlierRequeue(decision: Decision, ms: number | undefined): Decision {
  if (ms === undefined || decision.needs !== undefined) return decision;
  const current = decision.requeueAfterMs;
  return { ...decision, requeueAfterMs: current === undefined ? ms : Math.min(current, ms) };
}

interface EvidenceRead {
  readonly output: string;
  readonly report?: RunResult | undefined;
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
        return {
          output: '',
          podExitCode,
          unavailable: failureOutputUnavailable(evidence.log.detail),
          report: parseRunReport(agentTerminationMessage(evidence.pod)),
        };
      }
      return {
        output: capOutput(evidence.log.text, maxOutputBytes),
        podExitCode,
        unavailable: undefined,
        report: parseRunReport(agentTerminationMessage(evidence.pod)),
      };
    }
  }
}
