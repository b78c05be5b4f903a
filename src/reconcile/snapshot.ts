import type { Agent, AgentDefinition, ConfigMap, Job, Pod, Station } from '../api/index.ts';
import type { ApiServerEndpoints } from '../jobs/index.ts';
import type { BatchState, FindOutcome } from '../vendors/batch/port.ts';
import type { PolicyObservation } from './policy/check.ts';
import type { PriceTable } from './results/prices.ts';
import type { StationQueueView } from './station/book.ts';

/** One EndpointSlice of a Service, as far as readiness goes. */
export interface EndpointView {
  /** Addresses of the endpoints not known to be unready. */
  readonly readyAddresses: readonly string[];
  /** The ports the slice serves. */
  readonly ports: readonly number[];
}

/** The EndpointSlices of a run's dependencies, by Service name (same namespace). */
export type EndpointObservation =
  | { readonly kind: 'observed'; readonly byService: ReadonlyMap<string, readonly EndpointView[]> }
  /** The watch has not listed yet (a new leader's cache): nothing is known, so nothing fails. */
  | { readonly kind: 'unsynced' }
  | { readonly kind: 'unavailable'; readonly message: string };

/**
 * The memory ConfigMap of a Pending run whose definition has `spec.memory` (issue 10 §3), read live by the shell:
 * `read` (a missing ConfigMap is an empty memory without a resourceVersion), or `forbidden` when the controller may
 * not read it (the run fails naming the grant). Other read errors produce no snapshot (retried).
 */
export type MemoryObservation =
  | { readonly kind: 'read'; readonly content: string; readonly resourceVersion?: string | undefined }
  | { readonly kind: 'forbidden'; readonly message: string }
  /** The ConfigMap exists but is not marked as a memory (label agents.re-cinq.com/memory=true): never touched. */
  | { readonly kind: 'notMemory' };

/**
 * The memory ConfigMap a Succeeded run saves its memory block to (issue 10 §3, issue 27 §2), read live by the shell
 * when decide asks (`needs: 'memorySave'`), and read again after a write that met a changed ConfigMap: `absent`
 * (404), `present` with the ConfigMap as read (its labels, MEMORY.md, immutability and resourceVersion decide; the
 * rest is kept when it is replaced), or `failed` when the read or the write was refused (403: `forbidden`) or failed
 * otherwise: decide then gives up with `MemoryNotSaved` naming the answer.
 */
export type MemoryConfigMapObservation =
  | { readonly kind: 'absent' }
  | { readonly kind: 'present'; readonly configMap: ConfigMap }
  | { readonly kind: 'failed'; readonly message: string; readonly forbidden: boolean };

/** What the shell observed of a run's memory ConfigMap while saving to it, in this reconcile. */
export interface MemorySaveObservation {
  readonly configMap: MemoryConfigMapObservation;
  /** Writes of this reconcile that met a ConfigMap changed since it was read (409, or 404 on a replace). */
  readonly changed: number;
}

/** A Deployment's rollout as far as a server's readiness goes. */
export interface DeploymentProgress {
  readonly observedGeneration?: number | undefined;
  readonly replicas: number;
  readonly updatedReplicas: number;
  readonly availableReplicas: number;
}

/** One object of a server (issue 12) as the shell read it. */
export type ServerChildObservation =
  | { readonly kind: 'absent' }
  | {
      readonly kind: 'present';
      readonly uid: string;
      readonly resourceVersion: string;
      readonly generation?: number | undefined;
      readonly annotations: Readonly<Record<string, string>>;
      /** The uid of its controller ownerReference, if any. */
      readonly controllerUid?: string | undefined;
      /** The name and kind of its controller ownerReference, if any (an earlier Agent of the same name?). */
      readonly controllerName?: string | undefined;
      readonly deleting: boolean;
      /**
       * Whether its spec is what the controller would write now, as the API server itself decided on a dry-run
       * replace of the desired object (defaults and canonical forms included); undefined when not asked.
       */
      readonly matches?: boolean | undefined;
      /** Deployments only. */
      readonly progress?: DeploymentProgress | undefined;
    };

