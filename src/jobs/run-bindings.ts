// The run's RBAC bindings (issue 9 §2): each ClusterRole an AgentDefinition asks for (and its Station's policy lists
// as grantable) is bound to the run's own ServiceAccount, in the run's namespace (a RoleBinding, owned by the
// Agent) or cluster-wide (a ClusterRoleBinding: a cluster-scoped object cannot be owned by a namespaced Agent, so it
// carries the run's namespace, name and uid in labels, and the Agent holds the cleanup finalizer until it is gone).
// The controller only binds existing ClusterRoles; it never writes a rule. Pure.
import type { Agent } from '../api/index.ts';
import { fnv1a8, jobNameFor, LABEL_AGENT, safeName } from './names.ts';
import { type RunObjectMetadata, runObjectMetadata } from './run-metadata.ts';

export const RBAC_API_VERSION = 'rbac.authorization.k8s.io/v1';
/** Label of every run binding: the uid of its Agent (the cleanup and the sweep select on it). */
export const LABEL_RUN_UID = 'agents.re-cinq.com/run-uid';
/** Label of every run binding: the namespace of its Agent. */
export const LABEL_RUN_NAMESPACE = 'agents.re-cinq.com/run-namespace';
/** Label selector matching every run binding. */
export const RUN_BINDING_SELECTOR = LABEL_RUN_UID;
/** Finalizer an Agent holds while its run may hold bindings (issue 9 §6). */
export const RUN_CLEANUP_FINALIZER = 'agents.re-cinq.com/cleanup';

interface RoleRef {
  readonly apiGroup: 'rbac.authorization.k8s.io';
  readonly kind: 'ClusterRole';
  readonly name: string;
}

interface Subject {
  readonly kind: 'ServiceAccount';
  readonly name: string;
  readonly namespace: string;
}

/** A RoleBinding in the run's namespace, owned by the Agent. */
export interface RoleBindingManifest {
  readonly apiVersion: typeof RBAC_API_VERSION;
  readonly kind: 'RoleBinding';
  readonly metadata: RunObjectMetadata;
  readonly roleRef: RoleRef;
  readonly subjects: readonly [Subject];
}

/** A ClusterRoleBinding of one run: no owner, labelled with its run. */
export interface ClusterRoleBindingManifest {
  readonly apiVersion: typeof RBAC_API_VERSION;
  readonly kind: 'ClusterRoleBinding';
  readonly metadata: {
    readonly name: string;
    readonly labels: Readonly<Record<string, string>>;
    readonly annotations: Readonly<Record<string, string>>;
  };
  readonly roleRef: RoleRef;
  readonly subjects: readonly [Subject];
}

export type RunBindingManifest = RoleBindingManifest | ClusterRoleBindingManifest;

/** The labels every binding of this run carries. */
export function runBindingLabels(agent: Agent): Record<string, string> {
  return {
    [LABEL_RUN_UID]: agent.metadata.uid,
    [LABEL_RUN_NAMESPACE]: agent.metadata.namespace,
    [LABEL_AGENT]: safeName(agent.metadata.name),
  };
}

const roleRef = (name: string): RoleRef => ({
  apiGroup: 'rbac.authorization.k8s.io',
  kind: 'ClusterRole',
  name,
});

const subject = (agent: Agent): Subject => ({
  kind: 'ServiceAccount',
  name: jobNameFor(agent.metadata.name),
  namespace: agent.metadata.namespace,
});

/** The RoleBinding of ClusterRole `role` for this run: `<run>-<hash of role>`. */
export function buildRunRoleBinding(agent: Agent, stationName: string, role: string): RoleBindingManifest {
  const base = runObjectMetadata(agent, stationName);
  return {
    apiVersion: RBAC_API_VERSION,
    kind: 'RoleBinding',
    metadata: {
      ...base,
      name: `${base.name}-${fnv1a8(`role/${role}`)}`,
      labels: { ...base.labels, ...runBindingLabels(agent) },
    },
    roleRef: roleRef(role),
    subjects: [subject(agent)],
  };
}

/** The ClusterRoleBinding of ClusterRole `role` for this run: `<run>.<namespace>.<hash of uid and role>`. */
export function buildRunClusterRoleBinding(agent: Agent, role: string): ClusterRoleBindingManifest {
  const { namespace, name, uid } = agent.metadata;
  return {
    apiVersion: RBAC_API_VERSION,
    kind: 'ClusterRoleBinding',
    metadata: {
      name: `${jobNameFor(name)}.${namespace}.${fnv1a8(`${uid}/${role}`)}`,
      labels: runBindingLabels(agent),
      annotations: { 'agents.re-cinq.com/agent-name': name },
    },
    roleRef: roleRef(role),
    subjects: [subject(agent)],
  };
}

/** Every binding of a run: one RoleBinding per role, then one ClusterRoleBinding per cluster role. */
export function buildRunBindings(
  agent: Agent,
  stationName: string,
  request: { readonly roles: readonly string[]; readonly clusterRoles: readonly string[] },
): RunBindingManifest[] {
  return [
    ...request.roles.map((role) => buildRunRoleBinding(agent, stationName, role)),
    ...request.clusterRoles.map((role) => buildRunClusterRoleBinding(agent, role)),
  ];
}

/** A run binding as listed from the API server (only what the cleanup and the sweep read). */
export interface ListedBinding {
  readonly kind: 'RoleBinding' | 'ClusterRoleBinding';
  readonly namespace?: string | undefined;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** What the sweep knows about the Agent a binding names. */
export type BindingOwnerState = 'active' | 'finished' | 'gone';

/**
 * The bindings the sweep deletes: those whose Agent is gone (a crash between the create and its record, a finalizer
 * removed by hand), and those of a finished Agent that no longer holds the cleanup finalizer (its cleanup already
 * ran, so this one was created after it). `owner` answers from the controller's cache by uid.
 */
export function strayBindings(
  bindings: readonly ListedBinding[],
  owner: (uid: string) => BindingOwnerState,
): ListedBinding[] {
  return bindings.filter((b) => {
    const uid = b.labels[LABEL_RUN_UID];
    if (uid === undefined || uid === '') return false;
    return owner(uid) !== 'active';
  });
}
