// What `execution: realtime` adds to a run, as pure facts and checks: the admission reasons, the per-run token
// Secret's name, the label and port of the run pod. The token itself is derived in the shell (it needs the
// controller's key); the core only names where it goes.

import { type Agent, type AgentDefinition, resolveModel } from '../../api/index.ts';

export {
  LABEL_EXECUTION,
  PROMPT_TOKEN_KEY,
  promptTokenSecretName,
  REALTIME_PORT,
} from '../../jobs/realtime.ts';

import { vendorForModel } from '../../vendors/cli/index.ts';

/** The reason of a realtime run on a controller without `REALTIME_ENABLED=true`. */
export const FAILURE_REALTIME_DISABLED = 'realtime execution is disabled on this controller';
/** The reason of a resumeSession on a run that has no CLI session to continue (a batch run). */
export const FAILURE_RESUME_NEEDS_REALTIME = 'resumeSession requires realtime execution';

/**
 * Vendors whose CLI continues a session by id in a realtime run
 * (docs/reference/vendor-cli-events.md#resuming-a-session): the supervisor learns the session id from the CLI's
 * output (OpenCode's `sessionID` on every line, docs/reference/vendor-clis.md#resume-3) and the init restores the
 * CLI's state folder; exec keeps no session.
 */
const RESUMABLE: ReadonlySet<string> = new Set(['claude', 'codex', 'gemini', 'opencode']);

/** True for a run the controller serves prompts to. */
export function isRealtime(definition: AgentDefinition | null): boolean {
  return definition?.spec.execution === 'realtime';
}

/**
 * Why a realtime run (or a resumeSession) cannot be admitted, naming the field; undefined when it can. Checked in a
 * fixed order so the reason is stable. Job runs keep the reference's `resumeSession` (the CLI's own `--resume`), except
 * on a CLI that cannot take one (exec): refused in every execution mode rather than silently ignored.
 */
export function realtimeProblem(
  agent: Agent,
  definition: AgentDefinition,
  enabled: boolean,
): string | undefined {
  const resume = agent.spec.resumeSession ?? '';
  const execution = definition.spec.execution;
  if (execution === 'batch') return resume !== '' ? FAILURE_RESUME_NEEDS_REALTIME : undefined;
  if (execution !== 'realtime') {
    if (resume === '') return undefined;
    // A Job run passes the id to its CLI; one whose CLI takes none is refused, never run as if fresh.
    const vendor = vendorForModel(resolveModel(agent, definition));
    return RESUMABLE.has(vendor) ? undefined : `${vendor} cannot resume a session`;
  }
  if (!enabled) return FAILURE_REALTIME_DISABLED;
  const conversation = definition.spec.resources.conversation;
  if ((conversation?.id ?? '') !== '') return 'realtime execution cannot use resources.conversation.id';
  if ((conversation?.pin ?? '') !== '') return 'realtime execution cannot use resources.conversation.pin';
  if (resume === '') return undefined;
  if ((conversation?.source ?? '') === '') return 'resumeSession needs resources.conversation.source';
  const vendor = vendorForModel(resolveModel(agent, definition));
  if (!RESUMABLE.has(vendor)) return `${vendor} cannot resume a session`;
  return undefined;
}
