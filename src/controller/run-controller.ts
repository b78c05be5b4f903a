import * as v from 'valibot';
import {
  type Agent,
  AgentSchema,
  isTerminalPhase,
  type Job,
  type ObjectEvent,
  ObjectEventSchema,
  type Pod,
  PodSchema,
} from '../api/index.ts';
import type { ControllerConfig } from '../config/index.ts';
import { ALL_NAMESPACES } from '../config/index.ts';
import { endpointView, LABEL_SERVICE_NAME, readApiServerEndpoints } from '../effects/api-server.ts';
import { createBatchPoller, type TrackedBatch } from '../effects/batch/poller.ts';
import { createBatchRuntime } from '../effects/batch/runtime.ts';
import { createSecretReader } from '../effects/batch/secrets.ts';
import { createSinkDispatcher } from '../effects/batch/sinks.ts';
import { createTombstones, executeActions, type Tombstones } from '../effects/execute.ts';
import { FinishedRunIndex } from '../effects/finished-runs.ts';
import {
  parseCachedDefinition,
  parseCachedJob,
  parseCachedStation,
  readAgentLog,
} from '../effects/gather.ts';
import { createPriceSource } from '../effects/prices.ts';
import { loadRealtimeKey, type PromptTokens, promptTokens as tokensFor } from '../effects/realtime/tokens.ts';
import { type ReconcileDeps, reconcileAgent } from '../effects/reconcile-agent.ts';
import { AGENT_DEFINITIONS, AGENT_POLICIES, AGENTS, STATIONS } from '../effects/resources.ts';
import { deleteBinding, listRunClusterBindings } from '../effects/run-bindings.ts';
import { podJobKey, podJobUid, RunStartIndex } from '../effects/run-starts.ts';
import {
  type ApiServerEndpoints,
  JOB_LABEL_SELECTOR,
  RUN_CLEANUP_FINALIZER,
  strayBindings,
} from '../jobs/index.ts';
import { LABEL_EXECUTION } from '../jobs/realtime.ts';
import {
  createEventRecorder,
  describeKubeError,
  ENDPOINT_SLICES,
  EVENTS,
  type EventRecorder,
  isForbidden,
  isNotFound,
  JOBS,
  type KubeObject,
  objectKey,
  PODS,
  resourcePath,
  type Transport,
} from '../kube/index.ts';
import type { ControllerMetrics } from '../metrics/index.ts';
import { PHASES } from '../metrics/index.ts';
import { leftoverStartJob, showsStartProblem } from '../reconcile/agent/starting.ts';
import {
  apiKeySecretKey,
  BATCH_FINALIZER,
  isBatchProvider,
  renderContextFor,
} from '../reconcile/batch/plan.ts';
import {
  CONDITION_READY,
  concurrencyOf,
  type EndpointObservation,
  type EndpointView,
  isJobFinished,
  laneKey,
  pruneActions,
  REASON,
  StationBook,
  wakeableCount,
} from '../reconcile/index.ts';
import {
  type Change,
  type Clock,
  createInformer,
  createLeaderElector,
  createWorkQueue,
  type Informer,
  type LeaderElector,
  type WorkQueue,
} from '../runtime/index.ts';
import type { ReadinessCheck } from '../server/index.ts';
import type { Logger } from '../shared/log.ts';
import { createTracing, NO_TRACING } from '../telemetry/otel.ts';
import { RunSpans } from '../telemetry/run-spans.ts';

/**
 * Whether `a` is an older version than `b` of the same object, by resourceVersion (etcd revisions, compared as
 * integers; a version that is not one is never called older).
 */
export function isOlder(
  a: { metadata: { resourceVersion: string } },
  b: { metadata: { resourceVersion: string } },
): boolean {
  const ra = a.metadata.resourceVersion;
  const rb = b.metadata.resourceVersion;
  if (!/^\d+$/.test(ra) || !/^\d+$/.test(rb)) return false;
  return BigInt(ra) < BigInt(rb);
}

/** The Agent that controls a Job (its controller ownerReference of kind Agent), if any. */
function agentOwnerOf(job: KubeObject | undefined) {
  return (job?.metadata.ownerReferences ?? []).find((o) => o.controller === true && o.kind === 'Agent');
}

/** How long a shutdown waits for reconciles in flight before it releases the Lease anyway. */
export const SHUTDOWN_DRAIN_MS = 5000;

const conditionsText = (job: Job): string =>
  (job.status?.conditions ?? []).map((x) => `${x.type}=${x.status}`).join(',');

/** A run in progress is re-checked every this many poll intervals (60 s by default), watches aside. */
export const RUN_RECHECK_POLLS = 4;

/** Polls skipped by the binding sweep after its LIST was forbidden (no run-rbac component): ~5 minutes. */
const SWEEP_FORBIDDEN_SKIPS = 20;
/** Poll failures in a row after which readiness drops (docs/design/reference-behaviour.md#poll-and-readiness). */
export const MAX_CONSECUTIVE_POLL_FAILURES = 3;
/** Memory for agent logs read ahead of their Job's verdict and not yet used (past it, logs are read live). */
const FINISHED_LOG_BUDGET_BYTES = 32 * 1024 * 1024;
/** A log read ahead that no Job verdict took within this long is forgotten (its run was finished otherwise). */
const FINISHED_LOG_MAX_AGE_MS = 2 * 60_000;

