import { type Agent, isTerminalPhase } from '../api/index.ts';
import { type ApiServerEndpoints, runHoldsToken } from '../jobs/index.ts';
import { describeKubeError } from '../kube/index.ts';
import { cleanupBackoffMs, isBatchRun } from '../reconcile/agent/batch.ts';
import { holdsSpendFinalizer } from '../reconcile/agent/budget.ts';
import { holdsCleanupFinalizer } from '../reconcile/agent/cleanup.ts';
import { runMemory } from '../reconcile/agent/memory.ts';
import { meteringBehind } from '../reconcile/agent/metering.ts';
import { apiKeySecretKey, holdsBatchFinalizer, isBatchProvider } from '../reconcile/batch/plan.ts';
import { EMPTY_LEDGER } from '../reconcile/budget/ledger.ts';
import {
  type Decision,
  decide,
  EMPTY_QUEUE_VIEW,
  type ReconcileOptions,
  type Snapshot,
  type StationBook,
} from '../reconcile/index.ts';
import { holdsSessionFinalizer } from '../reconcile/realtime/suspend.ts';
import type { PriceTable } from '../reconcile/results/prices.ts';
import { desiredServerObjects } from '../reconcile/serving/decide.ts';
import type {
  BatchObservations,
  CommonSnapshot,
  EndpointObservation,
  JobObservations,
  MemoryConfigMapObservation,
  ServerObservations,
  SpendObservation,
  StartObservation,
} from '../reconcile/snapshot.ts';
import type { WorkResult } from '../runtime/index.ts';
import type { Logger } from '../shared/log.ts';
import type { RunSpans } from '../telemetry/run-spans.ts';
import { describeBatchError } from '../vendors/batch/http.ts';
import { runCustomId } from '../vendors/batch/port.ts';
import type { BatchPoller } from './batch/poller.ts';
import { checkCredentials, knownSubmission, vendorCall } from './batch/runtime.ts';
import { type ExecuteDeps, type ExecuteOutcome, executeActions, serverKeyOf } from './execute.ts';
import {
  cachedDefinition,
  type GatherDeps,
  gatherEvidence,
  listJobPods,
  lookupDefinition,
  lookupPolicy,
  lookupStation,
  observeJob,
  runJobName,
} from './gather.ts';
import { observeMemoryConfigMap, readMemory } from './memory.ts';
import { observeServer } from './server.ts';

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
  /** The latest observation of each in-flight vendor batch. */
  readonly poller?: BatchPoller;
  /** Where the API server listens, as last read (for runs that hold a token); undefined when unknown. */
  readonly apiServer?: () => Promise<ApiServerEndpoints | undefined>;
  /** The EndpointSlices of Services of a namespace, for the dependencies gate (from a watch). */
  readonly endpoints?: (namespace: string, services: readonly string[]) => EndpointObservation;
  /** The price table of cost estimates (default: the shipped prices). */
  readonly prices?: () => PriceTable;
  /** The vendor keys the model gateway reports saturated (entry → until, ms), when the controller runs with one. */
  readonly keySaturation?: () => ReadonlyMap<string, number>;
  /** The runs' spans (issue 10 §5), when the controller traces. */
  readonly spans?: RunSpans;
  /**
   * The pods and pod-creation failures of a Job (`namespace`, `jobName`), from the shell's watches (issue 13 §4):
   * what keeps a Running run from starting. Absent: runs wait for their Job's verdict alone.
   */
  readonly starts?: (namespace: string, jobName: string) => StartObservation | undefined;
  /** The spend of a namespace (issue 28 §4), from the caches; absent: an empty ledger and no Agents (tests). */
  readonly spend?: (namespace: string) => SpendObservation;
}

/**
 * The most decide → gather rounds one reconcile makes (job, evidence, existing Job, rejected Job; credentials,
 * vendor search, submission, cleanup; the memory of a starting run). The longest path is a Succeeded run's memory
 * save (issue 27 §2): job, evidence, the memory ConfigMap, then up to MAX_MEMORY_WRITES (5) writes that each meet a
 * changed ConfigMap and are decided again, then the decision that gives up: 9 rounds; 12 leaves room for the live
 * pod listing and a round or two more without ever cutting a save short.
 */
export const MAX_ROUNDS = 12;

/** How soon an Agent whose decision was dropped because this replica could not write is looked at again. */
export const NOT_LEADING_RECHECK_MS = 1000;

