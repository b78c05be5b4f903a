// Handler of the spend ledger write (issue 28 §4) under the executor contract (src/reconcile/executor-contract.ts).
// What is written is decided in src/reconcile/agent/budget.ts and src/reconcile/budget/ledger.ts.
import { recordSpend as writeSpend } from '../spend.ts';
import { FIELD_MANAGER, type Handler, settleApi } from './deps.ts';

export const recordSpend: Handler<'recordSpend'> = async (action, deps) => {
  const r = await writeSpend(action, {
    transport: deps.transport,
    logger: deps.logger,
    timeoutMs: deps.timeoutMs,
    fieldManager: FIELD_MANAGER,
  });
  if (!r.ok) deps.logger.warn('Spend not recorded', { namespace: action.namespace, error: r.error.message });
  return settleApi(action, r);
};
