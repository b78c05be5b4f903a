/**
 * Every string the reconcile core writes for humans and tools: condition types and reasons, Event reasons,
 * `status.failureReason` texts. One place, so tests, docs and the e2e suite can refer to the same constants.
 *
 * Conditions on an Agent (metav1.Condition shape, all carry `observedGeneration`):
 *
 * | phase     | `Ready`                          | `Complete`          | `Failed`                  |
 * |-----------|----------------------------------|---------------------|---------------------------|
 * | queued    | False, `Queued`                  | absent              | absent                    |
 * | Running   | False, `Running`                 | absent              | absent                    |
 * | Succeeded | True, `Succeeded`                | True, `Succeeded`   | absent                    |
 * | Failed    | False, failure reason (below)    | absent              | True, failure reason      |
 *
 * While a Running run's pod is kept from starting, `Ready` is False with the cause as reason and `StartBlocked` is True
 * with it (see src/reconcile/agent/starting.ts).
 *
 * So `kubectl wait --for=condition=Complete agent/x` waits for success, `--for=condition=Failed` for failure and
 * `--for=condition=Ready` for a usable result; like a Job's conditions, `Complete` and `Failed` appear only at the
 * end and never together.
 */

/** Condition type: the run's result is available (True only once Succeeded). */
export const CONDITION_READY = 'Ready';
/**
 * Condition type: the Services a run depends on have ready endpoints (issue 10 §4). False (reason
 * WaitingForDependencies) from when a Pending run starts waiting for them, its lastTransitionTime the start of that
 * wait; True once they are ready. Present only on runs whose definition names dependencies.
 */
export const CONDITION_DEPENDENCIES_READY = 'DependenciesReady';
/** Condition type: the run finished successfully (present only on Succeeded). */
export const CONDITION_COMPLETE = 'Complete';
/** Condition type: the run failed (present only on Failed). */
export const CONDITION_FAILED = 'Failed';
/**
 * Condition type: the run's pod is kept from starting (issue 13 §4). True, with the cause as reason, only while it
 * lasts (its lastTransitionTime: since when); removed once the pod starts; left on a run that failed of it.
 */
export const CONDITION_START_BLOCKED = 'StartBlocked';