/** How soon a server whose object changed between read and write is looked at again (issue 12). */
export const SERVER_CONFLICT_RETRY_MS = 1000;

/**
 * Reconciles one Agent by key (`namespace/name`), queued for `reason` (the trigger that woke it, shown in the debug
 * line; docs/design/wiring.md): reads the cache and the few live objects the core needs, asks
 * `decide`, and executes the decision. Level-triggered: it never trusts the event that woke it.
 * Guarantees: never throws; an API failure yields `retry` (per-key backoff); a superseded write yields `done`
 * (the change that superseded it wakes the key again); while this replica may not write (its Lease renewal in
 * doubt) nothing is read or written and the key is looked at again after NOT_LEADING_RECHECK_MS.
 */
export async function reconcileAgent(key: string, deps: ReconcileDeps, reason?: string): Promise<WorkResult> {
  const started = Date.now();
  const result = await reconcileTraced(key, deps);
  deps.logger.debug('Reconciled', {
    agent: key,
    ...(reason !== undefined ? { reason } : {}),
    result: result.kind,
    ms: Date.now() - started,
  });
  return result;
}

async function reconcileTraced(key: string, deps: ReconcileDeps): Promise<WorkResult> {
  const agent = deps.spans !== undefined ? deps.book.get(key) : undefined;
  if (deps.spans === undefined || agent === undefined || !needsReconcile(agent))
    return reconcileOnce(key, deps);
  const span = deps.spans.reconcile(agent);
  let result: WorkResult = { kind: 'retry', reason: 'the reconcile threw' };
  try {
    result = await reconcileOnce(key, { ...deps, onAction: span.action });
    return result;
  } finally {
    span.end(result.kind, result.kind === 'retry' ? result.reason : undefined);
  }
}

/** Whether the Agent's run is (now) a Job: not a vendor batch, unless it fell back to a Job. */
function runsAJob(agent: Agent): boolean {
  return !isBatchRun(agent) || agent.status.batchFallback === true;
}

/** False for an Agent whose run is over and that holds none of the finalizers the controller removes. */
function needsReconcile(agent: Agent): boolean {
  const finished = isTerminalPhase(agent.status.phase) || agent.metadata.deletionTimestamp !== undefined;
  return (
    !finished ||
    holdsBatchFinalizer(agent) ||
    holdsCleanupFinalizer(agent) ||
    // A stored session to delete with its Agent, or beyond its Station's sessionHistoryLimit (issue 29 §5).
    holdsSessionFinalizer(agent) ||
    meteringBehind(agent) ||
    // A deleted run whose spend still has to reach the ledger (issue 28 §4).
    (agent.metadata.deletionTimestamp !== undefined && holdsSpendFinalizer(agent))
  );
}

async function reconcileOnce(key: string, deps: ReconcileDeps): Promise<WorkResult> {
  const agent = deps.book.get(key);
  if (agent === undefined) return { kind: 'done' };
  const log = deps.logger.with({ agent: key });
  if (!needsReconcile(agent)) return { kind: 'done' };
  // Nothing decided now could be written: no live reads (Job, pods, log, memory, vendor) are spent on it.
  if (deps.mayWrite !== undefined && !deps.mayWrite())
    return { kind: 'requeueAfter', ms: NOT_LEADING_RECHECK_MS };
  // This replica deleted it (pruned or preempted) and the cache has not caught up: nothing is decided on the version
  // before the delete (issue 13 §1: a preempted Agent got a Job after its deletion). Its deletion, or its
  // deletionTimestamp when a finalizer holds it, wakes it again.
  if (deps.tombstones?.has(agent.metadata.uid) === true && agent.metadata.deletionTimestamp === undefined)
    return { kind: 'done' };
  const first = await initialSnapshot(agent, deps);
  if (!first.ok) {
    log.warn('Reading references failed, will retry', { error: first.error });
    return { kind: 'retry', reason: first.error };
  }
  let snapshot = first.snapshot;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    // The Station picture is read, decided on and (for an admission) written back in one synchronous step, so
    // no other reconcile can decide between them: two admissions never see the same free slot
    // (docs/design/reference-behaviour.md#d-l-admission-by-construction).
    const queue = deps.book.view(key);
    if (queue === undefined) return { kind: 'done' };
    snapshot = { ...snapshot, queue };
    const decision: Decision = decide(snapshot, deps.now());
    const starts = decision.admits === true || decision.actions.some((a) => a.kind === 'createJob');
    if (starts) deps.book.admit(key);
    const step =
      decision.needs !== undefined
        ? await gatherNeed(decision.needs, snapshot, deps, log)
        : await execute(key, decision, starts, snapshot, deps, log);
    if (step.kind === 'result') return step.result;
    snapshot = step.snapshot;
  }
  return retry(log, 'Reconcile did not settle', `after ${MAX_ROUNDS} rounds`);
}

