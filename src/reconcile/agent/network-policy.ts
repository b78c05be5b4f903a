import type { AgentDefinition, Station } from '../../api/index.ts';
import { buildRunNetworkPolicy } from '../../jobs/index.ts';
import type { Action } from '../actions.ts';
import type { Snapshot } from '../snapshot.ts';

/** The run's own NetworkPolicy, created right before its Job (decision i, issue 9 §3). */
export function runNetworkPolicyAction(s: Snapshot, station: Station, definition: AgentDefinition): Action {
  return {
    kind: 'createNetworkPolicy',
    policy: buildRunNetworkPolicy({
      agent: s.agent,
      station,
      definition,
      controllerNamespace: s.options.controllerNamespace,
    }),
  };
}
