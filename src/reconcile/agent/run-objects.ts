import type { AgentDefinition, Station } from '../../api/index.ts';
import {
  type ApiServerEndpoints,
  buildRunBindings,
  buildRunNetworkPolicy,
  buildRunServiceAccount,
  runHoldsToken,
} from '../../jobs/index.ts';
import type { Action } from '../actions.ts';
import { requestedRoles } from '../policy/check.ts';
import { REASON } from '../reasons.ts';
import type { CommonSnapshot } from '../snapshot/common.ts';
import { agentRef, event } from './status.ts';

/**
 * The run's own objects, created right before its Job: its ServiceAccount (issue 9 §2), the bindings of that
 * ServiceAccount to the ClusterRoles the definition asks for (already checked against the policy), then its
 * NetworkPolicy (docs/design/reference-behaviour.md#d-i-networkpolicy-per-run, issue 9 §3). The ServiceAccount,
 * RoleBindings and NetworkPolicy are owned by the
 * Agent; ClusterRoleBindings carry its uid in a label (the cleanup finalizer removes them).
 */
export function runObjectActions(s: CommonSnapshot, station: Station, definition: AgentDefinition): Action[] {
  const token = runHoldsToken(definition);
  const bindings = token ? buildRunBindings(s.agent, station.metadata.name, requestedRoles(definition)) : [];
  return [
    { kind: 'createServiceAccount', serviceAccount: buildRunServiceAccount(s.agent, station.metadata.name) },
    ...bindings.map((binding): Action => ({ kind: 'createRunBinding', binding })),
    {
      kind: 'createNetworkPolicy',
      policy: buildRunNetworkPolicy({
        agent: s.agent,
        station,
        definition,
        controllerNamespace: s.options.controllerNamespace,
        ...(token ? { apiServer: s.apiServer } : {}),
        dependencies: dependencyEndpoints(s, definition),
        tracesUrl: s.options.tracing?.runTracesUrl,
        gatewayNamespace: s.options.gateway !== undefined ? s.options.controllerNamespace : undefined,
      }),
    },
  ];
}

/** The ready endpoints of each dependency (the ports it names, else every port its slices serve). */
function dependencyEndpoints(s: CommonSnapshot, definition: AgentDefinition): ApiServerEndpoints[] {
  const observed = s.endpoints?.kind === 'observed' ? s.endpoints.byService : undefined;
  if (observed === undefined) return [];
  return definition.spec.dependencies.map((d) => {
    const slices = observed.get(d.service) ?? [];
    const addresses = [...new Set(slices.flatMap((x) => x.readyAddresses))];
    const ports = d.port !== undefined ? [d.port] : [...new Set(slices.flatMap((x) => x.ports))];
    return { addresses, ports };
  });
}

/** Warnings about the run's objects, recorded after its start: a token holder whose egress misses the API server. */
export function runObjectWarnings(s: CommonSnapshot, definition: AgentDefinition): Action[] {
  if (!runHoldsToken(definition) || s.apiServer !== undefined) return [];
  return [
    event(
      agentRef(s.agent),
      'Warning',
      REASON.apiServerUnknown,
      "The run's NetworkPolicy does not admit the API server: its address is not known (the controller reads EndpointSlice default/kubernetes; grant it with deploy/components/run-rbac)",
    ),
  ];
}
