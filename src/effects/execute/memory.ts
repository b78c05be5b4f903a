// Handler of the memory save (issue 10 §3): the one write decide chose, performed under the executor contract
// (src/reconcile/executor-contract.ts). What to write and what to tell is decided in src/reconcile/agent/memory.ts.
import { MEMORY_KEY, utf8Length } from '../../jobs/index.ts';
import { writeMemory } from '../memory.ts';
import { FIELD_MANAGER, type Handler, settleApi } from './deps.ts';

export const saveMemory: Handler<'saveMemory'> = async (action, deps) => {
  const r = await writeMemory(action, {
    transport: deps.transport,
    logger: deps.logger,
    timeoutMs: deps.timeoutMs,
    fieldManager: FIELD_MANAGER,
  });
  const where = {
    namespace: action.namespace,
    agent: action.ref.name,
    configMap: action.configMap.metadata.name,
  };
  if (r.ok) {
    const bytes = utf8Length(action.configMap.data?.[MEMORY_KEY] ?? '');
    deps.logger.info(action.replace === undefined ? 'Created memory' : 'Saved memory', { ...where, bytes });
  } else deps.logger.debug('Memory not written', { ...where, replace: action.replace !== undefined });
  return settleApi(action, r, action.replace !== undefined ? { variant: 'replace' } : {});
};
