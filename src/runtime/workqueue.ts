import type { Logger } from '../shared/log.ts';
import { type BackoffPolicy, baseDelay } from './backoff.ts';
import type { Clock } from './clock.ts';
import { createDelayedKeys, createReadyKeys } from './workqueue-keys.ts';

/** What the handler says about one key. */
export type WorkResult =
  /** Done: the key's failure count is forgotten. */
  | { readonly kind: 'done' }
  /** Failed: retried after the key's next exponential delay (5 ms × 2^n, capped at 1000 s). */
  | { readonly kind: 'retry'; readonly reason?: string }
  /** Done for now, look again after `ms` (failure count forgotten). */
  | { readonly kind: 'requeueAfter'; readonly ms: number };

/** Metric hooks (workqueue_* family); optional, synchronous, must not throw. */
export interface WorkQueueHooks {
  readonly onAdd?: () => void;
  readonly onRetry?: () => void;
  readonly onDepth?: (depth: number) => void;
  /** Time a key waited ready in the queue before a worker took it. */
  readonly onQueueLatency?: (ms: number) => void;
  /** Time the handler took. */
  readonly onWorkDuration?: (ms: number) => void;
}

/** controller-runtime's per-item rate limiter: 5 ms × 2^n, capped at 1000 s, no jitter. */
export const DEFAULT_ITEM_BACKOFF: BackoffPolicy = {
  initialMs: 5,
  factor: 2,
  maxMs: 1_000_000,
  jitter: 0,
  resetAfterMs: Number.POSITIVE_INFINITY,
};

export interface WorkQueueOptions {
  readonly clock: Clock;
  /** How many different keys may be processed at once (default 1). */
  readonly concurrency?: number;
  /**
   * Processes one key. `reason` is why it was queued: the reason of the first add since a worker last took it
   * (an add merged into a queued key keeps the earlier reason); a retry is `retry`, a `requeueAfter` is `requeue`.
   */
  readonly handler: (key: string, reason: string) => Promise<WorkResult>;
  readonly backoff?: BackoffPolicy;
  readonly hooks?: WorkQueueHooks;
  readonly logger?: Logger;
  /**
   * Longest stretch (ms, wall time) the queue starts handlers without yielding to the event loop (default 10).
   * Handlers that finish without I/O chain through microtasks; without a yield a pass over thousands of keys would
   * starve timers and sockets (health probes, Lease renewals, watches).
   */
  readonly sliceBudgetMs?: number;
}

/** The reason of a key queued without one. */
export const UNSPECIFIED_REASON = 'unspecified';
/** The reason of a key queued again after its handler failed (per-key backoff). */
export const RETRY_REASON = 'retry';
/** The reason of a key queued again after its handler asked to be looked at later (`requeueAfter`). */
export const REQUEUE_REASON = 'requeue';

/** Runs `fn` after pending I/O and timers (a macrotask), on Node and Deno. */
const nextMacrotask: (fn: () => void) => void =
  typeof setImmediate === 'function' ? (fn) => void setImmediate(fn) : (fn) => void setTimeout(fn, 0);

/**
 * A queue of keys (never objects) feeding a bounded pool of workers.
 * Guarantees:
 * - a key is queued at most once (adds merge);
 * - a key is never processed concurrently with itself: an add while it is processing runs it once more afterwards;
 * - `addAfter` keeps the earliest due time per key; an immediate add supersedes a pending delayed one;
 * - failures back off per key exponentially; success (`done`, `requeueAfter`) forgets the key's failures;
 * - a handler that throws counts as `retry`;
 * - each queued key carries the reason it was queued for (the first since a worker last took it), handed to the
 *   handler.
 */
export interface WorkQueue {
  /**
   * Queues a key. `urgent` keys are taken before every ordinary one (a finished run ahead of a burst of new
   * Agents); an ordinary key already queued is promoted.
   */
  add(key: string, urgent?: boolean, reason?: string): void;
  /** Adds after `ms` (≤ 0: now). Keeps whichever due time is earlier (and that add's reason). */
  addAfter(key: string, ms: number, reason?: string): void;
  /** Adds after the key's next backoff delay and counts a failure. */
  addRateLimited(key: string): void;
  /** Resets the key's failure count. */
  forget(key: string): void;
  /** Failures recorded for a key since it was last forgotten. */
  numRequeues(key: string): number;
  /** Ready keys not yet taken by a worker. */
  depth(): number;
  /** Keys waiting for a delay. */
  delayed(): number;
  /** Keys being processed now. */
  active(): number;
  /** Starts the workers (adds before this just accumulate). */
  start(): void;
  /**
   * Stops accepting keys and cancels delayed ones. With `drain: true` the workers first finish every ready key;
   * otherwise ready keys are dropped. Resolves once no handler is running.
   */
  shutdown(opts?: { readonly drain?: boolean }): Promise<void>;
}

