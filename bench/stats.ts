/** Order statistics of one latency sample, in the sample's unit (milliseconds in this benchmark). */
export interface Summary {
  readonly count: number;
  readonly min: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

/**
 * The nearest-rank percentile `p` (0 < p <= 100) of `sorted` (ascending): the smallest value such that at least
 * p% of the sample is at or below it. NaN for an empty sample. Never interpolates, so every figure printed is a
 * value that was actually measured.
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  if (!(p > 0 && p <= 100)) throw new RangeError(`percentile must be in (0, 100], got ${p}`);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? Number.NaN;
}

/** Summarises a sample (any order; non-finite values are dropped). An empty sample has count 0 and NaN figures. */
export function summarize(values: readonly number[]): Summary {
  const sorted = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  const sum = sorted.reduce((acc, x) => acc + x, 0);
  return {
    count: sorted.length,
    min: sorted[0] ?? Number.NaN,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
    mean: sorted.length === 0 ? Number.NaN : sum / sorted.length,
  };
}

/** `count` events over `spanMs` milliseconds as events per second; NaN when the span is not positive. */
export function perSecond(count: number, spanMs: number): number {
  return spanMs > 0 ? (count * 1000) / spanMs : Number.NaN;
}

/**
 * The largest number of intervals open at once. Each interval is [start, end); an interval without an end is
 * open until the last moment. Ties: an end at the same instant as a start closes first.
 */
export function peakOverlap(intervals: readonly { readonly start: number; readonly end?: number }[]): number {
  const points: [number, number][] = [];
  for (const { start, end } of intervals) {
    points.push([start, 1]);
    if (end !== undefined) points.push([end, -1]);
  }
  points.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let peak = 0;
  for (const [, delta] of points) {
    open += delta;
    peak = Math.max(peak, open);
  }
  return peak;
}
