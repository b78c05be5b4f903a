import type { AgentPhase, CostSource, GatewayGrant } from '../api/index.ts';
import type {
  InputConfigMapManifest,
  JobManifest,
  NetworkPolicyManifest,
  RunBindingManifest,
  ServiceAccountManifest,
} from '../jobs/index.ts';
import type { ServerObject } from '../jobs/server.ts';
import type { BatchProvider, BatchRequest } from '../vendors/batch/port.ts';
import type { TokenUsage } from '../vendors/cli/run-report.ts';
import type { RunSpend } from './budget/ledger.ts';
import type { StatusCondition } from './conditions.ts';

/**
 * Decisions are data: `decide` returns a `Decision`, and the executor (src/effects) is the only code that writes.
 *
 * The executor contract the core relies on is data: `EXECUTOR_CONTRACT` in ./executor-contract.ts (actions run in
 * array order, one at a time; per kind, whether this replica's leadership is checked first, whether it is best effort,
 * and what each answer of the API server or the vendor means for the decision). The executor's handlers
 * (src/effects/execute/) and the decision simulator (./agent/apply-actions.test-support.ts) read it.
 */

/** The object an action is about. Always an Agent (`agents.re-cinq.com/v1alpha1`). */
export interface AgentRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/**
 * A merge patch of Agent `.status`. Absent fields are left untouched; `conditions` is always the complete list
 * (merge patch replaces arrays whole).
 */
export interface AgentStatusPatch {
  readonly phase?: AgentPhase;
  readonly jobName?: string;
  readonly startedAt?: string;
  readonly completedAt?: string;
  readonly exitCode?: number;
  readonly output?: string;
  readonly failureReason?: string;
  readonly observedGeneration?: number;
  readonly batchId?: string;
  /** The CLI session of a realtime run (from its output at the end; the prompt API records it earlier). */
  readonly sessionId?: string;
  /** Where a server answers, and its Service (issue 12). */
  readonly url?: string;
  readonly serviceName?: string;
  /** The uid of the API-key Secret the controller created for a server; null clears it (issue 12). */
  readonly apiKeySecretUID?: string | null;
  /** The run's trace (issue 10 §5), set when it starts and the controller traces. */
  readonly traceID?: string;
  readonly batchProvider?: BatchProvider;
  readonly batchFallback?: boolean;
  readonly batchCleanupAttempts?: number;
  /** The run's final answer: text, or a validated JSON value (issue 10 §2). */
  readonly result?: unknown;
  readonly tokenUsage?: TokenUsage;
  /** What the model gateway may do for the run (issue 28), recorded when it starts. */
  readonly gateway?: GatewayGrant;
  readonly costEstimate?: {
    readonly usd: string;
    readonly source: CostSource;
    readonly model?: string;
  };
  /** The realtime session kept in the session store (issue 29); merged field by field, null clears one. */
  readonly session?: SessionStatusPatch;
  readonly conditions: readonly StatusCondition[];
}

/** A merge patch of `status.session` (issue 29, ./realtime/suspend.ts). */
export interface SessionStatusPatch {
  readonly turns?: number;
  readonly savedTurn?: number;
  readonly lastPromptTime?: string;
  readonly restarts?: number;
  readonly suspendedAt?: string;
  readonly suspendRequest?: string;
  readonly wakeRequest?: string;
  readonly restorePending?: string | null;
  readonly cleanupAttempts?: number;
}

/**
 * Failure kinds of `controller_run_failures_total{kind}`: the one list. The metric registry starts a series at 0 for
 * each, so adding a kind here is all it takes.
 */
export const RUN_FAILURE_KINDS = [
  'missing_ref',
  'job_failed',
  'output_unavailable',
  'preempted',
  'build_error',
  'batch_failed',
  'batch_timeout',
  'policy',
  'result_invalid',
  'dependency',
  'start_failed',
  'budget',
] as const;
export type RunFailureKind = (typeof RUN_FAILURE_KINDS)[number];

