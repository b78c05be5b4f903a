// What every handler of the executor shares: its dependencies, the outcome of a decision, the contract helpers that
// turn an answer into an outcome through the data of src/reconcile/executor-contract.ts.

import { API_VERSION } from '../../api/index.ts';
import {
  describeKubeError,
  type EventNote,
  type EventRecorder,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isInvalid,
  isNotFound,
  type KubeError,
  type Transport,
} from '../../kube/index.ts';
import type { ControllerMetrics } from '../../metrics/index.ts';
import { type Answer, type Observation, type Outcome, outcomeOf } from '../../reconcile/executor-contract.ts';
import type { Action, AgentRef } from '../../reconcile/index.ts';
import type { FoundObject, ServerKeyObservation } from '../../reconcile/snapshot.ts';
import type { Logger } from '../../shared/log.ts';
import type { BatchRuntime } from '../batch/runtime.ts';
import type { SinkDispatcher } from '../batch/sinks.ts';
import type { GatewayCredentials } from '../gateway-credentials.ts';
import type { PromptTokens } from '../realtime/tokens.ts';
import type { SessionStatePort } from '../sessions/port.ts';

/** Field manager of every write the controller makes. */
export const FIELD_MANAGER = 'agent-controller';

export interface ExecuteDeps {
  /** Told of each action once it ran, and whether it was applied (the run's spans); must not throw. */
  readonly onAction?: (action: Action, startMs: number, endMs: number, result: ActionResult) => void;
  readonly transport: Transport;
  readonly events: EventRecorder;
  readonly metrics: ControllerMetrics;
  readonly logger: Logger;
  readonly timeoutMs?: number;
  /**
   * Agents this controller deleted (or is deleting) whose DELETED event has not arrived. A delete claims its uid
   * here before the request, so concurrent reconciles of one Station never delete the same Agent twice; a refused
   * delete gives the claim back.
   */
  readonly tombstones?: Tombstones;
  /**
   * When true, Events are recorded in the background (the recorder never throws) instead of holding up the
   * decision's remaining writes. Default false.
   */
  readonly backgroundEvents?: boolean;
  /**
   * Asked right before a Job create is sent: false drops it and the rest of the decision (outcome `notLeading`),
   * e.g. once leadership was lost. Called once per create actually attempted.
   */
  readonly beforeCreateJob?: () => boolean;
  /**
   * Asked before every action but metrics: false once this replica may no longer write (it stopped leading, or its
   * Lease's renew deadline passed while it was paused or the API server was away). The decision then stops as
   * `notLeading`: the key is looked at again, by this replica if its renewal is confirmed, else by the next leader.
   */
  readonly mayWrite?: () => boolean;
  /** Called with the Agent as the API server returned it after a successful status patch (read your writes). */
  readonly onAgentWritten?: (agent: unknown) => void;
  /**
   * When true, history-pruning deletes run in the background (claimed first, logged on failure, retried by the
   * next sweep) instead of holding up the worker. Default false.
   */
  readonly backgroundPrunes?: boolean;
  /** Vendors, credentials and protocol state of batch runs; without it batch actions fail (retry). */
  readonly batch?: BatchRuntime;
  /** Delivers `notifySinks` in the background. */
  readonly sinks?: SinkDispatcher;
  /** Realtime runs: derives each run's prompt token (absent while the controller key is not loaded). */
  readonly promptTokens?: PromptTokens | undefined;
  /** The session store (issue 29): stored sessions deleted; absent on a controller without one. */
  readonly sessions?: SessionStatePort | undefined;
  /** Runs behind the model gateway: mints each run's credential (absent while the gateway key is not loaded). */
  readonly gatewayCredentials?: GatewayCredentials | undefined;
  /**
   * What each server's last API-key Secret create met (by Agent uid), for the snapshot to read until the Agent's
   * status says it: the executor never records the key itself (decide does, issue 27 §2). Without it a created key
   * is never recorded (and never used).
   */
  readonly serverKeys?: ServerKeys | undefined;
}

