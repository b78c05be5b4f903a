import { type Agent, parseStation } from '../api/index.ts';
import type { ControllerConfig } from '../config/index.ts';
import { ALL_NAMESPACES } from '../config/index.ts';
import { createTombstones, executeActions } from '../effects/execute.ts';
import { parseCachedAgent, type ReconcileDeps, reconcileAgent } from '../effects/reconcile-agent.ts';
import { AGENT_DEFINITIONS, AGENTS, STATIONS } from '../effects/resources.ts';
import { JOB_LABEL_SELECTOR } from '../jobs/index.ts';
import {
  createEventRecorder,
  describeKubeError,
  JOBS,
  type KubeObject,
  objectKey,
  type Transport,
} from '../kube/index.ts';
import type { ControllerMetrics } from '../metrics/index.ts';
import { PHASES } from '../metrics/index.ts';
import { isTerminal, pruneActions, runPhase } from '../reconcile/index.ts';
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

/** Poll failures in a row after which readiness drops (reference §6.4). */
export const MAX_CONSECUTIVE_POLL_FAILURES = 3;

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
  isLeader(): boolean;
  /** Stops reconciling, stops the informers, releases the Lease (decision g). Never throws. */
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
  const enqueue = (key: string): void => queue?.add(key);
  const agents: Informer<KubeObject> = createInformer({
    ...informerOptions,
    resource: AGENTS,
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
  const jobs = createInformer({
    ...informerOptions,
    resource: JOBS,
    labelSelector: JOB_LABEL_SELECTOR,
    hooks: reconnectHook('jobs'),
    onChange: (c) => {
      const owner = (c.object.metadata.ownerReferences ?? []).find(
        (o) => o.controller === true && o.kind === 'Agent',
      );
      if (owner) enqueue(`${c.object.metadata.namespace}/${owner.name}`);
    },
  });

  const tombstones = createTombstones(() => clock.now());

  /** An Agent changed: reconcile it; a run that ended or vanished frees a slot, so wake its Station's queue. */
  function onAgentChange(c: Change<KubeObject>): void {
    const key = objectKey(c.object);
    if (c.type !== 'deleted') enqueue(key);
    else tombstones.remove(c.object.metadata.uid ?? '');
    // A slot frees when a run ends or vanishes: wake that Station's queue (only on the transition itself).
    const now = parseCachedAgent(c.object);
    const was = c.type === 'modified' ? parseCachedAgent(c.old) : undefined;
    const ended =
      c.type === 'modified' && now.ok && isTerminal(now.value) && !(was?.ok && isTerminal(was.value));
    if ((c.type === 'deleted' || ended) && now.ok)
      enqueueWaiting(now.value.metadata.namespace, now.value.spec.stationRef);
  }

  /** Wakes the Pending Agents of a Station (or of a whole namespace when `station` is undefined). */
  function enqueueWaiting(ns: string | undefined, station: string | undefined): void {
    if (!queue) return;
    for (const a of parsedAgents()) {
      if (a.metadata.namespace !== ns || runPhase(a) !== 'Pending') continue;
      if (station === undefined || a.spec.stationRef === station) enqueue(objectKey(a));
    }
  }

  /** Every valid cached Agent, except those this replica already deleted. */
  function parsedAgents(): Agent[] {
    return agents.store.list().flatMap((raw) => {
      const p = parseCachedAgent(raw);
      return p.ok && !tombstones.has(p.value.metadata.uid) ? [p.value] : [];
    });
  }

  const events = createEventRecorder({
    transport,
    component: 'agent-controller',
    instance: config.identity,
    now: () => clock.now(),
    random: deps.random,
    logger: log,
  });
  const reconcileDeps: ReconcileDeps = {
    transport,
    agents: agents.store,
    stations: stations.store,
    definitions: definitions.store,
    jobs: jobs.store,
    events,
    metrics,
    logger: log,
    now: () => new Date(clock.now()),
    isDeleted: (uid) => tombstones.has(uid),
    tombstones,
    backgroundEvents: true,
    options: {
      agentImage: config.agentImage,
      maxOutputBytes: config.maxOutputBytes,
      requeueMs: config.pollIntervalMs,
    },
  };

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
    const listed = await agents.resync();
    if (!listed.ok) {
      pollFailures++;
      log.warn('Poll failed', { error: describeKubeError(listed.error), consecutive: pollFailures });
      return;
    }
    pollFailures = 0;
    const all = parsedAgents();
    const counts = new Map<string, number>(PHASES.map((p) => [p, 0]));
    for (const a of all) counts.set(runPhase(a), (counts.get(runPhase(a)) ?? 0) + 1);
    for (const [phase, n] of counts) metrics.agents.set({ phase }, n);
    await sweepHistory(all);
    for (const a of all) if (!isTerminal(a)) enqueue(objectKey(a));
  }

  async function sweepHistory(all: readonly Agent[]): Promise<void> {
    for (const raw of stations.store.list()) {
      if (!queue) return;
      const station = parseStation(raw);
      if (!station.ok) continue;
      const actions = pruneActions(station.value, all);
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
    await Promise.all([agents.ready, stations.ready, definitions.ready, jobs.ready]);
    if (queue !== q) return;
    q.start();
    log.info('Started reconciling', { namespace: config.namespace });
    await safePoll();
    schedulePoll(q);
  }

  function stopLeading(): Promise<void> {
    metrics.isLeader.set(0);
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

  const runs = [agents, stations, definitions, jobs].map((i) => i.run(abort.signal));
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
    ],
    isLeader: () => (elector ? elector.isLeader() : queue !== undefined),
    async stop() {
      await stopLeading();
      abort.abort();
      await Promise.allSettled([...runs, electing]);
      if (elector) {
        const released = await elector.release();
        if (!released.ok)
          log.warn('Releasing the Lease failed', { error: describeKubeError(released.error) });
        else log.info('Released the Lease');
      }
    },
  };
}
