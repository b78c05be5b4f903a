// The start step every execution mode shares (ARCHITECTURE.md, "One run, end to end"): the checks every Pending
// Agent passes first (references, policy, realtime and server refusals), the preparation of a run with pods (refused
// run objects, an existing Job adopted, the Job built, dependencies ready), admission's verdicts as actions (queued,
// preempting the victims of Replace), the Running transition, and tracing. `decide` (./decide.ts) runs these steps and
// hands over to the mode: ./job.ts, ./batch.ts, ../serving/decide.ts; no mode imports another.

import {
  type Agent,
  type AgentDefinition,
  type GatewayGrant,
  GROUP,
  type Job,
  KIND_AGENT,
  type Station,
} from '../../api/index.ts';
import { type BuildJobInput, gatewayCredentialSecretName, gatewayGrant } from '../../jobs/index.ts';
import type { Result } from '../../shared/result.ts';
import { runTrace } from '../../shared/trace-context.ts';
import type { Action, Decision, JobManifest } from '../actions.ts';
import { holdsBatchFinalizer } from '../batch/plan.ts';
import { capForGrant, perRunCap } from '../budget/rules.ts';
import { conditionsSatisfied } from '../conditions.ts';
import { policyRefusal, runIntent, runLimits, withPolicyTools } from '../policy/check.ts';
import { realtimeProblem } from '../realtime/plan.ts';
import { sessionProblem } from '../realtime/suspend.ts';
import {
  FAILURE_MISSING_REF,
  failureBinding,
  failureBuild,
  failureInput,
  failureInvalidReference,
  failureNotOwned,
  failureRejected,
  failureServiceAccount,
  preemptedMessage,
  REASON,
} from '../reasons.ts';
import { serverProblem } from '../serving/plan.ts';
import type { CommonSnapshot } from '../snapshot/common.ts';
import { dependencyGate } from './dependencies.ts';
import { buildError, failBeforeStart } from './fail.ts';
import {
  agentRef,
  event,
  formatStatusTime,
  queuedConditions,
  runningConditions,
  statusPatch,
} from './status.ts';
import { secondsBetween } from './transition.ts';

/** What the Job builder receives: the run's objects, the init image and the Job creation time. */
export type BuildRequest = BuildJobInput;

/**
 * Builds the run's Job, or says in one line why it cannot be built (bad template, host escape, …). Pure.
 * `decide` uses src/jobs `buildJob` unless told otherwise.
 */
export type JobBuilder = (request: BuildRequest) => Result<JobManifest, string>;

/** What a run's Job is built with when the controller traces (issue 10 §5). */
export function runTracing(s: CommonSnapshot): { tracing?: { tracesUrl: string } } {
  const t = s.options.tracing;
  return t !== undefined ? { tracing: { tracesUrl: t.runTracesUrl } } : {};
}

/** `status.traceID` of a starting run when the controller traces (issue 10 §5); nothing otherwise. */
export function traceIdOf(s: CommonSnapshot): { traceID?: string } {
  if (s.options.tracing === undefined) return {};
  return { traceID: runTrace(s.agent.metadata.uid, s.agent.metadata.annotations).traceId };
}

/** The concurrency settings admission reads from a Station. */
export function stationConcurrency(station: Station) {
  return {
    name: station.metadata.name,
    maxConcurrentRuns: station.spec.maxConcurrentRuns,
    concurrencyPolicy: station.spec.concurrencyPolicy,
  };
}

/**
 * A Pending Agent told to wait: Ready=False/Queued, patched and announced once. No re-check timer: a queued Agent
 * is woken when a slot may have freed for it (the shell wakes the heads of a Station's queue on every change that
 * frees one, and on every poll), so 10,000 queued Agents cost nothing while nothing changes.
 */
export function queuedDecision(
  s: CommonSnapshot,
  station: Station,
  verdict: { readonly limit: number; readonly policy: string },
  now: Date,
): Decision {
  const { agent } = s;
  const limit = verdict.limit;
  const message = `Waiting for a free run slot: Station ${station.metadata.name} allows ${limit} run${limit === 1 ? '' : 's'} at once (concurrencyPolicy ${verdict.policy})`;
  const updates = queuedConditions(message);
  const stamped = updates.map((u) => ({ ...u, observedGeneration: agent.metadata.generation }));
  if (conditionsSatisfied(agent.status.conditions, stamped)) return { actions: [] };
  return {
    actions: [
      statusPatch(agent, { phase: 'Pending' }, updates, now),
      event(agentRef(agent), 'Normal', REASON.queued, message),
    ],
  };
}