/** Condition and Event reasons (stable CamelCase; safe to match on). */
export const REASON = {
  /** Waiting for a free run slot under the Station's concurrency limit. */
  queued: 'Queued',
  /** A windowed spend budget of the Station or namespace is spent: the run waits (or fails, by policy). */
  budgetExhausted: 'BudgetExhausted',
  /** The run's usage reached its per-run cap: it ends Failed, its Job deleted. */
  budgetExceeded: 'BudgetExceeded',
  /** The Job was created (or an existing Job owned by this Agent adopted); the run is in progress. */
  started: 'Started',
  /** Condition reason while the run is in progress. */
  running: 'Running',
  /** The Job completed; the run Succeeded. */
  succeeded: 'Succeeded',
  /** The Station or its AgentDefinition does not exist (permanent, no retry). */
  missingReference: 'MissingReference',
  /**
   * The Job could not be built, or the API server rejected it
   * (docs/design/reference-behaviour.md#d-b-unbuildable-job-fails).
   */
  buildFailed: 'BuildFailed',
  /** The Station or AgentDefinition exists but is not valid. */
  invalidReference: 'InvalidReference',
  /** A Job with the run's name exists and belongs to another owner. */
  jobNotOwned: 'JobNotOwned',
  /** The Job failed (including its deadline). */
  jobFailed: 'JobFailed',
  /** The Job disappeared before its result was read (docs/design/reference-behaviour.md#d-a-vanished-job-fails). */
  jobGarbageCollected: 'JobGarbageCollected',
  /** The run finished but its pod or log could not be read; `status.output` is empty. */
  outputUnavailable: 'OutputUnavailable',
  /** Event on the Agent deleted to make room under concurrencyPolicy Replace. */
  preempted: 'Preempted',
  /** Event on the Agent that deleted another one under concurrencyPolicy Replace. */
  preempting: 'Preempting',
  /** Batch run: the submission record is written; the prompt is being submitted to the vendor. */
  submitting: 'Submitting',
  /** A Pending run waits for the Services it depends on to have ready endpoints (issue 10 §4). */
  waitingForDependencies: 'WaitingForDependencies',
  /** Every Service a run depends on has ready endpoints (condition DependenciesReady=True). */
  dependenciesReady: 'DependenciesReady',
  /** A dependency had no ready endpoints within its timeout, or dependencies cannot be observed. */
  dependencyNotReady: 'DependencyNotReady',
  /** A Pending run waits: a vendor key its grant names is saturated at the model gateway (issue 28 §5). */
  keySaturated: 'KeySaturated',
  /** The run ended well but its result does not match the definition's output.schema (issue 10 §2). */
  resultInvalid: 'ResultInvalid',
  /** A binding of the run's ServiceAccount could not be created (issue 9 §2). */
  rbacRefused: 'RBACRefused',
  /** Warning Event: a run holding a token started without an egress rule to the API server (address unknown). */
  apiServerUnknown: 'APIServerUnknown',
  /** Event: the run's Job and bindings were removed because the Agent is being deleted (issue 9 §6). */
  cleanedUp: 'CleanedUp',
  /** The Station's AgentPolicy forbids what the run would do, or the policy it names does not exist. */
  policyViolation: 'PolicyViolation',
  /** A realtime run refused at admission (controller without REALTIME_ENABLED, a field it cannot use, a resume). */
  realtimeRefused: 'RealtimeRefused',
  /** A server refused at admission (controller without SERVER_ENABLED, no policy allowing it, a field it cannot use). */
  serverRefused: 'ServerRefused',
  /** A server's Deployment, Service (and HTTPRoute) were created: phase Serving. */
  serverCreated: 'ServerCreated',
  /** Ready: a server's Deployment has every replica available. */
  serverAvailable: 'Available',
  /** Ready=False: a server's Deployment is rolling out or has replicas unavailable. */
  serverProgressing: 'Progressing',
  /**
   * Ready=False: a server scaled to zero by spec.suspend; a realtime session suspended (issue 29: its state saved, its
   * pod deleted, no run slot held; also the Event).
   */
  suspended: 'Suspended',
  /** Event: a Suspended session was admitted again and its new pod is being started (issue 29). */
  woken: 'Woken',
  /** Event: a new pod restores the session from its last saved turn (after a wake, or after its pod was lost). */
  sessionRestored: 'SessionRestored',
  /** Warning Event: a realtime run's pod was lost and its session cannot be restored (no saved turn, the limit). */
  sessionLost: 'SessionLost',
  /** Event: a session's stored state was deleted (the Agent deleted, or beyond the Station's sessionHistoryLimit). */
  sessionDeleted: 'SessionDeleted',
  /** Warning Event: deleting a session's stored state failed (retried), or was given up, naming what was left. */
  sessionCleanupFailed: 'SessionCleanupFailed',
  /** idleTimeoutSeconds asked of a run that cannot be suspended (not realtime, or no session store). */
  sessionRefused: 'SessionRefused',
  /** Ready=False: the API-key Secret named by the definition (or its key api-key) is missing. */
  serverApiKeyMissing: 'ApiKeySecretMissing',
  /** A server object was deleted or edited and has been written back. */
  serverRepaired: 'ServerRepaired',
  /** The recipe or the Station changed: the server's objects were updated (the Deployment rolls). */
  serverUpdated: 'ServerUpdated',
  /** The API server refused a server object (422/400). */
  serverRejected: 'ServerRejected',
  /** An object of the server's name exists and belongs to someone else. */
  serverNameTaken: 'ServerNameTaken',
  /** A server's objects cannot be built from the current recipe or Station (the running ones are kept). */
  serverBuildFailed: 'ServerBuildFailed',
  /** A realtime run's CLI session id became known (status.sessionId). */
  sessionStarted: 'SessionStarted',
  /** The CLI's own token count disagrees with what the model gateway measured (issue 28). */
  usageMismatch: 'UsageMismatch',
  /** The model gateway's usage annotation on the Agent cannot be read (issue 28). */
  gatewayUsageInvalid: 'GatewayUsageInvalid',
  /** Batch run asked of a controller without BATCH_ENABLED=true. */
  batchDisabled: 'BatchDisabled',
  /** The recipe cannot run as one batch prompt (tools, repos, a model without a batch API…). */
  batchUnsupported: 'BatchUnsupported',
  /** The vendor key is missing from the Secret agent-secrets. */
  batchCredentialsMissing: 'BatchCredentialsMissing',
  /** The vendor refused the batch (4xx other than 429). */
  batchRejected: 'BatchRejected',
  /** The batch request failed at the vendor (errored, expired, cancelled, refused). */
  batchFailed: 'BatchFailed',
  /** The batch ran longer than batch.timeoutMinutes. */
  batchTimedOut: 'BatchTimedOut',
  /** Condition reason while a timed-out batch run falls back to a Job. */
  fallingBack: 'FallingBack',
  /** The vendor batch (or OpenAI files) were deleted after the run. */
  batchCleanedUp: 'BatchCleanedUp',
  /** Cleaning up the vendor batch failed; it is retried with backoff. */
  batchCleanupFailed: 'BatchCleanupFailed',
  /** A vendor object of the run is left behind (cleanup gave up, or a submission could not be tied back). */
  batchOrphaned: 'BatchOrphaned',
  /** More than one batch was found for one run; the extra ones are cancelled and deleted. */
  duplicateBatch: 'DuplicateBatch',
  /** A run's memory ConfigMap cannot be read (the controller lacks the grant): the run fails at Pending. */
  memoryUnreadable: 'MemoryUnreadable',
  /** Event: the run's memory block replaced the memory (issue 10 §3). */
  memorySaved: 'MemorySaved',
  /** Event: the saved memory replaced a version written after the run read it (a concurrent run or a person). */
  memoryOverwritten: 'MemoryOverwritten',
  /** Warning Event: the run's memory block is larger than memory.maxSizeKB; the memory is unchanged. */
  memoryTooLarge: 'MemoryTooLarge',
  /** Warning Event: the memory could not be saved (no grant, the ConfigMap kept changing, an API error…). */
  memoryNotSaved: 'MemoryNotSaved',
  /**
   * Runs that cannot start (issue 13 §4): Ready=False and a Warning Event while it lasts, the run's failure reason
   * after the Station's startTimeoutMinutes (at once when permanent). The Job controller could not create the pod
   * (admission: Pod Security, quota, LimitRange, a webhook).
   */
  podRefused: 'PodRefused',
  /** A container image of the run's pod cannot be pulled (ErrImagePull, ImagePullBackOff, InvalidImageName). */
  imagePullFailed: 'ImagePullFailed',
  /** A container of the run's pod cannot be created (CreateContainerConfigError: a missing Secret key, …). */
  containerConfigError: 'ContainerConfigError',
  /** The run's pod cannot be scheduled (PodScheduled=False/Unschedulable). */
  unschedulable: 'Unschedulable',
} as const;

