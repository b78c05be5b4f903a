import {
  type Agent,
  type AgentDefinition,
  GROUP,
  type Job,
  KIND_AGENT,
  type Station,
} from '../../api/index.ts';
import { jobNameFor } from '../../jobs/names.ts';
import { capOutput } from '../../jobs/output-cap.ts';
import type { Result } from '../../shared/result.ts';
import type { Action, Decision, JobManifest, RunFailureKind } from '../actions.ts';
import { conditionsSatisfied } from '../conditions.ts';
import {
  FAILURE_JOB_GONE,
  FAILURE_MISSING_REF,
  FAILURE_POD_GONE,
  failureBuild,
  failureNotOwned,
  failureOutputUnavailable,
  failureRejected,
  preemptedMessage,
  REASON,
} from '../reasons.ts';
import type { RunEvidence, Snapshot } from '../snapshot.ts';
import { admit } from '../station/admission.ts';
import { pruneActions } from '../station/prune.ts';
import { isSameAgent } from '../station/runs.ts';
import { agentExitCode, coherentExitCode, parseJobOutcome } from './outcome.ts';
import {
  agentRef,
  event,
  failedConditions,
  formatStatusTime,
  queuedConditions,
  runningConditions,
  statusPatch,
  succeededConditions,
} from './status.ts';

/** What the Job builder receives: the run's objects and the Job creation time (for `AGENT_DEADLINE_AT`). */
export interface BuildRequest {
  readonly agent: Agent;
  readonly station: Station;
  readonly definition: AgentDefinition;
  readonly agentImage: string;
  readonly now: Date;
}

/** Builds the run's Job, or says in one line why it cannot be built (bad template, host escape, …). Pure. */
export type JobBuilder = (request: BuildRequest) => Result<JobManifest, string>;

/** Re-check period while a Job left by an earlier Agent of the same name waits for garbage collection. */
export const STALE_JOB_RETRY_MS = 2000;

const NOTHING: Decision = { actions: [] };

/**
 * The decision table (reference §5.1 with decisions a, b, d, f): what to do about one Agent given `snapshot`, at
 * time `now`. Pure and total: every snapshot yields a decision, nothing is read from the clock or the network.
 *
 * - Succeeded / Failed, or an Agent being deleted → no actions at all.
 * - Pending:
 *   - Station or AgentDefinition missing (404) → Failed `Station or AgentDefinition not found`, completedAt,
 *     no exitCode, no retry; metric `missing_ref`, not timed.
 *   - the API server refused the Job (`jobRejected`) → Failed, `build_error`.
 *   - a Job of the run's name exists: owned by this Agent (controller ownerReference uid) → adopted: Running,
 *     jobName, startedAt = the Job's creation; left by an earlier Agent of the same name, or being deleted →
 *     wait for garbage collection; anything else → Failed `Job … is not owned by this Agent`, `build_error`.
 *   - the Job cannot be built → Failed with the builder's reason, `build_error` (decided before admission, so a
 *     broken recipe fails at once instead of queueing).
 *   - admission (`admit`): wait → Ready=False/Queued (patched and announced once), requeue; Replace → delete the
 *     victims first (resourceVersion preconditions, `preempted`); then createJob and Running, jobName, startedAt.
 * - Running:
 *   - Job not read → `needs: 'job'`; still running → nothing, requeue.
 *   - finished (`Complete`/`SuccessCriteriaMet` → Succeeded, exitCode 0; `Failed`/`FailureTarget` → Failed,
 *     exitCode = the agent container's non-zero code else 1, failureReason `<reason>: <message>`); pod and log
 *     not gathered → `needs: 'runEvidence'`; output = capped log tail; pod gone → terminal anyway, keeping the
 *     Job's reason, else `run output unavailable: pod garbage-collected` (`output_unavailable`).
 *   - Job gone (or replaced by one this Agent does not own) → Failed, exitCode 1,
 *     `run record unavailable: Job garbage-collected before its result was observed`.
 *   - then the Station's history is pruned.
 *
 * Every status patch carries the Agent's resourceVersion, `observedGeneration` and the full condition list;
 * every transition records an Event (Normal for progress, Warning for failures) and its metrics.
 */
