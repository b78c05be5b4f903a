// The controller's wiring (docs/design/wiring.md): the watches (caches.ts) feed the Station book and the indexes,
// then the trigger table (triggers.ts) queues Agent keys with their reason; a leadership term (term.ts) owns the work
// queue and the poll, whose sweeps are in sweeps.ts. Decisions are the pure core's; this file only connects.

import * as v from 'valibot';
import { type Agent, AgentSchema } from '../api/index.ts';
import type { ControllerConfig } from '../config/index.ts';
import { ALL_NAMESPACES } from '../config/index.ts';
import { type BatchPoller, createBatchPoller, type TrackedBatch } from '../effects/batch/poller.ts';
import { type BatchRuntime, createBatchRuntime } from '../effects/batch/runtime.ts';
import { createSecretReader, type SecretReader } from '../effects/batch/secrets.ts';
import { createSinkDispatcher } from '../effects/batch/sinks.ts';
import {
  createServerKeys,
  createTombstones,
  executeActions,
  type ServerKeys,
  type Tombstones,
} from '../effects/execute.ts';
import { FinishedRunIndex } from '../effects/finished-runs.ts';
import type { GatewayCredentials } from '../effects/gateway-credentials.ts';
import { parseCachedJob, parseCachedStation, readAgentLog } from '../effects/gather.ts';
import { createPriceSource } from '../effects/prices.ts';
import type { PromptTokens } from '../effects/realtime/tokens.ts';
import { type ReconcileDeps, reconcileAgent } from '../effects/reconcile-agent.ts';
import { podJobKey, podJobUid, RunStartIndex } from '../effects/run-starts.ts';
import type { SessionStatePort } from '../effects/sessions/port.ts';
import { observeSpend } from '../effects/spend.ts';
import { LABEL_EXECUTION } from '../jobs/realtime.ts';
import { createEventRecorder, describeKubeError, type EventRecorder, type Transport } from '../kube/index.ts';
import type { ControllerMetrics } from '../metrics/index.ts';
import { PHASES } from '../metrics/index.ts';
import { isJobFinished, type LaneStation, REASON, StationBook } from '../reconcile/index.ts';
import { type Clock, createLeaderElector, type LeaderElector, type WorkResult } from '../runtime/index.ts';
import type { ReadinessCheck } from '../server/index.ts';
import type { Logger } from '../shared/log.ts';
import { createTracing, NO_TRACING, type Tracing } from '../telemetry/otel.ts';
import { RunSpans } from '../telemetry/run-spans.ts';
import { createBatchTracking, definitionFrom } from './batch-tracking.ts';
import { type Caches, createCaches } from './caches.ts';
import { createApiServerSource, createEndpointSource } from './endpoints.ts';
import { keySaturationFor } from './key-saturation.ts';
import { createPolicySource, type PolicySource } from './policies.ts';
import { startLoadingKeys } from './realtime-key.ts';
import { createSweeps } from './sweeps.ts';
import { createTerms, type Terms } from './term.ts';
import { agentOwnerOf, createTriggers, type ReconcileReason, TRIGGERS } from './triggers.ts';

export { probePolicies } from './policies.ts';

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

/** How long a shutdown waits for reconciles in flight before it releases the Lease anyway. */
export const SHUTDOWN_DRAIN_MS = 5000;
/** A run in progress is re-checked every this many poll intervals (60 s by default), watches aside. */
export const RUN_RECHECK_POLLS = 4;
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
  /**
   * The session store (issue 29, docs/design/sessions.md): realtime sessions suspended, woken and restored, their
   * stored state deleted with their Agent. Absent: sessions are off (idleTimeoutSeconds fails runs at Pending).
   */
  readonly sessions?: SessionStatePort | undefined;
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