/** One metric observation; the executor maps each to its Prometheus series. */
export type MetricObservation =
  /** `controller_runs_completed_total{phase, exit_code}`; `exitCode` absent when none was written. */
  | { readonly metric: 'runCompleted'; readonly phase: 'Succeeded' | 'Failed'; readonly exitCode?: number }
  /** `controller_run_duration_seconds{phase}`: startedAt to the terminal patch. */
  | { readonly metric: 'runDuration'; readonly phase: 'Succeeded' | 'Failed'; readonly seconds: number }
  /** `controller_run_queue_seconds`: creationTimestamp to Job creation. */
  | { readonly metric: 'runQueue'; readonly seconds: number }
  /** `controller_run_failures_total{kind}`. */
  | { readonly metric: 'runFailure'; readonly kind: RunFailureKind }
  /** `controller_run_tokens_total{model, kind}`: one observation per kind with a non-zero count. */
  | { readonly metric: 'runTokens'; readonly model: string; readonly usage: TokenUsage }
  /** `controller_run_cost_usd_total{model}`. */
  | { readonly metric: 'runCost'; readonly model: string; readonly usd: number }
  /**
   * `agent_budget_spent_usd`, `agent_budget_limit_usd` and the `_tokens` pair `{namespace, station, window}` of one
   * windowed budget as admission counted it (station empty: a namespace budget); absent kinds are not set.
   */
  | {
      readonly metric: 'budget';
      readonly namespace: string;
      readonly station: string;
      readonly window: string;
      readonly spentUsd?: number;
      readonly limitUsd?: number;
      readonly spentTokens?: number;
      readonly limitTokens?: number;
    }
  /** `controller_batch_cleanup_failures_total`. */
  | { readonly metric: 'batchCleanupFailure' }
  /** `controller_session_suspends_total{trigger}`: a realtime session suspended (idle, or asked). */
  | { readonly metric: 'sessionSuspended'; readonly trigger: 'idle' | 'requested' }
  /**
   * `controller_session_wakes_total{trigger}` and, for a wake, `controller_session_wake_admission_seconds` (the wake's
   * request to its new Job): a Suspended session admitted again (`wake`) or a lost pod replaced (`restore`).
   */
  | { readonly metric: 'sessionWoken'; readonly trigger: 'wake' | 'restore'; readonly seconds?: number }
  /** `controller_session_cleanup_failures_total`: deleting a session's stored state failed. */
  | { readonly metric: 'sessionCleanupFailure' }
  /** `controller_batch_orphans_total{provider}`: a vendor object the controller gave up on or cannot tie back. */
  | { readonly metric: 'batchOrphan'; readonly provider: BatchProvider };

/** One event for the definition's sinks, in the order the run produced it. */
export type SinkEvent =
  /** A CLI stream-JSON line (already filtered through `output.select`). */
  | { readonly kind: 'line'; readonly line: string }
  /** A lifecycle event `{kind: 'lifecycle', phase, status, reason?, exitCode?}` (always delivered). */
  | {
      readonly kind: 'lifecycle';
      readonly phase: 'agent' | 'batch';
      readonly status: 'started' | 'running' | 'succeeded' | 'failed';
      readonly reason?: string;
      readonly exitCode?: number;
    };

/** An http sink of a definition. */
export interface SinkTarget {
  readonly url: string;
  /** Key in `agent-secrets` holding header lines for the sink. */
  readonly headersSecret?: string;
}

/** Who sent an event: the envelope's `source`. */
export interface SinkSource {
  readonly agent: string;
  readonly station: string;
  readonly namespace: string;
  readonly task?: string;
}

/** A Job manifest ready to POST, as built by src/jobs `buildJob`. */
/** A NetworkPolicy manifest ready to POST, as built by src/jobs `buildRunNetworkPolicy`. */
export type {
  InputConfigMapManifest,
  JobManifest,
  NetworkPolicyManifest,
  RunBindingManifest,
  ServiceAccountManifest,
};

/** A memory ConfigMap as written: the body of the create, or of the replace (everything read kept). */
export interface MemoryConfigMapManifest {
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string | undefined;
    readonly labels?: Readonly<Record<string, string>> | null | undefined;
    readonly [key: string]: unknown;
  };
  readonly data?: Readonly<Record<string, string>> | null | undefined;
  readonly [key: string]: unknown;
}