export function decide(snapshot: Snapshot, now: Date, build: JobBuilder): Decision {
  const { agent } = snapshot;
  if (agent.metadata.deletionTimestamp !== undefined) return NOTHING;
  switch (agent.status.phase) {
    case 'Succeeded':
    case 'Failed':
      return NOTHING;
    case 'Running':
      return decideRunning(snapshot, now);
    case 'Pending':
      return decidePending(snapshot, now, build);
  }
}

// ---------------------------------------------------------------------------------------------------- Pending

function decidePending(s: Snapshot, now: Date, build: JobBuilder): Decision {
  const { agent, station, definition } = s;
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
  if (s.jobRejected !== undefined) {
    const failureReason = failureRejected(s.jobRejected.message);
    return failBeforeStart(s, now, {
      kind: 'build_error',
      reason: REASON.buildFailed,
      failureReason,
      message: failureReason,
    });
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
        return failBeforeStart(s, now, {
          kind: 'build_error',
          reason: REASON.jobNotOwned,
          failureReason,
          message: failureReason,
        });
      }
    }
  }
  const built = build({ agent, station, definition, agentImage: s.options.agentImage, now });
  if (!built.ok) {
    const failureReason = failureBuild(built.error);
    return failBeforeStart(s, now, {
      kind: 'build_error',
      reason: REASON.buildFailed,
      failureReason,
      message: failureReason,
    });
  }
  const verdict = admit(agent, s.siblings, {
    name: station.metadata.name,
    maxConcurrentRuns: station.spec.maxConcurrentRuns,
    concurrencyPolicy: station.spec.concurrencyPolicy,
  });
  if (verdict.kind === 'wait') {
    const limit = verdict.limit;
    const message = `Waiting for a free run slot: Station ${station.metadata.name} allows ${limit} run${limit === 1 ? '' : 's'} at once (concurrencyPolicy ${verdict.policy})`;
    const updates = queuedConditions(message);
    const stamped = updates.map((u) => ({ ...u, observedGeneration: agent.metadata.generation }));
    if (conditionsSatisfied(agent.status.conditions, stamped)) {
      return { actions: [], requeueAfterMs: s.options.requeueMs };
    }
    return {
      actions: [
        statusPatch(agent, { phase: 'Pending' }, updates, now),
        event(agentRef(agent), 'Normal', REASON.queued, message),
      ],
      requeueAfterMs: s.options.requeueMs,
    };
  }
  const actions: Action[] = [];
  if (verdict.kind === 'replace') {
    const reason = preemptedMessage(agent.metadata.name, station.metadata.name);
    for (const victim of verdict.victims) {
      const victimRef = agentRef(victim);
      actions.push(
        {
          kind: 'deleteAgent',
          ref: victimRef,
          resourceVersion: victim.metadata.resourceVersion,
          purpose: 'preempt',
          reason,
        },
        event(victimRef, 'Warning', REASON.preempted, reason),
        { kind: 'observeMetric', observation: { metric: 'runFailure', kind: 'preempted' } },
        event(
          agentRef(agent),
          'Normal',
          REASON.preempting,
          `Deleted Agent ${victim.metadata.name} to make room (Station ${station.metadata.name}, concurrencyPolicy Replace)`,
        ),
      );
    }
  }
  const jobName = built.value.metadata.name;
  actions.push(
    { kind: 'createJob', job: built.value },
    ...startActions(agent, jobName, formatStatusTime(now), `Created Job ${jobName}`, now, now),
  );
  return { actions, requeueAfterMs: s.options.requeueMs };
}

/** Running + jobName + startedAt, the Started event and the queue-time metric. */
function startActions(
  agent: Agent,
  jobName: string,
  startedAt: string,
  message: string,
  jobCreated: Date,
  now: Date,
): Action[] {
  const queued = secondsBetween(agent.metadata.creationTimestamp, jobCreated);
  return [
    statusPatch(
      agent,
      { phase: 'Running', jobName, startedAt },
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
      s.agent,
      job.metadata.name,
      startedAt,
      `Adopted existing Job ${job.metadata.name}`,
      jobCreated,
      now,
    ),
    requeueAfterMs: s.options.requeueMs,
  };
}