export type Reason = (typeof REASON)[keyof typeof REASON];

/** `status.failureReason` when the Station or AgentDefinition is missing (exact reference string). */
export const FAILURE_MISSING_REF = 'Station or AgentDefinition not found';
/** `status.failureReason` when the Job vanished while the Agent was Running (exact reference string). */
export const FAILURE_JOB_GONE =
  'run record unavailable: Job garbage-collected before its result was observed';
/**
 * `status.failureReason` when the run's init container failed (the agent never ran): its own one-line reason (the
 * container's termination message, e.g. a prerequisite the restricted profile cannot install), else its exit code.
 */
export function failureInit(exitCode: number, message: string | undefined): string {
  const text = (message ?? '').trim().replace(/\s+/g, ' ');
  return text === ''
    ? `init container failed with exit code ${exitCode}`
    : `init container failed (exit code ${exitCode}): ${text.slice(0, 1024)}`;
}
/**
 * `status.failureReason` of a run whose pod did not start (issue 13 §4): the cause's reason and message, and the
 * start timeout when that is what ended it.
 */
export function failureStart(reason: string, detail: string, timeoutMinutes: number | undefined): string {
  const text = `${reason}: ${detail.trim().replace(/\s+/g, ' ').slice(0, 1024)}`;
  return timeoutMinutes === undefined ? text : `${text} (the pod did not start within ${timeoutMinutes}m)`;
}
/** `status.failureReason` when the run's pod is gone and the Job gave no reason (exact reference string). */
export const FAILURE_POD_GONE = 'run output unavailable: pod garbage-collected';
/** Reason used when a Job failed without a condition reason or message (exact reference string). */
export const FAILURE_JOB_FAILED = 'Job failed';