/** What the shell read of a server's objects (live, on `needs: 'server'`). */
export interface ServerObservation {
  readonly deployment: ServerChildObservation;
  readonly service: ServerChildObservation;
  /** `unsupported`: the Gateway API (gateway.networking.k8s.io/v1 HTTPRoute) is not served. Absent: not read. */
  readonly route?: ServerChildObservation | { readonly kind: 'unsupported' } | undefined;
  /** Whether the API-key Secret exists. */
  readonly apiKey: ApiKeyObservation;
  /** The input ConfigMap (its data, when this Agent's); absent: not read. */
  readonly input?:
    | { readonly kind: 'absent' }
    | { readonly kind: 'present'; readonly data: Readonly<Record<string, string>> }
    | undefined;
}

/**
 * Whether a server's API-key Secret exists: all the controller learns of it (it never reads Secrets; the shell asks
 * with a dry-run create). Its contents, its owner and its version are not known: the pods read the key from a
 * mounted file, so a new key reaches them without a rollout.
 */
export type ApiKeyObservation = { readonly kind: 'present' } | { readonly kind: 'absent' };

/**
 * What the executor's last create of a server's generated API-key Secret met, kept by the shell (per Agent uid) until
 * the Agent's status says it (issue 27 §2): `created` with the new Secret's uid (decide records it in
 * `status.apiKeySecretUID`), or `taken` (a Secret of that name existed: someone else's; decide clears a uid recorded
 * before). A record that fails is decided again on the next reconcile, as long as this replica keeps the observation.
 */
export type ServerKeyObservation =
  | { readonly kind: 'created'; readonly uid: string }
  | { readonly kind: 'taken' };

/**
 * An object found under the name of a run object whose create met 409 AlreadyExists, as the shell read it back
 * (issue 27 §2): decide judges whose it is (src/reconcile/agent/found.ts) and adopts it, waits it out, replaces it or
 * fails the run. `key` names the create it answers (`foundKey`).
 */
export interface FoundObject {
  readonly key: string;
  readonly uid: string;
  /** It carries a deletionTimestamp. */
  readonly deleting: boolean;
  /** Its controller ownerReference, if it has one. */
  readonly controller?:
    | { readonly uid: string; readonly kind: string; readonly apiVersion: string; readonly name: string }
    | undefined;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  /** A ConfigMap's data. */
  readonly data?: Readonly<Record<string, string>> | undefined;
}

/** Controller settings the decisions depend on. */
export interface ReconcileOptions {
  /** Image of the run pod's init container (controller env `AGENT_IMAGE`). */
  readonly agentImage: string;
  /** Cap of `status.output` in bytes (`MAX_OUTPUT_BYTES`, default 262144). */
  readonly maxOutputBytes: number;
  /**
   * Backstop re-check period while a run is in progress or queued (the poll interval, ~15 s). Job and Agent
   * watches normally wake the reconcile earlier.
   */
  readonly requeueMs: number;
  /** Batch execution settings of this controller. */
  readonly batch: BatchOptions;
  /** `execution: realtime` runs are admitted (`REALTIME_ENABLED=true`); otherwise they fail with a clear reason. */
  readonly realtime: { readonly enabled: boolean };
  /** `execution: server` Agents are served (`SERVER_ENABLED=true`); otherwise they fail with a clear reason. */
  readonly server?: { readonly enabled: boolean } | undefined;
  /** The controller's own namespace: its pods are admitted to realtime run pods by the run's NetworkPolicy. */
  readonly controllerNamespace?: string | undefined;
  /**
   * Tracing (issue 10 §5), when the controller exports spans: runs get `status.traceID`, their pods the trace
   * context and `runTracesUrl` (the OTLP/HTTP traces URL pods export to), which their NetworkPolicy admits.
   */
  readonly tracing?: { readonly runTracesUrl: string } | undefined;
}

/** How this controller runs `execution: batch` (controller env `BATCH_ENABLED`, `BATCH_POLL_SECONDS`). */
export interface BatchOptions {
  readonly enabled: boolean;
  /** Poll period of one in-flight batch (ms); also the re-check period of a submission that cannot be confirmed. */
  readonly pollMs: number;
}

/** Whether the vendor key of a Pending batch run can be read (the shell reads `agent-secrets`). */
export type CredentialCheck =
  | { readonly kind: 'unknown' }
  | { readonly kind: 'present' }
  /** The Secret or the key is missing; `message` names the key, never a value. */
  | { readonly kind: 'missing'; readonly message: string };

