// The chaos run's plan (issue 13 §1): a seeded random source and the schedule of faults it draws, so any run can be
// replayed from its seed. Pure.

/** Every kind of fault the chaos run injects. */
export const FAULT_KINDS = [
  'kill-leader',
  'pause-leader',
  'restart-apiserver',
  'restart-node',
  'compact-etcd',
  'cut',
  'half-open',
  'latency',
  'errors',
  'watch-burst',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** How long each kind of fault lasts (ms), [min, max]; 0: instantaneous. */
export const FAULT_DURATION_MS: Readonly<Record<FaultKind, readonly [number, number]>> = {
  'kill-leader': [0, 0],
  // Past the Lease (15 s) and its renew deadline, so another replica takes over while this one sleeps.
  'pause-leader': [20_000, 25_000],
  'restart-apiserver': [0, 0],
  'restart-node': [0, 0],
  'compact-etcd': [0, 0],
  cut: [0, 0],
  'half-open': [8_000, 15_000],
  latency: [10_000, 20_000],
  errors: [10_000, 20_000],
  'watch-burst': [0, 0],
};

/** A fault at `at` ms after the start, lasting `durationMs`. */
export interface PlannedFault {
  readonly at: number;
  readonly kind: FaultKind;
  readonly durationMs: number;
}

/** A seeded uniform source in [0, 1): the same seed gives the same sequence on any runtime. */
export { seededRandom } from '../support/fault-proxy.ts';

import { seededRandom } from '../support/fault-proxy.ts';

/** An integer uniform in [min, max]. */
export function between(random: () => number, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

export interface PlanOptions {
  /** Faults happen in [startMs, endMs). */
  readonly startMs: number;
  readonly endMs: number;
  /** Quiet time between the end of one fault and the start of the next, [min, max] ms. */
  readonly gapMs: readonly [number, number];
  readonly kinds?: readonly FaultKind[];
}

/**
 * The faults of a run: one at a time, a quiet gap after each; every kind once (in a shuffled order) before any
 * repeats, then drawn at random. Deterministic for a seed.
 */
export function planFaults(seed: number, o: PlanOptions): PlannedFault[] {
  const random = seededRandom(seed);
  const kinds = [...(o.kinds ?? FAULT_KINDS)];
  if (kinds.length === 0) return [];
  const shuffled = [...kinds];
  for (let i = shuffled.length - 1; i > 0; i--) {
    const j = between(random, 0, i);
    [shuffled[i], shuffled[j]] = [shuffled[j] as FaultKind, shuffled[i] as FaultKind];
  }
  const out: PlannedFault[] = [];
  let at = o.startMs + between(random, o.gapMs[0], o.gapMs[1]);
  for (let n = 0; ; n++) {
    const kind = n < shuffled.length ? shuffled[n] : kinds[between(random, 0, kinds.length - 1)];
    if (kind === undefined) break;
    const [min, max] = FAULT_DURATION_MS[kind];
    const durationMs = between(random, min, max);
    if (at + durationMs >= o.endMs) break;
    out.push({ at, kind, durationMs });
    at += durationMs + between(random, o.gapMs[0], o.gapMs[1]);
  }
  return out;
}
