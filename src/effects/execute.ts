import { API_VERSION } from '../api/index.ts';
import {
  createObject,
  deleteObject,
  describeKubeError,
  type EventNote,
  type EventRecorder,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isInvalid,
  isNotFound,
  JOBS,
  jsonPatch,
  type KubeError,
  KubeObjectSchema,
  NETWORK_POLICIES,
  patchStatus,
  SECRETS,
  SERVICE_ACCOUNTS,
  type Transport,
} from '../kube/index.ts';
import type { ControllerMetrics } from '../metrics/index.ts';
import { type Action, type AgentRef, type MetricObservation, REASON } from '../reconcile/index.ts';
import type { Logger } from '../shared/log.ts';
import { assertNever, err, ok, type Result } from '../shared/result.ts';
import { describeBatchError } from '../vendors/batch/http.ts';
import { type BatchRuntime, vendorCall } from './batch/runtime.ts';
import type { SinkDispatcher } from './batch/sinks.ts';
import { saveMemory } from './memory.ts';
import { type PromptTokens, promptTokenSecret } from './realtime/tokens.ts';
import { AGENTS } from './resources.ts';
import { createRunBinding, deleteRunBindings } from './run-bindings.ts';
import { createRunInput } from './run-input.ts';
import { apiKeySecret, deleteServerObject, newApiKey, writeServerObject } from './server.ts';

/** Field manager of every write the controller makes. */
export const FIELD_MANAGER = 'agent-controller';

/**
 * API connections on which a NetworkPolicy create was already refused with 403: the warning is logged once per
 * controller (per transport), later refusals only at debug level.
 */
const networkPolicyForbidden = new WeakSet<Transport>();

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

/** How executing one decision ended (see the executor contract in src/reconcile/actions.ts). */
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
  /** The API server refused the run's input ConfigMap (or its name is taken): decide again with `inputRefused`. */
  | { readonly kind: 'inputRefused'; readonly message: string }
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
  | { readonly kind: 'cleanupFailed'; readonly message: string };

const involved = (ref: AgentRef) => ({
  apiVersion: API_VERSION,
  kind: 'Agent',
  metadata: { name: ref.name, namespace: ref.namespace, uid: ref.uid },
});

/**
 * What became of one action: `applied`, `notApplied` (it stopped the decision without a failure: a precondition
 * failed, the Job already existed, this replica no longer leads), or `failed` with why.
 */
export type ActionResult =
  | { readonly kind: 'applied' }
  | { readonly kind: 'notApplied' }
  | { readonly kind: 'failed'; readonly error: string };

/**
 * What reports a status change rather than decides anything: once the decision's status patch landed (under its
 * resourceVersion precondition, so the transition is this decision's), these run even if this replica may no longer
 * write. Nobody else would: another leader sees the Agent already changed. Writes to Agents, Jobs and the rest stay
 * fenced; whatever of them is dropped, the next reconcile or sweep does again.
 */
const REPORTS_A_PATCH: ReadonlySet<Action['kind']> = new Set(['recordEvent', 'notifySinks', 'saveMemory']);

/** Performs the actions of one decision in order; the only code that writes on behalf of the reconcile core. */
export async function executeActions(actions: readonly Action[], deps: ExecuteDeps): Promise<ExecuteOutcome> {
  let patched = false;
  for (const action of actions) {
    const fenced = action.kind !== 'observeMetric' && !(patched && REPORTS_A_PATCH.has(action.kind));
    if (fenced && deps.mayWrite !== undefined && !deps.mayWrite())
      return { kind: 'notLeading', what: 'leadership (this replica may no longer write)' };
    const started = Date.now();
    const outcome = await executeAction(action, deps);
    if (outcome === undefined && action.kind === 'patchStatus') patched = true;
    if (deps.onAction !== undefined) {
      const error = outcome === undefined ? undefined : outcomeError(outcome);
      const result: ActionResult =
        outcome === undefined
          ? { kind: 'applied' }
          : error !== undefined
            ? { kind: 'failed', error }
            : { kind: 'notApplied' };
      try {
        deps.onAction(action, started, Date.now(), result);
      } catch (e) {
        deps.logger.warn('Recording a span failed', { error: String(e) });
      }
    }
    if (outcome !== undefined) return outcome;
  }
  return { kind: 'done' };
}

