// Polls the vendor batches of Running batch runs, each at most once per period, spread over the period and with
// bounded concurrency, and wakes an Agent's reconcile when its batch has ended. The reconcile reads the latest
// observation from here: watch events never cause a vendor call.
//
// Where it saves calls, a group of batches (same provider, namespace and key) is swept with the vendor's list
// endpoint instead: once per period, newest first, one request per page of 100, until every batch of the group has
// been seen (at most ceil(n / 100) + 1 pages). A batch seen pending needs no call of its own; one seen ended is then
// checked on its own (to read its result); one the sweep did not see, or every batch after a failed sweep, is polled
// on its own as before.

import type { Clock } from '../../runtime/index.ts';
import type { Logger } from '../../shared/log.ts';
import { describeBatchError } from '../../vendors/batch/http.ts';
import type { BatchProvider, BatchState, RenderContext } from '../../vendors/batch/port.ts';
import { type BatchRuntime, vendorCall } from './runtime.ts';
import { afterSweep, censusOfGroups, groupKey, listWanted } from './sweep.ts';

/** Polls in flight at once across all batches. */
export const DEFAULT_POLL_CONCURRENCY = 8;
/** How often due polls are looked for. */
const TICK_MS = 250;
/** From this many batches in one group, a list sweep replaces their polls one by one. */
export const LIST_THRESHOLD = 5;

/** One in-flight batch as the controller registers it. */
export interface TrackedBatch {
  /** Agent key (`namespace/name`), woken when the batch ends. */
  readonly key: string;
  readonly namespace: string;
  readonly provider: BatchProvider;
  readonly batchId: string;
  readonly secretKey: string;
  /** The render context at poll time (prompt, model, duration); undefined when the Agent is gone. */
  readonly render: () => RenderContext | undefined;
}

export interface BatchPoller {
  /** Registers (or updates) the batch of Agent `uid`; a new batchId resets its observation. */
  track(uid: string, batch: TrackedBatch): void;
  untrack(uid: string): void;
  /** The latest observation of the Agent's batch (undefined: not polled yet). */
  observation(uid: string): BatchState | undefined;
  /** Polling on (this replica leads) or off. Tracking goes on either way. */
  setActive(active: boolean): void;
  /** Number of batches tracked. */
  readonly size: number;
  stop(): void;
}

interface Entry {
  batch: TrackedBatch;
  dueAt: number;
  polling: boolean;
  state: BatchState | undefined;
  /** `listed`: left to its group's sweeps (while the group is swept); `direct`: polled on its own at `dueAt`. */
  mode: 'listed' | 'direct';
}

/** The sweep schedule of a group of batches that one list request can answer for (sweep.ts's `groupKey`). */
interface Group {
  sweeping: boolean;
  nextSweepAt: number;
}

export interface BatchPollerOptions {
  readonly runtime: BatchRuntime;
  readonly clock: Clock;
  readonly random: () => number;
  readonly periodMs: number;
  readonly logger: Logger;
  /** Called when an Agent's batch is seen ended (the controller enqueues the key, urgent). */
  readonly onEnded: (key: string) => void;
  readonly concurrency?: number;
  readonly onPoll?: (provider: BatchProvider, result: 'pending' | 'ended' | 'error') => void;
  /** Called after each poll of one batch on its own, with when it ran (the run's `agent.batch.poll` span). */
  readonly onPolled?: (
    batch: TrackedBatch,
    startMs: number,
    endMs: number,
    result: 'pending' | 'ended' | 'error',
    error?: string,
  ) => void;
  /** Called for each list page requested by a sweep. */
  readonly onListPage?: (provider: BatchProvider, result: 'ok' | 'error') => void;
  /** Sweep groups with the vendors' list endpoints (default true; `BATCH_POLL_LIST=false` turns it off). */
  readonly listing?: boolean;
}

