// Spend over a rolling window, and when a spent window frees enough for a new run (issue 28 §4). Pure.

import type { WindowLimit } from './rules.ts';
import { formatDollars, windowMs } from './rules.ts';

/** A run's (or a bucket's) spend, placed at one time. */
export interface SpendItem {
  readonly station: string;
  /** When it counts (ms since the epoch). */
  readonly atMs: number;
  readonly usdMicros: number;
  readonly tokens: number;
}

/** Whether an item at `atMs` is inside the window of length `lengthMs` ending at `nowMs`: (now − length, ∞). */
export function inWindow(atMs: number, lengthMs: number, nowMs: number): boolean {
  return atMs > nowMs - lengthMs;
}

/** The items a limit counts: its Station's (scope Station) or all of the namespace's (scope Namespace). */
function counted(items: readonly SpendItem[], limit: WindowLimit, station: string): SpendItem[] {
  return limit.scope === 'Namespace' ? [...items] : items.filter((i) => i.station === station);
}

/** The spend of `items` inside the window. */
export function spentIn(
  items: readonly SpendItem[],
  lengthMs: number,
  nowMs: number,
): { usdMicros: number; tokens: number } {
  let usdMicros = 0;
  let tokens = 0;
  for (const i of items) {
    if (!inWindow(i.atMs, lengthMs, nowMs)) continue;
    usdMicros += i.usdMicros;
    tokens += i.tokens;
  }
  return { usdMicros, tokens };
}

/**
 * The earliest time (ms) at which the spend of `items` inside a window of `lengthMs` is below `max` (of the kind
 * `pick` reads), given that no new spend arrives: each item leaves the window at `atMs + lengthMs`. `nowMs` when it
 * already is.
 */
export function freesAt(
  items: readonly SpendItem[],
  pick: (i: SpendItem) => number,
  max: number,
  lengthMs: number,
  nowMs: number,
): number {
  const inside = items.filter((i) => inWindow(i.atMs, lengthMs, nowMs)).sort((a, b) => a.atMs - b.atMs);
  let spent = inside.reduce((sum, i) => sum + pick(i), 0);
  if (spent < max) return nowMs;
  for (const i of inside) {
    spent -= pick(i);
    if (spent < max) return i.atMs + lengthMs;
  }
  return nowMs;
}

/** A windowed limit that is spent: which, by how much, and when it frees. */
export interface Exhausted {
  readonly limit: WindowLimit;
  readonly kind: 'usd' | 'tokens';
  readonly spent: number;
  readonly max: number;
  readonly freesAtMs: number;
}

/**
 * The spent limits among `limits` for a new run of `station`: a limit is spent when the spend inside its window has
 * reached it (spent ≥ limit, per kind). Sorted by the time they free, latest first: the run may start once all free.
 */
export function exhaustedLimits(
  limits: readonly WindowLimit[],
  items: readonly SpendItem[],
  station: string,
  nowMs: number,
  hourMs: number,
): Exhausted[] {
  const out: Exhausted[] = [];
  for (const limit of limits) {
    const length = windowMs(limit.window, hourMs);
    const mine = counted(items, limit, station);
    const spent = spentIn(mine, length, nowMs);
    if (limit.usdMicros !== undefined && spent.usdMicros >= limit.usdMicros) {
      const at = freesAt(mine, (i) => i.usdMicros, limit.usdMicros, length, nowMs);
      out.push({ limit, kind: 'usd', spent: spent.usdMicros, max: limit.usdMicros, freesAtMs: at });
    }
    if (limit.tokens !== undefined && spent.tokens >= limit.tokens) {
      const at = freesAt(mine, (i) => i.tokens, limit.tokens, length, nowMs);
      out.push({ limit, kind: 'tokens', spent: spent.tokens, max: limit.tokens, freesAtMs: at });
    }
  }
  return out.sort((a, b) => b.freesAtMs - a.freesAtMs);
}

/** What a spent limit says on the Agent: the budget, its window, spent/limit and when it frees. */
export function exhaustedMessage(e: Exhausted, namespace: string, station: string): string {
  const whose = e.limit.scope === 'Namespace' ? `namespace ${namespace}` : `Station ${station}`;
  const figures =
    e.kind === 'usd'
      ? `${formatDollars(e.spent)} of ${formatDollars(e.max)} spent`
      : `${e.spent} of ${e.max} tokens used`;
  return `Budget exhausted: the ${e.limit.window} budget of ${whose} (${e.limit.source}): ${figures} in the last ${e.limit.window}; frees at ${new Date(e.freesAtMs).toISOString()}`;
}

/** What one windowed limit counts now: its spend in its window, for the metrics. */
export interface Reading {
  readonly limit: WindowLimit;
  readonly usdMicros: number;
  readonly tokens: number;
}

/** The spend each limit counts now (`station`'s, or the namespace's for a Namespace limit). */
export function readings(
  limits: readonly WindowLimit[],
  items: readonly SpendItem[],
  station: string,
  nowMs: number,
  hourMs: number,
): Reading[] {
  return limits.map((limit) => ({
    limit,
    ...spentIn(counted(items, limit, station), windowMs(limit.window, hourMs), nowMs),
  }));
}