/** Why an outcome that stops a decision is a failure of its action, or undefined when it is not one. */
function outcomeError(outcome: ExecuteOutcome): string | undefined {
  switch (outcome.kind) {
    case 'error':
      return describeKubeError(outcome.error);
    case 'bindingRefused':
    case 'serviceAccountRefused':
    case 'inputRefused':
    case 'jobRejected':
    case 'serverRejected':
    case 'batchRejected':
    case 'cleanupFailed':
      return outcome.message;
    case 'retryLater':
      return outcome.reason;
    default:
      return undefined;
  }
}

/** Performs one action: undefined to go on with the next, an outcome to stop the decision there. */
async function executeAction(action: Action, deps: ExecuteDeps): Promise<ExecuteOutcome | undefined> {
  const opts = { timeoutMs: deps.timeoutMs, fieldManager: FIELD_MANAGER };
  switch (action.kind) {
    case 'createServiceAccount': {
      const { metadata } = action.serviceAccount;
      const r = await createObject(
        deps.transport,
        SERVICE_ACCOUNTS,
        metadata.namespace,
        { ...action.serviceAccount },
        KubeObjectSchema,
        opts,
      );
      if (r.ok) {
        deps.logger.info('Created run ServiceAccount', {
          namespace: metadata.namespace,
          serviceAccount: metadata.name,
        });
        break;
      }
      if (isAlreadyExists(r.error)) break;
      if (isForbidden(r.error)) return { kind: 'serviceAccountRefused', message: describeKubeError(r.error) };
      return { kind: 'error', error: r.error, action: action.kind };
    }
    case 'createRunBinding': {
      const { binding } = action;
      const r = await createRunBinding(deps.transport, binding, opts);
      const where = {
        kind: binding.kind,
        binding: binding.metadata.name,
        clusterRole: binding.roleRef.name,
      };
      if (r.kind === 'created') {
        deps.logger.info('Created run binding', where);
        break;
      }
      if (r.kind === 'exists') break;
      if (r.kind === 'refused') return { kind: 'bindingRefused', message: r.message };
      if (r.kind === 'stale') return { kind: 'retryLater', reason: r.message };
      return { kind: 'error', error: r.error, action: action.kind };
    }
    case 'deleteRunBindings': {
      const { ref } = action;
      const r = await deleteRunBindings(deps.transport, ref.namespace, ref.uid, deps.timeoutMs);
      if (!r.ok) return { kind: 'error', error: r.error, action: action.kind };
      const where = { namespace: ref.namespace, agent: ref.name };
      for (const b of r.value.deleted) {
        deps.logger.info('Deleted run binding', { ...where, kind: b.kind, binding: b.name });
      }
      if (r.value.unverified.length > 0) {
        const message = `Run bindings may be left behind: ${r.value.unverified.join('; ')}; grant the controller deploy/components/run-rbac`;
        deps.logger.warn('Run bindings not verified', { ...where, detail: message });
        await Promise.resolve()
          .then(() =>
            deps.events.record(involved(ref), {
              type: 'Warning',
              reason: 'RunBindingsUnverified',
              message,
            }),
          )
          .catch((error: unknown) => deps.logger.warn('Event not recorded', { error: String(error) }));
      }
      break;
    }
    case 'deleteJob': {
      const r = await deleteObject(
        deps.transport,
        JOBS,
        { namespace: action.namespace, name: action.name },
        { propagationPolicy: 'Foreground', uid: action.uid, timeoutMs: deps.timeoutMs },
      );
      if (!r.ok && !isNotFound(r.error) && !isConflict(r.error))
        return { kind: 'error', error: r.error, action: action.kind };
      if (r.ok) deps.logger.info('Deleted Job', { namespace: action.namespace, job: action.name });
      break;
    }
    case 'createNetworkPolicy': {
      const { metadata } = action.policy;
      const where = { namespace: metadata.namespace, networkPolicy: metadata.name };
      const r = await createObject(
        deps.transport,
        NETWORK_POLICIES,
        metadata.namespace,
        { ...action.policy },
        KubeObjectSchema,
        opts,
      );
      if (r.ok) {
        deps.logger.info('Created run NetworkPolicy', where);
        break;
      }
      if (isAlreadyExists(r.error)) break;
      if (isForbidden(r.error)) {
        // Without the grant the run still starts, under the static egress policy only.
        if (networkPolicyForbidden.has(deps.transport)) {
          deps.logger.debug('Run NetworkPolicy not created: forbidden', where);
        } else {
          networkPolicyForbidden.add(deps.transport);
          deps.logger.warn(
            'Run NetworkPolicies cannot be created (403 Forbidden): runs start without their own policy, so where a default-deny policy selects run pods (deploy/networkpolicy.yaml) they have no network; grant networking.k8s.io networkpolicies create (deploy/rbac/controller-rbac.yaml)',
            { ...where, error: describeKubeError(r.error) },
          );
        }
        break;
      }
      return { kind: 'error', error: r.error, action: action.kind };
    }
    case 'createRunInput': {
      const { metadata } = action.configMap;
      const r = await createRunInput(deps.transport, action.configMap, opts);
      if (r.kind === 'created') {
        deps.logger.debug('Created run input', { namespace: metadata.namespace, configMap: metadata.name });
        break;
      }
      if (r.kind === 'exists') break;
      if (r.kind === 'refused') return { kind: 'inputRefused', message: r.message };
      if (r.kind === 'stale') return { kind: 'retryLater', reason: r.message };
      return { kind: 'error', error: r.error, action: action.kind };
    }
    case 'createJob': {
      const { metadata } = action.job;
      if (deps.beforeCreateJob !== undefined && !deps.beforeCreateJob())
        return { kind: 'notLeading', what: 'job creation (no longer leading)' };
      const r = await createObject(
        deps.transport,
        JOBS,
        metadata.namespace,
        { ...action.job },
        KubeObjectSchema,
        opts,
      );
      if (r.ok) {
        deps.metrics.jobsCreated.inc();
        deps.logger.info('Created Job', { namespace: metadata.namespace, job: metadata.name });
        break;
      }
      if (isAlreadyExists(r.error)) return { kind: 'jobExists' };
      if (isInvalid(r.error) || (r.error.kind === 'api' && r.error.code === 400)) {
        return {
          kind: 'jobRejected',
          message: r.error.kind === 'api' ? r.error.message : describeKubeError(r.error),
        };
      }
      return { kind: 'error', error: r.error, action: action.kind };
    }
    case 'patchStatus': {
      const { ref } = action;
      const r = await patchStatus(deps.transport, AGENTS, ref, { ...action.status }, KubeObjectSchema, {
        ...opts,
        resourceVersion: action.resourceVersion,
      });
      if (r.ok) {
        deps.metrics.statusPatches.inc();
        // Read your own writes: the next reconcile must not decide from the version before this one, should the
        // watch deliver it late (issue 13 §1: a run whose Running patch the cache had not seen got a second Job).
        deps.onAgentWritten?.(r.value);
        break;
      }
      if (isConflict(r.error) || isNotFound(r.error)) {
        deps.logger.info('Status patch superseded, will reconcile again', {
          namespace: ref.namespace,
          agent: ref.name,
        });
        return { kind: 'superseded', what: 'status' };
      }
      return { kind: 'error', error: r.error, action: action.kind };
    }
    case 'deleteAgent': {
      if (action.purpose === 'prune' && deps.tombstones?.has(action.ref.uid)) break;
      if (action.purpose === 'prune' && deps.backgroundPrunes === true) {
        // History pruning never decides anything the rest of the decision depends on: it runs beside it.
        void deleteAgent(action, deps);
        break;
      }
      const r = await deleteAgent(action, deps);
      if (r !== undefined) return r;
      break;
    }
    case 'recordEvent':
      await recordNote(deps, action.ref, {
        type: action.type,
        reason: action.reason,
        message: action.message,
      });
      break;
    case 'saveMemory': {
      // Best effort, but awaited: the run is recorded as Succeeded already; what happened is told in Events.
      const notes = await saveMemory(action, {
        transport: deps.transport,
        logger: deps.logger,
        timeoutMs: deps.timeoutMs,
        fieldManager: FIELD_MANAGER,
      }).catch((error: unknown): EventNote[] => [
        {
          type: 'Warning',
          reason: REASON.memoryNotSaved,
          message: `Memory not saved to ConfigMap ${action.configMap}: ${String(error)}`,
        },
      ]);
      for (const note of notes) await recordNote(deps, action.ref, note);
      break;
    }
    case 'addFinalizer':
    case 'removeFinalizer': {
      const { ref } = action;
      const ops =
        action.kind === 'addFinalizer'
          ? [
              { op: 'test' as const, path: '/metadata/resourceVersion', value: action.resourceVersion },
              action.first
                ? { op: 'add' as const, path: '/metadata/finalizers', value: [action.finalizer] }
                : { op: 'add' as const, path: '/metadata/finalizers/-', value: action.finalizer },
            ]
          : [
              {
                op: 'test' as const,
                path: `/metadata/finalizers/${action.index}`,
                value: action.finalizer,
              },
              { op: 'remove' as const, path: `/metadata/finalizers/${action.index}` },
            ];
      const r = await jsonPatch(deps.transport, AGENTS, ref, ops, KubeObjectSchema, opts);
      if (r.ok) {
        deps.logger.info(action.kind === 'addFinalizer' ? 'Added finalizer' : 'Removed finalizer', {
          namespace: ref.namespace,
          agent: ref.name,
          finalizer: action.finalizer,
        });
        break;
      }
      if (isConflict(r.error) || isNotFound(r.error) || isInvalid(r.error))
        return { kind: 'superseded', what: `finalizer ${action.finalizer}` };
      return { kind: 'error', error: r.error, action: action.kind };
    }
    case 'submitBatch': {
      const rt = deps.batch;
      if (rt === undefined) return { kind: 'retryLater', reason: 'batch execution is not configured' };
      const call = await vendorCall(rt, action.provider, action.ref.namespace, action.secretKey);
      if (!call.ok) {
        return call.error.kind === 'missing'
          ? { kind: 'batchRejected', message: call.error.message }
          : { kind: 'retryLater', reason: call.error.message };
      }
      // Asked right before the create, after the key was read: that read may have taken long enough (a replica
      // paused, an API server away) for another leader to have searched, found nothing and submitted (chaos seed 66:
      // a second vendor batch). No await between this check and the request.
      if (deps.beforeCreateJob !== undefined && !deps.beforeCreateJob())
        return { kind: 'notLeading', what: 'batch submission (no longer leading)' };
      const uid = action.ref.uid;
      // While the create is in flight its outcome is unknown: a crash or a lost answer means "search first".
      rt.nothingOutstanding.delete(uid);
      const r = await rt.vendors[action.provider].submit(action.request, call.value);
      const where = { namespace: action.ref.namespace, agent: action.ref.name, provider: action.provider };
      if (r.ok) {
        deps.logger.info('Submitted batch', { ...where, batch: r.value.id });
        return { kind: 'batchSubmitted', id: r.value.id };
      }
      const e = r.error;
      if (e.kind === 'rejected') {
        rt.nothingOutstanding.add(uid);
        if (e.status === 401 || e.status === 403) rt.secrets.forget(action.ref.namespace);
        deps.logger.warn('Batch refused by the vendor', { ...where, error: describeBatchError(e) });
        return { kind: 'batchRejected', message: describeBatchError(e) };
      }
      if (e.kind === 'unavailable' && e.status === 429) rt.nothingOutstanding.add(uid);
      return {
        kind: 'retryLater',
        reason: `submitting to ${action.provider}: ${describeBatchError(e)}`,
        ...(e.kind === 'unavailable' && e.retryAfterMs !== undefined ? { afterMs: e.retryAfterMs } : {}),
      };
    }
    case 'cleanupBatch': {
      const rt = deps.batch;
      if (rt === undefined) return { kind: 'retryLater', reason: 'batch execution is not configured' };
      const call = await vendorCall(rt, action.provider, action.ref.namespace, action.secretKey);
      if (!call.ok) {
        return call.error.kind === 'missing'
          ? { kind: 'cleanupFailed', message: call.error.message }
          : { kind: 'retryLater', reason: call.error.message };
      }
      const r = await rt.vendors[action.provider].cleanup(action.batchId, call.value);
      const where = { namespace: action.ref.namespace, agent: action.ref.name, batch: action.batchId };
      if (!r.ok) {
        deps.logger.warn('Batch cleanup failed', { ...where, error: describeBatchError(r.error) });
        return { kind: 'cleanupFailed', message: describeBatchError(r.error) };
      }
      if (r.value.kind === 'pending') return { kind: 'cleanupPending', detail: r.value.detail };
      deps.logger.info('Cleaned up batch', where);
      break;
    }
    case 'notifySinks':
      deps.sinks?.deliver(action);
      break;
    case 'createPromptToken': {
      if (deps.promptTokens === undefined)
        return { kind: 'retryLater', reason: 'the realtime key is not loaded yet' };
      const { ref } = action;
      const body = promptTokenSecret(
        { namespace: ref.namespace, name: ref.name, uid: action.uid },
        action.secretName,
        deps.promptTokens.tokenFor(action.uid),
      );
      const r = await createObject(deps.transport, SECRETS, ref.namespace, body, KubeObjectSchema, opts);
      if (!r.ok && !isAlreadyExists(r.error)) return { kind: 'error', error: r.error, action: action.kind };
      break;
    }
    case 'createServerApiKey': {
      const { ref } = action;
      const body = apiKeySecret(ref, action.secretName, newApiKey());
      const r = await createObject(deps.transport, SECRETS, ref.namespace, body, KubeObjectSchema, opts);
      if (!r.ok) {
        if (!isAlreadyExists(r.error)) return { kind: 'error', error: r.error, action: action.kind };
        // Someone else's (or an earlier Agent's): never used. A uid recorded before (a rotation) is cleared, so the
        // next decision sees the name taken.
        if (!action.recorded) break;
        const cleared = await recordApiKeySecret(deps, ref, null, opts);
        if (!cleared.ok) return { kind: 'error', error: cleared.error, action: action.kind };
        deps.logger.warn('Server API-key Secret name taken by a Secret this controller did not create', {
          namespace: ref.namespace,
          secret: action.secretName,
        });
        break;
      }
      const uid = r.value.metadata.uid;
      if (uid === undefined || uid === '')
        return {
          kind: 'error',
          error: { kind: 'decode', message: 'the created API-key Secret has no uid' },
          action: action.kind,
        };
      deps.logger.info('Created server API-key Secret', {
        namespace: ref.namespace,
        secret: action.secretName,
      });
      // Recorded on the Agent: only a Secret this controller created for it is ever used.
      const recorded = await recordApiKeySecret(deps, ref, uid, opts);
      if (!recorded.ok) return { kind: 'error', error: recorded.error, action: action.kind };
      break;
    }
    case 'deleteServerObject': {
      const { ref } = action;
      const r = await deleteServerObject(
        { transport: deps.transport, timeoutMs: deps.timeoutMs ?? 30_000 },
        action.resource,
        ref.namespace,
        action.name,
        action.uid,
      );
      if (!r.ok) return { kind: 'error', error: r.error, action: action.kind };
      deps.logger.info('Deleted server object', {
        namespace: ref.namespace,
        resource: action.resource,
        name: action.name,
      });
      break;
    }
    case 'applyServerObject': {
      const { manifest } = action.object;
      const w = await writeServerObject(
        { transport: deps.transport, timeoutMs: deps.timeoutMs ?? 30_000, fieldManager: FIELD_MANAGER },
        action.object,
        action.replace?.resourceVersion,
      );
      const where = {
        namespace: manifest.metadata.namespace,
        kind: manifest.kind,
        name: manifest.metadata.name,
      };
      if (w.kind === 'written') {
        deps.logger.info(
          action.replace === undefined ? 'Created server object' : 'Replaced server object',
          where,
        );
        break;
      }
      if (w.kind === 'superseded') return { kind: 'superseded', what: w.what };
      if (w.kind === 'rejected') return { kind: 'serverRejected', message: w.message };
      return { kind: 'error', error: w.error, action: action.kind };
    }
    case 'observeMetric':
      try {
        observe(deps.metrics, action.observation);
      } catch (error) {
        deps.logger.warn('Metric not observed', {
          metric: action.observation.metric,
          error: String(error),
        });
      }
      break;
    default:
      assertNever(action, 'action');
  }
  return undefined;
}