/** What one round of a reconcile ends with: decide again on `snapshot`, or the reconcile's result. */
type Round =
  | { readonly kind: 'again'; readonly snapshot: Snapshot }
  | { readonly kind: 'result'; readonly result: WorkResult };

const again = (snapshot: Snapshot): Round => ({ kind: 'again', snapshot });
const result = (r: WorkResult): Round => ({ kind: 'result', result: r });

/**
 * The snapshot a reconcile starts from, each part built in one place (issue 27 §3): the batch protocol's and the
 * server's observations (the shell's own records: submission and poller, cleanup backoff, the server key), the common
 * part (the cached Agent, its Station, definition and policy, prices, and what a Pending run reads from the watches:
 * EndpointSlices, the API server's address), then the Job run's (its pods, from the watches).
 */
async function initialSnapshot(
  agent: Agent,
  deps: ReconcileDeps,
): Promise<{ ok: true; snapshot: Snapshot } | { ok: false; error: string }> {
  const batch = batchObservations(agent, deps);
  const server = serverObservations(agent, deps);
  const common = await commonPart(agent, deps);
  if (!common.ok) return common;
  const job = jobObservations(agent, deps);
  return { ok: true, snapshot: { ...common.snapshot, ...job, ...batch, ...server } };
}

/** What every mode reads: the Agent, its references and policy, prices, and a Pending run's watched endpoints. */
async function commonPart(
  agent: Agent,
  deps: ReconcileDeps,
): Promise<{ ok: true; snapshot: CommonSnapshot } | { ok: false; error: string }> {
  const base: CommonSnapshot = {
    agent,
    station: null,
    definition: null,
    job: { kind: 'unknown' },
    queue: EMPTY_QUEUE_VIEW,
    options: deps.options,
    ...(deps.prices !== undefined ? { prices: deps.prices() } : {}),
  };
  const refs = await resolveRefs(agent, base, deps);
  if (!refs.ok) return refs;
  let snapshot = refs.snapshot;
  // A Pending run with dependencies sees their EndpointSlices (cached from a watch).
  const dependencies = snapshot.definition?.spec.dependencies ?? [];
  if (agent.status.phase === 'Pending' && dependencies.length > 0 && deps.endpoints !== undefined) {
    snapshot = {
      ...snapshot,
      endpoints: deps.endpoints(
        agent.metadata.namespace,
        dependencies.map((d) => d.service),
      ),
    };
  }
  // A Pending run behind the gateway sees the keys it reports saturated (cached from a watch).
  if (agent.status.phase === 'Pending' && deps.keySaturation !== undefined)
    snapshot = { ...snapshot, keySaturation: deps.keySaturation() };
  // A Pending run that will hold a token gets an egress rule to the API server: where it listens is read for it.
  if (
    agent.status.phase === 'Pending' &&
    deps.apiServer !== undefined &&
    snapshot.definition !== null &&
    runHoldsToken(snapshot.definition)
  ) {
    snapshot = { ...snapshot, apiServer: await deps.apiServer() };
  }
  return { ok: true, snapshot };
}

/** A Job run in progress sees its pods and pod-creation failures (cached from watches): a pod kept from starting. */
function jobObservations(agent: Agent, deps: ReconcileDeps): JobObservations {
  if (agent.status.phase !== 'Running' || deps.starts === undefined || !runsAJob(agent)) return {};
  const start = deps.starts(agent.metadata.namespace, runJobName(agent));
  return start !== undefined ? { start } : {};
}

/** The batch protocol's state as this replica knows it: the submission, the poller's latest, the cleanup backoff. */
function batchObservations(agent: Agent, deps: ReconcileDeps): BatchObservations {
  const uid = agent.metadata.uid;
  const notBefore = deps.batch?.cleanupNotBefore.get(uid);
  return {
    ...(deps.batch !== undefined ? { submission: knownSubmission(deps.batch, uid) } : {}),
    ...(deps.poller !== undefined ? { batchState: deps.poller.observation(uid) } : {}),
    ...(notBefore !== undefined ? { cleanupNotBefore: new Date(notBefore) } : {}),
  };
}