export interface ControllerDeps {
  readonly config: ControllerConfig;
  readonly transport: Transport;
  readonly metrics: ControllerMetrics;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly random: () => number;
}

/** A running controller. */
export interface RunningController {
  readonly checks: readonly ReadinessCheck[];
  /** The realtime prompt tokens, once the controller key is loaded (REALTIME_ENABLED only). */
  promptTokens(): PromptTokens | undefined;
  /** The Event recorder (the prompt API records session Events with it). */
  readonly events: EventRecorder;
  /** An Agent from this replica's informer cache (raw), if cached. */
  cachedAgent(namespace: string, name: string): unknown;
  /** Every Agent of this replica's informer cache (parsed). */
  cachedAgents(): readonly Agent[];
  /** Every Station of this replica's informer cache (as read; parse before use). */
  cachedStations(): readonly unknown[];
  isLeader(): boolean;
  /**
   * Stops reconciling, stops the informers, releases the Lease
   * (docs/design/reference-behaviour.md#d-g-lease-released). Never throws.
   */
  stop(): Promise<void>;
}

/**
 * Starts the controller: informers for Agents, Stations, AgentDefinitions and the Jobs it owns (caches are kept
 * warm on every replica), Lease election, and — only while leading — a work queue of Agent keys fed by the
 * informers and a poll every `pollIntervalMs` (full paginated LIST, history sweep, phase gauges, re-check of
 * every unfinished Agent).
 */
