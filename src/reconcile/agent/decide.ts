import { buildJob } from '../../jobs/index.ts';
import type { Decision } from '../actions.ts';
import { holdsBatchFinalizer } from '../batch/plan.ts';
import { asWake, sessionCleanup, suspendedJobWork, wakeRequest } from '../realtime/suspend.ts';
import { failureBuild } from '../reasons.ts';
import { decideServerStart, decideServing, serverRequest } from '../serving/decide.ts';
import { isServer, serverBuildTime } from '../serving/plan.ts';
import type { Snapshot } from '../snapshot.ts';
import { decideBatchCleanup, decideBatchPending, decideBatchRunning, isBatchRun } from './batch.ts';
import { budgetVerdict, capExceededDecision, spendFinalizerWork, withBudgetMetrics } from './budget.ts';
import { decideRunCleanup, holdsCleanupFinalizer } from './cleanup.ts';
import { buildError } from './fail.ts';
import { decideFallback } from './fallback.ts';
import { withFound } from './found.ts';
import { decideJobStart } from './job.ts';
import { recordMeteredUsage } from './metering.ts';
import { decideRunning } from './running.ts';
import { checkStart, type JobBuilder, preparePodRun } from './start.ts';

export { EARLY_VERDICT_RETRY_MS } from './running.ts';
export { type BuildRequest, type JobBuilder, jobOwnership, STALE_JOB_RETRY_MS } from './start.ts';

const NOTHING: Decision = { actions: [] };

/**
 * The decision table (docs/design/reference-behaviour.md#decision-table, with differences D-a, D-b, D-d and D-f):
 * what to do about one Agent given `snapshot`, at
 * time `now`. Pure and total: every snapshot yields a decision, nothing is read from the clock or the network.
 *
 * - Succeeded / Failed, or an Agent being deleted → no actions, unless it holds a finalizer (see below).
 * - Pending:
 *   - the Station or AgentDefinition exists but is invalid (`invalidReference`) → Failed with the reason,
 *     `build_error`.
 *   - Station or AgentDefinition missing (404) → Failed `Station or AgentDefinition not found`, completedAt,
 *     no exitCode, no retry; metric `missing_ref`, not timed.
 *   - the API server refused the Job (`jobRejected`) → Failed, `build_error`.
 *   - a Job of the run's name exists: owned by this Agent (controller ownerReference uid) → adopted: Running,
 *     jobName, startedAt = the Job's creation; left by an earlier Agent of the same name, or being deleted →
 *     wait for garbage collection; anything else → Failed `Job … is not owned by this Agent`, `build_error`.
 *   - the Job cannot be built → Failed with the builder's reason, `build_error` (decided before admission, so a
 *     broken recipe fails at once instead of queueing).
 *   - admission (`admit`): wait → Ready=False/Queued (patched and announced once), requeue; Replace → delete the
 *     victims first (resourceVersion preconditions, `preempted`); then
 *     the run's createNetworkPolicy (docs/design/reference-behaviour.md#d-i-networkpolicy-per-run, issue 9); then
 *     createJob and Running, jobName, startedAt.
 *   - a definition with `spec.memory` (issue 10 §3): once admitted, the memory ConfigMap not read → `needs:
 *     'memory'`; the controller may not read it → Failed `MemoryUnreadable` naming the grant, `build_error`; else
 *     the Job carries the memory (prompt, mount, annotations). A batch recipe with memory fails `BatchUnsupported`.
 * - Running:
 *   - Job not read → `needs: 'job'`; still running → nothing, requeue, unless its pod cannot start (issue 13 §4,
 *     ./starting.ts): the cause (PodRefused, ImagePullFailed, ContainerConfigError, Unschedulable) as Ready=False
 *     with one Warning Event; past the Station's startTimeoutMinutes, or at once when permanent, Failed with it
 *     (`start_failed`) and the Job deleted after the patch; Ready back to Running once the cause is gone.
 *   - finished (`Complete`/`SuccessCriteriaMet` → Succeeded, exitCode 0; `Failed`/`FailureTarget` → Failed,
 *     exitCode = the agent container's non-zero code else 1, failureReason `<reason>: <message>`); pod and log
 *     not gathered → `needs: 'runEvidence'`; an early verdict while the agent container is still stopping →
 *     wait for it (the final condition is always accepted); output = capped log tail; pod gone → terminal anyway, keeping the
 *     Job's reason, else `run output unavailable: pod garbage-collected` (`output_unavailable`).
 *   - Job gone (or replaced by one this Agent does not own) → Failed, exitCode 1,
 *     `run record unavailable: Job garbage-collected before its result was observed`.
 *   - Succeeded, and the Job records a memory (issue 10 §3): the last memory block of the final answer (an exec
 *     run's output) is saved: the memory ConfigMap not observed → `needs: 'memorySave'`; then `saveMemory` (create,
 *     or replace at the resourceVersion read) right before the terminal patch, its Events after the run's own
 *     (agent/memory.ts); over the run's maxSizeKB → Warning `MemoryTooLarge` instead; a cut answer → Warning
 *     `MemoryNotSaved`. No block, or Failed → nothing.
 *   - then the Station's history is pruned.
 *
 * - Runs that hold bindings (AgentDefinition `spec.rbac`): Pending → the cleanup finalizer first, then the run's
 *   ServiceAccount, its bindings, NetworkPolicy and Job; finished → the bindings are deleted, then the finalizer;
 *   deleted while Pending or Running → the Job is deleted (Foreground), then the bindings, then the finalizer.
 *
 * - Batch runs (`execution: batch`; src/reconcile/agent/batch.ts): Pending → finalizer, then the submission
 *   record (Running, batchProvider); Running → submit or find the submission, batchId, then the poller's result
 *   or the timeout (fail, or fall back to a Job: `batchFallback`); finished, fallen back or deleted → vendor
 *   cleanup, then the finalizer is removed.
 *
 * - A run object whose create met 409 (`found`, ./found.ts): this run's → adopted; an earlier Agent's → wait; a run
 *   input of this run with other data, or orphaned → deleted (uid precondition) and created again, once; anything
 *   else → the refusal of its kind (Failed).
 *
 * Every status patch carries the Agent's resourceVersion, `observedGeneration` and the full condition list;
 * every transition records an Event (Normal for progress, Warning for failures) and its metrics.
 */
