// Server mode as e2e tests drive it: an AgentPolicy that allows it, a replica with SERVER_ENABLED as the deploy/
// ServiceAccount, and the address a Service sends to (found as kube-proxy would).
import * as v from 'valibot';
import { type ControllerProcess, createAgentPolicy, type Scenario } from './controller.ts';
import { pollUntil } from './poll.ts';

const ServedPodSchema = v.looseObject({
  metadata: v.looseObject({
    uid: v.string(),
    deletionTimestamp: v.optional(v.nullable(v.string())),
    ownerReferences: v.optional(v.array(v.looseObject({ kind: v.string(), name: v.string() }))),
  }),
  status: v.looseObject({
    podIP: v.optional(v.string()),
    conditions: v.optional(v.array(v.looseObject({ type: v.string(), status: v.string() }))),
  }),
});

/** An AgentPolicy for this namespace only, allowing `executions`; deleted at the end. */
export function createPolicy(s: Scenario, suffix: string, executions: readonly string[]): Promise<string> {
  return createAgentPolicy(s, suffix, { namespaces: [s.ns], executions: { allowed: executions } });
}

export async function startServerReplica(
  s: Scenario,
  agentImage: string,
  enabled = true,
): Promise<ControllerProcess> {
  return s.startReplica({
    kubeconfig: await s.kubeconfigAs('agent-controller'),
    env: {
      AGENT_IMAGE: agentImage,
      AGENT_POLL_INTERVAL_MS: '1000',
      ...(enabled ? { SERVER_ENABLED: 'true' } : {}),
    },
  });
}

/**
 * The address:port a Service sends to, found as kube-proxy would: its selector, a ready pod it selects, that pod's
 * IP and the Service's targetPort. (The test node's pod IPs are loopback addresses, which EndpointSlices may not
 * hold, so the test bed runs no EndpointSlice controller.)
 */
export async function endpointOf(s: Scenario, service: string): Promise<string> {
  const svc = await s.client.get(
    `/api/v1/namespaces/${s.ns}/services/${service}`,
    v.looseObject({
      spec: v.looseObject({
        selector: v.record(v.string(), v.string()),
        ports: v.array(v.looseObject({ targetPort: v.number() })),
      }),
    }),
  );
  const selector = Object.entries(svc.spec.selector)
    .map(([k, val]) => `${k}=${val}`)
    .join(',');
  const port = svc.spec.ports[0]?.targetPort;
  return pollUntil(
    async (observe) => {
      const pods = await s.client.list(
        `/api/v1/namespaces/${s.ns}/pods`,
        { labelSelector: selector },
        ServedPodSchema,
      );
      observe(pods.items.map((p) => p.status));
      // As an EndpointSlice would: ready pods that are not terminating.
      const ready = pods.items.find(
        (p) =>
          (p.metadata.deletionTimestamp ?? undefined) === undefined &&
          (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
      );
      return ready?.status.podIP !== undefined && port !== undefined
        ? `${ready.status.podIP}:${port}`
        : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250, description: `a ready pod behind Service ${service}` },
  );
}