/** What the watches maintain on every replica, leading or not, and the triggers that read it. */
interface Watching {
  readonly caches: Caches;
  /** Every cached Agent by Station: queues, slot holders, finished runs. */
  readonly book: StationBook<Agent>;
  readonly tombstones: Tombstones;
  /** What the executor's server key creates met, until the Agents' status says it. */
  readonly serverKeys: ServerKeys;
  readonly starts: RunStartIndex;
  readonly finishedRuns: FinishedRunIndex;
  readonly endpoints: ReturnType<typeof createEndpointSource>;
  readonly poller: BatchPoller;
  readonly batchRuntime: BatchRuntime;
  /** The Secret reader of the vendor batches and the sinks (one cache). */
  readonly secrets: SecretReader;
  readonly runSpans: RunSpans | undefined;
  readonly tracing: Tracing;
  fire: ReturnType<typeof createTriggers>['fire'];
  /** Puts a version of an Agent in the book unless the book holds a newer one of the same Agent. */
  recordAgent(agent: Agent): void;
}

/**
 * Starts the controller: informers for Agents, Stations, AgentDefinitions and the Jobs it owns (caches are kept
 * warm on every replica), Lease election, and — only while leading — a work queue of Agent keys fed by the
 * trigger table and a poll every `pollIntervalMs` (full paginated LIST, sweeps, phase gauges, wake-ups).
 */
export function startController(deps: ControllerDeps): RunningController {
  const { config, transport, metrics, clock } = deps;
  const log = deps.logger;
  const abort = new AbortController();
  let elector: LeaderElector | undefined;
  let pollFailures = 0;
  let apiReachable = false;
  // Filled below; the watches only reach it through these closures once events flow.
  const term: { terms?: Terms } = {};
  const queue = () => term.terms?.queue();
  // Leading, and the Lease still ours by this replica's clock: a replica paused past its renew deadline writes
  // nothing when it wakes, before its elector has even noticed (the next holder may already be deciding).
  const mayWrite = (): boolean => queue() !== undefined && (elector === undefined || elector.holdsLease());
  const enqueue = (key: string, urgent: boolean, reason: ReconcileReason): void =>
    queue()?.add(key, urgent, reason);

  const w = createWatching(deps, { enqueue, active: () => queue() !== undefined, mayWrite });
  const { caches, book } = w;
  const policies = createPolicySource({
    transport,
    clock,
    logger: log,
    signal: abort.signal,
    informer: caches.policies,
  });
  const events = createEventRecorder({
    transport,
    component: 'agent-controller',
    instance: config.identity,
    now: () => clock.now(),
    random: deps.random,
    logger: log,
  });
  const keys = startLoadingKeys({
    transport,
    namespace: config.leaseNamespace,
    clock,
    logger: log,
    signal: abort.signal,
    realtime: config.realtimeEnabled,
    gateway: config.gatewayUrl !== undefined,
  });
  const prices = createPriceSource(config.pricesFile, log);
  const saturation = keySaturationFor(config, { transport, clock, random: deps.random, logger: log });
  const reconcileDeps = reconcileDepsOf(deps, w, {
    policies,
    events,
    mayWrite,
    promptTokens: keys.promptTokens,
    gatewayCredentials: keys.gatewayCredentials,
    prices: () => prices.current(),
    ...(saturation && { keySaturation: saturation.current }),
  });
  const sweeps = createSweeps({
    transport,
    namespace: namespaceOf(config),
    logger: log,
    stations: caches.stations.store,
    jobs: caches.jobs.store,
    agents: caches.agents.store,
    book,
    mayWrite,
    execute: (actions) => executeActions(actions, reconcileDeps),
  });

  /** The periodic poll: full LIST (paginated), sweeps, gauges, and the `poll` triggers. Never rejects. */
  async function poll(): Promise<void> {
    try {
      w.finishedRuns.sweep(FINISHED_LOG_MAX_AGE_MS);
      const listed = await caches.agents.resync();
      if (!listed.ok) {
        pollFailures++;
        log.warn('Poll failed', { error: describeKubeError(listed.error), consecutive: pollFailures });
        return;
      }
      pollFailures = 0;
      for (const phase of PHASES) metrics.agents.set({ phase }, book.phaseCount(phase));
      metrics.batchesInFlight.set(w.poller.size);
      setBudgetWaiting(metrics, caches);
      setSessionGauges(metrics, caches, book);
      await sweeps.history();
      await sweeps.leftoverJobs();
      await sweeps.bindings();
      prices.refresh();
      w.fire('poll', undefined);
    } catch (error) {
      pollFailures++;
      log.error('Poll crashed', { error: String(error) });
    }
  }

  term.terms = createTerms({
    clock,
    logger: log,
    workers: config.workers,
    pollIntervalMs: config.pollIntervalMs,
    handle: (key, reason) => handle(deps, reconcileDeps, key, reason),
    ready: () =>
      Promise.all([
        caches.agents.ready,
        caches.stations.ready,
        caches.definitions.ready,
        caches.jobs.ready,
        policies.ensure(),
      ]),
    relist: () => Promise.all([caches.agents.resync(), caches.jobs.resync()]),
    wakeFirst: () => w.fire('termStart', undefined),
    poll,
    onTerm: (milestone) => {
      if (milestone === 'begun') metrics.isLeader.set(1);
      else if (milestone === 'started') {
        w.poller.setActive(true);
        log.info('Started reconciling', { namespace: config.namespace, agents: book.size });
      } else {
        metrics.isLeader.set(0);
        w.finishedRuns.clearLogs();
        w.poller.setActive(false);
      }
    },
  });
  const terms = term.terms;
  elector = electorOf(deps, terms, (reachable) => {
    apiReachable = reachable;
  });

  const runs = caches.always.map((i) => i.run(abort.signal));
  if (saturation) runs.push(saturation.informer.run(abort.signal));
  const electing = (elector ? elector.run(abort.signal) : terms.start()).catch((error: unknown) => {
    log.error('Leader election crashed', { error: String(error) });
  });
  void caches.agents.ready.then(() => {
    apiReachable = true;
  });

  return {
    checks: [
      { name: 'api', ready: () => apiReachable },
      { name: 'poll', ready: () => pollFailures < MAX_CONSECUTIVE_POLL_FAILURES },
      { name: 'informers', ready: () => caches.agents.store.hasSynced() && caches.jobs.store.hasSynced() },
      ...keys.checks,
    ],
    promptTokens: keys.promptTokens,
    events,
    cachedAgent: (ns, name) => caches.agents.store.get(`${ns}/${name}`),
    cachedAgents: () => caches.agents.store.list(),
    cachedStations: () => caches.stations.store.list(),
    isLeader: () => (elector ? elector.isLeader() : queue() !== undefined),
    stop: () => stopController({ deps, terms, w, abort, elector, running: [...runs, electing], policies }),
  };
}