/** The observations of server key creates, by Agent uid (see `ServerKeyObservation`). */
export interface ServerKeys {
  get(agentUid: string): ServerKeyObservation | undefined;
  set(agentUid: string, observation: ServerKeyObservation): void;
  delete(agentUid: string): void;
}

/** At most this many observations are kept (an Agent deleted before its key was recorded leaves one behind). */
const MAX_SERVER_KEYS = 10_000;

export function createServerKeys(): ServerKeys {
  const byAgent = new Map<string, ServerKeyObservation>();
  return {
    get: (uid) => byAgent.get(uid),
    set(uid, observation) {
      if (byAgent.size >= MAX_SERVER_KEYS && !byAgent.has(uid)) byAgent.clear();
      byAgent.set(uid, observation);
    },
    delete: (uid) => void byAgent.delete(uid),
  };
}

/**
 * The server key observation the snapshot of `agent` reads: undefined once its status says it (the observation is
 * then forgotten): a created Secret's uid recorded, or, after a taken name, no uid recorded.
 */
export function serverKeyOf(
  keys: ServerKeys | undefined,
  agentUid: string,
  recorded: string | undefined,
): ServerKeyObservation | undefined {
  const key = keys?.get(agentUid);
  if (key === undefined) return undefined;
  const said = key.kind === 'created' ? recorded === key.uid : recorded === undefined;
  if (!said) return key;
  keys?.delete(agentUid);
  return undefined;
}

/**
 * Uids of Agents deleted by this controller whose DELETED watch event has not arrived yet. The cache still holds
 * them for a moment; without this a second prune would delete them again (a wasted call per Agent and per sweep).
 * Entries expire after `ttlMs` in case the event is missed (a re-list then drops the object anyway).
 */
export interface Tombstones {
  add(uid: string): void;
  remove(uid: string): void;
  has(uid: string): boolean;
}

export function createTombstones(now: () => number, ttlMs = 60_000): Tombstones {
  const until = new Map<string, number>();
  return {
    add: (uid) => void until.set(uid, now() + ttlMs),
    remove: (uid) => void until.delete(uid),
    has(uid) {
      const t = until.get(uid);
      if (t === undefined) return false;
      if (t > now()) return true;
      until.delete(uid);
      return false;
    },
  };
}

/** How executing one decision ended (see the executor contract, src/reconcile/executor-contract.ts). */
export type ExecuteOutcome =
  | { readonly kind: 'done' }
  /** A precondition failed (409): the rest was dropped; the next reconcile recomputes from fresh state. */
  | { readonly kind: 'superseded'; readonly what: string }
  /**
   * This replica may not write now (it stopped leading, or its Lease's renew deadline passed and the renewal is
   * not yet confirmed): the rest was dropped. The key must be looked at again: a replica whose renewal then
   * succeeds is still leading, in the same term, and nothing else would wake it.
   */
  | { readonly kind: 'notLeading'; readonly what: string }
  /** The Job already exists: read it and decide again. */
  | { readonly kind: 'jobExists' }
  /** A binding of the run could not be created: decide again with `bindingRefused`. */
  | { readonly kind: 'bindingRefused'; readonly message: string }
  /** The API server refused the run's ServiceAccount (403): decide again with `serviceAccountRefused`. */
  | { readonly kind: 'serviceAccountRefused'; readonly message: string }
  /** The API server refused the run's input ConfigMap: decide again with `inputRefused`. */
  | { readonly kind: 'inputRefused'; readonly message: string }
  /** A run object's name was taken: decide again with the object found appended to `found`. */
  | { readonly kind: 'found'; readonly found: FoundObject }
  /** The API server refused the Job (422/400): decide again with `jobRejected`. */
  | { readonly kind: 'jobRejected'; readonly message: string }
  /** The API server refused a server object (422/400): decide again with `serverRejected`. */
  | { readonly kind: 'serverRejected'; readonly message: string }
  /** Any other failure: the reconcile is retried with backoff. */
  | { readonly kind: 'error'; readonly error: KubeError; readonly action: Action['kind'] }
  /** A vendor or credential failure to retry later (`afterMs` when the vendor said how long to wait). */
  | { readonly kind: 'retryLater'; readonly reason: string; readonly afterMs?: number }
  /** The vendor accepted the batch: decide again with `submission: {kind: 'submitted', id}`. */
  | { readonly kind: 'batchSubmitted'; readonly id: string }
  /** The vendor refused the batch for good: decide again with `submission: {kind: 'rejected', message}`. */
  | { readonly kind: 'batchRejected'; readonly message: string }
  /** A cleanup step was taken and must finish at the vendor first. */
  | { readonly kind: 'cleanupPending'; readonly detail: string }
  /** A cleanup attempt failed: decide again with `cleanup: {kind: 'failed', message}`. */
  | { readonly kind: 'cleanupFailed'; readonly message: string }
  /** The memory ConfigMap changed since it was read: read it again and decide again (`memorySave`). */
  | { readonly kind: 'memoryChanged'; readonly message: string }
  /** The memory write was refused (403): decide again with it (`memorySave`). */
  | { readonly kind: 'memoryForbidden'; readonly message: string }
  /** The memory write failed otherwise: decide again with it (`memorySave`). */
  | { readonly kind: 'memoryFailed'; readonly message: string }
  /** Deleting a stored session failed: decide again with `sessionCleanup: {kind: 'failed', message}` (issue 29). */
  | { readonly kind: 'sessionCleanupFailed'; readonly message: string };

