import {
  type AgentRunView,
  compareQueueOrder,
  compareStartOrder,
  inStation,
  isSameAgent,
  runPhase,
} from './runs.ts';

/** A Station's concurrency policy; an unknown value reads as `Allow` (reference §1.2, §1.4). */
export type ConcurrencyPolicy = 'Allow' | 'Forbid' | 'Replace';

/** The Station settings admission reads. */
export interface StationConcurrency {
  readonly name: string;
  /** 0 (or absent, or negative) = unlimited under `Allow`. */
  readonly maxConcurrentRuns?: number | undefined;
  readonly concurrencyPolicy?: string | undefined;
}

/** `Allow`, `Forbid` or `Replace`; anything else is `Allow`. */
export function concurrencyPolicyOf(value: string | undefined): ConcurrencyPolicy {
  return value === 'Forbid' || value === 'Replace' ? value : 'Allow';
}

/**
 * The number of runs the Station may have at once; 0 = unlimited. `Allow` → `maxConcurrentRuns` (negative → 0);
 * `Forbid` and `Replace` → 1, even when `maxConcurrentRuns` is 0 (reference §5.6).
 */
export function effectiveMaxRuns(policy: ConcurrencyPolicy, maxConcurrentRuns: number | undefined): number {
  if (policy !== 'Allow') return 1;
  const max = maxConcurrentRuns ?? 0;
  return Number.isFinite(max) && max > 0 ? Math.floor(max) : 0;
}

/** Counts behind an admission verdict, for messages and logs. */
export interface AdmissionCounts {
  /** Running siblings of the Station. */
  readonly running: number;
  /** Pending siblings ahead of the candidate in queue order. */
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
 * Decides whether the Pending `candidate` may start now, from `agents` (any list of Agents; those not in the
 * Station, the candidate itself, terminal ones and ones being deleted are ignored). Guarantees (decision d):
 * - first come, first served: the queue is the Station's Pending Agents in creationTimestamp order (ties by name);
 * - the candidate is admitted iff `running + ahead < limit`, where `ahead` counts the Pending siblings before it in
 *   the queue; the rule is a pure function of the list, so the watch path, the poll path and a burst all count
 *   the same way and never admit more than `limit` runs (given the caller reconciles against a list that shows
 *   its own earlier admissions as Running or Pending, which a cache does);
 * - `Allow` and `Forbid` wait when full; `Replace` waits too unless the candidate heads the queue, in which case
 *   it preempts the oldest Running runs (by startedAt), exactly enough to make room (one when the Station is at
 *   its limit). A Running sibling without a resourceVersion cannot be deleted safely and is never chosen; if too
 *   few remain, the candidate waits.
 */
export function admit<A extends AgentRunView>(
  candidate: AgentRunView,
  agents: readonly A[],
  station: StationConcurrency,
): Admission<A> {
  const policy = concurrencyPolicyOf(station.concurrencyPolicy);
  const limit = effectiveMaxRuns(policy, station.maxConcurrentRuns);
  const siblings = agents.filter(
    (a) =>
      inStation(a, station.name, candidate.metadata.namespace) &&
      !isSameAgent(a, candidate) &&
      a.metadata.deletionTimestamp === undefined,
  );
  const running = siblings.filter((a) => runPhase(a) === 'Running');
  const ahead = siblings.filter(
    (a) => runPhase(a) === 'Pending' && compareQueueOrder(a, candidate) < 0,
  ).length;
  const counts: AdmissionCounts = { running: running.length, ahead, limit, policy };
  if (limit === 0 || running.length + ahead < limit) return { kind: 'admit', ...counts };
  if (policy !== 'Replace' || ahead > 0) return { kind: 'wait', ...counts };
  const need = running.length - limit + 1;
  const victims = [...running]
    .sort(compareStartOrder)
    .filter((a) => a.metadata.resourceVersion !== undefined && a.metadata.resourceVersion !== '');
  if (victims.length < need) return { kind: 'wait', ...counts };
  return { kind: 'replace', victims: victims.slice(0, need), ...counts };
}
