// The CLI session id of a realtime run, recorded as the prompt API sees it (issue 27 §2): the prompt API reports the
// id it read in a turn's output as an annotation on the Agent (src/effects/realtime/prompt-ports.ts); this decides the
// status patch and the Event, so the executor stays the one writer of Agent status (docs/design/one-writer.md).

import { ANNOTATION_SESSION_ID } from '../../jobs/realtime.ts';
import type { Decision } from '../actions.ts';
import { agentRef, event, statusPatch } from '../agent/status.ts';
import { REASON } from '../reasons.ts';
import type { CommonSnapshot } from '../snapshot/common.ts';
import { isRealtime } from './plan.ts';

/** What a session id looks like (the vendors' ids: UUIDs, ULIDs, `ses_…`); anything else in the annotation is ignored. */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** The session id the prompt API reported for this Agent, when it is one and not on its status yet. */
export function reportedSession(s: CommonSnapshot): string | undefined {
  const { agent } = s;
  if (agent.status.phase !== 'Running' || !isRealtime(s.definition)) return undefined;
  const id = agent.metadata.annotations?.[ANNOTATION_SESSION_ID];
  if (id === undefined || !SESSION_ID.test(id) || id === agent.status.sessionId) return undefined;
  return id;
}

/**
 * A Running realtime run whose prompt API reported a session id its status lacks: `status.sessionId` (resourceVersion
 * precondition) and a Normal `SessionStarted` Event, before anything else is decided (the patch wakes the Agent
 * again). Undefined when there is nothing to record.
 */
export function recordSession(s: CommonSnapshot, now: Date): Decision | undefined {
  const id = reportedSession(s);
  if (id === undefined) return undefined;
  return {
    actions: [
      statusPatch(s.agent, { sessionId: id }, [], now),
      event(agentRef(s.agent), 'Normal', REASON.sessionStarted, `CLI session ${id}`),
    ],
    requeueAfterMs: s.options.requeueMs,
  };
}