export function startController(deps: ControllerDeps): RunningController {
  const { config, transport, metrics, clock } = deps;
  const log = deps.logger;
  const namespace = config.namespace === ALL_NAMESPACES ? undefined : config.namespace;
  const abort = new AbortController();
  let queue: WorkQueue | undefined;
  let cancelPoll: (() => void) | undefined;
  let pollFailures = 0;
  let apiReachable = false;

  const informerOptions = { transport, namespace, clock, random: deps.random, logger: log };
  const reconnectHook = (resource: string) => ({
    onReconnect: () => metrics.watchReconnects.inc({ resource }),
  });
  const enqueue = (key: string, urgent = false): void => queue?.add(key, urgent);
  // Agents are cached parsed (an Agent that does not parse is skipped with a warning by the informer): one copy
  // per Agent, shared with the book, matters at 10,000 queued Agents.
  const agents: Informer<Agent> = createInformer<Agent>({
    ...informerOptions,
    resource: AGENTS,
    schema: AgentSchema,
    hooks: {
      ...reconnectHook('agents'),
      // Every full LIST of Agents: at start, on each poll and after a 410 (a failed LIST's retry is not one).
      onList: (reason) => {
        if (reason !== 'retry') metrics.resyncs.inc();
      },
    },
    onChange: (c) => onAgentChange(c),
  });
  const stations = createInformer({
    ...informerOptions,
    resource: STATIONS,
    hooks: reconnectHook('stations'),
    onChange: (c) => enqueueWaiting(c.object.metadata.namespace, c.object.metadata.name),
  });
  const definitions = createInformer({
    ...informerOptions,
    resource: AGENT_DEFINITIONS,
    hooks: reconnectHook('agentdefinitions'),
    onChange: (c) => enqueueWaiting(c.object.metadata.namespace, undefined),
  });
  // AgentPolicies are cluster-scoped; a change re-checks every waiting Agent (Running runs are never re-checked).
  const policies = createInformer({
    ...informerOptions,
    namespace: undefined,
    resource: AGENT_POLICIES,
    hooks: reconnectHook('agentpolicies'),
    onChange: () => {
      for (const lane of book.lanes()) wakeHeads(lane);
    },
  });
  // EndpointSlices of Services, for the dependencies gate (issue 10 §4): a change wakes the namespace's waiting runs.
  let slicesUnavailable: string | undefined;
  const slices = createInformer({
    ...informerOptions,
    resource: ENDPOINT_SLICES,
    labelSelector: LABEL_SERVICE_NAME,
    hooks: {
      ...reconnectHook('endpointslices'),
      onListError: (error) => {
        if (isForbidden(error))
          slicesUnavailable = `the controller may not watch EndpointSlices (${describeKubeError(error)})`;
      },
    },
    onChange: (c) => {
      slicesUnavailable = undefined;
      enqueueWaiting(c.object.metadata.namespace, undefined);
    },
  });
  /** The EndpointSlices of these Services of a namespace, from the cache. */
  function endpointsOf(namespace: string, services: readonly string[]): EndpointObservation {
    if (slicesUnavailable !== undefined) return { kind: 'unavailable', message: slicesUnavailable };
    if (!slices.store.hasSynced()) return { kind: 'unsynced' };
    const wanted = new Set(services);
    const byService = new Map<string, EndpointView[]>();
    for (const raw of slices.store.list()) {
      if (raw.metadata.namespace !== namespace) continue;
      const service = raw.metadata.labels?.[LABEL_SERVICE_NAME];
      if (service === undefined || !wanted.has(service)) continue;
      const view = endpointView(raw);
      if (view !== undefined) byService.set(service, [...(byService.get(service) ?? []), view]);
    }
    return { kind: 'observed', byService };
  }
  // Runs that cannot start (issue 13 §4): the run pods and the Job controller's FailedCreate Events, indexed by
  // Job. A change wakes the Job's Agent only when what keeps its pod from starting changed.
  const starts = new RunStartIndex();
  const runPods = createInformer<Pod>({
    ...informerOptions,
    resource: PODS,
    labelSelector: JOB_LABEL_SELECTOR,
    // Only pods that have not started (one that leaves Pending arrives as deleted), parsed and trimmed to what the
    // start decision reads: thousands of runs may be in progress.
    fieldSelector: 'status.phase=Pending',
    schema: PodSchema,
    hooks: reconnectHook('pods'),
    onChange: (c) => {
      const changed = starts.podChanged(c);
      if (changed !== undefined) wakeJobOwner(changed.job, changed.blocked);
    },
  });
  // Finished run pods (issue 15 §2): cached from their own watch, with the agent container's log read as soon as
  // the pod ends, before the Job controller writes the Job's verdict; the verdict then finds the evidence at hand.
  const finishedRuns = new FinishedRunIndex({
    maxLogBytes: FINISHED_LOG_BUDGET_BYTES,
    maxReads: 16,
    onEvidence: (source) => metrics.runEvidence.inc({ source }),
    onHeld: (logs, bytes) => {
      metrics.readAheadLogs.set(logs);
      metrics.readAheadLogBytes.set(bytes);
    },
  });
  const finishedPods = createInformer<Pod>({
    ...informerOptions,
    resource: PODS,
    labelSelector: JOB_LABEL_SELECTOR,
    fieldSelector: 'status.phase!=Pending,status.phase!=Running,status.phase!=Unknown',
    schema: PodSchema,
    hooks: reconnectHook('pods'),
    onChange: (c) => {
      const ended = finishedRuns.podChanged(c);
      if (ended !== undefined && mayWrite() && runInProgress(ended)) {
        finishedRuns.readAhead(ended, (pod) =>
          readAgentLog({ transport }, pod.metadata.namespace, pod.metadata.name),
        );
      }
    },
  });
  /**
   * Whether the pod is of the current Job of a run still in progress (its Agent Running by the cache, the Job and
   * the Agent the very ones that pod and Job name): its log is about to be read.
   */
  function runInProgress(pod: Pod): boolean {
    const jobKey = podJobKey(pod);
    const run = jobKey === undefined ? undefined : runOfJob(jobKey);
    if (run === undefined || podJobUid(pod) !== run.job.metadata.uid) return false;
    return run.agent?.metadata.uid === run.owner.uid && run.agent.status.phase === 'Running';
  }
  /** The Job `namespace/name` from the Job cache, the Agent owning it, and that Agent's book entry (key, Agent). */
  function runOfJob(jobKey: string) {
    const job = jobs.store.get(jobKey);
    const owner = agentOwnerOf(job);
    if (job === undefined || owner === undefined) return undefined;
    const key = `${job.metadata.namespace}/${owner.name}`;
    return { job, owner, key, agent: book.get(key) };
  }
  let eventsForbiddenLogged = false;
  const jobEvents = createInformer<ObjectEvent>({
    ...informerOptions,
    resource: EVENTS,
    fieldSelector: 'involvedObject.kind=Job,reason=FailedCreate',
    schema: ObjectEventSchema,
    hooks: {
      ...reconnectHook('events'),
      onListError: (error) => {
        if (!isForbidden(error) || eventsForbiddenLogged) return;
        eventsForbiddenLogged = true;
        log.warn(
          'The controller may not watch Events: a run whose pod cannot be created shows it only at its deadline',
          {
            error: describeKubeError(error),
          },
        );
      },
    },
    onChange: (c) => {
      const job = starts.eventChanged(c);
      if (job !== undefined) wakeJobOwner(job, true);
    },
  });
  /**
   * Wakes the Agent that owns the Job `namespace/name` (from the Job cache) when its pod is kept from starting, or
   * when it shows such a cause that may have gone. A pod created or started normally costs no reconcile.
   */
  function wakeJobOwner(jobKey: string, blocked: boolean): void {
    const run = runOfJob(jobKey);
    if (run === undefined) return;
    if (blocked || (run.agent !== undefined && showsStartProblem(run.agent))) enqueue(run.key);
  }
  const jobs = createInformer({
    ...informerOptions,
    resource: JOBS,
    labelSelector: JOB_LABEL_SELECTOR,
    hooks: reconnectHook('jobs'),
    onChange: (c) => onJobChange(c),
  });

  /** Every cached Agent by Station: queues, slot holders, finished runs (kept on every replica, leading or not). */
  const book = new StationBook<Agent>();
  const claims = createTombstones(() => clock.now());
  /** Deletes this replica claimed; the book stops counting those Agents at once. */
  const tombstones: Tombstones = {
    add(uid) {
      claims.add(uid);
      book.setDeleting(uid, true);
    },
    remove(uid) {
      claims.remove(uid);
      book.setDeleting(uid, false);
    },
    has: (uid) => claims.has(uid),
  };

  /**
   * An Agent changed: record it in the book (synchronously, before anything can decide on the old picture),
   * reconcile it, and wake the heads of its Station's queue if a slot may have freed.
   */
  function onAgentChange(c: Change<Agent>): void {
    const key = objectKey(c.object);
    const lanes = new Set<string>([laneKey(c.object.metadata.namespace, c.object.spec.stationRef)]);
    if (c.type === 'modified') lanes.add(laneKey(c.old.metadata.namespace, c.old.spec.stationRef));
    trackBatch(c);
    if (c.type === 'deleted') {
      book.remove(key);
      claims.remove(c.object.metadata.uid);
    } else {
      // The cache and the book share one parsed object per Agent.
      recordAgent(c.object);
      enqueue(key);
    }
    for (const lane of lanes) wakeHeads(lane);
  }

  /**
   * Puts a version of an Agent in the book unless the book holds a newer one of the same Agent: this replica's own
   * status writes go in as soon as they are answered, and a watch lagging behind them must not take them back.
   */
  function recordAgent(agent: Agent): void {
    const key = objectKey(agent);
    const held = book.get(key);
    if (held !== undefined && held.metadata.uid === agent.metadata.uid && isOlder(agent, held)) return;
    book.upsert(key, agent);
  }

  /** Keeps the batch poller's list in step with the Agents whose vendor batch is in flight. */
  function trackBatch(c: Change<Agent>): void {
    const a = c.object;
    const uid = a.metadata.uid;
    const provider = a.status.batchProvider;
    const batchId = a.status.batchId ?? '';
    const inFlight =
      c.type !== 'deleted' &&
      a.status.phase === 'Running' &&
      a.metadata.deletionTimestamp === undefined &&
      a.status.batchFallback !== true &&
      batchId !== '' &&
      isBatchProvider(provider);
    if (c.type === 'deleted') {
      batchRuntime.nothingOutstanding.delete(uid);
      batchRuntime.cleanupNotBefore.delete(uid);
    }
    if (!inFlight || !isBatchProvider(provider)) {
      poller.untrack(uid);
      return;
    }
    const key = objectKey(a);
    poller.track(uid, {
      key,
      namespace: a.metadata.namespace,
      provider,
      batchId,
      secretKey: apiKeySecretKey(definitionOf(a), provider),
      render: () => {
        const current = book.get(key);
        if (current === undefined || current.metadata.uid !== uid) return undefined;
        const started = Date.parse(current.status.startedAt ?? current.metadata.creationTimestamp);
        const ms = Number.isNaN(started) ? 0 : clock.now() - started;
        return renderContextFor(current, definitionOf(current), ms);
      },
    });
  }

  /** The AgentDefinition of an Agent's Station, from the caches (null when either is missing or invalid). */
  function definitionOf(a: Agent) {
    const rawStation = stations.store.get(laneKey(a.metadata.namespace, a.spec.stationRef));
    const station = rawStation === undefined ? undefined : parseCachedStation(rawStation);
    if (!station?.ok) return null;
    const rawDef = definitions.store.get(`${a.metadata.namespace}/${station.value.spec.agentDefRef}`);
    const def = rawDef === undefined ? undefined : parseCachedDefinition(rawDef);
    return def?.ok ? def.value : null;
  }

  /** A Job the controller owns changed: it holds its Agent's slot while cached; reconcile that Agent. */
  function onJobChange(c: Change<KubeObject>): void {
    const jobKey = objectKey(c.object);
    const owner = agentOwnerOf(c.object);
    if (c.type === 'deleted' || owner === undefined) book.jobGone(jobKey);
    else book.jobSeen(jobKey, owner.uid);
    if (owner === undefined) return;
    const agentKey = `${c.object.metadata.namespace}/${owner.name}`;
    // Only changes the Agent's reconcile acts on wake it: the Job appearing (adoption), finishing (the result:
    // ahead of new Agents waiting for admission, as urgent) or vanishing, and a finished Job's later verdict (an
    // early verdict followed by the final one). Progress updates of a running Job (active, ready, pod counts)
    // would each cost a reconcile that does nothing.
    const verdict = c.type === 'deleted' ? undefined : verdictOf(c.object);
    const changed = c.type !== 'modified' || (verdict !== undefined && verdict !== verdictOf(c.old));
    if (changed) enqueue(agentKey, verdict !== undefined);
    if (c.type === 'deleted') {
      const a = book.get(agentKey);
      if (a !== undefined) wakeHeads(laneKey(a.metadata.namespace, a.spec.stationRef));
    }
  }

  /** Realtime runs whose Job has not finished: the sessions open now. */
  function openSessions(): number {
    let open = 0;
    for (const raw of jobs.store.list()) {
      if (raw.metadata.labels?.[LABEL_EXECUTION] !== 'realtime') continue;
      const job = parseCachedJob(raw);
      if (job.ok && !isJobFinished(job.value)) open++;
    }
    return open;
  }

  /** A finished Job's conditions as one comparable string (type=status, in order); undefined while it runs. */
  function verdictOf(raw: KubeObject): string | undefined {
    const job = parseCachedJob(raw);
    if (!job.ok || !isJobFinished(job.value)) return undefined;
    return conditionsText(job.value);
  }

  /**
   * Wakes the queued Agents of a Station that could start now: the first `limit − holders` in queue order (all
   * when unlimited; the head under Replace, which may preempt). The others would only be told to wait again, so
   * they stay asleep: a finished run costs O(free slots), not O(queue).
   */
  function wakeHeads(lane: string): void {
    if (!queue) return;
    for (const key of wakeableHeads(lane)) enqueue(key);
  }

  function wakeableHeads(lane: string): string[] {
    const { queued, holding } = book.counts(lane);
    if (queued === 0) return [];
    const raw = stations.store.get(lane);
    const station = raw === undefined ? undefined : parseCachedStation(raw);
    // Without a (valid) Station every queued Agent is woken: each fails with the reason.
    const n = station?.ok ? wakeableCount(queued, holding, concurrencyOf(station.value.spec)) : queued;
    return book.heads(lane, n);
  }

  /** True when the Agent already carries Ready=False/Queued. */
  function isQueuedCondition(a: Agent): boolean {
    return (a.status.conditions ?? []).some(
      (c) => c.type === CONDITION_READY && c.status === 'False' && c.reason === REASON.queued,
    );
  }

  /** Wakes the queue heads of one Station, or of every Station of a namespace when `station` is undefined. */
  function enqueueWaiting(ns: string | undefined, station: string | undefined): void {
    if (station !== undefined) {
      wakeHeads(laneKey(ns, station));
      return;
    }
    for (const lane of book.lanes()) if (lane.startsWith(`${ns ?? ''}/`)) wakeHeads(lane);
  }

  const events = createEventRecorder({
    transport,
    component: 'agent-controller',
    instance: config.identity,
    now: () => clock.now(),
    random: deps.random,
    logger: log,
  });
  const secrets = createSecretReader({ transport, now: () => clock.now() });
  const batchRuntime = createBatchRuntime({ baseUrls: config.vendorBaseUrls, secrets });
  // Spans of the runs (issue 10 §5): only with an OTLP endpoint; otherwise no exporter is ever made.
  const tracing = config.tracing !== undefined ? createTracing(config.tracing) : NO_TRACING;
  const runSpans = tracing.enabled ? new RunSpans(tracing, () => clock.now()) : undefined;
  if (config.tracing !== undefined) {
    log.info('Exporting traces', { url: config.tracing.tracesUrl, runs: config.tracing.runTracesUrl });
  }
  const poller = createBatchPoller({
    runtime: batchRuntime,
    clock,
    random: deps.random,
    periodMs: config.batchPollMs,
    logger: log,
    onEnded: (key) => enqueue(key, true),
    onPoll: (provider, result) => metrics.batchPolls.inc({ provider, result }),
    ...(runSpans !== undefined
      ? {
          onPolled: (batch: TrackedBatch, startMs: number, endMs: number, result: string, error?: string) => {
            const agent = book.get(batch.key);
            if (agent !== undefined) runSpans.batchPoll(agent, batch, startMs, endMs, result, error);
          },
        }
      : {}),
    onListPage: (provider, result) => metrics.batchListPages.inc({ provider, result }),
    listing: config.batchPollList,
  });
  const sinks = createSinkDispatcher({ secrets, logger: log });
  let promptTokens: PromptTokens | undefined;
  if (config.realtimeEnabled) {
    // Every replica derives the same run tokens from the key in this Secret; retried until it can be read.
    void (async () => {
      for (let attempt = 1; !abort.signal.aborted; attempt++) {
        const key = await loadRealtimeKey(transport, config.leaseNamespace);
        if (key.ok) {
          promptTokens = tokensFor(key.value);
          log.info('Loaded the realtime key', { namespace: config.leaseNamespace });
          return;
        }
        const error = key.error.kind === 'malformed' ? key.error.message : describeKubeError(key.error);
        if (attempt === 1 || attempt % 12 === 0)
          log.error('Loading the realtime key failed; realtime runs wait', { error });
        await clock.sleep(5000, abort.signal);
      }
    })();
  }
  // Whether AgentPolicies can be read, found out before the first term decides anything: a cluster without the CRD,
  // or a controller without the grant, runs without them (a Station naming a policy then fails, never runs
  // unchecked; a default policy cannot apply). Only then does the policy informer start.
  let policySource: NonNullable<ReconcileDeps['policies']> = {
    unavailable: 'AgentPolicies are not read yet',
  };
  let policiesChecked: Promise<void> | undefined;
  let policiesRunning: Promise<void> | undefined;
  /** Starts the policy informer and switches to its cache once it is filled. */
  const readPolicies = async (): Promise<void> => {
    policiesRunning = policies.run(abort.signal);
    await policies.ready;
    policySource = { store: policies.store };
  };
  const ensurePolicies = (): Promise<void> => {
    policiesChecked ??= (async () => {
      // An answer that says nothing (timeout, 5xx) is asked again: the informer is only started on a yes, so a
      // missing CRD can never leave the first term waiting for a cache that will not fill.
      let probe = await probePolicies(transport, log);
      while (probe.kind === 'unknown' && !abort.signal.aborted) {
        await clock.sleep(2000, abort.signal);
        probe = await probePolicies(transport, log);
      }
      if (probe.kind === 'readable') {
        await readPolicies();
        return;
      }
      if (probe.kind === 'unreadable') policySource = { unavailable: probe.why };
      // Unreadable now (the grant or the CRD may come after the controller): asked again every minute.
      void (async () => {
        while (!abort.signal.aborted) {
          await clock.sleep(60_000, abort.signal);
          if (abort.signal.aborted) return;
          const again = await probePolicies(transport, log, false);
          if (again.kind === 'readable') {
            log.info('AgentPolicies can be read now; enforcing them');
            await readPolicies();
            return;
          }
        }
      })();
    })();
    return policiesChecked;
  };
  const prices = createPriceSource(config.pricesFile, log);

  /** Where the API server listens, as last read (and when); undefined while unknown. */
  let apiServer: ApiServerEndpoints | undefined;
  let apiServerReadAt = Number.NEGATIVE_INFINITY;
  const reconcileDeps: ReconcileDeps = {
    transport,
    stations: stations.store,
    definitions: definitions.store,
    get policies() {
      return policySource;
    },
    jobs: jobs.store,
    finishedRuns,
    events,
    metrics,
    logger: log,
    now: () => new Date(clock.now()),
    book,
    // Leading, and the Lease still ours by this replica's clock: a replica paused past its renew deadline writes
    // nothing when it wakes, before its elector has even noticed (the next holder may already be deciding).
    leading: () => mayWrite(),
    mayWrite: () => mayWrite(),
    onAgentWritten: (raw) => {
      const parsed = v.safeParse(AgentSchema, raw);
      if (parsed.success) recordAgent(parsed.output);
    },
    tombstones,
    backgroundEvents: true,
    backgroundPrunes: true,
    batch: batchRuntime,
    poller,
    sinks,
    get promptTokens() {
      return promptTokens;
    },
    prices: () => prices.current(),
    ...(runSpans !== undefined ? { spans: runSpans } : {}),
    endpoints: endpointsOf,
    // Nothing is concluded from the pod cache before it has listed (a restart would flap every blocked run).
    starts: (ns, jobName) =>
      runPods.store.hasSynced() ? starts.observe(ns, jobName, jobEvents.store.hasSynced()) : undefined,
    apiServer: async () => {
      // Read only for runs that hold a token, at most once per poll interval (a controller without the run-rbac
      // component never asks, so it is never refused).
      if (clock.now() - apiServerReadAt >= config.pollIntervalMs) {
        apiServerReadAt = clock.now();
        await refreshApiServer();
      }
      return apiServer;
    },
    options: {
      agentImage: config.agentImage,
      maxOutputBytes: config.maxOutputBytes,
      // A backstop only: the Agent and Job watches (and each poll's re-list, which replays what a watch missed)
      // wake a run whenever something changes. At the poll interval itself it cost a run of 70 s five reconciles
      // that did nothing (bench/README.md).
      requeueMs: config.pollIntervalMs * RUN_RECHECK_POLLS,
      batch: { enabled: config.batchEnabled, pollMs: config.batchPollMs },
      realtime: { enabled: config.realtimeEnabled },
      server: { enabled: config.serverEnabled },
      controllerNamespace: config.leaseNamespace,
      ...(config.tracing !== undefined ? { tracing: { runTracesUrl: config.tracing.runTracesUrl } } : {}),
    },
  };

  function mayWrite(): boolean {
    return queue !== undefined && (elector === undefined || elector.holdsLease());
  }

  async function handle(key: string) {
    const started = clock.now();
    const result = await reconcileAgent(key, reconcileDeps);
    metrics.reconcileDuration.observe((clock.now() - started) / 1000);
    metrics.reconciles.inc({
      result: result.kind === 'retry' ? 'error' : result.kind === 'done' ? 'success' : 'requeue',
    });
    return result;
  }

  /** The periodic poll: full LIST (paginated), history sweep per Station, gauges, and a re-check of unfinished runs. */
  async function poll(): Promise<void> {
    finishedRuns.sweep(FINISHED_LOG_MAX_AGE_MS);
    const listed = await agents.resync();
    if (!listed.ok) {
      pollFailures++;
      log.warn('Poll failed', { error: describeKubeError(listed.error), consecutive: pollFailures });
      return;
    }
    pollFailures = 0;
    for (const phase of PHASES) metrics.agents.set({ phase }, book.phaseCount(phase));
    metrics.batchesInFlight.set(poller.size);
    metrics.realtimeSessions.set(openSessions());
    await sweepHistory();
    await sweepLeftoverJobs();
    await sweepBindings();
    prices.refresh();
    // Changed Agents were re-queued by the re-list itself; Running ones re-check on their own timer (so a reconcile
    // of a Running Agent must never end `done` while it still runs: nothing would wake it again). Only the
    // heads of each queue are woken here, as a backstop: the rest would only be told to wait again.
    for (const lane of book.lanes()) wakeHeads(lane);
    // Servers, too: their objects are not watched, and drift is repaired within a poll whatever happened before.
    if (book.phaseCount('Serving') > 0)
      for (const agent of agents.store.list())
        if (agent.status.phase === 'Serving') enqueue(objectKey(agent));
  }

  async function sweepHistory(): Promise<void> {
    for (const raw of stations.store.list()) {
      if (!mayWrite()) return;
      const station = parseCachedStation(raw);
      if (!station.ok) continue;
      const lane = laneKey(station.value.metadata.namespace, station.value.metadata.name);
      const actions = pruneActions(station.value, book.finished(lane));
      if (actions.length === 0) continue;
      const outcome = await executeActions(actions, reconcileDeps);
      if (outcome.kind === 'error') {
        log.warn('History sweep failed', {
          station: objectKey(raw),
          error: describeKubeError(outcome.error),
        });
      }
    }
  }

  /** Deletes the Jobs of runs that failed because their pod could not start, should the delete then have failed. */
  async function sweepLeftoverJobs(): Promise<void> {
    for (const raw of jobs.store.list()) {
      if (!mayWrite()) return;
      const owner = agentOwnerOf(raw);
      if (owner === undefined) continue;
      const agent = book.get(`${raw.metadata.namespace}/${owner.name}`);
      const job = parseCachedJob(raw);
      if (agent === undefined || !job.ok) continue;
      const action = leftoverStartJob(agent, job.value);
      if (action === undefined) continue;
      const outcome = await executeActions([action], reconcileDeps);
      if (outcome.kind === 'error')
        log.warn('Deleting the Job of a run that could not start failed', {
          job: objectKey(raw),
          error: describeKubeError(outcome.error),
        });
    }
  }

  let apiServerUnreadable = false;
  /** Reads where the API server listens (EndpointSlice default/kubernetes), for the egress of token-holding runs. */
  async function refreshApiServer(): Promise<void> {
    const r = await readApiServerEndpoints(transport);
    if (r.ok) {
      apiServer = r.value;
      apiServerUnreadable = false;
      return;
    }
    // Keep the last known address: the API server rarely moves, and a failed read says nothing about that.
    if (!apiServerUnreadable) {
      apiServerUnreadable = true;
      log.info(
        'EndpointSlice default/kubernetes cannot be read: runs that hold a token get no egress rule to the API server',
        {
          error: describeKubeError(r.error),
        },
      );
    }
  }

  /**
   * Removes run ClusterRoleBindings whose Agent is gone, or finished without the cleanup finalizer (issue 9 §2):
   * what a crash between a binding's create and its record, or a finalizer removed by hand, leaves behind. The
   * cache is at least as new as this poll's LIST, and a binding is only ever created for an Agent in it.
   */
  let sweepSkips = 0;
  async function sweepBindings(): Promise<void> {
    if (!mayWrite()) return;
    if (sweepSkips > 0) {
      sweepSkips--;
      return;
    }
    const listed = await listRunClusterBindings(transport, namespace);
    if (!listed.ok) {
      // Without the run-rbac component the controller may not list bindings: then it never created one either.
      // Ask again only every SWEEP_FORBIDDEN_SKIPS polls (the component may be added while it runs).
      if (isForbidden(listed.error)) {
        sweepSkips = SWEEP_FORBIDDEN_SKIPS;
        return;
      }
      log.warn('Listing run ClusterRoleBindings failed', { error: describeKubeError(listed.error) });
      return;
    }
    if (listed.value.length === 0) return;
    const byUid = new Map<string, Agent>();
    for (const agent of agents.store.list()) byUid.set(agent.metadata.uid, agent);
    const stray = strayBindings(listed.value, (uid) => {
      const agent = byUid.get(uid);
      if (agent === undefined) return 'gone';
      const finished = isTerminalPhase(agent.status.phase) || agent.metadata.deletionTimestamp !== undefined;
      return finished && !agent.metadata.finalizers.includes(RUN_CLEANUP_FINALIZER) ? 'finished' : 'active';
    });
    for (const binding of stray) {
      if (!mayWrite()) return;
      const r = await deleteBinding(transport, binding, undefined);
      if (r.ok) log.info('Removed a stray run ClusterRoleBinding', { binding: binding.name });
      else
        log.warn('Removing a stray run ClusterRoleBinding failed', {
          binding: binding.name,
          error: describeKubeError(r.error),
        });
    }
  }

  /** Runs one poll; never rejects (a failure counts as a failed poll). */
  async function safePoll(): Promise<void> {
    try {
      await poll();
    } catch (error) {
      pollFailures++;
      log.error('Poll crashed', { error: String(error) });
    }
  }

  /** Arms the next poll of leadership term `q`; a term that ended (or was replaced) arms nothing. */
  function schedulePoll(q: WorkQueue): void {
    if (queue !== q) return;
    cancelPoll = clock.setTimer(config.pollIntervalMs, () => {
      if (queue !== q) return;
      void safePoll().then(() => schedulePoll(q));
    });
  }

  /** The previous term's shutdown: a new term waits for it, so no Agent is ever reconciled by two terms at once. */
  let stopping: Promise<void> = Promise.resolve();

  async function startLeading(): Promise<void> {
    if (queue) return;
    metrics.isLeader.set(1);
    const q = createWorkQueue({ clock, concurrency: config.workers, handler: handle, logger: log });
    queue = q;
    await stopping;
    await Promise.all([agents.ready, stations.ready, definitions.ready, jobs.ready, ensurePolicies()]);
    // A term decides only from caches at least as new as the API server when it began (quorum LISTs of Agents
    // and Jobs): the runs a previous leader or an earlier process started are all counted
    // (docs/design/reference-behaviour.md#d-l-admission-by-construction).
    while (queue === q) {
      const [a, j] = await Promise.all([agents.resync(), jobs.resync()]);
      if (a.ok && j.ok) break;
      const error = !a.ok ? a.error : !j.ok ? j.error : undefined;
      log.warn('Listing Agents and Jobs for a new term failed, retrying', {
        error: error === undefined ? '' : describeKubeError(error),
      });
      await clock.sleep(1000);
    }
    if (queue !== q) return;
    for (const key of termStartKeys()) q.add(key);
    q.start();
    poller.setActive(true);
    log.info('Started reconciling', { namespace: config.namespace, agents: book.size });
    schedulePoll(q);
  }

  /**
   * What a new term looks at: every Agent holding a slot (Running, or started by an earlier leader), every server,
   * the heads of every queue, and queued Agents never told they wait (no Ready=False/Queued yet). Queued Agents that already
   * carry it would only be told to wait again.
   */
  function termStartKeys(): string[] {
    const keys: string[] = [];
    for (const agent of agents.store.list()) {
      const key = objectKey(agent);
      const place = book.placeOf(key);
      if (place === 'holding') keys.push(key);
      // A server is looked after for as long as it serves (issue 12): its objects are not watched.
      else if (agent.status.phase === 'Serving') keys.push(key);
      else if (place === 'queued' && !isQueuedCondition(agent)) keys.push(key);
      else if (agent.metadata.finalizers.includes(BATCH_FINALIZER)) keys.push(key);
      else if (agent.metadata.finalizers.includes(RUN_CLEANUP_FINALIZER)) keys.push(key);
    }
    for (const lane of book.lanes()) keys.push(...wakeableHeads(lane));
    return keys;
  }

  function stopLeading(): Promise<void> {
    metrics.isLeader.set(0);
    finishedRuns.clearLogs();
    poller.setActive(false);
    const q = queue;
    queue = undefined;
    cancelPoll?.();
    cancelPoll = undefined;
    if (q) {
      const previous = stopping;
      // Handlers already running finish (their writes carry resourceVersion preconditions); none start.
      stopping = previous
        .then(() => q.shutdown({ drain: false }))
        .catch((error: unknown) => {
          log.error('Stopping the work queue failed', { error: String(error) });
        });
    }
    return stopping;
  }

  const elector: LeaderElector | undefined = config.leaderElection
    ? createLeaderElector({
        transport,
        namespace: config.leaseNamespace,
        name: config.leaseName,
        identity: config.identity,
        clock,
        logger: log,
        onStartedLeading: () => {
          startLeading().catch((error: unknown) =>
            log.error('Starting to reconcile failed', { error: String(error) }),
          );
        },
        onStoppedLeading: () => void stopLeading(),
        onTick: ({ reachable, leading }) => {
          apiReachable = reachable;
          metrics.isLeader.set(leading ? 1 : 0);
        },
      })
    : undefined;

  const runs = [agents, stations, definitions, jobs, slices, runPods, finishedPods, jobEvents].map((i) =>
    i.run(abort.signal),
  );
  const electing = (elector ? elector.run(abort.signal) : startLeading()).catch((error: unknown) => {
    log.error('Leader election crashed', { error: String(error) });
  });
  void agents.ready.then(() => {
    apiReachable = true;
  });

  return {
    checks: [
      { name: 'api', ready: () => apiReachable },
      { name: 'poll', ready: () => pollFailures < MAX_CONSECUTIVE_POLL_FAILURES },
      { name: 'informers', ready: () => agents.store.hasSynced() && jobs.store.hasSynced() },
      ...(config.realtimeEnabled ? [{ name: 'realtime-key', ready: () => promptTokens !== undefined }] : []),
    ],
    promptTokens: () => promptTokens,
    events,
    cachedAgent: (ns, name) => agents.store.get(`${ns}/${name}`),
    cachedAgents: () => agents.store.list(),
    cachedStations: () => stations.store.list(),
    isLeader: () => (elector ? elector.isLeader() : queue !== undefined),
    async stop() {
      // Handlers in flight may wait on a slow API server for up to a request timeout. Give them a few seconds,
      // then go on: none can create a Job any more (the leadership fence), and their other writes carry
      // resourceVersion preconditions, so the next leader cannot be harmed by one landing late.
      const drained = new AbortController();
      const finished = await Promise.race([
        stopLeading().then(() => true),
        clock.sleep(SHUTDOWN_DRAIN_MS, drained.signal).then(() => false),
      ]);
      drained.abort();
      if (!finished)
        log.warn('Reconciles still running at shutdown; not waiting for them', {
          waitedMs: SHUTDOWN_DRAIN_MS,
        });
      poller.stop();
      abort.abort();
      await Promise.allSettled([
        ...runs,
        electing,
        ...(policiesRunning !== undefined ? [policiesRunning] : []),
      ]);
      await tracing.shutdown(2000);
      if (elector) {
        // The elector logs the release and its failure itself, with the Lease and identity.
        await elector.release();
      }
    },
  };
}

/**
 * Asks whether AgentPolicies can be listed: readable, unreadable (no CRD, no grant: logged as a warning unless
 * `warn` is false), or unknown (any other failure: ask again).
 */
export async function probePolicies(
  transport: Transport,
  log: Logger,
  warn = true,
): Promise<{ kind: 'readable' } | { kind: 'unreadable'; why: string } | { kind: 'unknown' }> {
  const r = await transport.request('GET', resourcePath(AGENT_POLICIES, {}), { query: { limit: 1 } });
  if (r.ok) return { kind: 'readable' };
  const why = isNotFound(r.error)
    ? 'the AgentPolicy CRD is not installed'
    : isForbidden(r.error)
      ? 'the controller may not list agentpolicies'
      : undefined;
  if (why === undefined) return { kind: 'unknown' };
  if (warn) {
    log.warn('AgentPolicies cannot be read: Stations that name one fail, default policies do not apply', {
      reason: why,
      error: describeKubeError(r.error),
    });
  }
  return { kind: 'unreadable', why };
}