/** A server's API-key Secret the executor created or found taken, not yet on the Agent's status. */
function serverObservations(agent: Agent, deps: ReconcileDeps): ServerObservations {
  const serverKey = serverKeyOf(deps.serverKeys, agent.metadata.uid, agent.status.apiKeySecretUID);
  return serverKey !== undefined ? { serverKey } : {};
}

/** Gathers the one observation a decision asked for (`needs`). */
async function gatherNeed(
  need: NonNullable<Decision['needs']>,
  snapshot: Snapshot,
  deps: ReconcileDeps,
  log: Logger,
): Promise<Round> {
  const { agent } = snapshot;
  switch (need) {
    case 'credentials': {
      if (deps.batch === undefined || snapshot.definition === null)
        return result(retry(log, 'Batch credentials needed', 'batch execution is not configured'));
      const checked = await checkCredentials(deps.batch, agent, snapshot.definition);
      if (!checked.ok) return result(retry(log, 'Reading batch credentials failed', checked.error));
      return again({ ...snapshot, credentials: checked.value });
    }
    case 'batchLookup': {
      const found = await lookupSubmission(deps, agent, snapshot);
      if (!found.ok)
        return result(retry(log, 'Searching the vendor for an earlier submission failed', found.error));
      return again({ ...snapshot, submission: found.value });
    }
    case 'memory': {
      const spec = snapshot.definition?.spec.memory;
      if (spec === undefined) return result(retry(log, 'Memory needed without spec.memory', 'internal'));
      const read = await readMemory(deps, agent.metadata.namespace, spec.configMap);
      if (!read.ok) return result(retry(log, 'Reading the memory ConfigMap failed', read.error));
      return again({ ...snapshot, memory: read.value });
    }
    case 'memorySave': {
      const observed = await observeMemorySave(snapshot, deps);
      if (observed === undefined) return result(retry(log, 'Memory to save without one', 'internal'));
      return again({ ...snapshot, memorySave: { configMap: observed, changed: 0 } });
    }
    case 'job': {
      const job = await observeJob(deps, agent);
      if (!job.ok) return result(retry(log, 'Reading the Job failed', describeKubeError(job.error)));
      return again({ ...snapshot, job: job.value });
    }
    case 'livePods': {
      if (snapshot.job.kind !== 'present' || snapshot.start === undefined)
        return result(retry(log, 'Live pods needed without a Job', 'internal'));
      const pods = await listJobPods(deps, snapshot.job.job);
      if (!pods.ok) return result(retry(log, "Listing the run's pods failed", describeKubeError(pods.error)));
      return again({ ...snapshot, start: { ...snapshot.start, pods: pods.value, live: true } });
    }
    case 'server': {
      if (snapshot.station === null || snapshot.definition === null)
        return result(retry(log, 'Server objects needed without a Station and definition', 'internal'));
      const read = await observeServer(
        { transport: deps.transport, timeoutMs: deps.timeoutMs ?? 30_000 },
        agent,
        snapshot.definition,
        desiredServerObjects(snapshot),
      );
      if (!read.ok) return result(retry(log, "Reading the server's objects failed", read.error));
      return again({ ...snapshot, server: read.value });
    }
    case 'spend': {
      const spend = deps.spend?.(agent.metadata.namespace) ?? {
        ledger: EMPTY_LEDGER,
        live: new Set([agent.metadata.uid]),
        runs: new Map(),
      };
      return again({ ...snapshot, spend });
    }
    case 'runEvidence': {
      if (snapshot.job.kind !== 'present')
        return result(retry(log, 'Run evidence needed without a Job', 'internal'));
      const evidence = await gatherEvidence(deps, snapshot.job.job);
      return again({ ...snapshot, job: { ...snapshot.job, evidence } });
    }
    default: {
      const unhandled: never = need;
      return result(retry(log, 'Unhandled need', String(unhandled)));
    }
  }
}

/**
 * Executes a decision, gives back an admission whose Job was never asked for, and turns the executor's outcome into
 * the reconcile's result or the observation to decide again with.
 */
