import { perSecond, type Summary, summarize } from './stats.ts';

/** Client-side timestamps (epoch ms) of one item of the raw-bound client; each step starts when the previous ends. */
export interface RawItemTimes {
  readonly startMs: number;
  /** POST Agent returned. */
  readonly agentMs?: number;
  /** POST Job returned. */
  readonly jobMs?: number;
  /** PATCH status (Running) returned. */
  readonly runningMs?: number;
  /** PATCH status (Succeeded) returned: the item is done. */
  readonly doneMs?: number;
  /** The first failed step's error, when a step failed (later steps were skipped). */
  readonly error?: string;
}

/** What the raw-bound client measured. Latencies in ms. */
export interface RawFigures {
  readonly items: number;
  readonly failures: number;
  /** The first few distinct error messages. */
  readonly errors: readonly string[];
  /** First POST sent → item done (the four calls in a row). */
  readonly item: Summary;
  readonly agentPost: Summary;
  /** POST Agent returned → POST Job returned (the run's objects, then its Job): the raw analogue of create→Job. */
  readonly jobPost: Summary;
  /** The final status PATCH: the raw analogue of finished→terminal. */
  readonly terminalPatch: Summary;
  readonly wallMs: number;
  readonly itemsPerSecond: number;
  readonly jobsPerSecond: number;
}

/**
 * Turns the raw-bound timestamps into figures. Throughputs run from the first call sent to the last item done
 * (items/s) or to the last Job POST returned (Jobs/s); failed items count in `failures` and nowhere else.
 */
export function rawFigures(times: readonly RawItemTimes[]): RawFigures {
  const steps = (a: (t: RawItemTimes) => number | undefined, b: (t: RawItemTimes) => number | undefined) =>
    times.flatMap((t) => {
      const x = a(t);
      const y = b(t);
      return x !== undefined && y !== undefined ? [y - x] : [];
    });
  const start = times.reduce((m, t) => Math.min(m, t.startMs), Number.POSITIVE_INFINITY);
  const done = times.filter((t) => t.doneMs !== undefined);
  const jobs = times.filter((t) => t.jobMs !== undefined);
  const lastDone = done.reduce((m, t) => Math.max(m, t.doneMs ?? m), Number.NEGATIVE_INFINITY);
  const lastJob = jobs.reduce((m, t) => Math.max(m, t.jobMs ?? m), Number.NEGATIVE_INFINITY);
  const errors = [...new Set(times.flatMap((t) => (t.error === undefined ? [] : [t.error])))].slice(0, 3);
  return {
    items: times.length,
    failures: times.filter((t) => t.error !== undefined).length,
    errors,
    item: summarize(
      steps(
        (t) => t.startMs,
        (t) => t.doneMs,
      ),
    ),
    agentPost: summarize(
      steps(
        (t) => t.startMs,
        (t) => t.agentMs,
      ),
    ),
    jobPost: summarize(
      steps(
        (t) => t.agentMs,
        (t) => t.jobMs,
      ),
    ),
    terminalPatch: summarize(
      steps(
        (t) => t.runningMs,
        (t) => t.doneMs,
      ),
    ),
    wallMs: done.length === 0 ? Number.NaN : lastDone - start,
    itemsPerSecond: done.length === 0 ? Number.NaN : perSecond(done.length, lastDone - start),
    jobsPerSecond: jobs.length === 0 ? Number.NaN : perSecond(jobs.length, lastJob - start),
  };
}
