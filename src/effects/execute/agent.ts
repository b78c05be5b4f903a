// Handlers of writes to the Agent itself: its status, its finalizers, its deletion (the executor contract:
// src/reconcile/executor-contract.ts).
import {
  deleteObject,
  describeKubeError,
  isNotFound,
  jsonPatch,
  type KubeError,
  KubeObjectSchema,
  patchStatus as patchAgentStatus,
} from '../../kube/index.ts';
import { err } from '../../shared/result.ts';
import { AGENTS } from '../resources.ts';
import {
  type ActionOf,
  type ExecuteDeps,
  type ExecuteOutcome,
  type Handler,
  settleApi,
  writeOptions,
} from './deps.ts';

export const patchStatus: Handler<'patchStatus'> = async (action, deps) => {
  const { ref } = action;
  const r = await patchAgentStatus(deps.transport, AGENTS, ref, { ...action.status }, KubeObjectSchema, {
    ...writeOptions(deps),
    resourceVersion: action.resourceVersion,
  });
  if (r.ok) {
    deps.metrics.statusPatches.inc();
    // Read your own writes: the next reconcile must not decide from the version before this one, should the
    // watch deliver it late (issue 13 §1: a run whose Running patch the cache had not seen got a second Job).
    deps.onAgentWritten?.(r.value);
  }
  const outcome = settleApi(action, r, { what: 'status' });
  if (outcome?.kind === 'superseded')
    deps.logger.info('Status patch superseded, will reconcile again', {
      namespace: ref.namespace,
      agent: ref.name,
    });
  return outcome;
};

export const deleteAgent: Handler<'deleteAgent'> = async (action, deps) => {
  if (action.purpose === 'prune' && deps.tombstones?.has(action.ref.uid)) return undefined;
  if (action.purpose === 'prune' && deps.backgroundPrunes === true) {
    // History pruning never decides anything the rest of the decision depends on: it runs beside it.
    void deleteOne(action, deps);
    return undefined;
  }
  return deleteOne(action, deps);
};

/**
 * One Agent DELETE (resourceVersion precondition, Background propagation). Claims the tombstone before the request
 * and gives it back if the delete is refused. Undefined when done (deleted, already gone, or a pruned Agent that
 * changed); an outcome when the decision must stop. Never rejects.
 */
async function deleteOne(
  action: ActionOf<'deleteAgent'>,
  deps: ExecuteDeps,
): Promise<ExecuteOutcome | undefined> {
  const { ref } = action;
  deps.tombstones?.add(ref.uid);
  const r = await deleteObject(deps.transport, AGENTS, ref, {
    resourceVersion: action.resourceVersion,
    timeoutMs: deps.timeoutMs,
  }).catch((error: unknown) => err<KubeError>({ kind: 'network', message: String(error) }));
  if (!r.ok && !isNotFound(r.error)) deps.tombstones?.remove(ref.uid);
  const where = { namespace: ref.namespace, agent: ref.name };
  const outcome = settleApi(action, r, { variant: action.purpose, what: `preemption of ${ref.name}` });
  if (r.ok || isNotFound(r.error)) {
    deps.logger.info('Deleted Agent', { ...where, purpose: action.purpose, why: action.reason });
  } else if (outcome === undefined) {
    deps.logger.info('Skipped pruning a changed Agent', where);
  } else if (outcome.kind === 'error' && action.purpose === 'prune' && deps.backgroundPrunes === true) {
    deps.logger.warn('Pruning an Agent failed; the next sweep retries', {
      ...where,
      error: describeKubeError(r.error),
    });
    return undefined;
  }
  return outcome;
}

/** `addFinalizer` and `removeFinalizer`: a JSON patch that tests and touches only the one finalizer entry. */
export async function finalizer(
  action: ActionOf<'addFinalizer'> | ActionOf<'removeFinalizer'>,
  deps: ExecuteDeps,
): Promise<ExecuteOutcome | undefined> {
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
          { op: 'test' as const, path: `/metadata/finalizers/${action.index}`, value: action.finalizer },
          { op: 'remove' as const, path: `/metadata/finalizers/${action.index}` },
        ];
  const r = await jsonPatch(deps.transport, AGENTS, ref, ops, KubeObjectSchema, writeOptions(deps));
  if (r.ok)
    deps.logger.info(action.kind === 'addFinalizer' ? 'Added finalizer' : 'Removed finalizer', {
      namespace: ref.namespace,
      agent: ref.name,
      finalizer: action.finalizer,
    });
  return settleApi(action, r, { what: `finalizer ${action.finalizer}` });
}
