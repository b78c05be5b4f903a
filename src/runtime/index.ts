export type { BackoffPolicy, BackoffState } from './backoff.ts';
export { baseDelay, DEFAULT_BACKOFF, INITIAL_BACKOFF_STATE, nextBackoff } from './backoff.ts';
export type { Clock } from './clock.ts';
export { flushMicrotasks, ManualClock, systemClock } from './clock.ts';
export type { Informer, InformerHooks, InformerOptions, ListSummary } from './informer.ts';
export { createInformer } from './informer.ts';
export type {
  AttemptResult,
  ElectorSelf,
  LeaderDecision,
  LeaderElector,
  LeaderElectorOptions,
  LeadershipState,
  Lease,
  LeaseObservation,
} from './leader.ts';
export {
  acquirePatch,
  afterAttempt,
  createLeaderElector,
  createLeaseBody,
  decideLeader,
  formatMicroTime,
  INITIAL_LEADERSHIP,
  LEASE_DURATION_SECONDS,
  LeaseSchema,
  MAX_CONSECUTIVE_RENEW_FAILURES,
  observeLease,
  RETRY_PERIOD_MS,
  releasePatch,
  renewPatch,
} from './leader.ts';
export { type LoopLagProbe, startLoopLagProbe } from './loop-lag.ts';
export type { ShutdownHandle } from './shutdown.ts';
export { installShutdown } from './shutdown.ts';
export { anySignal } from './signals.ts';
export type { Change, StoreReader } from './store.ts';
export { Store } from './store.ts';
export type { ListReason, WatcherOutcome, WatcherState, WatcherStep } from './watcher.ts';
export { INITIAL_WATCHER_STATE, nextWatcherStep } from './watcher.ts';
export type { WorkQueue, WorkQueueHooks, WorkQueueOptions, WorkResult } from './workqueue.ts';
export {
  createWorkQueue,
  DEFAULT_ITEM_BACKOFF,
  REQUEUE_REASON,
  RETRY_REASON,
  UNSPECIFIED_REASON,
} from './workqueue.ts';
