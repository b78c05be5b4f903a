// Tool sidecars (issue 9 §4): the containers an AgentDefinition puts next to the agent, as Kubernetes native
// sidecars (init containers with `restartPolicy: Always`): they start after our init and before the agent, keep
// running beside it, and stop after it, so the Job completes when the agent does. Each is hardened like the agent
// container. A sidecar that declares `mcp` becomes an http MCP server of the agent CLI on localhost, and gates the
// agent's start with a startup probe on its port. Pure.
import type { AgentDefinition, Sidecar } from '../api/index.ts';
import type { JsonObject } from '../shared/json-object.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { AGENT_CONTAINER_NAME, INIT_CONTAINER_NAME } from './bundle.ts';
import { AGENT_SECRETS_NAME, isReservedEnvName, type McpServerInput } from './env.ts';
import { AGENT_SECURITY_CONTEXT } from './pod-template.ts';
import { REALTIME_PORT } from './realtime.ts';

/** Resources of a sidecar that sets none. */
export const SIDECAR_DEFAULT_RESOURCES: JsonObject = {
  requests: { cpu: '50m', memory: '64Mi' },
  limits: { memory: '256Mi' },
};
/** The MCP path when a sidecar's `mcp` names none. */
export const DEFAULT_MCP_PATH = '/mcp';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Why the definition's sidecars cannot be wired next to these pod containers, or undefined. */
export function sidecarProblem(
  definition: AgentDefinition,
  podContainerNames: readonly string[],
): string | undefined {
  const seen = new Set<string>([INIT_CONTAINER_NAME, AGENT_CONTAINER_NAME, ...podContainerNames]);
  const mcpNames = new Set(definition.spec.resources.mcp_servers.map((m) => m.name));
  // Containers of a pod share its network: two listeners on one port cannot both start.
  const ports = new Map<number, string>(
    definition.spec.execution === 'realtime' ? [[REALTIME_PORT, 'the realtime prompt server']] : [],
  );
  for (const s of definition.spec.sidecars) {
    if (!DNS_LABEL.test(s.name)) return `sidecar name ${JSON.stringify(s.name)} is not a DNS label`;
    if (seen.has(s.name)) return `sidecar ${s.name}: the run pod already has a container of that name`;
    seen.add(s.name);
    if (s.image.trim() === '') return `sidecar ${s.name} has no image`;
    const own = new Set([
      ...s.ports.map((p) => p.containerPort),
      ...(s.mcp !== undefined ? [s.mcp.port] : []),
    ]);
    for (const port of own) {
      const taken = ports.get(port);
      if (taken !== undefined) return `sidecar ${s.name}: port ${port} is already used by ${taken}`;
      ports.set(port, `sidecar ${s.name}`);
    }
    if (s.mcp !== undefined) {
      if (mcpNames.has(s.name))
        return `sidecar ${s.name}: resources.mcp_servers already has a server of that name`;
      const path = s.mcp.path ?? DEFAULT_MCP_PATH;
      if (!path.startsWith('/')) return `sidecar ${s.name}: mcp.path must start with /`;
    }
  }
  return undefined;
}

/** The MCP servers the definition's sidecars serve, as the agent CLI is told about them (localhost, http). */
export function sidecarMcpServers(definition: AgentDefinition): McpServerInput[] {
  return definition.spec.sidecars.flatMap((s) =>
    s.mcp === undefined
      ? []
      : [
          {
            name: s.name,
            transport: 'http' as const,
            url: `http://127.0.0.1:${s.mcp.port}${s.mcp.path ?? DEFAULT_MCP_PATH}`,
          },
        ],
  );
}

/** One sidecar as a native sidecar container spec (reserved env names dropped, secrets from agent-secrets). */
function sidecarContainer(s: Sidecar): JsonObject {
  const env = [
    ...s.env.filter((e) => !isReservedEnvName(e.name)).map((e) => ({ name: e.name, value: e.value })),
    ...s.secrets
      .filter((e) => !isReservedEnvName(e.name))
      .map((e) => ({
        name: e.name,
        valueFrom: { secretKeyRef: { name: AGENT_SECRETS_NAME, key: e.ref, optional: false } },
      })),
  ];
  const ports = [
    ...s.ports.map((p) => ({
      ...(p.name !== undefined ? { name: p.name } : {}),
      containerPort: p.containerPort,
    })),
    ...(s.mcp !== undefined && !s.ports.some((p) => p.containerPort === s.mcp?.port)
      ? [{ name: 'mcp', containerPort: s.mcp.port }]
      : []),
  ];
  return {
    name: s.name,
    image: s.image,
    restartPolicy: 'Always',
    ...(env.length > 0 ? { env } : {}),
    ...(ports.length > 0 ? { ports } : {}),
    resources: structuredClone(s.resources ?? SIDECAR_DEFAULT_RESOURCES),
    securityContext: structuredClone(AGENT_SECURITY_CONTEXT),
    ...(s.mcp !== undefined
      ? { startupProbe: { tcpSocket: { port: s.mcp.port }, periodSeconds: 1, failureThreshold: 120 } }
      : {}),
  };
}

/** The native sidecar containers of the definition, or why they cannot be wired. */
export function buildSidecars(
  definition: AgentDefinition,
  podContainerNames: readonly string[],
): Result<JsonObject[], string> {
  const problem = sidecarProblem(definition, podContainerNames);
  if (problem !== undefined) return err(problem);
  return ok(definition.spec.sidecars.map(sidecarContainer));
}
