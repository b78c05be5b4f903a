// The pure reconcile core: decide(snapshot, now) → Decision. No I/O, no clock, no randomness.
export * from './actions.ts';
export {
  type BuildRequest,
  decide,
  EARLY_VERDICT_RETRY_MS,
  type JobBuilder,
  jobOwnership,
  STALE_JOB_RETRY_MS,
} from './agent/decide.ts';
export {
  AGENT_CONTAINER,
  agentExitCode,
  coherentExitCode,
  isJobFinished,
  type JobOutcome,
  jobFailureReason,
  parseJobOutcome,
  pickRunPod,
} from './agent/outcome.ts';
export { MAX_CONDITION_MESSAGE, MAX_EVENT_MESSAGE } from './agent/status.ts';
export * from './conditions.ts';
export {
  type PolicyObservation,
  policyViolation,
  runIntent,
  servesNamespace,
  withPolicyTools,
} from './policy/check.ts';
export * from './reasons.ts';
export type {
  BatchOptions,
  CleanupObservation,
  CredentialCheck,
  EndpointObservation,
  EndpointView,
  JobObservation,
  LogRead,
  MemoryConfigMapObservation,
  MemoryObservation,
  MemorySaveObservation,
  ReconcileOptions,
  RunEvidence,
  Snapshot,
  SpendObservation,
  SubmissionObservation,
} from './snapshot.ts';
export {
  type Admission,
  type AdmissionCounts,
  admit,
  type Concurrency,
  type ConcurrencyPolicy,
  concurrencyOf,
  concurrencyPolicyOf,
  decideAdmission,
  effectiveMaxRuns,
  type StationConcurrency,
  wakeableCount,
} from './station/admission.ts';
export {
  EMPTY_QUEUE_VIEW,
  laneKey,
  type Place,
  StationBook,
  type StationQueueView,
} from './station/book.ts';
export {
  DEFAULT_HISTORY_LIMIT,
  type PruneChoice,
  pruneActions,
  type StationHistory,
  selectHistoryToPrune,
} from './station/prune.ts';
export {
  type AgentRunView,
  compareHistoryOrder,
  compareQueueOrder,
  compareStartOrder,
  isTerminal,
  type RunPhase,
  runPhase,
} from './station/runs.ts';
export { type LaneStation, termStartKeys, toldItWaits, wakeableHeads } from './station/wake.ts';
