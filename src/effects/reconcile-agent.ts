import { type Agent, isTerminalPhase } from '../api/index.ts';
import { describeKubeError } from '../kube/index.ts';
import {
  type Decision,
  decide,
  EMPTY_QUEUE_VIEW,
  type ReconcileOptions,
  type Snapshot,
  type StationBook,
} from '../reconcile/index.ts';
import type { WorkResult } from '../runtime/index.ts';
import type { Logger } from '../shared/log.ts';
import { type ExecuteDeps, executeActions } from './execute.ts';
import { type GatherDeps, gatherEvidence, lookupDefinition, lookupStation, observeJob } from './gather.ts';

export interface ReconcileDeps extends GatherDeps, ExecuteDeps {
  /**
   * The (parsed) Agents of the cache by Station, fed synchronously from every cache change (see `StationBook`):
   * the source of the Agent itself too. Admissions decided here are recorded in it before their Job is asked for.
   */
  readonly book: StationBook<Agent>;
  /** False once this replica stopped leading: no Job is created after that (a fence against a late handler). */
  readonly leading?: () => boolean;
  readonly options: ReconcileOptions;
  readonly now: () => Date;
  readonly logger: Logger;
}

/** The most decide → gather rounds one reconcile makes (job, evidence, existing Job, rejected Job). */
const MAX_ROUNDS = 5;

/**
 * Reconciles one Agent by key (`namespace/name`): reads the cache and the few live objects the core needs, asks
 * `decide`, and executes the decision. Level-triggered: it never trusts the event that woke it.
 * Guarantees: never throws; an API failure yields `retry` (per-key backoff); a superseded write yields `done`
 * (the change that superseded it wakes the key again).
 */
export async function reconcileAgent(key: string, deps: ReconcileDeps): Promise<WorkResult> {
  const agent = deps.book.get(key);
  if (agent === undefined) return { kind: 'done' };
  const log = deps.logger.with({ agent: key });
  if (isTerminalPhase(agent.status.phase) || agent.metadata.deletionTimestamp !== undefined)
    return { kind: 'done' };
  let snapshot: Snapshot = {
    agent,
    station: null,
    definition: null,
    job: { kind: 'unknown' },
    queue: EMPTY_QUEUE_VIEW,
    options: deps.options,
  };
  const refs = await resolveRefs(agent, snapshot, deps);
  if (!refs.ok) {
    log.warn('Reading references failed, will retry', { error: refs.error });
    return { kind: 'retry', reason: refs.error };
  }
  snapshot = refs.snapshot;

  for (let round = 0; round < MAX_ROUNDS; round++) {
    // The Station picture is read, decided on and (for an admission) written back in one synchronous step, so
    // no other reconcile can decide between them: two admissions never see the same free slot (decision l).
    const queue = deps.book.view(key);
    if (queue === undefined) return { kind: 'done' };
    snapshot = { ...snapshot, queue };
    const decision: Decision = decide(snapshot, deps.now());
    const starts = decision.actions.some((a) => a.kind === 'createJob');
    if (starts) deps.book.admit(key);
    if (decision.needs === 'job') {
      const job = await observeJob(deps, agent);
      if (!job.ok) return retry(log, 'Reading the Job failed', describeKubeError(job.error));
      snapshot = { ...snapshot, job: job.value };
      continue;
    }
    if (decision.needs === 'runEvidence') {
      if (snapshot.job.kind !== 'present') return retry(log, 'Run evidence needed without a Job', 'internal');
      const evidence = await gatherEvidence(deps, snapshot.job.job);
      snapshot = { ...snapshot, job: { ...snapshot.job, evidence } };
      continue;
    }
    let createSent = false;
    const outcome = await executeActions(decision.actions, {
      ...deps,
      beforeCreateJob: () => {
        if (deps.leading !== undefined && !deps.leading()) return false;
        createSent = true;
        return true;
      },
    });
    // An admission whose Job was never asked for gives its slot back; once asked, the slot stays held until the
    // Agent is seen Running, finished or gone (the create may have landed even if its answer was lost).
    if (starts && !createSent) deps.book.release(key);
    switch (outcome.kind) {
      case 'done':
      case 'superseded':
        return decision.requeueAfterMs !== undefined && outcome.kind === 'done'
          ? { kind: 'requeueAfter', ms: decision.requeueAfterMs }
          : { kind: 'done' };
      case 'jobExists': {
        const job = await observeJob(deps, agent);
        if (!job.ok) return retry(log, 'Reading the existing Job failed', describeKubeError(job.error));
        snapshot = { ...snapshot, job: job.value };
        continue;
      }
      case 'jobRejected':
        snapshot = { ...snapshot, jobRejected: { message: outcome.message } };
        continue;
      case 'error':
        return retry(log, `Action ${outcome.action} failed`, describeKubeError(outcome.error));
    }
  }
  return retry(log, 'Reconcile did not settle', `after ${MAX_ROUNDS} rounds`);
}

function retry(log: Logger, msg: string, error: string): WorkResult {
  log.warn(`${msg}, will retry`, { error });
  return { kind: 'retry', reason: error };
}

/**
 * Fills Station and AgentDefinition into the snapshot. A Running Agent needs only the Station (for pruning after
 * its terminal transition); a Pending one needs both. 404 → null (the core fails a Pending Agent); an object that
 * exists but does not parse → `invalidReference`.
 */
async function resolveRefs(
  agent: Agent,
  snapshot: Snapshot,
  deps: ReconcileDeps,
): Promise<{ ok: true; snapshot: Snapshot } | { ok: false; error: string }> {
  const station = await lookupStation(deps, agent);
  if (!station.ok) return { ok: false, error: describeKubeError(station.error) };
  if (station.value.kind === 'absent') return { ok: true, snapshot };
  if (station.value.kind === 'invalid') {
    return {
      ok: true,
      snapshot: {
        ...snapshot,
        invalidReference: { kind: 'Station', name: agent.spec.stationRef, message: station.value.message },
      },
    };
  }
  const withStation: Snapshot = { ...snapshot, station: station.value.value };
  if (agent.status.phase !== 'Pending') return { ok: true, snapshot: withStation };
  const namespace = agent.metadata.namespace ?? '';
  const definition = await lookupDefinition(deps, namespace, station.value.value);
  if (!definition.ok) return { ok: false, error: describeKubeError(definition.error) };
  if (definition.value.kind === 'absent') return { ok: true, snapshot: withStation };
  if (definition.value.kind === 'invalid') {
    return {
      ok: true,
      snapshot: {
        ...withStation,
        invalidReference: {
          kind: 'AgentDefinition',
          name: station.value.value.spec.agentDefRef,
          message: definition.value.message,
        },
      },
    };
  }
  return { ok: true, snapshot: { ...withStation, definition: definition.value.value } };
}