/** The poller's state, shared by its tick, its sweeps and its polls. */
interface PollerState {
  readonly options: BatchPollerOptions;
  readonly concurrency: number;
  readonly listing: boolean;
  readonly entries: Map<string, Entry>;
  readonly groups: Map<string, Group>;
  /** Tracked batches per group key (recounted each tick). */
  groupSizes: Map<string, number>;
  active: boolean;
  inFlight: number;
}

/** When a poll lands that is spread over the period starting `now` (pure): `random` in [0, 1) picks the moment. */
export function spreadOverPeriod(now: number, random: number, periodMs: number): number {
  return now + Math.floor(random * periodMs);
}

export function createBatchPoller(options: BatchPollerOptions): BatchPoller {
  const { clock, periodMs } = options;
  const p: PollerState = {
    options,
    concurrency: Math.max(1, options.concurrency ?? DEFAULT_POLL_CONCURRENCY),
    listing: options.listing ?? true,
    entries: new Map(),
    groups: new Map(),
    groupSizes: new Map(),
    active: false,
    inFlight: 0,
  };
  let cancelTick: (() => void) | undefined;
  let stopped = false;

  function schedule(): void {
    if (cancelTick !== undefined || !p.active || stopped) return;
    cancelTick = clock.setTimer(TICK_MS, () => {
      cancelTick = undefined;
      tick(p);
      schedule();
    });
  }

  return {
    track(uid, batch) {
      const e = p.entries.get(uid);
      if (e !== undefined && e.batch.batchId === batch.batchId) {
        e.batch = batch;
        return;
      }
      // A new batch's first poll lands anywhere in the first period: 1,000 submitted at once are spread out.
      // Left to the next sweep while its group is swept (which comes within a period).
      p.entries.set(uid, {
        batch,
        dueAt: spreadOverPeriod(clock.now(), options.random(), periodMs),
        polling: false,
        state: undefined,
        mode: 'listed',
      });
    },
    untrack: (uid) => void p.entries.delete(uid),
    observation: (uid) => p.entries.get(uid)?.state,
    setActive(on) {
      if (on && !p.active) {
        // A new leader takes over every in-flight batch at once: spread the overdue ones over a period again
        // instead of polling them all in the first ticks.
        const now = clock.now();
        for (const e of p.entries.values())
          if (e.dueAt <= now) e.dueAt = spreadOverPeriod(now, options.random(), periodMs);
      }
      p.active = on;
      if (on) schedule();
      else {
        cancelTick?.();
        cancelTick = undefined;
      }
    },
    get size() {
      return p.entries.size;
    },
    stop() {
      stopped = true;
      p.active = false;
      cancelTick?.();
      cancelTick = undefined;
    },
  };
}

/** Whether batches of this group are swept (listing on, enough of them, and the vendor can list). */
function swept(p: PollerState, key: string): boolean {
  return p.listing && (p.groupSizes.get(key) ?? 0) >= LIST_THRESHOLD;
}

/** Starts the sweeps and polls that are due, as far as the concurrency bound allows. */
function tick(p: PollerState): void {
  if (!p.active) return;
  const now = p.options.clock.now();
  const { sizes, first } = censusOfGroups(
    [...p.entries.values()].filter((e) => e.state?.kind !== 'ended').map((e) => e.batch),
  );
  p.groupSizes = sizes;
  for (const [key, batch] of first) {
    if (p.inFlight >= p.concurrency) return;
    if (!swept(p, key)) continue;
    let g = p.groups.get(key);
    if (g === undefined) {
      g = { sweeping: false, nextSweepAt: now };
      p.groups.set(key, g);
    }
    if (!g.sweeping && g.nextSweepAt <= now) void sweep(p, key, g, batch);
  }
  for (const key of p.groups.keys()) if (!sizes.has(key)) p.groups.delete(key);
  for (const [uid, e] of p.entries) {
    if (p.inFlight >= p.concurrency) return;
    if (e.polling || e.dueAt > now || e.state?.kind === 'ended') continue;
    if (e.mode === 'listed' && swept(p, groupKey(e.batch))) continue;
    void poll(p, uid, e);
  }
}

