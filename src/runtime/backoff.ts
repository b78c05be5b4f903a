/** Exponential backoff parameters. */
export interface BackoffPolicy {
  /** First delay before jitter (client-go's watch backoff: 800 ms). */
  readonly initialMs: number;
  /** Growth per consecutive failure (2). */
  readonly factor: number;
  /** Cap before jitter (30 000 ms); a delay never exceeds it. */
  readonly maxMs: number;
  /**
   * Fraction of the delay that is random: the delay is uniform in `[base × (1 − jitter), base]`. 0 = no jitter,
   * 1 = "full jitter". Default 0.5.
   */
  readonly jitter: number;
  /** A failure this long after the previous one starts again from `initialMs` (client-go: 2 min). */
  readonly resetAfterMs: number;
}

/** The informer's watch/list retry policy: 800 ms × 2 → 30 s, half jitter, reset after 2 quiet minutes. */
export const DEFAULT_BACKOFF: BackoffPolicy = {
  initialMs: 800,
  factor: 2,
  maxMs: 30_000,
  jitter: 0.5,
  resetAfterMs: 120_000,
};

/** Consecutive failures so far and when the last one happened. */
export interface BackoffState {
  readonly failures: number;
  readonly lastFailureAt: number | undefined;
}

export const INITIAL_BACKOFF_STATE: BackoffState = { failures: 0, lastFailureAt: undefined };

/** The un-jittered delay after `failures` previous consecutive failures (pure). */
export function baseDelay(policy: BackoffPolicy, failures: number): number {
  const raw = policy.initialMs * policy.factor ** Math.max(0, failures);
  return Math.min(Number.isFinite(raw) ? raw : policy.maxMs, policy.maxMs);
}

/**
 * Records one failure at `now` and returns how long to wait before retrying (pure; `random` in [0, 1)).
 * Guarantees: `delayMs` ∈ [base × (1 − jitter), base] with base = min(initial × factor^n, max), where n counts the
 * consecutive failures before this one, reset to 0 when the previous failure is `resetAfterMs` or more in the past.
 */
export function nextBackoff(
  policy: BackoffPolicy,
  state: BackoffState,
  now: number,
  random: number,
): { readonly delayMs: number; readonly state: BackoffState } {
  const quiet = state.lastFailureAt !== undefined && now - state.lastFailureAt >= policy.resetAfterMs;
  const failures = quiet ? 0 : state.failures;
  const base = baseDelay(policy, failures);
  const r = Math.min(Math.max(random, 0), 1);
  const jitter = Math.min(Math.max(policy.jitter, 0), 1);
  const delayMs = Math.round(base * (1 - jitter * r));
  return { delayMs, state: { failures: failures + 1, lastFailureAt: now } };
}
