import { CONCURRENCY_POLICIES, type ConcurrencyPolicy } from '../../api/station.ts';
import { type StationQueueView, viewAmong } from './book.ts';
import { type AgentRunView, compareStartOrder, runPhase } from './runs.ts';

/**
 * A Station's concurrency policy (the Station schema's list); an unknown value reads as `Allow`
 * (docs/design/reference-behaviour.md#custom-resources, docs/design/reference-behaviour.md#lenient-parsing).
 */
export type { ConcurrencyPolicy };

/** The Station settings admission reads. */
export interface StationConcurrency {
  readonly name: string;
  /** 0 (or absent, or negative) = unlimited under `Allow`. */
  readonly maxConcurrentRuns?: number | undefined;
  readonly concurrencyPolicy?: string | undefined;
}

/** `Allow`, `Forbid` or `Replace`; anything else is `Allow`. */
export function concurrencyPolicyOf(value: string | undefined): ConcurrencyPolicy {
  const known: readonly string[] = CONCURRENCY_POLICIES;
  return value !== undefined && known.includes(value)
    ? (value as ConcurrencyPolicy)
    : CONCURRENCY_POLICIES[0];
}

/**
 * The number of runs the Station may have at once; 0 = unlimited. `Allow` → `maxConcurrentRuns` (negative → 0);
 * `Forbid` and `Replace` → 1, even when `maxConcurrentRuns` is 0 (docs/design/reference-behaviour.md#concurrency).
 */
export function effectiveMaxRuns(policy: ConcurrencyPolicy, maxConcurrentRuns: number | undefined): number {
  if (policy !== 'Allow') return 1;
  const max = maxConcurrentRuns ?? 0;
  return Number.isFinite(max) && max > 0 ? Math.floor(max) : 0;
}

/** A Station's concurrency as admission applies it. */
export interface Concurrency {
  readonly policy: ConcurrencyPolicy;
  /** Runs the Station may have at once; 0 = unlimited. */
  readonly limit: number;
}

/**
 * The one reading of a Station's `concurrencyPolicy` and `maxConcurrentRuns` (admission, the wiring's wake-ups and
 * the command line's queue position all use it): the policy, and the limit it gives.
 */
export function concurrencyOf(station: Omit<StationConcurrency, 'name'>): Concurrency {
  const policy = concurrencyPolicyOf(station.concurrencyPolicy);
  return { policy, limit: effectiveMaxRuns(policy, station.maxConcurrentRuns) };
}

/**
 * How many queued Agents of a Station, at most, could start now, so are worth waking: `limit − holders` (everything
 * when unlimited), and under `Replace` at least the head, which may preempt. Waking more would only tell them to wait
 * again.
 */
export function wakeableCount(queued: number, holders: number, c: Concurrency): number {
  return c.limit > 0 ? Math.max(c.limit - holders, c.policy === 'Replace' ? 1 : 0) : queued;
}

/** Counts behind an admission verdict, for messages and logs. */
export interface AdmissionCounts {
  /** Other Agents of the Station holding a run slot (Running, with a Job, or admitted and not yet seen back). */
  readonly running: number;
  /** Queued siblings ahead of the candidate in queue order. */
  readonly ahead: number;
  /** Effective limit; 0 = unlimited. */
  readonly limit: number;
  readonly policy: ConcurrencyPolicy;
}

/** The admission verdict for one Pending Agent. */
export type Admission<A extends AgentRunView> =
  | ({ readonly kind: 'admit' } & AdmissionCounts)
  | ({ readonly kind: 'wait' } & AdmissionCounts)
  /** Replace: delete `victims` (oldest Running first, each with its resourceVersion), then start. */
  | ({ readonly kind: 'replace'; readonly victims: readonly A[] } & AdmissionCounts);

/**
 * Decides whether the candidate whose Station picture is `view` may start now (differences D-d and D-l:
 * docs/design/reference-behaviour.md#differences). Guarantees:
 * - a candidate that already holds a slot (admitted before, or its Job exists) is admitted: that starts no second
 *   run, and it can never deadlock behind an Agent that sorts before it but arrived later;
 * - otherwise first come, first served: it is admitted iff `holders + ahead < limit`, where `holders` counts
 *   every other Agent holding a slot (Running, with a Job, or admitted and not yet echoed by the watch) and
 *   `ahead` the queued Agents before it; so whatever order the reconciles run in, and however late the cache
 *   shows their effects, at most `limit` Agents ever hold a slot (see `StationBook`);
 * - `Allow` and `Forbid` wait when full; `Replace` waits too unless the candidate heads the queue, in which case
 *   it preempts the oldest Running holders (by startedAt), exactly enough to make room. Only Agents whose
 *   Running status the cache shows (with a resourceVersion) can be victims; if too few qualify, it waits.
 */
export function decideAdmission<A extends AgentRunView>(
  view: StationQueueView<A>,
  station: StationConcurrency,
): Admission<A> {
  const { policy, limit } = concurrencyOf(station);
  const holders = view.holders.length;
  const counts: AdmissionCounts = { running: holders, ahead: view.ahead, limit, policy };
  if (view.holdsSlot || limit === 0 || holders + view.ahead < limit) return { kind: 'admit', ...counts };
  if (policy !== 'Replace' || view.ahead > 0) return { kind: 'wait', ...counts };
  const need = holders - limit + 1;
  const victims = view.holders
    .filter(
      (a) =>
        runPhase(a) === 'Running' &&
        a.metadata.resourceVersion !== undefined &&
        a.metadata.resourceVersion !== '',
    )
    .sort(compareStartOrder);
  if (victims.length < need) return { kind: 'wait', ...counts };
  return { kind: 'replace', victims: victims.slice(0, need), ...counts };
}

/** `decideAdmission` for a candidate among a plain list of Agents (see `viewAmong`). */
export function admit<A extends AgentRunView>(
  candidate: A,
  agents: readonly A[],
  station: StationConcurrency,
): Admission<A> {
  return decideAdmission(viewAmong(candidate, agents), station);
}