async function execute(
  key: string,
  decision: Decision,
  starts: boolean,
  snapshot: Snapshot,
  deps: ReconcileDeps,
  log: Logger,
): Promise<Round> {
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
  // Agent is seen Running, finished or gone (the create may have landed even if its answer was lost). A batch
  // admission (the finalizer, then the submission record) is given back when its write was refused.
  const createsJob = decision.actions.some((a) => a.kind === 'createJob');
  if (starts && (createsJob ? !createSent : outcome.kind === 'superseded' || outcome.kind === 'notLeading'))
    deps.book.release(key);
  if (decision.submissionRecord === true && outcome.kind === 'done')
    deps.batch?.nothingOutstanding.add(snapshot.agent.metadata.uid);
  return afterOutcome(outcome, decision, snapshot, deps, log);
}

/** What an executor outcome means for the reconcile: its result, or the snapshot to decide again on. */
async function afterOutcome(
  outcome: ExecuteOutcome,
  decision: Decision,
  snapshot: Snapshot,
  deps: ReconcileDeps,
  log: Logger,
): Promise<Round> {
  const { agent } = snapshot;
  switch (outcome.kind) {
    case 'done':
    case 'superseded':
      // A server object changed between its read and its write (its controller writing status, a person's edit):
      // nothing watched wakes the Agent for that, so it is looked at again shortly.
      if (outcome.kind === 'superseded' && decision.actions.some((a) => a.kind === 'applyServerObject'))
        return result({ kind: 'requeueAfter', ms: SERVER_CONFLICT_RETRY_MS });
      return result(
        decision.requeueAfterMs !== undefined && outcome.kind === 'done'
          ? { kind: 'requeueAfter', ms: decision.requeueAfterMs }
          : { kind: 'done' },
      );
    case 'notLeading':
      // Not a reason to forget the key: when the Lease's renewal is confirmed after all, this replica goes on
      // leading in the same term and nothing else would wake it (found by the chaos run: a run whose Job finished
      // while the API server restarted stayed Running). When leadership did end, the queue is shut down and drops
      // the key; the next term looks at every run again.
      return result({ kind: 'requeueAfter', ms: NOT_LEADING_RECHECK_MS });
    case 'jobExists': {
      const job = await observeJob(deps, agent);
      if (!job.ok) return result(retry(log, 'Reading the existing Job failed', describeKubeError(job.error)));
      return again({ ...snapshot, job: job.value });
    }
    case 'bindingRefused':
      return again({ ...snapshot, bindingRefused: { message: outcome.message } });
    case 'serviceAccountRefused':
      return again({ ...snapshot, serviceAccountRefused: { message: outcome.message } });
    case 'inputRefused':
      return again({ ...snapshot, inputRefused: { message: outcome.message } });
    case 'found':
      return again({ ...snapshot, found: [...(snapshot.found ?? []), outcome.found] });
    case 'jobRejected':
      return again({ ...snapshot, jobRejected: { message: outcome.message } });
    case 'serverRejected':
      return again({ ...snapshot, serverRejected: { message: outcome.message } });
    case 'error':
      return result(retry(log, `Action ${outcome.action} failed`, describeKubeError(outcome.error)));
    case 'retryLater':
      log.warn('Step failed, will retry', { error: outcome.reason });
      return result(
        outcome.afterMs !== undefined
          ? { kind: 'requeueAfter', ms: Math.max(1000, outcome.afterMs) }
          : { kind: 'retry', reason: outcome.reason },
      );
    case 'batchSubmitted':
      return again({ ...snapshot, submission: { kind: 'submitted', id: outcome.id } });
    case 'batchRejected':
      return again({ ...snapshot, submission: { kind: 'rejected', message: outcome.message } });
    case 'cleanupPending':
      return again({ ...snapshot, cleanup: { kind: 'pending', detail: outcome.detail } });
    case 'cleanupFailed': {
      const attempt = (agent.status.batchCleanupAttempts ?? 0) + 1;
      deps.batch?.cleanupNotBefore.set(agent.metadata.uid, deps.now().getTime() + cleanupBackoffMs(attempt));
      return again({ ...snapshot, cleanup: { kind: 'failed', message: outcome.message } });
    }
    case 'sessionCleanupFailed':
      return again({ ...snapshot, sessionCleanup: { kind: 'failed', message: outcome.message } });
    case 'memoryChanged': {
      // Changed since it was read: read again, and the write counted, for decide to write again or give up.
      const observed = await observeMemorySave(snapshot, deps);
      if (observed === undefined) return result(retry(log, 'Memory written without one', 'internal'));
      const changed = (snapshot.memorySave?.changed ?? 0) + 1;
      return again({ ...snapshot, memorySave: { configMap: observed, changed } });
    }
    case 'memoryForbidden':
    case 'memoryFailed': {
      const forbidden = outcome.kind === 'memoryForbidden';
      const failed = { kind: 'failed' as const, message: outcome.message, forbidden };
      return again({ ...snapshot, memorySave: { changed: 0, ...snapshot.memorySave, configMap: failed } });
    }
    default: {
      // Every outcome is handled above: a new one fails to compile here instead of deciding again silently.
      const unhandled: never = outcome;
      return result(retry(log, 'Unhandled outcome', JSON.stringify(unhandled)));
    }
  }
}