/** Records one Event on the Agent; best effort (a failure is logged), in the background when so configured. */
/**
 * Writes (or, with null, clears) `status.apiKeySecretUID` of a server's Agent: a merge patch of that one field, so
 * repeating it is harmless; tried up to three times (a key Secret created and not recorded would never be used).
 */
async function recordApiKeySecret(
  deps: ExecuteDeps,
  ref: AgentRef,
  uid: string | null,
  opts: { readonly timeoutMs?: number | undefined; readonly fieldManager: string },
): Promise<Result<void, KubeError>> {
  let last: KubeError | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
    const r = await patchStatus(
      deps.transport,
      AGENTS,
      ref,
      { apiKeySecretUID: uid },
      KubeObjectSchema,
      opts,
    );
    if (r.ok) {
      deps.metrics.statusPatches.inc();
      deps.onAgentWritten?.(r.value);
      return ok(undefined);
    }
    last = r.error;
    if (isNotFound(r.error)) break;
  }
  return err(last ?? { kind: 'decode', message: 'the API-key Secret could not be recorded' });
}

async function recordNote(deps: ExecuteDeps, ref: AgentRef, note: EventNote): Promise<void> {
  const recording = Promise.resolve()
    .then(() => deps.events.record(involved(ref), note))
    .catch((error: unknown) => {
      deps.logger.warn('Event not recorded', { reason: note.reason, error: String(error) });
    });
  if (deps.backgroundEvents !== true) await recording;
}

