// The session store the controller's configuration names (AGENT_SESSION_STORE_*, issue 29), behind the narrow port
// the executor and the prompt API use (src/effects/sessions/port.ts).

import type { ControllerConfig } from '../config/index.ts';
import type { SessionStatePort } from '../effects/sessions/port.ts';
import { type SessionStore, sessionStoreFromConfig } from '../sessions/store.ts';
import type { Logger } from '../shared/log.ts';
import { err, ok } from '../shared/result.ts';

/** The port over the configured session store; undefined when the controller has none (sessions off). */
export function sessionStateOf(config: ControllerConfig, log: Logger): SessionStatePort | undefined {
  const store = config.sessionStore;
  if (store === undefined) return undefined;
  log.info('Sessions are kept in the session store', {
    endpoint: store.endpoint,
    bucket: store.bucket,
    prefix: store.prefix,
  });
  return sessionStatePort(sessionStoreFromConfig(store));
}

/** The port over the session store: failures as one line; no saved turn (`not-found`) as undefined. */
export function sessionStatePort(
  store: Pick<SessionStore, 'saveTurn' | 'loadTurn' | 'deleteSession'>,
): SessionStatePort {
  return {
    async saveTurn(namespace, uid, turn, archive, meta) {
      const r = await store.saveTurn({ namespace, uid }, turn, archive, meta);
      return r.ok ? ok(undefined) : err(r.error.message);
    },
    async loadLatest(namespace, uid) {
      const r = await store.loadTurn({ namespace, uid }, 'latest');
      if (r.ok) {
        const { turn, archive, sessionId, vendor } = r.value;
        return ok({ turn, archive, sessionId, vendor });
      }
      return r.error.kind === 'not-found' ? ok(undefined) : err(r.error.message);
    },
    async deleteSession(namespace, uid) {
      const r = await store.deleteSession({ namespace, uid });
      return r.ok ? ok(undefined) : err(r.error.message);
    },
  };
}
