// Writing measured usage to the Agents (docs/design/gateway.md#metering): each run's delta is added to its Agent's
// annotation agents.re-cinq.com/gateway-usage by a JSON merge patch that carries the resourceVersion it was computed
// from, so two replicas never overwrite each other's counts (409: read the Agent again and add again). A run's delta
// is written at most once per `intervalMs`, and at shutdown; it leaves memory only when its write succeeded (or its
// Agent is gone). For the run's cap (budget.ts) it also says what a run has measured here and not yet written, and
// what this replica knows the annotation to hold (the value it is writing or wrote) before the informer has seen it.

import { ANNOTATION_GATEWAY_USAGE, type GatewayUsage } from '../api/gateway.ts';
import { describeKubeError, isConflict, isNotFound, mergePatch, type Transport } from '../kube/index.ts';
import type { GatewayMetrics } from '../metrics/gateway.ts';
import type { Clock } from '../runtime/index.ts';
import type { Logger } from '../shared/log.ts';
import {
  annotationWith,
  EMPTY_USAGE,
  isEmptyUsage,
  mergeUsage,
  type RunRef,
  UsageBook,
} from './accumulator.ts';
import { type GatewayAgent, GatewayAgentSchema } from './authorize.ts';
import { AGENT_RESOURCE, type AgentSource } from './cluster.ts';

/** Writes of one delta before it is put back for the next round (conflicts with other writers included). */
const ATTEMPTS = 5;
/** The field manager of the gateway's writes. */
export const GATEWAY_FIELD_MANAGER = 'agent-gateway';
/** How long this replica's own reading of an annotation it wrote is kept (the informer has seen the write by then). */
export const OWN_VIEW_TTL_MS = 60_000;

/** What a run has measured on this replica and not written, and this replica's latest reading of its annotation. */
export interface Unwritten {
  /** Measured and not yet written: pending, and the delta of a write in flight while `view` does not hold it yet. */
  readonly pending: GatewayUsage;
  /**
   * The annotation as this replica last wrote it (or is writing it: the delta of a write in flight is here, not in
   * `pending`); undefined when it has none. Newer than the informer's copy until the informer sees the write.
   */
  readonly view: GatewayUsage | undefined;
}

export interface UsageFlusher {
  /** Adds a call's usage to its run's delta and schedules the write. */
  record(run: RunRef, usage: GatewayUsage): void;
  /** Writes every delta now (retrying until `deadlineMs` from now); resolves when none is left or time is up. */
  flushAll(deadlineMs: number): Promise<void>;
  /** Runs with usage not yet written. */
  pending(): number;
  /** The run's usage this replica holds and has not written (see {@link Unwritten}). */
  unwritten(uid: string): Unwritten;
}

export function usageFlusher(o: {
  readonly transport: Transport;
  readonly agents: AgentSource;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  readonly intervalMs?: number;
}): UsageFlusher {
  const interval = o.intervalMs ?? 1000;
  const book = new UsageBook();
  const lastWrite = new Map<string, number>();
  const timers = new Map<string, () => void>();
  const writes = new Set<Promise<void>>();
  // Per run: the annotation as this replica last wrote it (or is writing it), kept OWN_VIEW_TTL_MS.
  const views = new Map<string, { usage: GatewayUsage; at: number }>();
  const gauge = () => o.metrics.usagePending.set(book.size);
  // Runs whose view holds the delta of their write in flight (from the moment the write computed its value).
  const covered = new Set<string>();
  const setView = (uid: string, usage: GatewayUsage | undefined, holdsDelta: boolean): void => {
    if (holdsDelta) covered.add(uid);
    else covered.delete(uid);
    if (usage === undefined) views.delete(uid);
    else views.set(uid, { usage, at: o.clock.now() });
  };
  const pruneViews = (): void => {
    const now = o.clock.now();
    for (const [uid, view] of views) {
      if (now - view.at <= OWN_VIEW_TTL_MS) continue;
      views.delete(uid);
      if (isEmptyUsage(book.inFlightOf(uid))) covered.delete(uid);
    }
  };

  const schedule = (uid: string, atLeastMs = 0): void => {
    if (timers.has(uid)) return;
    const since = o.clock.now() - (lastWrite.get(uid) ?? Number.NEGATIVE_INFINITY);
    const delay = Math.max(atLeastMs, interval - since, 0);
    timers.set(
      uid,
      o.clock.setTimer(delay, () => {
        timers.delete(uid);
        track(write(uid));
      }),
    );
  };

  const track = (p: Promise<void>): void => {
    writes.add(p);
    void p.finally(() => writes.delete(p));
  };

  const write = async (uid: string): Promise<void> => {
    const taken = book.take(uid);
    if (taken === undefined) return;
    covered.delete(uid);
    lastWrite.set(uid, o.clock.now());
    pruneViews();
    const outcome = await writeDelta({ ...o, setView }, taken.run, taken.delta);
    book.settle(uid, outcome);
    if (outcome === 'dropped') lastWrite.delete(uid);
    gauge();
    // Put back (an error): try again after a pause; new usage meanwhile: its own turn.
    if (book.waiting().includes(uid)) schedule(uid, outcome === 'kept' ? interval * 2 : 0);
  };

  return {
    record(run, usage) {
      book.add(run, usage);
      gauge();
      schedule(run.uid);
    },
    async flushAll(deadlineMs) {
      const end = o.clock.now() + deadlineMs;
      while (book.size > 0 && o.clock.now() < end) {
        for (const cancel of timers.values()) cancel();
        timers.clear();
        for (const uid of book.waiting()) track(write(uid));
        await Promise.all([...writes]);
        if (book.size > 0) await o.clock.sleep(Math.min(interval, Math.max(0, end - o.clock.now())));
      }
      if (book.size > 0)
        o.logger.error('Measured usage could not be written before shutdown', { runs: book.size });
    },
    pending: () => book.size,
    unwritten(uid) {
      const view = views.get(uid);
      const pending = book.pendingOf(uid);
      return {
        pending: covered.has(uid) ? pending : mergeUsage(book.inFlightOf(uid), pending),
        view: view === undefined || o.clock.now() - view.at > OWN_VIEW_TTL_MS ? undefined : view.usage,
      };
    },
  };
}

