import type { KubeError } from '../kube/errors.ts';
import type { WatchEnd } from '../kube/watch.ts';
import { type BackoffPolicy, type BackoffState, INITIAL_BACKOFF_STATE, nextBackoff } from './backoff.ts';

/**
 * The informer's list/watch loop as a pure state machine: given what just happened, what to do next.
 * Rules (docs/design/kubernetes.md#watch, docs/design/kubernetes.md#reconnecting):
 * - start, a 410 (`gone`), or a requested resync → LIST (paginated) and replace the store;
 * - a LIST failure → back off, LIST again;
 * - a clean server close → WATCH again from the last resourceVersion at once (backing off only if the stream closed
 *   within a second without any event, so a misbehaving server cannot make us spin);
 * - any other watch failure (network, idle timeout, 5xx, 403, …) → back off, WATCH again from the last
 *   resourceVersion — never a re-list.
 */
/** A watch the server ended within a second without any event: a misbehaving server or proxy, not a schedule. */
export function closedTooSoon(end: WatchEnd, durationMs: number): boolean {
  return end.kind === 'closed' && end.events === 0 && durationMs < 1000;
}

export type WatcherStep =
  | { readonly kind: 'list'; readonly reason: ListReason }
  | { readonly kind: 'watch'; readonly resourceVersion: string }
  | { readonly kind: 'sleep'; readonly ms: number; readonly next: WatcherStep };

/** Why a LIST happens. */
export type ListReason = 'initial' | 'gone' | 'resync' | 'retry';

export interface WatcherState {
  /** The last resourceVersion seen (list, event or bookmark); undefined before the first list. */
  readonly resourceVersion: string | undefined;
  readonly backoff: BackoffState;
}

export const INITIAL_WATCHER_STATE: WatcherState = {
  resourceVersion: undefined,
  backoff: INITIAL_BACKOFF_STATE,
};

/** What the executor reports back after running a step. */
export type WatcherOutcome =
  | { readonly kind: 'start' }
  | { readonly kind: 'listed'; readonly resourceVersion: string }
  | { readonly kind: 'listFailed'; readonly error: KubeError }
  | {
      readonly kind: 'watchEnded';
      readonly end: Exclude<WatchEnd, { kind: 'aborted' }>;
      /** The last resourceVersion seen during the watch (or the one it started from). */
      readonly resourceVersion: string;
      readonly durationMs: number;
    }
  | { readonly kind: 'resyncRequested' };

/** Decides the next step (pure; `random` in [0, 1) feeds the backoff jitter). */
export function nextWatcherStep(
  state: WatcherState,
  outcome: WatcherOutcome,
  now: number,
  random: number,
  policy: BackoffPolicy,
): { readonly state: WatcherState; readonly step: WatcherStep } {
  switch (outcome.kind) {
    case 'start':
      return { state, step: { kind: 'list', reason: 'initial' } };
    case 'resyncRequested':
      return { state, step: { kind: 'list', reason: 'resync' } };
    case 'listed':
      return {
        state: { ...state, resourceVersion: outcome.resourceVersion },
        step: { kind: 'watch', resourceVersion: outcome.resourceVersion },
      };
    case 'listFailed': {
      const b = nextBackoff(policy, state.backoff, now, random);
      return {
        state: { ...state, backoff: b.state },
        step: { kind: 'sleep', ms: b.delayMs, next: { kind: 'list', reason: 'retry' } },
      };
    }
    case 'watchEnded': {
      const rv = outcome.resourceVersion;
      const end = outcome.end;
      switch (end.kind) {
        case 'gone':
          return { state: { ...state, resourceVersion: undefined }, step: { kind: 'list', reason: 'gone' } };
        case 'closed': {
          const watch: WatcherStep = { kind: 'watch', resourceVersion: rv };
          if (closedTooSoon(end, outcome.durationMs)) {
            const b = nextBackoff(policy, state.backoff, now, random);
            return {
              state: { resourceVersion: rv, backoff: b.state },
              step: { kind: 'sleep', ms: b.delayMs, next: watch },
            };
          }
          return { state: { ...state, resourceVersion: rv }, step: watch };
        }
        case 'failed': {
          const b = nextBackoff(policy, state.backoff, now, random);
          return {
            state: { resourceVersion: rv, backoff: b.state },
            step: { kind: 'sleep', ms: b.delayMs, next: { kind: 'watch', resourceVersion: rv } },
          };
        }
      }
    }
  }
}