/** What is known about the vendor submission of a batch run that has its record but no batchId. */
export type SubmissionObservation =
  /** Nothing known: after a restart or a create whose answer was lost. Decide asks for `needs: 'batchLookup'`. */
  | { readonly kind: 'unknown' }
  /** This controller knows no create is outstanding (it wrote the record, or the last create was refused). */
  | { readonly kind: 'none' }
  /** The vendor was searched. */
  | { readonly kind: 'lookedUp'; readonly result: FindOutcome }
  /** The create just succeeded. */
  | { readonly kind: 'submitted'; readonly id: string }
  /** The create was refused for good (4xx other than 429): the vendor's message. */
  | { readonly kind: 'rejected'; readonly message: string };

/** How the last cleanup attempt of this reconcile went (absent: none made yet). */
export type CleanupObservation =
  | { readonly kind: 'pending'; readonly detail: string }
  | { readonly kind: 'failed'; readonly message: string };

/** The pod log read for a finished run (`container=agent`, tail). */
export type LogRead =
  | { readonly kind: 'read'; readonly text: string | Uint8Array }
  /**
   * The log could not be read (400 from the kubelet, pod deleted between reads, timeout…); `detail` says why.
   * `transient`: asking again may well succeed (network, timeout, 429, 5xx).
   */
  | { readonly kind: 'unavailable'; readonly detail: string; readonly transient?: boolean };

/**
 * What the shell found about a finished run's pod. The shell gathers it only once the Job has a verdict
 * (`isJobFinished(job)`), picks the pod with `pickRunPod(pods)` and reads that pod's agent container log.
 */
export type RunEvidence =
  /** Not gathered (yet). For a finished Job, decide answers `needs: 'runEvidence'`. */
  | { readonly kind: 'notGathered' }
  /** No pod matches `job-name=<job>`: it was garbage-collected. */
  | { readonly kind: 'podGone' }
  /**
   * The pod lookup itself failed; `detail` says why. `transient`: asking again may well succeed. The run still ends,
   * with no output, once asking again is no use.
   */
  | { readonly kind: 'unavailable'; readonly detail: string; readonly transient?: boolean }
  | { readonly kind: 'pod'; readonly pod: Pod; readonly log: LogRead };

/** One `FailedCreate` Event of the Job controller: the run's pod could not be created. */
export interface PodCreateFailure {
  /** The Job the Event is about (an Event of an earlier Job of the same name is ignored). */
  readonly jobUid: string;
  readonly message: string;
  /** When it last happened (RFC 3339), if the Event says. */
  readonly lastSeen?: string | undefined;
}

/**
 * What the shell knows about a Running run whose Job has not finished (issue 13 §4): the Job's Pending pods (label
 * `job-name`) and the Job controller's `FailedCreate` Events about it, from watches (or the pods listed live).
 */
export interface StartObservation {
  readonly pods: readonly Pod[];
  readonly createFailures: readonly PodCreateFailure[];
  /**
   * The pods were just listed from the API server, not read from the cache: a run fails of a start problem only on
   * such a reading (decide asks for it with `needs: 'livePods'`), so a pod that started a moment ago is never missed.
   */
  readonly live?: boolean | undefined;
}

/** What is known about the run's Job (named `status.jobName`, else `jobNameFor(agent name)`). */
export type JobObservation =
  /** Not read. Fine for a Pending Agent (the create tells); for a Running one decide answers `needs: 'job'`. */
  | { readonly kind: 'unknown' }
  /** Confirmed absent (404, or not in a synced Job cache). */
  | { readonly kind: 'absent' }
  | { readonly kind: 'present'; readonly job: Job; readonly evidence: RunEvidence };

/**
 * The observed world of one Agent: everything `decide` reads. Built by the shell from caches and a few live reads.
 *
 * `station` and `definition` are `null` when the API server answered 404. A lookup that failed otherwise must
 * not produce a snapshot at all (the reconcile errors and is retried), because a `null` fails a Pending Agent
 * permanently. `definition` is read only for Pending Agents; `station` for Pending Agents and for pruning after a
 * terminal transition.
 */
