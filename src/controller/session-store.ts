// The session-state port over the controller's configured session store (issue 29). Until the store lands on this
// branch no store is configured: sessions are off.

import type { ControllerConfig } from '../config/index.ts';
import type { SessionStatePort } from '../effects/sessions/port.ts';
import type { Logger } from '../shared/log.ts';

/** The port over the configured session store; undefined when the controller has none. */
export function sessionStateOf(_config: ControllerConfig, _log: Logger): SessionStatePort | undefined {
  return undefined;
}
