// Names of the durable realtime sessions (issue 29, docs/design/sessions.md): the annotations the prompt API and the
// CLI set on an Agent (observations and requests; decide records them in `status.session`, the one-writer rule of
// docs/design/one-writer.md), the finalizer of an Agent with stored state, and the limits.

/** Turns of the session that ended so far (set by the prompt API after each turn). */
export const ANNOTATION_SESSION_TURNS = 'agents.re-cinq.com/session-turns';
/** The last turn whose state the prompt API wrote to the session store. */
export const ANNOTATION_SESSION_SAVED_TURN = 'agents.re-cinq.com/session-saved-turn';
/** RFC 3339: when the last prompt reached the session, or its turn ended (the idle clock starts there). */
export const ANNOTATION_SESSION_LAST_PROMPT = 'agents.re-cinq.com/session-last-prompt';
/** The number of the turn in flight (set when a prompt is delivered; a value above the turns ended means busy). */
export const ANNOTATION_SESSION_IN_FLIGHT = 'agents.re-cinq.com/session-turn-in-flight';
/** RFC 3339: suspend now (`agent-controller suspend`); taken once per value. */
export const ANNOTATION_SUSPEND_REQUESTED = 'agents.re-cinq.com/suspend-requested';
/** RFC 3339: wake a Suspended session (a prompt, `agent-controller resume`); taken once per value, queued by it. */
export const ANNOTATION_WAKE_REQUESTED = 'agents.re-cinq.com/wake-requested';
/** Held by an Agent whose session has state in the session store: removed once the state is deleted. */
export const SESSION_STATE_FINALIZER = 'agents.re-cinq.com/session-state';
/** A session restored into a new pod after its pod was lost at most this many times; then the run fails. */
export const MAX_SESSION_RESTARTS = 3;
/** Attempts to delete an Agent's stored session before a Warning names what was left and the finalizer goes. */
export const MAX_SESSION_CLEANUP_ATTEMPTS = 5;

/** The idle timeout of a realtime run: the Station's `idleTimeoutSeconds`, else its definition's; undefined: none. */
export function idleTimeoutSecondsOf(
  station: { readonly spec: { readonly idleTimeoutSeconds?: number | undefined } } | null,
  definition: { readonly spec: { readonly idleTimeoutSeconds?: number | undefined } } | null,
): number | undefined {
  return station?.spec.idleTimeoutSeconds ?? definition?.spec.idleTimeoutSeconds;
}
