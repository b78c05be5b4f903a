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
import {
  type BatchProvider,
  type BatchState,
  LIST_PAGE_SIZE,
  type RenderContext,
} from '../../vendors/batch/port.ts';
import { type BatchRuntime, vendorCall } from './runtime.ts';

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

/** Batches that one list request can answer for: same provider, namespace (Secret) and key. */
interface Group {
  sweeping: boolean;
  nextSweepAt: number;
}

const groupKey = (b: TrackedBatch): string => `${b.provider}\u0000${b.namespace}\u0000${b.secretKey}`;

export function createBatchPoller(options: {
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
}): BatchPoller {
  const { clock, periodMs } = options;
  const concurrency = Math.max(1, options.concurrency ?? DEFAULT_POLL_CONCURRENCY);
  const listing = options.listing ?? true;
  const entries = new Map<string, Entry>();
  const groups = new Map<string, Group>();
  /** Tracked batches per group key (recounted each tick). */
  let groupSizes = new Map<string, number>();
  let active = false;
  let inFlight = 0;
  let cancelTick: (() => void) | undefined;
  let stopped = false;

  function schedule(): void {
    if (cancelTick !== undefined || !active || stopped) return;
    cancelTick = clock.setTimer(TICK_MS, () => {
      cancelTick = undefined;
      tick();
      schedule();
    });
  }

  /** Whether batches of this group are swept (listing on, enough of them, and the vendor can list). */
  function swept(key: string): boolean {
    return listing && (groupSizes.get(key) ?? 0) >= LIST_THRESHOLD;
  }

  function tick(): void {
    if (!active) return;
    const now = clock.now();
    const sizes = new Map<string, number>();
    const first = new Map<string, TrackedBatch>();
    for (const e of entries.values()) {
      if (e.state?.kind === 'ended') continue;
      const key = groupKey(e.batch);
      sizes.set(key, (sizes.get(key) ?? 0) + 1);
      if (!first.has(key)) first.set(key, e.batch);
    }
    groupSizes = sizes;
    for (const [key, batch] of first) {
      if (inFlight >= concurrency) return;
      if (!swept(key)) continue;
      let g = groups.get(key);
      if (g === undefined) {
        g = { sweeping: false, nextSweepAt: now };
        groups.set(key, g);
      }
      if (!g.sweeping && g.nextSweepAt <= now) void sweep(key, g, batch);
    }
    for (const key of groups.keys()) if (!sizes.has(key)) groups.delete(key);
    for (const [uid, e] of entries) {
      if (inFlight >= concurrency) return;
      if (e.polling || e.dueAt > now || e.state?.kind === 'ended') continue;
      if (e.mode === 'listed' && swept(groupKey(e.batch))) continue;
      void poll(uid, e);
    }
  }

  /** Lists the group's batches at the vendor; see the header for what each outcome means for a batch. */
  async function sweep(key: string, g: Group, sample: TrackedBatch): Promise<void> {
    g.sweeping = true;
    inFlight++;
    const members = (): Entry[] =>
      [...entries.values()].filter((e) => groupKey(e.batch) === key && e.state?.kind !== 'ended');
    const fallBack = (): void => {
      for (const e of members()) e.mode = 'direct';
    };
    try {
      const call = await vendorCall(options.runtime, sample.provider, sample.namespace, sample.secretKey);
      if (!call.ok) return fallBack();
      const wanted = new Map(members().map((e) => [e.batch.batchId, e]));
      const maxPages = Math.ceil(wanted.size / LIST_PAGE_SIZE) + 1;
      const seen = new Map<string, boolean>();
      let cursor: string | undefined;
      for (let page = 0; page < maxPages; page++) {
        const r = await options.runtime.vendors[sample.provider].listPage(cursor, call.value);
        if (!r.ok) {
          options.onListPage?.(sample.provider, 'error');
          options.logger.warn('Batch list failed; polling those batches one by one this period', {
            provider: sample.provider,
            namespace: sample.namespace,
            error: describeBatchError(r.error),
          });
          return fallBack();
        }
        options.onListPage?.(sample.provider, 'ok');
        for (const b of r.value.batches) if (wanted.has(b.id)) seen.set(b.id, b.ended);
        cursor = r.value.next;
        if (cursor === undefined || seen.size >= wanted.size) break;
      }
      const now = clock.now();
      for (const e of members()) {
        const ended = seen.get(e.batch.batchId);
        if (ended === undefined) {
          e.mode = 'direct'; // not listed (yet): its own poll decides
        } else if (ended) {
          e.mode = 'direct';
          e.dueAt = now; // read its result now
        } else {
          e.mode = 'listed';
          e.dueAt = Math.max(e.dueAt, now + periodMs);
          options.onPoll?.(e.batch.provider, 'pending');
        }
      }
    } catch (error) {
      options.logger.error('Batch list crashed', { provider: sample.provider, error: String(error) });
      fallBack();
    } finally {
      inFlight--;
      g.sweeping = false;
      g.nextSweepAt = clock.now() + periodMs;
      tick();
    }
  }

  async function poll(uid: string, e: Entry): Promise<void> {
    e.polling = true;
    inFlight++;
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
      if (entries.get(uid) !== e || e.batch.batchId !== batch.batchId) return;
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
      if (polled !== undefined)
        options.onPolled?.(batch, startedAt, clock.now(), polled.result, polled.error);
      inFlight--;
      e.polling = false;
      e.dueAt = Math.max(e.dueAt, clock.now() + periodMs);
      // A freed slot takes the next due poll at once (1,000 batches ending together are read at the bound's pace,
      // not 8 per tick).
      tick();
    }
  }

  return {
    track(uid, batch) {
      const e = entries.get(uid);
      if (e !== undefined && e.batch.batchId === batch.batchId) {
        e.batch = batch;
        return;
      }
      // A new batch's first poll lands anywhere in the first period: 1,000 submitted at once are spread out.
      // Left to the next sweep while its group is swept (which comes within a period).
      entries.set(uid, {
        batch,
        dueAt: clock.now() + Math.floor(options.random() * periodMs),
        polling: false,
        state: undefined,
        mode: 'listed',
      });
    },
    untrack: (uid) => void entries.delete(uid),
    observation: (uid) => entries.get(uid)?.state,
    setActive(on) {
      if (on && !active) {
        // A new leader takes over every in-flight batch at once: spread the overdue ones over a period again
        // instead of polling them all in the first ticks.
        const now = clock.now();
        for (const e of entries.values())
          if (e.dueAt <= now) e.dueAt = now + Math.floor(options.random() * periodMs);
      }
      active = on;
      if (on) schedule();
      else {
        cancelTick?.();
        cancelTick = undefined;
      }
    },
    get size() {
      return entries.size;
    },
    stop() {
      stopped = true;
      active = false;
      cancelTick?.();
      cancelTick = undefined;
    },
  };
}