export function decide(snapshot: Snapshot, now: Date, build: JobBuilder = buildJob): Decision {
  // Objects found under the names of the run's objects (issue 27 §2) are judged here, for every mode.
  return withFound(snapshot, (s) => decideAgent(s, now, build));
}

function decideAgent(snapshot: Snapshot, now: Date, build: JobBuilder): Decision {
  const { agent } = snapshot;
  if (agent.metadata.deletionTimestamp !== undefined) return finalizerWork(snapshot, now);
  switch (agent.status.phase) {
    case 'Succeeded':
    case 'Failed':
      // Usage the model gateway wrote after the result was recorded (issue 28): recorded too, then the finalizers.
      return recordMeteredUsage(snapshot, now) ?? finalizerWork(snapshot, now);
    case 'Running':
      if (agent.status.batchFallback === true) return decideFallback(snapshot, now, build);
      if (isBatchRun(agent)) return decideBatchRunning(snapshot, now);
      // A run whose measured usage reached its per-run cap ends Failed, its Job deleted (issue 28 §4).
      return capExceededDecision(snapshot, now) ?? decideRunning(snapshot, now);
    case 'Pending':
      return decidePendingAgent(snapshot, now, build);
    case 'Serving':
      // A server behind the model gateway: what it has used so far, recorded as it goes (issue 28).
      return recordMeteredUsage(snapshot, now) ?? decideServingAgent(snapshot, now, build);
    case 'Suspended':
      return decideSuspended(snapshot, now, build);
  }
}

