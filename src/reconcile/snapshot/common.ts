// The common part of the snapshot (issue 27 §3): what every execution mode reads about one Agent, whatever its
// recipe says: the Agent, its references, the Station's book view, the policy, the run's Job, the answers of the
// executor about the run objects the shared start step creates, memory, the price table of the terminal transition
// (every mode's results carry a cost estimate), and the controller's settings. Each mode adds its own observations
// (./job.ts, ./batch.ts, ./server.ts); ../snapshot.ts is the whole.

import type { Agent, AgentDefinition, ConfigMap, Job, Pod, SpendLedger, Station } from '../../api/index.ts';
import type { ApiServerEndpoints, GatewayTarget } from '../../jobs/index.ts';
import type { SpendItem } from '../budget/window.ts';
import type { PolicyObservation } from '../policy/check.ts';
import type { PriceTable } from '../results/prices.ts';
import type { StationQueueView } from '../station/book.ts';

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

/**
 * The spend of a run's namespace (issue 28 §4), from the shell's caches: the ledger ConfigMap `agent-spend` (empty
 * when there is none; `unreadable` says why one did not parse: it is then started again on the next write) and what
 * each existing Agent of the namespace has spent (its status, or the gateway's annotation when that is ahead).
 */
export interface SpendObservation {
  readonly ledger: SpendLedger;
  readonly unreadable?: string | undefined;
  /** The uids of every Agent of the namespace (their spend is counted from them, not from the ledger). */
  readonly live: ReadonlySet<string>;
  /** The spend of the Agents of the namespace that spent anything, by uid. */
  readonly runs: ReadonlyMap<string, SpendItem>;
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
  /**
   * The session store (issue 29, controller env `AGENT_SESSION_STORE_URL`): realtime sessions are saved after each
   * turn, suspended when idle and restored. Absent or disabled: runs asking for `idleTimeoutSeconds` fail at Pending.
   */
  readonly sessions?: { readonly enabled: boolean } | undefined;
  /** `execution: server` Agents are served (`SERVER_ENABLED=true`); otherwise they fail with a clear reason. */
  readonly server?: { readonly enabled: boolean } | undefined;
  /** The controller's own namespace: its pods are admitted to realtime run pods by the run's NetworkPolicy. */
  readonly controllerNamespace?: string | undefined;
  /**
   * Tracing (issue 10 §5), when the controller exports spans: runs get `status.traceID`, their pods the trace
   * context and `runTracesUrl` (the OTLP/HTTP traces URL pods export to), which their NetworkPolicy admits.
   */
  readonly tracing?: { readonly runTracesUrl: string } | undefined;
  /**
   * The model gateway (issue 28, controller env `AGENT_GATEWAY_URL`): runs get a gateway credential instead of
   * vendor keys, and their grant on status.
   */
  readonly gateway?: GatewayTarget | undefined;
  /**
   * The length of a budget "hour" in ms (controller env `AGENT_BUDGET_HOUR_SECONDS`, a test knob; default one hour):
   * a day is 24 of them, a month 720.
   */
  readonly budgetHourMs?: number | undefined;
}

/** How this controller runs `execution: batch` (controller env `BATCH_ENABLED`, `BATCH_POLL_SECONDS`). */
export interface BatchOptions {
  readonly enabled: boolean;
  /** Poll period of one in-flight batch (ms); also the re-check period of a submission that cannot be confirmed. */
  readonly pollMs: number;
}

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

/** What is known about the run's Job (named `status.jobName`, else `jobNameFor(agent name)`). */
export type JobObservation =
  /** Not read. Fine for a Pending Agent (the create tells); for a Running one decide answers `needs: 'job'`. */
  | { readonly kind: 'unknown' }
  /** Confirmed absent (404, or not in a synced Job cache). */
  | { readonly kind: 'absent' }
  | { readonly kind: 'present'; readonly job: Job; readonly evidence: RunEvidence };

/**
 * What every execution mode reads about one Agent (issue 27 §3). Built by the shell from caches and a few live reads.
 *
 * `station` and `definition` are `null` when the API server answered 404. A lookup that failed otherwise must
 * not produce a snapshot at all (the reconcile errors and is retried), because a `null` fails a Pending Agent
 * permanently. `definition` is read only for Pending Agents; `station` for Pending Agents and for pruning after a
 * terminal transition.
 *
 * The run's Job (`job`) is common, not the job mode's: it is read before the mode is known (the shared start step
 * adopts a Job of the run's name under the policy it started with, whatever the recipe says now), and a batch run's
 * fallback and the cleanup of every run with bindings delete it.
 */
export interface CommonSnapshot {
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
  /** The price table of cost estimates (shipped prices with the agent-prices ConfigMap on top; default shipped). */
  readonly prices?: PriceTable | undefined;
  /** The namespace's spend, read when decide asks (`needs: 'spend'`): a run under windowed budgets. */
  readonly spend?: SpendObservation | undefined;
  /**
   * The vendor keys the model gateway reports saturated (src/shared/key-saturation.ts): entry → until (ms). Pending
   * runs behind the gateway only; undefined: not known (nothing is held).
   */
  readonly keySaturation?: ReadonlyMap<string, number> | undefined;
  /**
   * Set by the executor when deleting the Agent's stored session failed (issue 29 §5), with why: decide counts the
   * attempt, and names what was left after the last.
   */
  readonly sessionCleanup?: { readonly kind: 'failed'; readonly message: string } | undefined;
  /** The AgentPolicy of the Agent's Station (Pending only; undefined reads as none). */
  readonly policy?: PolicyObservation | undefined;
  readonly options: ReconcileOptions;
}