/**
 * One Agent DELETE (resourceVersion precondition, Background propagation). Claims the tombstone before the request
 * and gives it back if the delete is refused. Undefined when done (deleted, already gone, or a pruned Agent that
 * changed); an outcome when the decision must stop. Never rejects.
 */
async function deleteAgent(
  action: Extract<Action, { kind: 'deleteAgent' }>,
  deps: ExecuteDeps,
): Promise<ExecuteOutcome | undefined> {
  const { ref } = action;
  deps.tombstones?.add(ref.uid);
  const r = await deleteObject(deps.transport, AGENTS, ref, {
    resourceVersion: action.resourceVersion,
    timeoutMs: deps.timeoutMs,
  }).catch((error: unknown) => err<KubeError>({ kind: 'network', message: String(error) }));
  if (!r.ok && !isNotFound(r.error)) deps.tombstones?.remove(ref.uid);
  if (r.ok || isNotFound(r.error)) {
    deps.logger.info('Deleted Agent', {
      namespace: ref.namespace,
      agent: ref.name,
      purpose: action.purpose,
      why: action.reason,
    });
    return undefined;
  }
  if (isConflict(r.error)) {
    if (action.purpose === 'preempt') return { kind: 'superseded', what: `preemption of ${ref.name}` };
    deps.logger.info('Skipped pruning a changed Agent', { namespace: ref.namespace, agent: ref.name });
    return undefined;
  }
  if (action.purpose === 'prune' && deps.backgroundPrunes === true) {
    deps.logger.warn('Pruning an Agent failed; the next sweep retries', {
      namespace: ref.namespace,
      agent: ref.name,
      error: describeKubeError(r.error),
    });
    return undefined;
  }
  return { kind: 'error', error: r.error, action: action.kind };
}

