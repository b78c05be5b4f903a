import { type Env, type EnvProblem, readInt } from './env.ts';

/** Retry policy for one HTTP delivery (docs/design/reference-behaviour.md#http-sink-delivery). */
export interface RetryConfig {
  /** Total attempts, at least 1. */
  readonly attempts: number;
  /** Backoff before the second attempt, ms (≥ 0). */
  readonly baseMs: number;
  /** Upper bound of any single backoff, ms (≥ 0). */
  readonly maxMs: number;
}

export const DEFAULT_RETRY: RetryConfig = Object.freeze({ attempts: 3, baseMs: 200, maxMs: 5000 });

/**
 * Reads `AGENT_SINK_RETRY_ATTEMPTS` (min 1; bad → 3), `AGENT_SINK_RETRY_BASE_MS` (bad → 200) and
 * `AGENT_SINK_RETRY_MAX_MS` (bad → 5000); negative durations are clamped to 0. Unusable values are appended to
 * `problems`.
 */
export function parseRetryConfig(env: Env, problems: EnvProblem[]): RetryConfig {
  return {
    attempts: readInt(
      env,
      'AGENT_SINK_RETRY_ATTEMPTS',
      { fallback: DEFAULT_RETRY.attempts, min: 1 },
      problems,
    ),
    baseMs: readInt(
      env,
      'AGENT_SINK_RETRY_BASE_MS',
      { fallback: DEFAULT_RETRY.baseMs, min: 0, clampBelow: true },
      problems,
    ),
    maxMs: readInt(
      env,
      'AGENT_SINK_RETRY_MAX_MS',
      { fallback: DEFAULT_RETRY.maxMs, min: 0, clampBelow: true },
      problems,
    ),
  };
}

/**
 * The pause after failed attempt `n` (1-based): `min(base · 2^(n−1), cap)`, or undefined after the last attempt
 * (no sleep once retries are exhausted). Pure.
 */
export function backoffAfter(config: RetryConfig, attempt: number): number | undefined {
  if (attempt >= config.attempts) return undefined;
  const base = Math.max(0, config.baseMs);
  const cap = Math.max(0, config.maxMs);
  const exponent = Math.max(0, attempt - 1);
  return Math.min(base * 2 ** Math.min(exponent, 52), cap);
}