export interface Snapshot {
  readonly agent: Agent;
  readonly station: Station | null;
  readonly definition: AgentDefinition | null;
  readonly job: JobObservation;
  /**
   * The Agent's Station as it sees it (holders of run slots, queued Agents ahead of it, finished runs), from the
   * shell's `StationBook`, read in the same synchronous step as `decide` runs
   * (docs/design/reference-behaviour.md#d-l-admission-by-construction).
   */
  readonly queue: StationQueueView<Agent>;
  /**
   * Set by the executor after the API server refused to create the Job (422 Invalid or 400 BadRequest) with the
   * Status message; decide then fails the Agent (docs/design/reference-behaviour.md#d-b-unbuildable-job-fails).
   */
  readonly jobRejected?: { readonly message: string } | undefined;
  /** Set by the executor when the API server refused the run's ServiceAccount (403): the Agent fails. */
  readonly serviceAccountRefused?: { readonly message: string } | undefined;
  /** Set by the executor when the API server refused the run's input ConfigMap (403, 422, 400): the Agent fails. */
  readonly inputRefused?: { readonly message: string } | undefined;
  /**
   * Set by the executor when a binding of the run could not be created (403, 422, or a name taken by an object
   * that is not this run's): `message` names the binding and the API server's answer. The Agent fails.
   */
  readonly bindingRefused?: { readonly message: string } | undefined;
  /**
   * Objects found under the names of run objects this reconcile tried to create (a 409, then a GET), in the order
   * they were found; several for one key when a replaced object was found again.
   */
  readonly found?: readonly FoundObject[] | undefined;
  /**
   * Set when the Station or the AgentDefinition exists but cannot be parsed (`message` says why); `station` /
   * `definition` are then `null`. A Pending Agent fails with the reason instead of waiting forever
   * (docs/design/reference-behaviour.md#d-b-unbuildable-job-fails).
   */
  readonly invalidReference?:
    | { readonly kind: 'Station' | 'AgentDefinition'; readonly name: string; readonly message: string }
    | undefined;
  /** Batch runs: whether the vendor key exists (Pending only). */
  readonly credentials?: CredentialCheck | undefined;
  /** Batch runs with a record and no batchId, and cleanups of such runs. */
  readonly submission?: SubmissionObservation | undefined;
  /** Batch runs with a batchId: the poller's latest observation (undefined: not polled yet). */
  readonly batchState?: BatchState | undefined;
  /** Set after a cleanup attempt in this reconcile did not finish. */
  readonly cleanup?: CleanupObservation | undefined;
  /** After a failed cleanup: no new attempt before this time (the shell's backoff). */
  readonly cleanupNotBefore?: Date | undefined;
  /**
   * Where the API server listens (Service default/kubernetes), as the shell last read it; undefined when unknown.
   * A run whose agent holds a token gets an egress rule to it.
   */
  readonly apiServer?: ApiServerEndpoints | undefined;
  /**
   * The EndpointSlices of the Services a Pending run's definition depends on (issue 10 §4), from the shell's watch;
   * `unavailable` when the controller cannot watch EndpointSlices. Absent for runs without dependencies.
   */
  readonly endpoints?: EndpointObservation | undefined;
  /** The price table of cost estimates (shipped prices with the agent-prices ConfigMap on top; default shipped). */
  readonly prices?: PriceTable | undefined;
  /**
   * The memory of a Pending run whose definition has `spec.memory`; undefined: not read yet (decide answers
   * `needs: 'memory'` before it builds the Job).
   */
  readonly memory?: MemoryObservation | undefined;
  /**
   * The memory ConfigMap of a run that Succeeded with a memory block to save; undefined: not read yet (decide answers
   * `needs: 'memorySave'` before the terminal transition).
   */
  readonly memorySave?: MemorySaveObservation | undefined;
  /**
   * Running runs whose Job has not finished: its pods and pod-creation failures, from the shell's watches
   * (undefined: not watched; the run then waits for its Job's verdict as before).
   */
  readonly start?: StartObservation | undefined;
  /** A server's objects (issue 12), read live when decide asks (`needs: 'server'`). */
  readonly server?: ServerObservation | undefined;
  /** A server's API-key Secret created or found taken by the executor and not yet on the Agent's status. */
  readonly serverKey?: ServerKeyObservation | undefined;
  /** Set by the executor when the API server refused a server object (422/400): `message` names it and says why. */
  readonly serverRejected?: { readonly message: string } | undefined;
  /** The AgentPolicy of the Agent's Station (Pending only; undefined reads as none). */
  readonly policy?: PolicyObservation | undefined;
  readonly options: ReconcileOptions;
}