/**
 * A Suspended realtime session (issue 29, docs/design/sessions.md): the Job it had is deleted if it is still there;
 * asked to wake (a prompt, `resume`, or its pod lost) it is admitted again like a Pending run, FIFO behind its
 * Station's limit by the time it was asked, and its new Job is built to restore the saved session; otherwise it
 * waits, holding no run slot and no timer (the wake's annotation wakes it).
 */
function decideSuspended(s: Snapshot, now: Date, build: JobBuilder): Decision {
  const leftover = suspendedJobWork(s);
  if (leftover !== undefined) return leftover;
  const wake = wakeRequest(s.agent);
  if (wake === undefined) return NOTHING;
  const checked = checkStart(s, now);
  if (checked.kind === 'decided') return checked.decision;
  const restoring: JobBuilder = (request) => build({ ...request, sessionRestore: true });
  const prepared = preparePodRun(s, now, restoring, checked, now);
  if (prepared.kind === 'decided') return asWake(s, wake, prepared.decision, now);
  return asWake(s, wake, decideJobStart(s, now, checked, prepared), now);
}

/**
 * A Pending Agent: the start step every mode shares (./start.ts), then its mode: a batch run (or one that holds the
 * batch finalizer) submits to its vendor, a server creates its objects, a Job run is admitted in its Station.
 */
function decidePendingAgent(s: Snapshot, now: Date, build: JobBuilder): Decision {
  const checked = checkStart(s, now);
  if (checked.kind === 'decided') return checked.decision;
  const { station, definition } = checked;
  if (definition.spec.execution === 'batch' || holdsBatchFinalizer(s.agent)) {
    // The windowed budgets hold a batch run before it is submitted (issue 28 §4).
    const gate = holdsBatchFinalizer(s.agent) ? undefined : budgetVerdict(s, now, station);
    if (gate?.kind === 'held') return gate.decision;
    return withBudgetMetrics(decideBatchPending(s, now, station, definition), gate?.metrics ?? []);
  }
  const server = isServer(definition);
  const prepared = preparePodRun(s, now, build, checked, server ? serverBuildTime(s.agent) : now);
  if (prepared.kind === 'decided') return prepared.decision;
  // The windowed budgets of its Station and namespace (issue 28 §4): a run whose budget is spent waits or fails here,
  // before it takes a run slot (a Job run then meets the key-saturation gate of issue 28 §5, in ./job.ts).
  const gate = budgetVerdict(s, now, station);
  if (gate?.kind === 'held') return gate.decision;
  const metrics = gate?.metrics ?? [];
  // A server takes no run slot: it is not a run of the Station's queue (issue 12).
  if (server) {
    return withBudgetMetrics(
      decideServerStart(s, now, station, definition, prepared, (reason, failure) =>
        buildError(s, now, reason, failure),
      ),
      metrics,
    );
  }
  return withBudgetMetrics(decideJobStart(s, now, checked, prepared), metrics);
}

/** A server (issue 12): its objects rebuilt from the current recipe, Station and policy, then compared. */
function decideServingAgent(s: Snapshot, now: Date, build: JobBuilder): Decision {
  const request = serverRequest(s);
  if (request === undefined) return decideServing(s, now, undefined, undefined);
  const built = build(request);
  if (!built.ok) return decideServing(s, now, undefined, failureBuild(built.error));
  return decideServing(s, now, { request, job: built.value }, undefined);
}

/**
 * What a finished or deleted Agent still has to do: the batch cleanup, then the run cleanup (issue 9 §6), then its
 * stored session (issue 29 §5), then its spend.
 */
function finalizerWork(snapshot: Snapshot, now: Date): Decision {
  if (holdsBatchFinalizer(snapshot.agent)) return decideBatchCleanup(snapshot, now);
  if (holdsCleanupFinalizer(snapshot.agent)) return decideRunCleanup(snapshot);
  // The stored session of a deleted Agent, or of a finished run beyond its Station's sessionHistoryLimit (issue 29 §5).
  const session = sessionCleanup(snapshot, now);
  if (session !== undefined) return session;
  // A deleted run's spend reaches the namespace's ledger before the Agent goes (issue 28 §4).
  return spendFinalizerWork(snapshot, now) ?? NOTHING;
}
