import type { AgentPhase } from '../api/index.ts';
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
import type { StatusCondition } from './conditions.ts';

/**
 * Decisions are data: `decide` returns a `Decision`, and the executor (src/effects) is the only code that writes.
 *
 * Executor contract (the core relies on it):
 * - Actions run **in array order**, one at a time. A decision is one transition; its later actions
 *   (status, events, metrics) assume the earlier writes happened.
 * - `createServiceAccount` (the run's own ServiceAccount, first of the run's objects; issue 9 §2): 201 or 409
 *   `AlreadyExists` → continue. 403 `Forbidden` → stop, call `decide` again with `serviceAccountRefused` (the
 *   Agent fails: without its ServiceAccount no pod of the run could be created). Any other error → stop, retried.
 * - `createRunBinding` (a RoleBinding or ClusterRoleBinding of the run's ServiceAccount to a ClusterRole its policy
 *   lets it have; after the ServiceAccount, before the Job; issue 9 §2): 201 → continue. 409 → GET it: labelled
 *   with this Agent's uid → continue; left by an earlier Agent of the same name (same run labels, another uid, or
 *   being deleted) → the reconcile is retried later (garbage collection removes it); anything else → stop, call
 *   `decide` again with `bindingRefused`. 403 / 422 / 400 → stop, call `decide` again with `bindingRefused` (the
 *   Agent fails with the reason). Other errors → stop, retried.
 * - `deleteRunBindings`: lists the RoleBindings of the Agent's namespace and the ClusterRoleBindings labelled with its
 *   uid and deletes each (404 counts as deleted). Any error → stop, retried.
 * - `deleteJob` (Foreground propagation: the Job goes once its pods are gone; `uid` precondition): 200/202/404
 *   → continue; 409 (another Job of that name now) → continue; other errors → stop, retried.
 * - `createNetworkPolicy` (the run's own policy, before the `createJob` of the same run;
 *   docs/design/reference-behaviour.md#d-i-networkpolicy-per-run, issue 9):
 *   201 → continue. 409 `AlreadyExists` → continue (idempotent: a retried start finds its own policy). 403
 *   `Forbidden` → log a warning once per controller and continue (a cluster without that grant still runs agents,
 *   with whatever other policies select their pods). Any other error → stop, the reconcile errors and is retried
 *   with backoff.
 * - `createRunInput` (the run's input ConfigMap, right before its `createJob`; issue 10 §1): 201 → continue. 409 →
 *   GET it: controlled by this Agent with the same data → continue; controlled by this Agent with other data (a
 *   retried start whose memory changed; no pod has mounted it yet) → delete it (uid precondition) and create it
 *   again; left by an earlier Agent of the same name → the reconcile is retried later (garbage collection removes
 *   it). 403 / 422 / 400 → stop, call `decide` again with `inputRefused` (the Agent fails). Other errors → stop,
 *   retried.
 * - `createJob`: 201 → continue. 409 `AlreadyExists` → stop this decision, GET the Job and call `decide` again
 *   with `job: {kind: 'present', job, evidence: {kind: 'notGathered'}}` (a few rounds at most per reconcile: a Job
 *   that vanished in between is then created again); decide
 *   adopts a Job whose controller ownerReference is this Agent's uid and fails the Agent otherwise. 422 `Invalid`
 *   or 400 → stop, call `decide` again with `jobRejected: {message}` (the Agent fails,
 *   docs/design/reference-behaviour.md#d-b-unbuildable-job-fails). Any other
 *   error → stop, the reconcile errors and is retried with backoff.
 * - `patchStatus`: merge patch of `/status` with `metadata.resourceVersion` as precondition. 409 → the decision
 *   is superseded: stop, drop the rest, no retry (the change that bumped the resourceVersion triggers the next
 *   reconcile, which recomputes from fresh state). Events and metrics after it are therefore recorded once.
 * - `deleteAgent` (preconditions.resourceVersion, default propagation): 200/202 → continue; 404 → already gone,
 *   continue. 409 → for `purpose: 'preempt'` stop and drop the rest (the victim changed, perhaps it finished;
 *   the next reconcile recomputes); for `purpose: 'prune'` skip it and continue with the next action.
 * - Before every action but `observeMetric` the executor asks whether this replica may still write (it leads and
 *   its Lease renewal is confirmed); when not, it stops with `notLeading` and the shell looks at the key again
 *   shortly. Once the decision's status patch landed, the actions that report it (`recordEvent`, `notifySinks`,
 *   `saveMemory`) are not fenced: the transition is this decision's, and nobody else would report it.
 * - `recordEvent` and `observeMetric` are best effort: a failure is logged and never stops the decision.
 * - `addFinalizer` / `removeFinalizer`: a JSON patch of the Agent that tests and touches only the one finalizer
 *   entry (add: tests the resourceVersion; remove: tests the entry at `index`). 200 → continue; 404 → stop (gone);
 *   409 / 422 (the test failed) → superseded: stop, the next reconcile recomputes. Other errors → retry.
 * - `submitBatch`: the vendor create (never sent once this replica stopped leading). Success → stop, decide again
 *   with `submission: {kind: 'submitted', id}`. A definite refusal (4xx) → stop, decide again with
 *   `submission: {kind: 'rejected', message}`. Anything else → the reconcile errors and is retried; the create may
 *   have landed, so the next attempt searches the vendor first (`needs: 'batchLookup'`).
 * - `cleanupBatch`: the vendor cleanup of one batch. Done → continue; pending (Anthropic: cancel sent, delete
 *   once ended) → stop, decide again with `cleanup: {kind: 'pending'}`; failure → stop, decide again with
 *   `cleanup: {kind: 'failed', message}`.
 * - `createServerApiKey` (issue 12): POST the Secret with a random key (24 bytes, hex, `sk-` prefix); 201 → patch
 *   the Agent's `status.apiKeySecretUID` with the created Secret's uid (retried in place a few times: only a Secret
 *   the controller created is used), continue; 409 → someone else's: with `recorded`, clear the recorded uid (null),
 *   then continue. Other errors → stop, retried.
 * - `deleteServerObject` (issue 12): DELETE with the uid precondition; 200/202/404/409 → continue; other errors →
 *   stop, retried.
 * - `applyServerObject` (issue 12): POST (or PUT with the resourceVersion precondition). 409 / 404 → superseded:
 *   stop; the shell looks again shortly (nothing watched would wake the Agent). 422 / 400 → stop, call `decide` again with `serverRejected: {message}`. Other
 *   errors → stop, retried.
 * - `notifySinks`: handed to a background deliverer (never awaited, never fails the decision); placed right after
 *   the status patch it reports, so it is sent only once that patch succeeded.
 * - `saveMemory` (issue 10 §3; after the terminal status patch of a Succeeded run and its Event): best effort,
 *   awaited, never stops the decision. GET the ConfigMap: 404 → POST it (label `agents.re-cinq.com/memory: "true"`,
 *   no owner: it outlives the run); found with `MEMORY.md` equal to `content` → nothing is written; else PUT it with
 *   `MEMORY.md` replaced and its resourceVersion as precondition. 409 (Conflict, or AlreadyExists on the POST) →
 *   read again and write again, at most 5 tries. Success → Normal Event `MemorySaved`, plus Normal
 *   `MemoryOverwritten` when the version replaced is not the one the run read (`readVersion`; or a retry was
 *   needed): a concurrent run's update is overwritten, last writer wins, never silently. 403, an immutable
 *   ConfigMap, tries exhausted or another error → Warning Event `MemoryNotSaved` naming the cause (and the grant,
 *   for 403).
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
  /** The run's trace (issue 10 §5), set when it starts and the controller traces. */
  readonly traceID?: string;
  readonly batchProvider?: BatchProvider;
  readonly batchFallback?: boolean;
  readonly batchCleanupAttempts?: number;
  /** The run's final answer: text, or a validated JSON value (issue 10 §2). */
  readonly result?: unknown;
  readonly tokenUsage?: TokenUsage;
  readonly costEstimate?: {
    readonly usd: string;
    readonly source: 'cli' | 'priceTable';
    readonly model?: string;
  };
  readonly conditions: readonly StatusCondition[];
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
  /** `controller_batch_cleanup_failures_total`. */
  | { readonly metric: 'batchCleanupFailure' }
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
   * Replaces `MEMORY.md` of the run's memory ConfigMap with `content` (issue 10 §3); see the executor contract.
   * `readVersion`: the ConfigMap's resourceVersion when the run read it (`""`: it did not exist; undefined: unknown).
   */
  | {
      readonly kind: 'saveMemory';
      readonly ref: AgentRef;
      readonly namespace: string;
      readonly configMap: string;
      readonly content: string;
      readonly readVersion?: string | undefined;
    }
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
   * `pickRunPod`, read its agent log; `memory` → read the definition's memory ConfigMap (`Snapshot.memory`).
   */
  readonly needs?: 'job' | 'runEvidence' | 'credentials' | 'batchLookup' | 'memory' | 'livePods' | 'server';
  /**
   * Set on the decision that writes a batch run's submission record (Running, batchProvider, no batchId): once
   * it is done, the shell knows nothing was submitted for the Agent yet, so the next reconcile submits at once
   * instead of searching the vendor first.
   */
  readonly submissionRecord?: true;
  /** True when the decision starts a run (a Job create or a batch admission): the shell admits it in the book. */
  readonly admits?: true;
}
