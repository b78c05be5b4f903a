// The two holding areas of the work queue (workqueue.ts): keys ready for a worker, in two lanes, and keys waiting
// for a delay to pass. Neither runs handlers; the queue decides what moves where.

import type { Clock } from './clock.ts';

/** Keys ready for a worker, each with the time it became ready: urgent ones first, each lane in FIFO order. */
export interface ReadyKeys {
  readonly size: number;
  has(key: string): boolean;
  /**
   * Makes `key` ready since `now`: `added`. A key already ready stays where it is (`merged`), but an urgent add
   * moves an ordinary key to the back of the urgent lane, keeping the time it became ready.
   */
  add(key: string, urgent: boolean, now: number): 'added' | 'merged';
  /** Takes the first urgent key, else the first ordinary one; undefined when none is ready. */
  take(): { readonly key: string; readonly since: number } | undefined;
  clear(): void;
}

export function createReadyKeys(): ReadyKeys {
  const ordinary = new Map<string, number>();
  const urgentLane = new Map<string, number>();
  return {
    get size() {
      return ordinary.size + urgentLane.size;
    },
    has: (key) => ordinary.has(key) || urgentLane.has(key),
    add(key, urgent, now) {
      if (urgentLane.has(key)) return 'merged';
      const since = ordinary.get(key);
      if (since !== undefined) {
        if (urgent) {
          ordinary.delete(key);
          urgentLane.set(key, since);
        }
        return 'merged';
      }
      (urgent ? urgentLane : ordinary).set(key, now);
      return 'added';
    },
    take() {
      const from = urgentLane.size > 0 ? urgentLane : ordinary;
      const first = from.entries().next();
      if (first.done) return undefined;
      const [key, since] = first.value;
      from.delete(key);
      return { key, since };
    },
    clear() {
      ordinary.clear();
      urgentLane.clear();
    },
  };
}

/** Keys waiting for a delay, at most one timer per key: the earliest due time wins. */
export interface DelayedKeys {
  readonly size: number;
  /**
   * Runs `fire` for `key` after `ms` unless the key already waits to fire no later; a later wait it replaces is
   * cancelled (its `fire` never runs).
   */
  schedule(key: string, ms: number, fire: () => void): void;
  /** Cancels the key's wait, if any. */
  cancel(key: string): void;
  cancelAll(): void;
}

export function createDelayedKeys(clock: Clock): DelayedKeys {
  const waiting = new Map<string, { due: number; cancel: () => void }>();
  return {
    get size() {
      return waiting.size;
    },
    schedule(key, ms, fire) {
      const due = clock.now() + ms;
      const w = waiting.get(key);
      if (w && w.due <= due) return;
      w?.cancel();
      const cancel = clock.setTimer(ms, () => {
        waiting.delete(key);
        fire();
      });
      waiting.set(key, { due, cancel });
    },
    cancel(key) {
      const w = waiting.get(key);
      if (w) {
        w.cancel();
        waiting.delete(key);
      }
    },
    cancelAll() {
      for (const w of waiting.values()) w.cancel();
      waiting.clear();
    },
  };
}