const namespaceOf = (config: ControllerConfig): string | undefined =>
  config.namespace === ALL_NAMESPACES ? undefined : config.namespace;

/**
 * The watches and what they maintain: each change updates the book and the indexes first (synchronously, before
 * anything can decide on the old picture), then fires its source's triggers.
 */
function createWatching(
  deps: ControllerDeps,
  term: {
    enqueue: (key: string, urgent: boolean, reason: ReconcileReason) => void;
    active: () => boolean;
    mayWrite: () => boolean;
  },
): Watching {
  const { config, transport, metrics, clock } = deps;
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
  const starts = new RunStartIndex();
  const finishedRuns = new FinishedRunIndex({
    maxLogBytes: FINISHED_LOG_BUDGET_BYTES,
    maxReads: 16,
    onEvidence: (source) => metrics.runEvidence.inc({ source }),
    onHeld: (logs, bytes) => {
      metrics.readAheadLogs.set(logs);
      metrics.readAheadLogBytes.set(bytes);
    },
  });
  const recordAgent = (agent: Agent): void => {
    const key = `${agent.metadata.namespace}/${agent.metadata.name}`;
    const held = book.get(key);
    // This replica's own status writes go in as soon as they are answered; a watch lagging behind must not take
    // them back.
    if (held !== undefined && held.metadata.uid === agent.metadata.uid && isOlder(agent, held)) return;
    book.upsert(key, agent);
  };
  const { batchRuntime, poller, runSpans, tracing, secrets } = createBatchPolling(deps, book, (key) =>
    term.enqueue(key, true, 'batch-ended'),
  );
  let fire: Watching['fire'] = () => undefined;
  let endpoints: ReturnType<typeof createEndpointSource> | undefined;
  const trackBatch = createBatchTracking({
    poller,
    runtime: batchRuntime,
    book,
    clock,
    definitionOf: (a) => definitionFrom(caches.stations.store, caches.definitions.store, a),
  });
  /** The Job `namespace/name` from the Job cache, the Agent owning it, and that Agent's book entry. */
  const runOfJob = (jobKey: string) => {
    const job = caches.jobs.store.get(jobKey);
    const owner = agentOwnerOf(job);
    if (job === undefined || owner === undefined) return undefined;
    const key = `${job.metadata.namespace}/${owner.name}`;
    return { job, owner, key, agent: book.get(key) };
  };
  const caches: Caches = createCaches(
    {
      config,
      transport,
      clock,
      random: deps.random,
      logger: deps.logger,
      metrics,
      namespace: namespaceOf(config),
    },
    {
      agent: (c) => {
        trackBatch(c);
        if (c.type === 'deleted') {
          book.remove(`${c.object.metadata.namespace}/${c.object.metadata.name}`);
          claims.remove(c.object.metadata.uid);
        } else recordAgent(c.object); // the cache and the book share one parsed object per Agent
        fire('agent', c);
      },
      job: (c) => {
        const jobKey = `${c.object.metadata.namespace}/${c.object.metadata.name}`;
        const owner = agentOwnerOf(c.object);
        if (c.type === 'deleted' || owner === undefined) book.jobGone(jobKey);
        else book.jobSeen(jobKey, owner.uid);
        fire('job', c);
      },
      station: (c) => fire('station', c),
      definition: (c) => fire('definition', c),
      policy: (c) => fire('policy', c),
      endpointSlice: (c) => {
        endpoints?.seen();
        fire('endpointSlice', c);
      },
      endpointSlicesForbidden: (why) => endpoints?.forbidden(why),
      // The spend ledgers (issue 28 §4) wake nobody: a write only records spend, it never frees any; a run held by a
      // budget is re-checked when its window frees (its requeue), and on the poll.
      spendLedger: () => undefined,
      pendingPod: (c) => {
        const changed = starts.podChanged(c);
        if (changed !== undefined) fire('startProblem', changed);
      },
      jobEvent: (c) => {
        const job = starts.eventChanged(c);
        if (job !== undefined) fire('startProblem', { job, blocked: true });
      },
      finishedPod: (c) => {
        // Cached from their own watch, with the agent container's log read as soon as the pod ends, before the Job
        // controller writes the Job's verdict (issue 15 §2), for the current Job of a run still Running.
        const ended = finishedRuns.podChanged(c);
        if (ended === undefined || !term.mayWrite()) return;
        const jobKey = podJobKey(ended);
        const run = jobKey === undefined ? undefined : runOfJob(jobKey);
        if (run === undefined || podJobUid(ended) !== run.job.metadata.uid) return;
        if (run.agent?.metadata.uid !== run.owner.uid || run.agent.status.phase !== 'Running') return;
        finishedRuns.readAhead(ended, (pod) =>
          readAgentLog({ transport }, pod.metadata.namespace, pod.metadata.name),
        );
      },
    },
  );
  endpoints = createEndpointSource(caches.slices.store);
  fire = createTriggers(
    TRIGGERS,
    {
      book,
      stationOf: (lane) => laneStation(caches, lane),
      agents: () => caches.agents.store.list(),
      ownerOfJob: (jobKey) => runOfJob(jobKey)?.key,
    },
    term.enqueue,
    term.active,
  ).fire;
  return {
    caches,
    book,
    tombstones,
    serverKeys: createServerKeys(),
    starts,
    finishedRuns,
    endpoints,
    poller,
    batchRuntime,
    secrets,
    runSpans,
    tracing,
    fire: (source, event) => fire(source, event),
    recordAgent,
  };
}

