// Handlers of the vendor side of batch runs: submitting a batch and cleaning one up (the executor contract:
// src/reconcile/executor-contract.ts).
import { describeBatchError } from '../../vendors/batch/http.ts';
import { vendorCall } from '../batch/runtime.ts';
import { type Handler, settle } from './deps.ts';

const NOT_CONFIGURED = { message: 'batch execution is not configured' };

export const submitBatch: Handler<'submitBatch'> = async (action, deps) => {
  const rt = deps.batch;
  if (rt === undefined) return settle(action, 'notReady', NOT_CONFIGURED);
  const call = await vendorCall(rt, action.provider, action.ref.namespace, action.secretKey);
  if (!call.ok)
    return settle(action, call.error.kind === 'missing' ? 'keyMissing' : 'error', {
      message: call.error.message,
    });
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
    return settle(action, 'ok', { id: r.value.id });
  }
  const e = r.error;
  if (e.kind === 'rejected') {
    rt.nothingOutstanding.add(uid);
    if (e.status === 401 || e.status === 403) rt.secrets.forget(action.ref.namespace);
    deps.logger.warn('Batch refused by the vendor', { ...where, error: describeBatchError(e) });
    return settle(action, 'vendorRefused', { message: describeBatchError(e) });
  }
  if (e.kind === 'unavailable' && e.status === 429) rt.nothingOutstanding.add(uid);
  return settle(action, e.kind === 'unavailable' ? 'vendorUnavailable' : 'error', {
    message: `submitting to ${action.provider}: ${describeBatchError(e)}`,
    ...(e.kind === 'unavailable' && e.retryAfterMs !== undefined ? { afterMs: e.retryAfterMs } : {}),
  });
};

export const cleanupBatch: Handler<'cleanupBatch'> = async (action, deps) => {
  const rt = deps.batch;
  if (rt === undefined) return settle(action, 'notReady', NOT_CONFIGURED);
  const call = await vendorCall(rt, action.provider, action.ref.namespace, action.secretKey);
  if (!call.ok)
    return settle(action, call.error.kind === 'missing' ? 'keyMissing' : 'error', {
      message: call.error.message,
    });
  const r = await rt.vendors[action.provider].cleanup(action.batchId, call.value);
  const where = { namespace: action.ref.namespace, agent: action.ref.name, batch: action.batchId };
  if (!r.ok) {
    deps.logger.warn('Batch cleanup failed', { ...where, error: describeBatchError(r.error) });
    return settle(action, r.error.kind === 'unavailable' ? 'vendorUnavailable' : 'vendorRefused', {
      message: describeBatchError(r.error),
    });
  }
  if (r.value.kind === 'pending') return settle(action, 'pending', { message: r.value.detail });
  deps.logger.info('Cleaned up batch', where);
  return settle(action, 'ok');
};
