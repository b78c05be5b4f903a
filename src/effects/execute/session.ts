// The session store's actions (issue 29 §5): a deleted Agent's stored session (or one beyond its Station's
// sessionHistoryLimit) deleted through the controller's session-store port.

import { type ExecuteOutcome, type Handler, settle } from './deps.ts';

/** `deleteSession`: every object under the Agent's prefix; a failure is decided again (counted, retried). */
export const deleteSession: Handler<'deleteSession'> = async (
  action,
  deps,
): Promise<ExecuteOutcome | undefined> => {
  const store = deps.sessions;
  if (store === undefined)
    return settle(action, 'notReady', { message: 'no session store on this controller' });
  const deleted = await store
    .deleteSession(action.ref.namespace, action.ref.uid)
    .catch((error: unknown) => ({ ok: false as const, error: String(error) }));
  if (deleted.ok) return settle(action, 'ok');
  return settle(action, 'error', { message: deleted.error });
};
