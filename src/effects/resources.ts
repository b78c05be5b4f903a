import { GROUP, VERSION } from '../api/index.ts';
import type { ResourceType } from '../kube/index.ts';

/** Our custom resources, as the generic client addresses them. */
export const AGENTS: ResourceType = {
  group: GROUP,
  version: VERSION,
  plural: 'agents',
  kind: 'Agent',
  namespaced: true,
};
export const STATIONS: ResourceType = {
  group: GROUP,
  version: VERSION,
  plural: 'stations',
  kind: 'Station',
  namespaced: true,
};
export const AGENT_DEFINITIONS: ResourceType = {
  group: GROUP,
  version: VERSION,
  plural: 'agentdefinitions',
  kind: 'AgentDefinition',
  namespaced: true,
};
export const AGENT_POLICIES: ResourceType = {
  group: GROUP,
  version: VERSION,
  plural: 'agentpolicies',
  kind: 'AgentPolicy',
  namespaced: false,
};