/** `status.failureReason` for a Job that cannot be built; `detail` is the builder's message. */
export const failureBuild = (detail: string): string => `Job build failed: ${detail}`;
/** `status.failureReason` for a Station or AgentDefinition that exists but cannot be read. */
export const failureInvalidReference = (kind: string, name: string, detail: string): string =>
  `${kind} ${name} is invalid: ${detail}`;
/** `status.failureReason` for a Job the API server refused to create (422 / 400). */
export const failureRejected = (detail: string): string => `Job rejected by the API server: ${detail}`;
/** `status.failureReason` when the run's own ServiceAccount could not be created (the controller lacks the grant). */
export const failureServiceAccount = (detail: string): string =>
  `the run's ServiceAccount could not be created (${detail}); the controller needs serviceaccounts create in this namespace (deploy/rbac/controller-rbac.yaml)`;
/** `status.failureReason` when the run's input ConfigMap could not be created (issue 10 §1). */
export const failureInput = (detail: string): string =>
  `the run's input ConfigMap could not be created (${detail}); the controller needs configmaps create, get and delete in this namespace (deploy/rbac/controller-rbac.yaml)`;
/** `status.failureReason` when a binding of the run could not be created. */
export const failureBinding = (detail: string): string =>
  `the run's Kubernetes access could not be granted: ${detail}; the controller needs create on rolebindings (and clusterrolebindings) and bind on each grantable ClusterRole, by name (deploy/components/run-rbac)`;
/** `status.failureReason` when the run's memory ConfigMap cannot be read (issue 10 §3). */
export const failureMemory = (configMap: string, detail: string): string =>
  `memory ConfigMap ${configMap} cannot be read (${detail}); the controller needs configmaps get, create and update in this namespace (deploy/components/memory)`;
/** `status.failureReason` when the memory ConfigMap exists but is not marked as a memory. */
export const failureNotMemory = (configMap: string): string =>
  `ConfigMap ${configMap} is not a memory: the controller reads and writes only ConfigMaps labelled agents.re-cinq.com/memory=true (label it, or name another one)`;
/** `status.failureReason` when a Job of the run's name belongs to another owner. */
export const failureNotOwned = (jobName: string): string =>
  `Job ${jobName} already exists and is not owned by this Agent`;
/** `status.failureReason` when the pod or its log could not be read for another reason than garbage collection. */
export const failureOutputUnavailable = (detail: string): string => `run output unavailable: ${detail}`;
/** `status.failureReason` of a batch run asked of a controller without batch execution. */
export const FAILURE_BATCH_DISABLED = 'batch execution is disabled on this controller';
/** `status.failureReason` of a batch run that ran past batch.timeoutMinutes with onTimeout: fail. */
export const FAILURE_BATCH_TIMEOUT = 'batch timed out';
/** `status.failureReason` when the vendor refused the batch create. */
export const failureBatchRejected = (provider: string, detail: string): string =>
  `batch rejected by ${provider}: ${detail}`;

/** Why an Agent was deleted by a newer run under concurrencyPolicy Replace. */
export const preemptedMessage = (by: string, station: string): string =>
  `preempted by Agent ${by}: Station ${station} is at its concurrency limit (concurrencyPolicy Replace)`;