/** A lane's Station as admission reads it, from the cache (undefined when missing or invalid). */
function laneStation(caches: Caches, lane: string): LaneStation {
  const raw = caches.stations.store.get(lane);
  const station = raw === undefined ? undefined : parseCachedStation(raw);
  return station?.ok ? station.value.spec : undefined;
}

/** The vendor batch machinery (and the run spans its polls report to), shared by the watches and the executor. */
function createBatchPolling(deps: ControllerDeps, book: StationBook<Agent>, onEnded: (key: string) => void) {
  const { config, clock, metrics } = deps;
  const log = deps.logger;
  const secrets = createSecretReader({ transport: deps.transport, now: () => clock.now() });
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
    onEnded,
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
  return { secrets, batchRuntime, tracing, runSpans, poller };
}

/** What a reconcile (and a sweep's executor) reads and writes through. */
function reconcileDepsOf(
  deps: ControllerDeps,
  w: Watching,
  more: {
    readonly policies: PolicySource;
    readonly events: EventRecorder;
    readonly mayWrite: () => boolean;
    readonly promptTokens: () => PromptTokens | undefined;
    readonly gatewayCredentials: () => GatewayCredentials | undefined;
    readonly prices: NonNullable<ReconcileDeps['prices']>;
    readonly keySaturation?: ReconcileDeps['keySaturation'];
  },
): ReconcileDeps {
  const { config, transport, clock } = deps;
  const { caches, starts } = w;
  const apiServer = createApiServerSource({
    transport,
    clock,
    everyMs: config.pollIntervalMs,
    logger: deps.logger,
  });
  return {
    transport,
    stations: caches.stations.store,
    definitions: caches.definitions.store,
    get policies() {
      return more.policies.current();
    },
    jobs: caches.jobs.store,
    finishedRuns: w.finishedRuns,
    events: more.events,
    metrics: deps.metrics,
    logger: deps.logger,
    now: () => new Date(clock.now()),
    book: w.book,
    leading: more.mayWrite,
    mayWrite: more.mayWrite,
    onAgentWritten: (raw) => {
      const parsed = v.safeParse(AgentSchema, raw);
      if (parsed.success) w.recordAgent(parsed.output);
    },
    tombstones: w.tombstones,
    serverKeys: w.serverKeys,
    backgroundEvents: true,
    backgroundPrunes: true,
    batch: w.batchRuntime,
    poller: w.poller,
    sinks: createSinkDispatcher({ secrets: w.secrets, logger: deps.logger }),
    get promptTokens() {
      return more.promptTokens();
    },
    get gatewayCredentials() {
      return more.gatewayCredentials();
    },
    prices: more.prices,
    ...(deps.sessions !== undefined ? { sessions: deps.sessions } : {}),
    spend: (ns) => observeSpend(ns, caches.agents.store, caches.spendLedgers.store, more.prices()),
    ...(more.keySaturation !== undefined ? { keySaturation: more.keySaturation } : {}),
    ...(w.runSpans !== undefined ? { spans: w.runSpans } : {}),
    endpoints: (ns, services) => w.endpoints.of(ns, services),
    // Nothing is concluded from the pod cache before it has listed (a restart would flap every blocked run).
    starts: (ns, jobName) =>
      caches.pendingPods.store.hasSynced()
        ? starts.observe(ns, jobName, caches.jobEvents.store.hasSynced())
        : undefined,
    apiServer,
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
      sessions: { enabled: deps.sessions !== undefined },
      controllerNamespace: config.leaseNamespace,
      ...(config.tracing !== undefined ? { tracing: { runTracesUrl: config.tracing.runTracesUrl } } : {}),
      ...(config.gatewayUrl !== undefined ? { gateway: { url: config.gatewayUrl } } : {}),
      budgetHourMs: config.budgetHourMs,
    },
  };
}