/**
 * Whose Job this is: `owned` when its controller ownerReference names this Agent's uid; `stale` when it is
 * being deleted or its controller is an earlier Agent of the same name (garbage collection will remove it);
 * `foreign` otherwise.
 */
export function jobOwnership(job: Job, agent: Agent): 'owned' | 'stale' | 'foreign' {
  const owner = job.metadata.ownerReferences.find((r) => r.controller === true);
  if (owner !== undefined && owner.uid === agent.metadata.uid) return 'owned';
  if (job.metadata.deletionTimestamp !== undefined) return 'stale';
  if (
    owner !== undefined &&
    owner.kind === KIND_AGENT &&
    owner.apiVersion.startsWith(`${GROUP}/`) &&
    owner.name === agent.metadata.name
  ) {
    return 'stale';
  }
  return 'foreign';
}

interface EarlyFailure {
  readonly kind: RunFailureKind;
  readonly reason: string;
  readonly failureReason: string;
  readonly message: string;
}

/** A Pending Agent fails without a run: no jobName, no exitCode, not timed. */
function failBeforeStart(s: Snapshot, now: Date, f: EarlyFailure): Decision {
  const { agent } = s;
  const completedAt = formatStatusTime(now);
  return {
    actions: [
      statusPatch(
        agent,
        { phase: 'Failed', failureReason: f.failureReason, completedAt },
        failedConditions(f.reason, f.message),
        now,
      ),
      event(agentRef(agent), 'Warning', f.reason, f.message),
      { kind: 'observeMetric', observation: { metric: 'runCompleted', phase: 'Failed' } },
      { kind: 'observeMetric', observation: { metric: 'runFailure', kind: f.kind } },
      ...pruneAfter(s, 'Failed', completedAt),
    ],
  };
}

// ---------------------------------------------------------------------------------------------------- Running

function decideRunning(s: Snapshot, now: Date): Decision {
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
  return finish(s, now, {
    phase,
    jobName,
    exitCode,
    output: read.output,
    failureReason: outcome.reason,
    reason: REASON.jobFailed,
    message: `Job ${jobName} failed with exit code ${exitCode}: ${outcome.reason}`,
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

interface Completion {
  readonly phase: 'Succeeded' | 'Failed';
  readonly jobName: string;
  readonly exitCode: number;
  readonly output: string;
  readonly failureReason?: string;
  /** Condition and Event reason of the transition. */
  readonly reason: string;
  readonly message: string;
  readonly failureKinds: readonly RunFailureKind[];
  readonly extraEvents: readonly { type: 'Normal' | 'Warning'; reason: string; message: string }[];
}

/** The terminal transition of a run that started: status, events, metrics, then the history sweep. */
function finish(s: Snapshot, now: Date, c: Completion): Decision {
  const { agent } = s;
  const completedAt = formatStatusTime(now);
  const ref = agentRef(agent);
  const conditions =
    c.phase === 'Succeeded' ? succeededConditions(c.message) : failedConditions(c.reason, c.message);
  const duration = secondsBetween(agent.status.startedAt, now);
  const actions: Action[] = [
    statusPatch(
      agent,
      {
        phase: c.phase,
        jobName: c.jobName,
        exitCode: c.exitCode,
        output: c.output,
        ...(c.failureReason !== undefined ? { failureReason: c.failureReason } : {}),
        completedAt,
      },
      conditions,
      now,
    ),
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

/**
 * The history sweep of the Agent's Station after its terminal transition, computed on the state the transition
 * produces (unlike the reference, which saw the finished run as still Running). The Agent itself is never
 * deleted here: its resourceVersion is about to change; the next poll sweep prunes it if a limit requires.
 */
function pruneAfter(s: Snapshot, phase: 'Succeeded' | 'Failed', completedAt: string): Action[] {
  if (s.station === null) return [];
  const { agent } = s;
  const self: Agent = { ...agent, status: { ...agent.status, phase, completedAt } };
  const others = s.siblings.filter((a) => !isSameAgent(a, agent));
  return pruneActions(s.station, [...others, self], (a) => isSameAgent(a, agent));
}

function secondsBetween(from: string | undefined, to: Date): number | undefined {
  if (from === undefined) return undefined;
  const t = Date.parse(from);
  if (Number.isNaN(t)) return undefined;
  return Math.max(0, (to.getTime() - t) / 1000);
}
