// Handlers of the run's own objects: its ServiceAccount, bindings, NetworkPolicy, input ConfigMap and Job (the
// executor contract: src/reconcile/executor-contract.ts).
import {
  createObject,
  deleteObject,
  describeKubeError,
  JOBS,
  KubeObjectSchema,
  NETWORK_POLICIES,
  SERVICE_ACCOUNTS,
  type Transport,
} from '../../kube/index.ts';
import type { Answer } from '../../reconcile/executor-contract.ts';
import type { FoundObject } from '../../reconcile/snapshot.ts';
import { createRunBinding, deleteRunBindings } from '../run-bindings.ts';
import { createRunInput, deleteRunInput } from '../run-input.ts';
import { answerOf, type Handler, involved, settle, settleApi, writeOptions } from './deps.ts';

/**
 * API connections on which a NetworkPolicy create was already refused with 403: the warning is logged once per
 * controller (per transport), later refusals only at debug level.
 */
const networkPolicyForbidden = new WeakSet<Transport>();

/**
 * The answer class of a create whose name may be taken (run bindings, run input): the object found is reported
 * (`existsFound`); one gone before it was read is `existsGone`; a refusal (403, 422, 400, or the object found cannot
 * be read) counts as `forbidden`, which the contract treats as every refusal.
 */
const takenAnswer = (kind: 'created' | 'found' | 'stale' | 'refused'): Answer =>
  kind === 'created'
    ? 'ok'
    : kind === 'found'
      ? 'existsFound'
      : kind === 'stale'
        ? 'existsGone'
        : 'forbidden';

/** The detail of such an answer: the object found, or the message. */
const takenDetail = (
  r:
    | { readonly kind: 'created' }
    | { readonly kind: 'found'; readonly found: FoundObject }
    | { readonly message: string },
) => ('found' in r ? { found: r.found } : 'message' in r ? { message: r.message } : {});

export const createServiceAccount: Handler<'createServiceAccount'> = async (action, deps) => {
  const { metadata } = action.serviceAccount;
  const r = await createObject(
    deps.transport,
    SERVICE_ACCOUNTS,
    metadata.namespace,
    { ...action.serviceAccount },
    KubeObjectSchema,
    writeOptions(deps),
  );
  if (r.ok)
    deps.logger.info('Created run ServiceAccount', {
      namespace: metadata.namespace,
      serviceAccount: metadata.name,
    });
  return settleApi(action, r);
};

export const createRunBindingHandler: Handler<'createRunBinding'> = async (action, deps) => {
  const { binding } = action;
  const r = await createRunBinding(deps.transport, binding, writeOptions(deps));
  if (r.kind === 'created')
    deps.logger.info('Created run binding', {
      kind: binding.kind,
      binding: binding.metadata.name,
      clusterRole: binding.roleRef.name,
    });
  if (r.kind === 'error') return settleApi(action, { ok: false, error: r.error });
  return settle(action, takenAnswer(r.kind), takenDetail(r));
};

export const deleteRunBindingsHandler: Handler<'deleteRunBindings'> = async (action, deps) => {
  const { ref } = action;
  const r = await deleteRunBindings(deps.transport, ref.namespace, ref.uid, deps.timeoutMs);
  if (!r.ok) return settleApi(action, r);
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
    return settle(action, 'forbidden');
  }
  return settle(action, 'ok');
};

export const createNetworkPolicy: Handler<'createNetworkPolicy'> = async (action, deps) => {
  const { metadata } = action.policy;
  const where = { namespace: metadata.namespace, networkPolicy: metadata.name };
  const r = await createObject(
    deps.transport,
    NETWORK_POLICIES,
    metadata.namespace,
    { ...action.policy },
    KubeObjectSchema,
    writeOptions(deps),
  );
  if (r.ok) deps.logger.info('Created run NetworkPolicy', where);
  // Without the grant the run still starts, under the static egress policy only.
  else if (answerOf(r.error) === 'forbidden') warnForbidden(deps, where, describeKubeError(r.error));
  return settleApi(action, r);
};

/** The 403 of a NetworkPolicy create, warned about once per controller. */
function warnForbidden(
  deps: Parameters<Handler<'createNetworkPolicy'>>[1],
  where: Record<string, string>,
  error: string,
): void {
  if (networkPolicyForbidden.has(deps.transport)) {
    deps.logger.debug('Run NetworkPolicy not created: forbidden', where);
    return;
  }
  networkPolicyForbidden.add(deps.transport);
  deps.logger.warn(
    'Run NetworkPolicies cannot be created (403 Forbidden): runs start without their own policy, so where a default-deny policy selects run pods (deploy/networkpolicy.yaml) they have no network; grant networking.k8s.io networkpolicies create (deploy/rbac/controller-rbac.yaml)',
    { ...where, error },
  );
}

export const createRunInputHandler: Handler<'createRunInput'> = async (action, deps) => {
  const { metadata } = action.configMap;
  const r = await createRunInput(deps.transport, action.configMap, writeOptions(deps));
  if (r.kind === 'created')
    deps.logger.debug('Created run input', { namespace: metadata.namespace, configMap: metadata.name });
  if (r.kind === 'error') return settleApi(action, { ok: false, error: r.error });
  return settle(action, takenAnswer(r.kind), takenDetail(r));
};

export const deleteRunInputHandler: Handler<'deleteRunInput'> = async (action, deps) => {
  const { namespace, name } = action;
  const r = await deleteRunInput(deps.transport, namespace, name, action.uid, deps.timeoutMs);
  if (r.ok) deps.logger.info('Deleted run input to make it again', { namespace, configMap: name });
  return settleApi(
    action,
    r,
    r.ok
      ? {}
      : {
          message: `ConfigMap ${namespace}/${name} is outdated and cannot be deleted: ${describeKubeError(r.error)}`,
        },
  );
};

export const createJob: Handler<'createJob'> = async (action, deps) => {
  const { metadata } = action.job;
  if (deps.beforeCreateJob !== undefined && !deps.beforeCreateJob())
    return { kind: 'notLeading', what: 'job creation (no longer leading)' };
  const r = await createObject(
    deps.transport,
    JOBS,
    metadata.namespace,
    { ...action.job },
    KubeObjectSchema,
    writeOptions(deps),
  );
  if (r.ok) {
    deps.metrics.jobsCreated.inc();
    deps.logger.info('Created Job', { namespace: metadata.namespace, job: metadata.name });
  }
  // A refusal names the API server's own message (the field at fault).
  return settleApi(action, r, r.ok || r.error.kind !== 'api' ? {} : { message: r.error.message });
};

export const deleteJob: Handler<'deleteJob'> = async (action, deps) => {
  const r = await deleteObject(
    deps.transport,
    JOBS,
    { namespace: action.namespace, name: action.name },
    { propagationPolicy: 'Foreground', uid: action.uid, timeoutMs: deps.timeoutMs },
  );
  if (r.ok) deps.logger.info('Deleted Job', { namespace: action.namespace, job: action.name });
  return settleApi(action, r);
};
