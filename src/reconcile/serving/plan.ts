// What `execution: server` adds to a run, as pure facts and checks (issue 12): whether a definition serves, why a
// server cannot be admitted, and the time its objects are built with. The decision rows are in ./decide.ts.

import type { Agent, AgentDefinition, AgentPolicy } from '../../api/index.ts';
import { serverName } from '../../jobs/index.ts';

/** The reason of a server on a controller without `SERVER_ENABLED=true`. */
export const FAILURE_SERVER_DISABLED = 'server execution is disabled on this controller';
/** The reason of a server whose Station has no AgentPolicy allowing `server`. */
export const FAILURE_SERVER_NOT_ALLOWED =
  "server execution needs the Station's AgentPolicy to allow it (spec.executions.allowed: [server])";

/** True for an Agent whose definition serves it (execution: server). */
export function isServer(definition: AgentDefinition | null): boolean {
  return definition?.spec.execution === 'server';
}

/**
 * Why a server cannot be admitted, naming the field; undefined when it can (or when the definition is no server).
 * Checked in a fixed order: the controller setting, the policy (a server is reachable from outside the cluster's
 * runs, so it must be allowed explicitly), then the fields a server has no use for.
 */
export function serverProblem(
  agent: Agent,
  definition: AgentDefinition,
  enabled: boolean,
  policy: AgentPolicy | undefined,
): string | undefined {
  if (!isServer(definition)) return undefined;
  if (!enabled) return FAILURE_SERVER_DISABLED;
  if (policy?.spec.executions?.allowed?.includes('server') !== true) return FAILURE_SERVER_NOT_ALLOWED;
  if (definition.spec.memory !== undefined) return 'server execution cannot use spec.memory';
  if ((agent.spec.resumeSession ?? '') !== '')
    return 'server execution cannot use resumeSession (a client resumes a session with session_id)';
  if ((definition.spec.resources.conversation?.id ?? '') !== '')
    return 'server execution cannot use resources.conversation.id';
  // The Service is named after the Agent, and Service names are DNS-1035 labels (no dots, a letter first).
  const service = serverName(agent.metadata.name);
  if (!/^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(service))
    return `a server's Agent name must make a valid Service name (${service}): letters, digits and '-', a letter first`;
  return undefined;
}

/**
 * The time a server's objects are built with: the Agent's creation, so the same Agent and recipe always give the
 * same objects (a Job run's env counts its deadline from `now`; a server has none, but nothing may move by itself).
 */
export function serverBuildTime(agent: Agent): Date {
  const created = Date.parse(agent.metadata.creationTimestamp);
  return Number.isNaN(created) ? new Date(0) : new Date(created);
}
