import type { ResourceType } from './paths.ts';

/** Core and built-in resource types the generic client and its tests use. Domain types live in src/api. */
export const CONFIG_MAPS: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'configmaps',
  kind: 'ConfigMap',
  namespaced: true,
};
export const NAMESPACES: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'namespaces',
  kind: 'Namespace',
  namespaced: false,
};
export const PODS: ResourceType = { group: '', version: 'v1', plural: 'pods', kind: 'Pod', namespaced: true };
export const SECRETS: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'secrets',
  kind: 'Secret',
  namespaced: true,
};
export const SERVICE_ACCOUNTS: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'serviceaccounts',
  kind: 'ServiceAccount',
  namespaced: true,
};
export const EVENTS: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'events',
  kind: 'Event',
  namespaced: true,
};
export const JOBS: ResourceType = {
  group: 'batch',
  version: 'v1',
  plural: 'jobs',
  kind: 'Job',
  namespaced: true,
};
export const LEASES: ResourceType = {
  group: 'coordination.k8s.io',
  version: 'v1',
  plural: 'leases',
  kind: 'Lease',
  namespaced: true,
};
/**
 * networking.k8s.io/v1 NetworkPolicies, as the generic client addresses them (the per-run sink policy,
 * docs/design/reference-behaviour.md#d-i-networkpolicy-per-run).
 */
export const NETWORK_POLICIES: ResourceType = {
  group: 'networking.k8s.io',
  version: 'v1',
  plural: 'networkpolicies',
  kind: 'NetworkPolicy',
  namespaced: true,
};
/** rbac.authorization.k8s.io/v1 RoleBindings: a run's namespaced grants (issue 9 §2). */
export const ROLE_BINDINGS: ResourceType = {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  plural: 'rolebindings',
  kind: 'RoleBinding',
  namespaced: true,
};
/** rbac.authorization.k8s.io/v1 ClusterRoleBindings: a run's cluster-wide grants (issue 9 §2). */
export const CLUSTER_ROLE_BINDINGS: ResourceType = {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  plural: 'clusterrolebindings',
  kind: 'ClusterRoleBinding',
  namespaced: false,
};
/** discovery.k8s.io/v1 EndpointSlices: where the API server is (the `kubernetes` Service of `default`). */
export const ENDPOINT_SLICES: ResourceType = {
  group: 'discovery.k8s.io',
  version: 'v1',
  plural: 'endpointslices',
  kind: 'EndpointSlice',
  namespaced: true,
};