/** Maps one metric observation of the core onto its Prometheus series. */
export function observe(metrics: ControllerMetrics, o: MetricObservation): void {
  switch (o.metric) {
    case 'runCompleted':
      metrics.runsCompleted.inc({
        phase: o.phase,
        exit_code: o.exitCode === undefined ? '' : String(o.exitCode),
      });
      return;
    case 'runDuration':
      metrics.runDuration.observe({ phase: o.phase }, Math.max(0, o.seconds));
      return;
    case 'runQueue':
      metrics.runQueue.observe(Math.max(0, o.seconds));
      return;
    case 'runFailure':
      metrics.runFailures.inc({ kind: o.kind });
      return;
    case 'runTokens':
      for (const [kind, count] of [
        ['input', o.usage.input],
        ['output', o.usage.output],
        ['cache_read', o.usage.cacheRead],
        ['cache_write', o.usage.cacheWrite],
      ] as const) {
        if (count > 0) metrics.runTokens.inc({ model: o.model, kind }, count);
      }
      return;
    case 'runCost':
      if (o.usd > 0) metrics.runCost.inc({ model: o.model }, o.usd);
      return;
    case 'batchCleanupFailure':
      metrics.batchCleanupFailures.inc();
      return;
    case 'batchOrphan':
      metrics.batchOrphans.inc({ provider: o.provider });
      return;
    default:
      assertNever(o, 'metric observation');
  }
}