/**
 * What became of one action: `applied`, `notApplied` (it stopped the decision without a failure: a precondition
 * failed, the Job already existed, this replica no longer leads), or `failed` with why.
 */
export type ActionResult =
  | { readonly kind: 'applied' }
  | { readonly kind: 'notApplied' }
  | { readonly kind: 'failed'; readonly error: string };

/** The action of kind `K`. */
export type ActionOf<K extends Action['kind']> = Extract<Action, { readonly kind: K }>;

/** Performs one action: undefined to go on with the next, an outcome to stop the decision there. */
export type Handler<K extends Action['kind']> = (
  action: ActionOf<K>,
  deps: ExecuteDeps,
) => Promise<ExecuteOutcome | undefined>;

/** One handler per action kind: a kind without one (or with two) does not compile. */
export type HandlerTable = { readonly [K in Action['kind']]: Handler<K> };

/** The options of every API write. */
export const writeOptions = (deps: ExecuteDeps) => ({
  timeoutMs: deps.timeoutMs,
  fieldManager: FIELD_MANAGER,
});

/** The answer class of an API error (see `Answer` in the contract). */
export function answerOf(e: KubeError): Answer {
  if (isAlreadyExists(e)) return 'alreadyExists';
  if (isConflict(e)) return 'conflict';
  if (isNotFound(e)) return 'notFound';
  if (isForbidden(e)) return 'forbidden';
  if (isInvalid(e)) return 'invalid';
  if (e.kind === 'api' && e.code === 400) return 'badRequest';
  return 'error';
}

/** What goes into the outcome an answer stands for. */
export interface Detail {
  /** The API error answered (`retry` reports it; refusals default their message to it). */
  readonly error?: KubeError;
  /** The refusal's or the retry's message. */
  readonly message?: string;
  /** What was superseded. */
  readonly what?: string;
  /** The vendor's batch id. */
  readonly id?: string;
  /** How long the vendor asked to wait. */
  readonly afterMs?: number;
  /** The variant of the action the contract distinguishes (`deleteAgent`'s purpose). */
  readonly variant?: string;
  /** The object found under a taken name. */
  readonly found?: FoundObject;
}

const messageOf = (d: Detail): string =>
  d.message ?? (d.error === undefined ? 'no message' : describeKubeError(d.error));

