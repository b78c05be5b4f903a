// The start step every execution mode shares: building the run (the Job builder's contract, tracing), admission's
// verdicts as actions (queued, preempting the victims of Replace), ownership of an existing Job, and failing a run
// before it starts. Each mode's Pending decision (pending.ts for Jobs, batch.ts, serving/decide.ts) builds on it.

import { type Agent, GROUP, type Job, KIND_AGENT, type Station } from '../../api/index.ts';
import type { BuildJobInput } from '../../jobs/index.ts';
import type { Result } from '../../shared/result.ts';
import { runTrace } from '../../shared/trace-context.ts';
import type { Action, Decision, JobManifest, RunFailureKind } from '../actions.ts';
import { conditionsSatisfied } from '../conditions.ts';
import { preemptedMessage, REASON } from '../reasons.ts';
import type { Snapshot } from '../snapshot.ts';
import {
  agentRef,
  event,
  failedConditions,
  formatStatusTime,
  queuedConditions,
  statusPatch,
} from './status.ts';
import { pruneAfter } from './transition.ts';

/** What the Job builder receives: the run's objects, the init image and the Job creation time. */
export type BuildRequest = BuildJobInput;

/**
 * Builds the run's Job, or says in one line why it cannot be built (bad template, host escape, …). Pure.
 * `decide` uses src/jobs `buildJob` unless told otherwise.
 */
export type JobBuilder = (request: BuildRequest) => Result<JobManifest, string>;

/** What a run's Job is built with when the controller traces (issue 10 §5). */
export function runTracing(s: Snapshot): { tracing?: { tracesUrl: string } } {
  const t = s.options.tracing;
  return t !== undefined ? { tracing: { tracesUrl: t.runTracesUrl } } : {};
}

/** `status.traceID` of a starting run when the controller traces (issue 10 §5); nothing otherwise. */
export function traceIdOf(s: Snapshot): { traceID?: string } {
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
  s: Snapshot,
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

export interface EarlyFailure {
  readonly kind: RunFailureKind;
  readonly reason: string;
  readonly failureReason: string;
  readonly message: string;
}

/** A Pending Agent fails without a run because it cannot be built or started: `build_error`, one line for both. */
export function buildError(s: Snapshot, now: Date, reason: string, failureReason: string): Decision {
  return failBeforeStart(s, now, { kind: 'build_error', reason, failureReason, message: failureReason });
}

/** A Pending Agent fails without a run: no jobName, no exitCode, not timed. */
export function failBeforeStart(s: Snapshot, now: Date, f: EarlyFailure): Decision {
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