/** Deleting the victims chosen under concurrencyPolicy Replace (resourceVersion preconditions), with Events. */
export function preemptActions(agent: Agent, station: Station, victims: readonly Agent[]): Action[] {
  const actions: Action[] = [];
  const reason = preemptedMessage(agent.metadata.name, station.metadata.name);
  for (const victim of victims) {
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
  return actions;
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

/** Re-check period while a Job left by an earlier Agent of the same name waits for garbage collection. */
export const STALE_JOB_RETRY_MS = 2000;

/** One step of starting a run: decided here (fail, wait, ask), or go on with what it established. */
export type Step<T> =
  | { readonly kind: 'decided'; readonly decision: Decision }
  | ({ readonly kind: 'go' } & T);

const decided = (decision: Decision): { readonly kind: 'decided'; readonly decision: Decision } => ({
  kind: 'decided',
  decision,
});

/** A Pending Agent that passed the checks every mode makes: its Station, definition and policy observation. */
export interface Checked {
  readonly station: Station;
  readonly definition: AgentDefinition;
  readonly policy: NonNullable<CommonSnapshot['policy']>;
}

/**
 * The checks every execution mode makes first, in this order: the references (invalid, missing), the AgentPolicy
 * (a run whose Job exists is adopted under the policy it started with), then what realtime and server runs refuse.
 * A batch run that holds its finalizer has passed them already.
 */
export function checkStart(s: CommonSnapshot, now: Date): Step<Checked> {
  const { agent, station, definition } = s;
  if (s.invalidReference !== undefined) {
    const { kind, name, message } = s.invalidReference;
    const failureReason = failureInvalidReference(kind, name, message);
    return decided(buildError(s, now, REASON.invalidReference, failureReason));
  }
  if (station === null || definition === null) {
    const message =
      station === null
        ? `Station ${agent.spec.stationRef} not found`
        : `AgentDefinition ${station.spec.agentDefRef} of Station ${station.metadata.name} not found`;
    return decided(
      failBeforeStart(s, now, {
        kind: 'missing_ref',
        reason: REASON.missingReference,
        failureReason: FAILURE_MISSING_REF,
        message,
      }),
    );
  }
  const policy = s.policy ?? { kind: 'none' };
  const refusal = holdsBatchFinalizer(agent)
    ? undefined
    : policyRefusal(policy, definition, () => runIntent(agent, station, definition));
  if (refusal !== undefined) {
    // A run whose Job already exists started under the policy it saw then (its Running patch was lost): it is
    // adopted below, never failed by a policy changed since.
    if (s.job.kind === 'unknown' && definition.spec.execution !== 'batch')
      return decided({ actions: [], needs: 'job' });
    if (s.job.kind !== 'present') {
      return decided(
        failBeforeStart(s, now, {
          kind: 'policy',
          reason: REASON.policyViolation,
          failureReason: refusal,
          message: refusal,
        }),
      );
    }
  }
  const realtime = holdsBatchFinalizer(agent)
    ? undefined
    : realtimeProblem(agent, definition, s.options.realtime.enabled);
  if (realtime !== undefined) {
    return decided(buildError(s, now, REASON.realtimeRefused, realtime));
  }
  const session = holdsBatchFinalizer(agent)
    ? undefined
    : sessionProblem(station, definition, s.options.sessions?.enabled === true);
  if (session !== undefined) return decided(buildError(s, now, REASON.sessionRefused, session));
  const serving = serverProblem(
    agent,
    definition,
    s.options.server?.enabled === true,
    policy.kind === 'found' ? policy.policy : undefined,
  );
  if (serving !== undefined) return decided(buildError(s, now, REASON.serverRefused, serving));

  return { kind: 'go', station, definition, policy };
}

/** A pod run (a Job, or a server's Deployment) built and allowed to proceed to admission. */
export interface Prepared {
  readonly request: BuildRequest;
  readonly job: JobManifest;
}

/**
 * What a run with pods (a Job run or a server) does before admission: fail on a run object the API server refused,
 * adopt or wait for a Job of its name, build the Job (at `buildTime`: a server's objects never move by themselves,
 * so they are built as of the Agent's creation), wait for the Services it depends on.
 */
export function preparePodRun(
  s: CommonSnapshot,
  now: Date,
  build: JobBuilder,
  checked: Checked,
  buildTime: Date,
): Step<Prepared> {
  const { agent } = s;
  const { station, definition, policy } = checked;
  if (s.serviceAccountRefused !== undefined) {
    const failureReason = failureServiceAccount(s.serviceAccountRefused.message);
    return decided(buildError(s, now, REASON.buildFailed, failureReason));
  }
  if (s.inputRefused !== undefined) {
    return decided(buildError(s, now, REASON.buildFailed, failureInput(s.inputRefused.message)));
  }
  if (s.bindingRefused !== undefined) {
    const failureReason = failureBinding(s.bindingRefused.message);
    return decided(buildError(s, now, REASON.rbacRefused, failureReason));
  }
  if (s.jobRejected !== undefined) {
    const failureReason = failureRejected(s.jobRejected.message);
    return decided(buildError(s, now, REASON.buildFailed, failureReason));
  }
  if (s.job.kind === 'present') {
    const job = s.job.job;
    switch (jobOwnership(job, agent)) {
      case 'owned':
        return decided(adopt(s, job, now, runGrant(s, checked)));
      case 'stale':
        return decided({ actions: [], requeueAfterMs: STALE_JOB_RETRY_MS });
      case 'foreign': {
        const failureReason = failureNotOwned(job.metadata.name);
        return decided(buildError(s, now, REASON.jobNotOwned, failureReason));
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
    now: buildTime,
    limits: runLimits(policy.kind === 'found' ? policy.policy : undefined),
    ...(memory !== undefined
      ? { memory: { content: memory.content, resourceVersion: memory.resourceVersion } }
      : {}),
    ...runTracing(s),
    ...(s.options.gateway !== undefined ? { gateway: s.options.gateway } : {}),
  };
  const built = build(request);
  if (!built.ok) {
    const failureReason = failureBuild(built.error);
    return decided(buildError(s, now, REASON.buildFailed, failureReason));
  }
  // The Services it depends on have ready endpoints (it waits before admission: no slot is taken meanwhile).
  const gate = dependencyGate(s, definition, now);
  if (gate !== undefined) return decided(gate);

  return { kind: 'go', request, job: built.value };
}

/**
 * What the model gateway may do for this run (issue 28), when the controller runs with one: the vendor keys its
 * recipe names, the models its policy allows, and its per-run cap (the stricter of the policy's and the Station's
 * per-run budgets). Recorded on its status when it starts.
 */
export function runGrant(
  s: CommonSnapshot,
  checked: Pick<Checked, 'definition' | 'station'>,
): GatewayGrant | undefined {
  if (s.options.gateway === undefined) return undefined;
  const policy = s.policy ?? { kind: 'none' };
  const found = policy.kind === 'found' ? policy.policy : undefined;
  const models = found?.spec.models?.allowed;
  const budget = capForGrant(perRunCap(found?.spec.budgets, checked.station.spec.budgets));
  return gatewayGrant(checked.definition, models, budget);
}

/** The Secret of a run's gateway credential, made right before the pods that read it. */
export function gatewayCredentialAction(s: CommonSnapshot): Action {
  return {
    kind: 'createGatewayCredential',
    ref: agentRef(s.agent),
    uid: s.agent.metadata.uid,
    secretName: gatewayCredentialSecretName(s.agent.metadata.name),
  };
}

/** Running + jobName + startedAt (and the gateway grant), the Started event and the queue-time metric. */
export function startActions(
  s: CommonSnapshot,
  jobName: string,
  startedAt: string,
  message: string,
  jobCreated: Date,
  now: Date,
  grant: GatewayGrant | undefined,
): Action[] {
  const { agent } = s;
  const queued = secondsBetween(agent.metadata.creationTimestamp, jobCreated);
  return [
    statusPatch(
      agent,
      {
        phase: 'Running',
        jobName,
        startedAt,
        ...traceIdOf(s),
        ...(grant !== undefined ? { gateway: grant } : {}),
      },
      runningConditions(`Job ${jobName} is running`),
      now,
    ),
    event(agentRef(agent), 'Normal', REASON.started, message),
    ...(queued !== undefined
      ? [{ kind: 'observeMetric' as const, observation: { metric: 'runQueue' as const, seconds: queued } }]
      : []),
  ];
}

function adopt(s: CommonSnapshot, job: Job, now: Date, grant: GatewayGrant | undefined): Decision {
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
      grant,
    ),
    requeueAfterMs: s.options.requeueMs,
  };
}