/** Everything the reconcile core can ask the executor to do. */
export type Action =
  /**
   * The egress NetworkPolicy admitting the http sinks of a run
   * (docs/design/reference-behaviour.md#d-i-networkpolicy-per-run); emitted right before its Job.
   */
  | { readonly kind: 'createNetworkPolicy'; readonly policy: NetworkPolicyManifest }
  | { readonly kind: 'createServiceAccount'; readonly serviceAccount: ServiceAccountManifest }
  /** One binding of the run's ServiceAccount (issue 9 §2); emitted after the ServiceAccount, before the Job. */
  | { readonly kind: 'createRunBinding'; readonly binding: RunBindingManifest }
  /** Every RoleBinding and ClusterRoleBinding labelled with this Agent's uid is deleted (issue 9 §6). */
  | { readonly kind: 'deleteRunBindings'; readonly ref: AgentRef }
  /** Stops a run: deletes its Job with Foreground propagation (a Running Agent being deleted, issue 9 §6). */
  | { readonly kind: 'deleteJob'; readonly namespace: string; readonly name: string; readonly uid: string }
  /** The run's input ConfigMap (issue 10 §1): the prompt and ids its Job mounts; emitted right before the Job. */
  | { readonly kind: 'createRunInput'; readonly configMap: InputConfigMapManifest }
  /**
   * A run input found under the run's name that must be made again (this run's with other data, or orphaned): deleted
   * with a uid precondition, right before its create (issue 27 §2).
   */
  | {
      readonly kind: 'deleteRunInput';
      readonly ref: AgentRef;
      readonly namespace: string;
      readonly name: string;
      readonly uid: string;
    }
  | { readonly kind: 'createJob'; readonly job: JobManifest }
  /**
   * A server's API-key Secret `secretName` (owned by the Agent) with a random key made by the shell; an existing one
   * is kept (issue 12).
   */
  | {
      readonly kind: 'createServerApiKey';
      readonly ref: AgentRef;
      readonly secretName: string;
      /** A key Secret's uid is recorded on the Agent now (a rotation): a 409 then clears it (not its own any more). */
      readonly recorded: boolean;
    }
  /** A server object written: created, or (with `replace`) replaced with that resourceVersion as precondition. */
  /** A server object no longer wanted (a route whose Gateway the Station dropped), deleted with a uid precondition. */
  | {
      readonly kind: 'deleteServerObject';
      readonly ref: AgentRef;
      readonly resource: 'httproutes';
      readonly name: string;
      readonly uid: string;
    }
  | {
      readonly kind: 'applyServerObject';
      readonly ref: AgentRef;
      readonly object: ServerObject;
      readonly replace?: { readonly resourceVersion: string } | undefined;
    }
  /**
   * The Secret `secretName` (owned by the Agent) holding the realtime run's prompt token, derived by the shell from
   * the Agent uid with the controller's key; emitted right before the Job that reads it. An existing one is kept.
   */
  | {
      readonly kind: 'createPromptToken';
      readonly ref: AgentRef;
      readonly uid: string;
      readonly secretName: string;
    }
  /**
   * The Secret `secretName` (owned by the Agent) holding the run's credential for the model gateway (issue 28),
   * minted by the shell from the Agent's identity with the gateway key; emitted right before the Job that reads
   * it. An existing one is kept.
   */
  | {
      readonly kind: 'createGatewayCredential';
      readonly ref: AgentRef;
      readonly uid: string;
      readonly secretName: string;
    }
  | {
      readonly kind: 'patchStatus';
      readonly ref: AgentRef;
      readonly resourceVersion: string;
      readonly status: AgentStatusPatch;
    }
  | {
      readonly kind: 'deleteAgent';
      readonly ref: AgentRef;
      readonly resourceVersion: string;
      /** `prune`: history over the Station's limit; `preempt`: a Running run replaced under `Replace`. */
      readonly purpose: 'prune' | 'preempt';
      /** Human-readable why, for the log. */
      readonly reason: string;
    }
  | {
      readonly kind: 'recordEvent';
      readonly ref: AgentRef;
      readonly type: 'Normal' | 'Warning';
      /** Stable CamelCase reason (see REASON). */
      readonly reason: string;
      readonly message: string;
    }
  | { readonly kind: 'observeMetric'; readonly observation: MetricObservation }
  | {
      readonly kind: 'addFinalizer';
      readonly ref: AgentRef;
      readonly resourceVersion: string;
      readonly finalizer: string;
      /** True when the Agent has no finalizers yet (the list itself is added). */
      readonly first: boolean;
    }
  | {
      /**
       * Writes the namespace's spend ledger (ConfigMap agent-spend, issue 28 §4): the runs' entries in `set` are SET
       * (idempotent), the entries of the runs in `gone` are folded into their hourly buckets, old spend is dropped
       * (src/reconcile/budget/ledger.ts `writeLedger`). Read, changed and replaced at its resourceVersion; a 409 reads
       * it again.
       */
      readonly kind: 'recordSpend';
      readonly namespace: string;
      readonly set: readonly RunSpend[];
      readonly gone: readonly string[];
      /** The length of a budget hour (ms), for the buckets. */
      readonly hourMs: number;
      /** When it was decided (ms): spend older than a month before it is dropped. */
      readonly nowMs: number;
    }
  | {
      readonly kind: 'removeFinalizer';
      readonly ref: AgentRef;
      readonly finalizer: string;
      readonly index: number;
    }
  | {
      readonly kind: 'submitBatch';
      readonly ref: AgentRef;
      readonly provider: BatchProvider;
      /** Key of `agent-secrets` holding the vendor key (read by the executor; never in the core). */
      readonly secretKey: string;
      readonly request: BatchRequest;
    }
  | {
      readonly kind: 'cleanupBatch';
      readonly ref: AgentRef;
      readonly provider: BatchProvider;
      readonly secretKey: string;
      readonly batchId: string;
    }
  /**
   * The run's memory ConfigMap written (issue 10 §3, decided by ./agent/memory.ts): created as built (labelled as a
   * memory, owned by nothing), or, with `replace`, the ConfigMap as read with its MEMORY.md replaced, PUT with that
   * resourceVersion as precondition. Emitted right before the terminal patch of a Succeeded run; see the contract.
   */
  | {
      readonly kind: 'saveMemory';
      readonly ref: AgentRef;
      readonly namespace: string;
      readonly configMap: MemoryConfigMapManifest;
      readonly replace?: { readonly resourceVersion: string } | undefined;
    }
  /**
   * Every object of the Agent's session in the session store (`sessions/<namespace>/<agent uid>/`) is deleted
   * (issue 29 §5; idempotent: nothing there is done). A failure is decided again (`sessionCleanup`).
   */
  | { readonly kind: 'deleteSession'; readonly ref: AgentRef }
  | {
      readonly kind: 'notifySinks';
      readonly ref: AgentRef;
      readonly sinks: readonly SinkTarget[];
      readonly source: SinkSource;
      readonly events: readonly SinkEvent[];
    };