/** The outcome `decide` is called again with after an action stopped with `observation`. */
function decideAgain(observation: Observation, d: Detail): ExecuteOutcome {
  switch (observation) {
    case 'job':
      return { kind: 'jobExists' };
    case 'submission:submitted':
      return { kind: 'batchSubmitted', id: d.id ?? '' };
    case 'submission:rejected':
      return { kind: 'batchRejected', message: messageOf(d) };
    case 'cleanup:pending':
      return { kind: 'cleanupPending', detail: messageOf(d) };
    case 'cleanup:failed':
      return { kind: 'cleanupFailed', message: messageOf(d) };
    case 'sessionCleanup:failed':
      return { kind: 'sessionCleanupFailed', message: messageOf(d) };
    case 'found':
      return d.found !== undefined
        ? { kind: 'found', found: d.found }
        : {
            kind: 'error',
            error: { kind: 'decode', message: 'a taken name without the object found' },
            action: 'createRunInput',
          };
    default:
      return { kind: observation, message: messageOf(d) };
  }
}

/** The outcome of the contract's `outcome` (undefined: go on with the next action). */
export function toOutcome(kind: Action['kind'], outcome: Outcome, d: Detail): ExecuteOutcome | undefined {
  switch (outcome) {
    case 'continue':
      return undefined;
    case 'superseded':
      return { kind: 'superseded', what: d.what ?? kind };
    case 'retry':
      return {
        kind: 'error',
        error: d.error ?? { kind: 'decode', message: messageOf(d) },
        action: kind,
      };
    case 'retryLater':
      return {
        kind: 'retryLater',
        reason: messageOf(d),
        ...(d.afterMs !== undefined ? { afterMs: d.afterMs } : {}),
      };
    default:
      return decideAgain(outcome.slice('decideAgain:'.length) as Observation, d);
  }
}

/** What the contract says `answer` means for `action`, as the outcome of its handler. */
export function settle(action: Action, answer: Answer, d: Detail = {}): ExecuteOutcome | undefined {
  return toOutcome(action.kind, outcomeOf(action.kind, answer, d.variant), d);
}

/** `settle` for an API answer: `ok` when it succeeded, else the class of its error. */
export function settleApi(
  action: Action,
  r: { readonly ok: true } | { readonly ok: false; readonly error: KubeError },
  d: Detail = {},
): ExecuteOutcome | undefined {
  return r.ok ? settle(action, 'ok', d) : settle(action, answerOf(r.error), { error: r.error, ...d });
}

/** The contract outcome an executor outcome stands for (undefined: `continue`); for tests and spans. */
export function outcomeClass(o: ExecuteOutcome | undefined): Outcome | 'notLeading' {
  if (o === undefined) return 'continue';
  switch (o.kind) {
    case 'done':
      return 'continue';
    case 'superseded':
      return 'superseded';
    case 'notLeading':
      return 'notLeading';
    case 'error':
      return 'retry';
    case 'retryLater':
      return 'retryLater';
    case 'jobExists':
      return 'decideAgain:job';
    case 'batchSubmitted':
      return 'decideAgain:submission:submitted';
    case 'batchRejected':
      return 'decideAgain:submission:rejected';
    case 'cleanupPending':
      return 'decideAgain:cleanup:pending';
    case 'cleanupFailed':
      return 'decideAgain:cleanup:failed';
    case 'sessionCleanupFailed':
      return 'decideAgain:sessionCleanup:failed';
    default:
      return `decideAgain:${o.kind}`;
  }
}

/** The Agent as the involved object of its Events. */
export const involved = (ref: AgentRef) => ({
  apiVersion: API_VERSION,
  kind: 'Agent',
  metadata: { name: ref.name, namespace: ref.namespace, uid: ref.uid },
});

/** Records one Event on the Agent; best effort (a failure is logged), in the background when so configured. */
export async function recordNote(deps: ExecuteDeps, ref: AgentRef, note: EventNote): Promise<void> {
  const recording = Promise.resolve()
    .then(() => deps.events.record(involved(ref), note))
    .catch((error: unknown) => {
      deps.logger.warn('Event not recorded', { reason: note.reason, error: String(error) });
    });
  if (deps.backgroundEvents !== true) await recording;
}