/** Lists the group's batches at the vendor; see the header for what each outcome means for a batch. */
async function sweep(p: PollerState, key: string, g: Group, sample: TrackedBatch): Promise<void> {
  const { options } = p;
  g.sweeping = true;
  p.inFlight++;
  const members = (): Entry[] =>
    [...p.entries.values()].filter((e) => groupKey(e.batch) === key && e.state?.kind !== 'ended');
  const fallBack = (): void => {
    for (const e of members()) e.mode = 'direct';
  };
  try {
    const call = await vendorCall(options.runtime, sample.provider, sample.namespace, sample.secretKey);
    if (!call.ok) return fallBack();
    const seen = await listWanted(
      (cursor) => options.runtime.vendors[sample.provider].listPage(cursor, call.value),
      new Set(members().map((e) => e.batch.batchId)),
      (result) => options.onListPage?.(sample.provider, result),
    );
    if (!seen.ok) {
      options.logger.warn('Batch list failed; polling those batches one by one this period', {
        provider: sample.provider,
        namespace: sample.namespace,
        error: describeBatchError(seen.error),
      });
      return fallBack();
    }
    const now = options.clock.now();
    for (const e of members()) {
      const plan = afterSweep(seen.value.get(e.batch.batchId), e.dueAt, now, options.periodMs);
      e.mode = plan.mode;
      e.dueAt = plan.dueAt;
      if (plan.mode === 'listed') options.onPoll?.(e.batch.provider, 'pending');
    }
  } catch (error) {
    options.logger.error('Batch list crashed', { provider: sample.provider, error: String(error) });
    fallBack();
  } finally {
    p.inFlight--;
    g.sweeping = false;
    g.nextSweepAt = options.clock.now() + options.periodMs;
    tick(p);
  }
}

/** Checks one batch on its own at the vendor and keeps what it says (waking the Agent when it ended). */
async function poll(p: PollerState, uid: string, e: Entry): Promise<void> {
  const { options } = p;
  const { clock } = options;
  e.polling = true;
  p.inFlight++;
  const batch = e.batch;
  const startedAt = clock.now();
  let polled: { result: 'pending' | 'ended' | 'error'; error?: string } | undefined;
  try {
    const render = batch.render();
    if (render === undefined) return;
    const call = await vendorCall(options.runtime, batch.provider, batch.namespace, batch.secretKey);
    if (!call.ok) {
      options.logger.warn('Batch poll skipped: no credentials', {
        agent: batch.key,
        batch: batch.batchId,
        error: call.error.message,
      });
      options.onPoll?.(batch.provider, 'error');
      polled = { result: 'error', error: call.error.message };
      return;
    }
    const r = await options.runtime.vendors[batch.provider].check(batch.batchId, render, call.value);
    if (p.entries.get(uid) !== e || e.batch.batchId !== batch.batchId) return;
    if (!r.ok) {
      options.logger.warn('Batch poll failed', {
        agent: batch.key,
        batch: batch.batchId,
        error: describeBatchError(r.error),
      });
      options.onPoll?.(batch.provider, 'error');
      polled = { result: 'error', error: describeBatchError(r.error) };
      if (r.error.kind === 'unavailable' && r.error.retryAfterMs !== undefined)
        e.dueAt = Math.max(e.dueAt, clock.now() + r.error.retryAfterMs);
      return;
    }
    e.state = r.value;
    options.onPoll?.(batch.provider, r.value.kind === 'ended' ? 'ended' : 'pending');
    polled = { result: r.value.kind === 'ended' ? 'ended' : 'pending' };
    if (r.value.kind === 'ended') options.onEnded(batch.key);
  } catch (error) {
    options.logger.error('Batch poll crashed', { agent: batch.key, error: String(error) });
  } finally {
    if (polled !== undefined) options.onPolled?.(batch, startedAt, clock.now(), polled.result, polled.error);
    p.inFlight--;
    e.polling = false;
    e.dueAt = Math.max(e.dueAt, clock.now() + options.periodMs);
    // A freed slot takes the next due poll at once (1,000 batches ending together are read at the bound's pace,
    // not 8 per tick).
    tick(p);
  }
}
