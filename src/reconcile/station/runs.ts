import { ANNOTATION_WAKE_REQUESTED } from '../../api/sessions.ts';

/**
 * The Agent fields the Station-level rules (admission, pruning) read, plus the shared orderings.
 * Structural, so any parsed Agent fits.
 */

/**
 * The run phases; an absent or unknown phase reads as `Pending` (docs/design/reference-behaviour.md#lenient-parsing).
 * `Serving`: a server (issue 12). `Suspended`: a realtime session saved and without a pod (issue 29).
 */
export type RunPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Serving' | 'Suspended';

/** What admission and pruning read from an Agent. */
export interface AgentRunView {
  readonly metadata: {
    readonly name?: string | undefined;
    readonly namespace?: string | undefined;
    readonly uid?: string | undefined;
    readonly resourceVersion?: string | undefined;
    readonly creationTimestamp?: string | undefined;
    readonly deletionTimestamp?: string | undefined;
    readonly annotations?: Readonly<Record<string, string>> | undefined;
  };
  readonly spec: { readonly stationRef: string };
  readonly status?:
    | {
        readonly phase?: string | undefined;
        readonly startedAt?: string | undefined;
        readonly completedAt?: string | undefined;
        readonly jobName?: string | undefined;
        readonly batchFallback?: boolean | undefined;
        readonly session?:
          | { readonly restorePending?: string | undefined; readonly wakeRequest?: string | undefined }
          | undefined;
      }
    | undefined;
}

/**
 * True for a batch run that timed out with `onTimeout: fallback` and has no Job yet: it waits in Running for a
 * slot like a queued Agent, and holds none until its Job is asked for.
 */
export function awaitsFallbackSlot(agent: AgentRunView): boolean {
  return agent.status?.batchFallback === true && (agent.status.jobName ?? '') === '';
}

/** The Agent's phase; absent or unknown → `Pending`. */
export function runPhase(agent: AgentRunView): RunPhase {
  const p = agent.status?.phase;
  return p === 'Running' || p === 'Succeeded' || p === 'Failed' || p === 'Serving' || p === 'Suspended'
    ? p
    : 'Pending';
}

/** True for `Succeeded` and `Failed`. */
export function isTerminal(agent: AgentRunView): boolean {
  const p = runPhase(agent);
  return p === 'Succeeded' || p === 'Failed';
}

/** True when both denote the same object: equal uids when both are known, else equal namespace and name. */
export function isSameAgent(a: AgentRunView, b: AgentRunView): boolean {
  if (a.metadata.uid !== undefined && b.metadata.uid !== undefined) return a.metadata.uid === b.metadata.uid;
  return a.metadata.namespace === b.metadata.namespace && a.metadata.name === b.metadata.name;
}

/**
 * True when `agent` runs in `station` (`spec.stationRef`) in the namespace `namespace` (an Agent without a
 * namespace matches any, which only happens in hand-made test objects).
 */
export function inStation(agent: AgentRunView, station: string, namespace: string | undefined): boolean {
  if (agent.spec.stationRef !== station) return false;
  const ns = agent.metadata.namespace;
  return namespace === undefined || ns === undefined || ns === namespace;
}

/** Epoch ms of an RFC 3339 string; `fallback` when absent or unparseable. */
export function timeOf(value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const t = Date.parse(value);
  return Number.isNaN(t) ? fallback : t;
}

const byName = (a: AgentRunView, b: AgentRunView): number => {
  const na = a.metadata.name ?? '';
  const nb = b.metadata.name ?? '';
  if (na !== nb) return na < nb ? -1 : 1;
  const ua = a.metadata.uid ?? '';
  const ub = b.metadata.uid ?? '';
  return ua === ub ? 0 : ua < ub ? -1 : 1;
};

/**
 * Queue order (docs/design/reference-behaviour.md#d-d-first-come-first-served): creationTimestamp ascending, ties by
 * name (then uid). A missing or unparseable
 * timestamp sorts last. Total and deterministic, so every path computes the same order.
 */
export function compareQueueOrder(a: AgentRunView, b: AgentRunView): number {
  const ta = timeOf(a.metadata.creationTimestamp, Number.POSITIVE_INFINITY);
  const tb = timeOf(b.metadata.creationTimestamp, Number.POSITIVE_INFINITY);
  if (ta !== tb) return ta < tb ? -1 : 1;
  return byName(a, b);
}

/**
 * Age order of Running runs, oldest first: startedAt ascending (falling back to creationTimestamp when absent),
 * then queue order.
 */
export function compareStartOrder(a: AgentRunView, b: AgentRunView): number {
  const ca = timeOf(a.metadata.creationTimestamp, Number.POSITIVE_INFINITY);
  const cb = timeOf(b.metadata.creationTimestamp, Number.POSITIVE_INFINITY);
  const sa = timeOf(a.status?.startedAt, ca);
  const sb = timeOf(b.status?.startedAt, cb);
  if (sa !== sb) return sa < sb ? -1 : 1;
  return compareQueueOrder(a, b);
}

/**
 * History order, newest first: completedAt descending; a missing or unparseable completedAt sorts oldest
 * (docs/design/reference-behaviour.md#history-pruning); ties by queue order, newest first.
 */
export function compareHistoryOrder(a: AgentRunView, b: AgentRunView): number {
  const ta = timeOf(a.status?.completedAt, Number.NEGATIVE_INFINITY);
  const tb = timeOf(b.status?.completedAt, Number.NEGATIVE_INFINITY);
  if (ta !== tb) return ta > tb ? -1 : 1;
  return -compareQueueOrder(a, b);
}

/** Epoch ms of an RFC 3339 string; unparseable → last. */
function isoTime(value: string): number {
  const t = Date.parse(value);
  return Number.isNaN(t) ? Number.POSITIVE_INFINITY : t;
}

/** A Suspended session asked to wake: by a prompt or `resume` (`wake`) or after its pod was lost (`restore`). */
export interface WakeRequest {
  readonly trigger: 'wake' | 'restore';
  /** Its place in the Station's queue (epoch ms). */
  readonly at: number;
  /** The wake-requested value it takes (recorded as `status.session.wakeRequest`). */
  readonly value?: string | undefined;
}

/**
 * The wake a Suspended Agent waits for, if any: a pending restore first, else a `wake-requested` value not acted on
 * yet (an unparseable time queues last). Structural, so the Station book reads it too.
 */
export function wakeRequest(agent: {
  readonly metadata: { readonly annotations?: Readonly<Record<string, string>> | undefined };
  readonly status?:
    | {
        readonly phase?: string | undefined;
        readonly session?:
          | { readonly restorePending?: string | undefined; readonly wakeRequest?: string | undefined }
          | undefined;
      }
    | undefined;
}): WakeRequest | undefined {
  if (agent.status?.phase !== 'Suspended') return undefined;
  const pending = agent.status.session?.restorePending;
  if (pending !== undefined && pending !== '') return { trigger: 'restore', at: isoTime(pending) };
  const value = agent.metadata.annotations?.[ANNOTATION_WAKE_REQUESTED];
  if (value === undefined || value === '' || value === agent.status.session?.wakeRequest) return undefined;
  return { trigger: 'wake', at: isoTime(value), value };
}
