/**
 * Time as a dependency: everything in runtime/ that waits or reads the time takes a Clock, so tests drive it with
 * {@link ManualClock} instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Waits `ms`; resolves `true` when the time elapsed, `false` as soon as `signal` aborts. Never rejects. */
  sleep(ms: number, signal?: AbortSignal): Promise<boolean>;
  /** Runs `fn` once after `ms`; returns a function that cancels it (idempotent). */
  setTimer(ms: number, fn: () => void): () => void;
}

/** The real clock (`Date.now` and `setTimeout`). */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep(ms, signal) {
    return new Promise<boolean>((resolve) => {
      if (signal?.aborted) return resolve(false);
      const onAbort = (): void => {
        clearTimeout(timer);
        resolve(false);
      };
      const timer = setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(true);
        },
        Math.max(0, ms),
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
  setTimer(ms, fn) {
    const timer = setTimeout(fn, Math.max(0, ms));
    return () => clearTimeout(timer);
  },
};

interface PendingTimer {
  readonly id: number;
  readonly due: number;
  readonly fn: () => void;
}

/**
 * A clock that moves only when told. Timers fire in due order (ties in creation order) during {@link advance},
 * with pending promise callbacks flushed between timers, so code awaiting `sleep` continues before the next timer.
 */
export class ManualClock implements Clock {
  #now: number;
  #timers: PendingTimer[] = [];
  #nextId = 1;

  constructor(startMs = 1_700_000_000_000) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimer(ms: number, fn: () => void): () => void {
    const timer = { id: this.#nextId++, due: this.#now + Math.max(0, ms), fn };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      if (signal?.aborted) return resolve(false);
      const onAbort = (): void => {
        cancel();
        resolve(false);
      };
      const cancel = this.setTimer(ms, () => {
        signal?.removeEventListener('abort', onAbort);
        resolve(true);
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Number of timers not yet fired. */
  pending(): number {
    return this.#timers.length;
  }

  /** When the earliest pending timer is due, if any. */
  nextDue(): number | undefined {
    return this.#timers.reduce<number | undefined>(
      (m, t) => (m === undefined || t.due < m ? t.due : m),
      undefined,
    );
  }

  /** Moves time forward by `ms`, firing every timer that becomes due (including ones scheduled while advancing). */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    await flushMicrotasks();
    for (;;) {
      const next = this.#timers
        .filter((t) => t.due <= target)
        .sort((a, b) => a.due - b.due || a.id - b.id)[0];
      if (!next) break;
      this.#timers = this.#timers.filter((t) => t !== next);
      this.#now = Math.max(this.#now, next.due);
      next.fn();
      await flushMicrotasks();
    }
    this.#now = target;
    await flushMicrotasks();
  }
}

/** Lets every already-queued promise continuation run (a macrotask turn). */
export function flushMicrotasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