/** Reads the memory ConfigMap the run's Job names (undefined: the run has none to save to). */
async function observeMemorySave(
  snapshot: Snapshot,
  deps: ReconcileDeps,
): Promise<MemoryConfigMapObservation | undefined> {
  const memory = runMemory(snapshot);
  if (memory === undefined) return undefined;
  return observeMemoryConfigMap(deps, snapshot.agent.metadata.namespace, memory.configMap);
}

/**
 * Searches the vendor for a submission of this run (its request id is `run-<uid>`) made at or after its record.
 * Without a readable key nothing can be searched: the answer is `undecided` (never `absent`, which would submit).
 */
async function lookupSubmission(
  deps: ReconcileDeps,
  agent: Agent,
  snapshot: Snapshot,
): Promise<{ ok: true; value: NonNullable<Snapshot['submission']> } | { ok: false; error: string }> {
  const rt = deps.batch;
  const provider = agent.status.batchProvider;
  if (rt === undefined || !isBatchProvider(provider)) return { ok: true, value: { kind: 'none' } };
  const call = await vendorCall(
    rt,
    provider,
    agent.metadata.namespace,
    apiKeySecretKey(snapshot.definition, provider),
  );
  if (!call.ok) {
    if (call.error.kind === 'unreadable') return { ok: false, error: call.error.message };
    return {
      ok: true,
      value: {
        kind: 'lookedUp',
        result: { kind: 'undecided', candidates: [`(cannot search: ${call.error.message})`] },
      },
    };
  }
  const since = new Date(Date.parse(agent.status.startedAt ?? agent.metadata.creationTimestamp) || 0);
  const found = await rt.vendors[provider].find(runCustomId(agent.metadata.uid), since, call.value);
  if (!found.ok) return { ok: false, error: describeBatchError(found.error) };
  if (found.value.kind === 'absent') rt.nothingOutstanding.add(agent.metadata.uid);
  return { ok: true, value: { kind: 'lookedUp', result: found.value } };
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
  snapshot: CommonSnapshot,
  deps: ReconcileDeps,
): Promise<{ ok: true; snapshot: CommonSnapshot } | { ok: false; error: string }> {
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
  const withStation: CommonSnapshot = { ...snapshot, station: station.value.value };
  // Batch runs read their definition in every phase (timeout, sinks, the key's Secret entry, the prompt).
  const wantsDefinition =
    agent.status.phase === 'Pending' ||
    agent.status.phase === 'Serving' ||
    agent.status.phase === 'Suspended' ||
    isBatchRun(agent) ||
    holdsBatchFinalizer(agent);
  const namespace = agent.metadata.namespace ?? '';
  if (!wantsDefinition) {
    // A Running run reads it from the cache only: its output format and schema, the model its cost is priced by.
    const cached =
      agent.status.phase === 'Running' ? cachedDefinition(deps, namespace, station.value.value) : undefined;
    return {
      ok: true,
      snapshot: cached !== undefined ? { ...withStation, definition: cached } : withStation,
    };
  }
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
  const withDefinition: CommonSnapshot = { ...withStation, definition: definition.value.value };
  // The policy concerns runs about to start: Pending ones, and batch runs falling back to a Job not yet created.
  // A Suspended session is admitted again when it wakes (issue 29): under the policy of now.
  const starting =
    agent.status.phase === 'Pending' ||
    agent.status.phase === 'Serving' ||
    agent.status.phase === 'Suspended' ||
    (agent.status.batchFallback === true && !agent.status.jobName);
  if (!starting) return { ok: true, snapshot: withDefinition };
  const policy = await lookupPolicy(deps, station.value.value);
  if (!policy.ok) return { ok: false, error: describeKubeError(policy.error) };
  return { ok: true, snapshot: { ...withDefinition, policy: policy.value } };
}
