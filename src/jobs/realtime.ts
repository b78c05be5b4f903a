// Names and numbers of a realtime run's Job (execution: realtime): the pod's prompt port, its label, and the Secret
// that carries the run's prompt token.

import { safeName } from './names.ts';

/** Port of the run pod's prompt server (the supervisor in realtime mode). */
export const REALTIME_PORT = 8090;
/** Label on a realtime run's Job and pod (`agents.re-cinq.com/execution: realtime`); the NetworkPolicy selects it. */
export const LABEL_EXECUTION = 'agents.re-cinq.com/execution';
/**
 * Annotation on a realtime run's Agent: the CLI session id the prompt API saw in a turn's output (issue 27 §2). The
 * prompt API only reports it (any replica answers prompts); the leader's decide records it in `status.sessionId`
 * and announces it (docs/design/one-writer.md).
 */
export const ANNOTATION_SESSION_ID = 'agents.re-cinq.com/session-id';
/**
 * Annotation on an Agent asking its realtime run's Job for `AGENT_SESSION_RESTORE=true` (value `"true"`): the pod
 * waits for its session state (`PUT /session/state`) instead of opening the session (docs/design/sessions.md, "The
 * run pod"). Until the controller sets the build input's `sessionRestore` itself (wake, pod loss, fork), this is how
 * a run asks for it; the end-to-end test of the round trip uses it.
 */
export const ANNOTATION_SESSION_RESTORE = 'agents.re-cinq.com/session-restore';
/** Key of the per-run Secret that holds the run's prompt token. */
export const PROMPT_TOKEN_KEY = 'token';

/** Name of the Secret holding a realtime run's prompt token (owned by the Agent): `agent-prompt-<name>`. */
export function promptTokenSecretName(agentName: string): string {
  return safeName(`agent-prompt-${agentName}`, 253);
}
