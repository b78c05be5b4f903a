import type { AgentDefinition, Station } from '../../api/index.ts';
import { buildRunNetworkPolicy, buildRunServiceAccount } from '../../jobs/index.ts';
import type { Action } from '../actions.ts';
import type { Snapshot } from '../snapshot.ts';

/**
 * The run's own objects, created right before its Job: its ServiceAccount (issue 9 §2), then its NetworkPolicy
 * (decision i, issue 9 §3). Both owned by the Agent.
 */
export function runObjectActions(s: Snapshot, station: Station, definition: AgentDefinition): Action[] {
  return [
    { kind: 'createServiceAccount', serviceAccount: buildRunServiceAccount(s.agent, station.metadata.name) },
    {
      kind: 'createNetworkPolicy',
      policy: buildRunNetworkPolicy({
        agent: s.agent,
        station,
        definition,
        controllerNamespace: s.options.controllerNamespace,
      }),
    },
  ];
}