/** One reconcile of a queued key, measured. */
async function handle(deps: ControllerDeps, reconcileDeps: ReconcileDeps, key: string, reason: string) {
  const { clock, metrics } = deps;
  const started = clock.now();
  const result: WorkResult = await reconcileAgent(key, reconcileDeps, reason);
  metrics.reconcileDuration.observe((clock.now() - started) / 1000);
  metrics.reconciles.inc({
    result: result.kind === 'retry' ? 'error' : result.kind === 'done' ? 'success' : 'requeue',
  });
  return result;
}

/** `agent_budget_waiting_runs`: Pending Agents held by a spent budget (Ready=False/BudgetExhausted), by namespace. */
function setBudgetWaiting(metrics: ControllerMetrics, caches: Caches): void {
  const waiting = new Map<string, number>();
  for (const agent of caches.agents.store.list()) {
    if (agent.status.phase !== 'Pending') continue;
    const ready = agent.status.conditions?.find((c) => c.type === 'Ready');
    if (ready?.reason !== REASON.budgetExhausted) continue;
    const ns = agent.metadata.namespace;
    waiting.set(ns, (waiting.get(ns) ?? 0) + 1);
  }
  metrics.budgetWaitingRuns.reset();
  for (const [namespace, n] of waiting) metrics.budgetWaitingRuns.set({ namespace }, n);
}

