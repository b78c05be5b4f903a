// The CLI session id a stream-JSON line reveals (docs/reference/vendor-cli-events.md): Claude's `system/init` and
// Gemini's `init`
// carry `session_id`; Codex's `thread.started` carries `thread_id`; every OpenCode line carries `sessionID`
// (`ses_…`, what `--session` continues: docs/reference/vendor-clis.md#resume-3). Agent output is untrusted: an id is
// taken only when it is a short printable string that cannot pass for a flag.

import type { Vendor } from './route.ts';

const ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** The session id `line` (one parsed JSON event) reveals for `vendor`, or undefined. */
export function sessionIdOf(vendor: Vendor, line: unknown): string | undefined {
  if (typeof line !== 'object' || line === null) return undefined;
  const e = line as Record<string, unknown>;
  let id: unknown;
  if (vendor === 'claude' && e.type === 'system' && e.subtype === 'init') id = e.session_id;
  else if (vendor === 'gemini' && e.type === 'init') id = e.session_id;
  else if (vendor === 'codex' && e.type === 'thread.started') id = e.thread_id;
  else if (vendor === 'opencode' && typeof e.type === 'string') id = e.sessionID;
  return typeof id === 'string' && ID.test(id) ? id : undefined;
}

/** The vendors whose lines name a session, in the order {@link sessionIdOfAny} asks them. */
const SESSION_VENDORS: readonly Vendor[] = ['claude', 'gemini', 'codex', 'opencode'];

/**
 * The session id a line reveals when its vendor is not known (the prompt API relays lines without it): the first
 * vendor's reading that yields one. The four shapes do not overlap (`system`/`init` with `session_id`, `init`,
 * `thread.started`, `sessionID`).
 */
export function sessionIdOfAny(line: unknown): string | undefined {
  for (const vendor of SESSION_VENDORS) {
    const id = sessionIdOf(vendor, line);
    if (id !== undefined) return id;
  }
  return undefined;
}

/** The session id of a run's output (newline-separated event lines): the last one revealed, or undefined. */
export function sessionIdInOutput(vendor: Vendor, output: string): string | undefined {
  let found: string | undefined;
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      found = sessionIdOf(vendor, JSON.parse(line)) ?? found;
    } catch {
      // not an event line
    }
  }
  return found;
}
