// Polls the vendor batches of Running batch runs, each at most once per period, spread over the period and with
// bounded concurrency, and wakes an Agent's reconcile when its batch has ended. The reconcile reads the latest
// observation from here: watch events never cause a vendor call.

import type { Clock } from '../../runtime/index.ts';
import type { Logger } from '../../shared/log.ts';
import { describeBatchError } from '../../vendors/batch/http.ts';
import type { BatchProvider, BatchState, RenderContext } from '../../vendors/batch/port.ts';
import { type BatchRuntime, vendorCall } from './runtime.ts';

/** Polls in flight at once across all batches. */
export const DEFAULT_POLL_CONCURRENCY = 8;
/** How often due polls are looked for. */
const TICK_MS = 250;

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
}

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
}): BatchPoller {
  const { clock, periodMs } = options;
  const concurrency = Math.max(1, options.concurrency ?? DEFAULT_POLL_CONCURRENCY);
  const entries = new Map<string, Entry>();
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

  function tick(): void {
    if (!active) return;
    const now = clock.now();
    for (const [uid, e] of entries) {
      if (inFlight >= concurrency) return;
      if (e.polling || e.dueAt > now || e.state?.kind === 'ended') continue;
      void poll(uid, e);
    }
  }

  async function poll(uid: string, e: Entry): Promise<void> {
    e.polling = true;
    inFlight++;
    const batch = e.batch;
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
        if (r.error.kind === 'unavailable' && r.error.retryAfterMs !== undefined)
          e.dueAt = Math.max(e.dueAt, clock.now() + r.error.retryAfterMs);
        return;
      }
      e.state = r.value;
      options.onPoll?.(batch.provider, r.value.kind === 'ended' ? 'ended' : 'pending');
      if (r.value.kind === 'ended') options.onEnded(batch.key);
    } catch (error) {
      options.logger.error('Batch poll crashed', { agent: batch.key, error: String(error) });
    } finally {
      inFlight--;
      e.polling = false;
      e.dueAt = Math.max(e.dueAt, clock.now() + periodMs);
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
      entries.set(uid, {
        batch,
        dueAt: clock.now() + Math.floor(options.random() * periodMs),
        polling: false,
        state: undefined,
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
