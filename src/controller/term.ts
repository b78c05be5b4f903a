// A leadership term of this replica (docs/design/wiring.md#the-term): while it holds the Lease it has a work queue and a
// poll timer. A new term waits for the previous one to stop, re-lists Agents and Jobs with quorum reads, wakes what
// it must look at first (the `termStart` trigger), then starts the workers and the poll. A term that ends stops
// taking keys at once; handlers in flight finish (their writes carry resourceVersion preconditions).

import { describeKubeError, type KubeError } from '../kube/index.ts';
import { type Clock, createWorkQueue, type WorkQueue, type WorkResult } from '../runtime/index.ts';
import type { Logger } from '../shared/log.ts';
import type { Result } from '../shared/result.ts';

export interface TermDeps {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly workers: number;
  readonly pollIntervalMs: number;
  /** Reconciles one key (`reason`: why it was queued). */
  handle(key: string, reason: string): Promise<WorkResult>;
  /** Resolves when the caches a term decides from have listed once (and the policy source is known). */
  ready(): Promise<unknown>;
  /** Quorum LISTs of Agents and Jobs, so a term decides from caches at least as new as the API server. */
  relist(): Promise<readonly Result<unknown, KubeError>[]>;
  /** Queues the keys a new term looks at first (fires the `termStart` trigger). */
  wakeFirst(): void;
  /** One poll; never rejects. */
  poll(): Promise<void>;
  /**
   * The term's milestones: `begun` (the Lease is held; the caches are not yet re-listed), `started` (the first keys
   * queued, the workers running), `ended`.
   */
  onTerm(milestone: 'begun' | 'started' | 'ended'): void;
}

export interface Terms {
  /** The current term's queue; undefined between terms. */
  queue(): WorkQueue | undefined;
  start(): Promise<void>;
  /** Ends the current term; resolves once its handlers have finished. */
  stop(): Promise<void>;
}

/** How long a new term waits before listing again after its re-list failed. */
export const TERM_RELIST_RETRY_MS = 1000;

export function createTerms(deps: TermDeps): Terms {
  const { clock } = deps;
  const log = deps.logger;
  let queue: WorkQueue | undefined;
  let cancelPoll: (() => void) | undefined;
  /** The previous term's shutdown: a new term waits for it, so no Agent is ever reconciled by two terms at once. */
  let stopping: Promise<void> = Promise.resolve();

  /** Arms the next poll of term `q`; a term that ended (or was replaced) arms nothing. */
  function schedulePoll(q: WorkQueue): void {
    if (queue !== q) return;
    cancelPoll = clock.setTimer(deps.pollIntervalMs, () => {
      if (queue !== q) return;
      void deps.poll().then(() => schedulePoll(q));
    });
  }

  async function start(): Promise<void> {
    if (queue) return;
    deps.onTerm('begun');
    const q = createWorkQueue({ clock, concurrency: deps.workers, handler: deps.handle, logger: log });
    queue = q;
    await stopping;
    await deps.ready();
    // A term decides only from caches at least as new as the API server when it began (quorum LISTs of Agents
    // and Jobs): the runs a previous leader or an earlier process started are all counted
    // (docs/design/reference-behaviour.md#d-l-admission-by-construction).
    while (queue === q) {
      const failed = (await deps.relist()).find((r) => !r.ok);
      if (failed === undefined) break;
      log.warn('Listing Agents and Jobs for a new term failed, retrying', {
        error: failed.ok ? '' : describeKubeError(failed.error),
      });
      await clock.sleep(TERM_RELIST_RETRY_MS);
    }
    if (queue !== q) return;
    deps.wakeFirst();
    q.start();
    deps.onTerm('started');
    schedulePoll(q);
  }

  function stop(): Promise<void> {
    deps.onTerm('ended');
    const q = queue;
    queue = undefined;
    cancelPoll?.();
    cancelPoll = undefined;
    if (q) {
      const previous = stopping;
      // Handlers already running finish (their writes carry resourceVersion preconditions); none start.
      stopping = previous
        .then(() => q.shutdown({ drain: false }))
        .catch((error: unknown) => {
          log.error('Stopping the work queue failed', { error: String(error) });
        });
    }
    return stopping;
  }

  return { queue: () => queue, start, stop };
}