/**
 * The current synchronous stretch of the queue: opened by the first call, closed when the event loop next runs a
 * macrotask. `spent()` opens one if none is open and says whether the open one has run past `budgetMs` (wall time).
 */
function createSlice(budgetMs: number): { spent(): boolean } {
  let start = 0;
  let open = false;
  return {
    spent() {
      if (open) return performance.now() - start > budgetMs;
      open = true;
      start = performance.now();
      nextMacrotask(() => {
        open = false;
      });
      return false;
    },
  };
}

/** Creates a work queue. */
export function createWorkQueue(opts: WorkQueueOptions): WorkQueue {
  const clock = opts.clock;
  const concurrency = Math.max(1, opts.concurrency ?? 1);
  const policy = opts.backoff ?? DEFAULT_ITEM_BACKOFF;
  const hooks = opts.hooks ?? {};
  const ready = createReadyKeys();
  const processing = new Set<string>();
  /** Keys added while processing (value: added urgently): re-queued when their run finishes. */
  const dirty = new Map<string, boolean>();
  const waiting = createDelayedKeys(clock);
  const failures = new Map<string, number>();
  /** Why each ready (or dirty) key was queued: the first reason since a worker last took it. */
  const reasons = new Map<string, string>();
  let started = false;
  let stopping = false;
  let idle: (() => void) | undefined;
  const slice = createSlice(opts.sliceBudgetMs ?? 10);
  let yielding = false;

  const depthChanged = (): void => hooks.onDepth?.(ready.size);

  const pump = (): void => {
    if (!started || yielding) return;
    if (slice.spent() && ready.size > 0 && processing.size < concurrency) {
      yielding = true;
      nextMacrotask(() => {
        yielding = false;
        pump();
      });
      return;
    }
    while (processing.size < concurrency && ready.size > 0) {
      const next = ready.take();
      if (next === undefined) break;
      const { key, since } = next;
      processing.add(key);
      hooks.onQueueLatency?.(clock.now() - since);
      const reason = reasons.get(key) ?? UNSPECIFIED_REASON;
      reasons.delete(key);
      void work(key, reason);
    }
    depthChanged();
    if (stopping && processing.size === 0 && ready.size === 0) idle?.();
  };

  const work = async (key: string, reason: string): Promise<void> => {
    const begin = clock.now();
    let result: WorkResult;
    try {
      result = await opts.handler(key, reason);
    } catch (e) {
      opts.logger?.error('Work handler threw', { key, error: e instanceof Error ? e.message : String(e) });
      result = { kind: 'retry', reason: 'threw' };
    }
    hooks.onWorkDuration?.(clock.now() - begin);
    processing.delete(key);
    switch (result.kind) {
      case 'done':
        queue.forget(key);
        break;
      case 'retry':
        hooks.onRetry?.();
        queue.addRateLimited(key);
        break;
      case 'requeueAfter':
        queue.forget(key);
        queue.addAfter(key, result.ms, REQUEUE_REASON);
        break;
    }
    const urgent = dirty.get(key);
    if (urgent !== undefined) {
      dirty.delete(key);
      enqueue(key, urgent);
    }
    pump();
  };

  const enqueue = (key: string, urgent = false, reason = UNSPECIFIED_REASON): void => {
    if (stopping) return;
    waiting.cancel(key);
    if (!reasons.has(key)) reasons.set(key, reason);
    if (processing.has(key)) {
      dirty.set(key, urgent || dirty.get(key) === true);
      return;
    }
    if (ready.add(key, urgent, clock.now()) === 'merged') return;
    hooks.onAdd?.();
    pump();
  };

  const queue: WorkQueue = {
    add: enqueue,
    addAfter(key, ms, reason = UNSPECIFIED_REASON) {
      if (stopping) return;
      if (ms <= 0) return enqueue(key, false, reason);
      if (ready.has(key)) return;
      waiting.schedule(key, ms, () => enqueue(key, false, reason));
    },
    addRateLimited(key) {
      const n = failures.get(key) ?? 0;
      failures.set(key, n + 1);
      queue.addAfter(key, baseDelay(policy, n), RETRY_REASON);
    },
    forget(key) {
      failures.delete(key);
    },
    numRequeues: (key) => failures.get(key) ?? 0,
    depth: () => ready.size,
    delayed: () => waiting.size,
    active: () => processing.size,
    start() {
      started = true;
      pump();
    },
    shutdown(o = {}) {
      stopping = true;
      waiting.cancelAll();
      for (const key of dirty.keys()) reasons.delete(key);
      dirty.clear();
      if (!o.drain || !started) {
        ready.clear();
        reasons.clear();
      }
      depthChanged();
      return new Promise<void>((resolve) => {
        idle = resolve;
        pump();
        if (processing.size === 0 && ready.size === 0) resolve();
      });
    },
  };
  return queue;
}
