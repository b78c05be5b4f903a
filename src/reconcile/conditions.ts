/**
 * metav1.Condition helpers, the TypeScript counterpart of apimachinery's `meta.SetStatusCondition` /
 * `meta.FindStatusCondition`. Pure: every function returns new arrays and never mutates its input.
 */

/** The three values a metav1.Condition `status` may take. */
export type ConditionStatus = 'True' | 'False' | 'Unknown';

/** A metav1.Condition as stored in `status.conditions`. */
export interface StatusCondition {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
  /** RFC 3339 time at which `status` last changed. */
  readonly lastTransitionTime: string;
  readonly observedGeneration?: number | undefined;
}

/** What a caller sets; `lastTransitionTime` is decided by `setCondition`. */
export interface ConditionUpdate {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
  readonly observedGeneration?: number | undefined;
}

/**
 * Formats `now` the way metav1.Time serialises: RFC 3339 in UTC with whole seconds (`2024-05-01T10:00:00Z`).
 */
export function formatConditionTime(now: Date): string {
  return now.toISOString().replace(/\.\d+Z$/, 'Z');
}

/** The condition of `type`, or undefined. Tolerates an absent list. */
export function findCondition(
  conditions: readonly StatusCondition[] | undefined,
  type: string,
): StatusCondition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** True when the condition of `type` exists with status `True`. */
export function isConditionTrue(conditions: readonly StatusCondition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

/**
 * Returns `conditions` with `update` applied, like meta.SetStatusCondition:
 * - a new type is appended with `lastTransitionTime = now`;
 * - an existing type keeps its position; `reason`, `message` and `observedGeneration` are replaced;
 *   `lastTransitionTime` changes to `now` only when `status` changes, otherwise it is kept verbatim.
 * The input array is never mutated.
 */
export function setCondition(
  conditions: readonly StatusCondition[] | undefined,
  update: ConditionUpdate,
  now: Date,
): StatusCondition[] {
  const list = conditions ?? [];
  const index = list.findIndex((c) => c.type === update.type);
  const existing = list[index];
  const lastTransitionTime =
    existing !== undefined && existing.status === update.status
      ? existing.lastTransitionTime
      : formatConditionTime(now);
  const next: StatusCondition = {
    type: update.type,
    status: update.status,
    reason: update.reason,
    message: update.message,
    lastTransitionTime,
    ...(update.observedGeneration !== undefined ? { observedGeneration: update.observedGeneration } : {}),
  };
  if (existing === undefined) return [...list, next];
  return list.map((c, i) => (i === index ? next : c));
}

/** Returns `conditions` with every update applied in order (see `setCondition`). */
export function setConditions(
  conditions: readonly StatusCondition[] | undefined,
  updates: readonly ConditionUpdate[],
  now: Date,
): StatusCondition[] {
  let list: StatusCondition[] = [...(conditions ?? [])];
  for (const update of updates) list = setCondition(list, update, now);
  return list;
}

/** Returns `conditions` without the condition of `type` (a new array; unchanged content when absent). */
export function removeCondition(
  conditions: readonly StatusCondition[] | undefined,
  type: string,
): StatusCondition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}

/**
 * True when applying `updates` would change nothing but could be skipped: every update's type already exists with
 * the same status, reason, message and observedGeneration.
 */
export function conditionsSatisfied(
  conditions: readonly StatusCondition[] | undefined,
  updates: readonly ConditionUpdate[],
): boolean {
  return updates.every((u) => {
    const c = findCondition(conditions, u.type);
    return (
      c !== undefined &&
      c.status === u.status &&
      c.reason === u.reason &&
      c.message === u.message &&
      c.observedGeneration === u.observedGeneration
    );
  });
}
