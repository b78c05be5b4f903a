/** API group of the three custom resources. */
export const GROUP = 'agents.re-cinq.com';
/** The one served and storage version of the custom resources. */
export const VERSION = 'v1alpha1';
/** `apiVersion` value of every custom resource object: `agents.re-cinq.com/v1alpha1`. */
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Kind names of the custom resources. */
export const KIND_AGENT = 'Agent';
export const KIND_STATION = 'Station';
export const KIND_AGENT_DEFINITION = 'AgentDefinition';
export const KIND_AGENT_POLICY = 'AgentPolicy';

/** Resource (plural) names as used in REST paths (`/apis/<group>/<version>/namespaces/<ns>/<plural>`). */
export const PLURAL_AGENTS = 'agents';
export const PLURAL_STATIONS = 'stations';
export const PLURAL_AGENT_DEFINITIONS = 'agentdefinitions';
/** The one cluster-scoped resource: `/apis/<group>/<version>/agentpolicies`. */
export const PLURAL_AGENT_POLICIES = 'agentpolicies';

/** Kinds of the custom resources. */
export type CustomKind =
  | typeof KIND_AGENT
  | typeof KIND_STATION
  | typeof KIND_AGENT_DEFINITION
  | typeof KIND_AGENT_POLICY;

/** Naming facts of one custom resource, exactly as the CRDs declare them. */
export interface ResourceNames {
  readonly kind: CustomKind;
  readonly listKind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
}

/** Names of every custom resource, keyed by kind. */
export const RESOURCE_NAMES: Readonly<Record<CustomKind, ResourceNames>> = {
  Agent: { kind: 'Agent', listKind: 'AgentList', plural: 'agents', singular: 'agent', shortNames: ['agt'] },
  Station: {
    kind: 'Station',
    listKind: 'StationList',
    plural: 'stations',
    singular: 'station',
    shortNames: ['stn'],
  },
  AgentDefinition: {
    kind: 'AgentDefinition',
    listKind: 'AgentDefinitionList',
    plural: 'agentdefinitions',
    singular: 'agentdefinition',
    shortNames: ['agentdef', 'ad'],
  },
  AgentPolicy: {
    kind: 'AgentPolicy',
    listKind: 'AgentPolicyList',
    plural: 'agentpolicies',
    singular: 'agentpolicy',
    shortNames: ['agentpol'],
  },
};

/** Built-in API versions of the core objects the controller reads and writes. */
export const JOB_API_VERSION = 'batch/v1';
export const POD_API_VERSION = 'v1';
