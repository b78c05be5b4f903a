// The session store the controller's configuration names (AGENT_SESSION_STORE_*, issue 29), behind the narrow port
// the executor and the prompt API use (src/effects/sessions/port.ts).

import type { ControllerConfig } from '../config/index.ts';
import { type SessionStatePort, sessionStatePort } from '../effects/sessions/port.ts';
import { sessionStoreFromConfig } from '../sessions/store.ts';
import type { Logger } from '../shared/log.ts';

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