/** The realtime sessions open now, and those Suspended (issue 29). */
function setSessionGauges(metrics: ControllerMetrics, caches: Caches, book: StationBook<Agent>): void {
  metrics.realtimeSessions.set(openSessions(caches));
  metrics.sessionsSuspended.set(book.phaseCount('Suspended'));
}

/** Realtime runs whose Job has not finished: the sessions open now. */
function openSessions(caches: Caches): number {
  let open = 0;
  for (const raw of caches.jobs.store.list()) {
    if (raw.metadata.labels?.[LABEL_EXECUTION] !== 'realtime') continue;
    const job = parseCachedJob(raw);
    if (job.ok && !isJobFinished(job.value)) open++;
  }
  return open;
}

/** Stops the controller; never throws. */
async function stopController(s: {
  readonly deps: ControllerDeps;
  readonly terms: Terms;
  readonly w: Watching;
  readonly abort: AbortController;
  readonly elector: LeaderElector | undefined;
  readonly running: readonly Promise<void>[];
  readonly policies: PolicySource;
}): Promise<void> {
  const { clock } = s.deps;
  // Handlers in flight may wait on a slow API server for up to a request timeout. Give them a few seconds, then go
  // on: none can create a Job any more (the leadership fence), and their other writes carry resourceVersion
  // preconditions, so the next leader cannot be harmed by one landing late.
  const drained = new AbortController();
  const finished = await Promise.race([
    s.terms.stop().then(() => true),
    clock.sleep(SHUTDOWN_DRAIN_MS, drained.signal).then(() => false),
  ]);
  drained.abort();
  if (!finished)
    s.deps.logger.warn('Reconciles still running at shutdown; not waiting for them', {
      waitedMs: SHUTDOWN_DRAIN_MS,
    });
  s.w.poller.stop();
  s.abort.abort();
  const policiesRunning = s.policies.running();
  await Promise.allSettled([...s.running, ...(policiesRunning !== undefined ? [policiesRunning] : [])]);
  await s.w.tracing.shutdown(2000);
  // The elector logs the release and its failure itself, with the Lease and identity.
  if (s.elector) await s.elector.release();
}

/** The Lease elector when leader election is on: a won Lease starts a term, a lost one ends it. */
function electorOf(
  deps: ControllerDeps,
  terms: Terms,
  onReachable: (reachable: boolean) => void,
): LeaderElector | undefined {
  const { config, transport, clock, metrics } = deps;
  const log = deps.logger;
  return deps.config.leaderElection
    ? createLeaderElector({
        transport,
        namespace: config.leaseNamespace,
        name: config.leaseName,
        identity: config.identity,
        clock,
        logger: log,
        onStartedLeading: () => {
          terms
            .start()
            .catch((error: unknown) => log.error('Starting to reconcile failed', { error: String(error) }));
        },
        onStoppedLeading: () => void terms.stop(),
        onTick: ({ reachable, leading }) => {
          onReachable(reachable);
          metrics.isLeader.set(leading ? 1 : 0);
        },
      })
    : undefined;
}