/** One delta to its Agent; what becomes of it. */
async function writeDelta(
  o: {
    readonly transport: Transport;
    readonly agents: AgentSource;
    readonly logger: Logger;
    readonly metrics: GatewayMetrics;
    /**
     * Records what the annotation holds as this write sees it (undefined: the Agent is gone); `holdsDelta` when that
     * value has the write's delta in it.
     */
    readonly setView: (uid: string, usage: GatewayUsage | undefined, holdsDelta: boolean) => void;
  },
  run: RunRef,
  delta: GatewayUsage,
): Promise<'written' | 'kept' | 'dropped'> {
  const log = o.logger.with({ namespace: run.namespace, agent: run.name });
  let agent: GatewayAgent | undefined = o.agents.informer.store.get(`${run.namespace}/${run.name}`);
  // The annotation as last read by this write: what the view goes back to when the delta is kept for later.
  let base: GatewayUsage | undefined;
  const keep = (): 'kept' => {
    if (base !== undefined) o.setView(run.uid, base, false);
    return 'kept';
  };
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    if (attempt > 0 || agent === undefined || agent.metadata.uid !== run.uid) {
      const fresh = await o.agents.read(run.namespace, run.name);
      if (!fresh.ok) {
        o.metrics.usageWrites.inc({ result: 'error' });
        log.warn('Reading the Agent to write its usage failed', { error: describeKubeError(fresh.error) });
        return keep();
      }
      agent = fresh.value;
    }
    if (agent === undefined || agent.metadata.uid !== run.uid) {
      o.metrics.usageWrites.inc({ result: 'gone' });
      log.warn('The Agent is gone; its measured usage is dropped', { uid: run.uid, usage: delta.models });
      o.setView(run.uid, undefined, false);
      return 'dropped';
    }
    const { text, usage, reset } = annotationWith(agent.metadata.usage, delta);
    base = annotationWith(agent.metadata.usage, EMPTY_USAGE).usage;
    // While the patch is on its way (and after it landed, until the informer has it), this is the annotation.
    o.setView(run.uid, usage, true);
    if (reset) log.warn('The usage annotation was not valid; it is started again', { uid: run.uid });
    const patched = await mergePatch(
      o.transport,
      AGENT_RESOURCE,
      { namespace: run.namespace, name: run.name },
      { metadata: { annotations: { [ANNOTATION_GATEWAY_USAGE]: text } } },
      GatewayAgentSchema,
      {
        resourceVersion: agent.metadata.resourceVersion,
        fieldManager: GATEWAY_FIELD_MANAGER,
        timeoutMs: 10_000,
      },
    );
    if (patched.ok) {
      o.metrics.usageWrites.inc({ result: 'written' });
      log.debug('Wrote measured usage', { uid: run.uid });
      return 'written';
    }
    if (isConflict(patched.error) || isNotFound(patched.error)) {
      o.metrics.usageWrites.inc({ result: 'conflict' });
      continue;
    }
    o.metrics.usageWrites.inc({ result: 'error' });
    log.warn('Writing measured usage failed', { error: describeKubeError(patched.error) });
    return keep();
  }
  return keep();
}