/** The outcome of one `decide` call. */
export interface Decision {
  readonly actions: readonly Action[];
  /** Reconcile this Agent again after this many ms even if nothing changes (backstop while queued or running). */
  readonly requeueAfterMs?: number;
  /**
   * Set when the snapshot lacks an observation decide needs; `actions` is then empty. The shell gathers it and
   * calls decide again: `job` → read the Job; `runEvidence` → the Job has finished: list its pods, pick one with
   * `pickRunPod`, read its agent log; `memory` → read the definition's memory ConfigMap (`Snapshot.memory`);
   * `memorySave` → read the memory ConfigMap a Succeeded run saves to, as its Job names it (`Snapshot.memorySave`).
   */
  readonly needs?:
    | 'job'
    | 'runEvidence'
    | 'credentials'
    | 'batchLookup'
    | 'memory'
    | 'memorySave'
    | 'livePods'
    | 'server'
    | 'spend';
  /**
   * Set on the decision that writes a batch run's submission record (Running, batchProvider, no batchId): once
   * it is done, the shell knows nothing was submitted for the Agent yet, so the next reconcile submits at once
   * instead of searching the vendor first.
   */
  readonly submissionRecord?: true;
  /** True when the decision starts a run (a Job create or a batch admission): the shell admits it in the book. */
  readonly admits?: true;
}
