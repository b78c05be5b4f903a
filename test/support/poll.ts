import { setTimeout as delay } from 'node:timers/promises';

export interface PollOptions {
  /** Give up after this long (default 30 s). */
  readonly timeoutMs?: number;
  /** Pause between attempts (default 100 ms); attempts never overlap. */
  readonly intervalMs?: number;
  /** Names the condition in the timeout error. */
  readonly description?: string;
}

/** Thrown by pollUntil when the deadline passes; carries the last observation for the failure message. */
export class PollTimeoutError extends Error {
  override readonly name = 'PollTimeoutError';
  constructor(
    readonly description: string,
    readonly last: unknown,
  ) {
    super(`timed out waiting for ${description}; last observed: ${describe(last)}`);
  }
}

function describe(value: unknown): string {
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : text.slice(0, 2000);
  } catch {
    return String(value);
  }
}

/**
 * Calls `attempt` until it returns something other than undefined, and returns that value.
 * An attempt that throws counts as "not yet" (the error becomes the last observation), so transient
 * API errors do not fail a test; the deadline does. `observe` may record what was seen for the error.
 */
export async function pollUntil<T>(
  attempt: (observe: (seen: unknown) => void) => Promise<T | undefined> | T | undefined,
  opts: PollOptions = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  let last: unknown = 'nothing yet';
  const observe = (seen: unknown): void => {
    last = seen;
  };
  for (;;) {
    try {
      const value = await attempt(observe);
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() >= deadline) throw new PollTimeoutError(opts.description ?? 'a condition', last);
    await delay(opts.intervalMs ?? 100);
  }
}
