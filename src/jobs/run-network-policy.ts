// The per-run NetworkPolicy (issue 9 §3, extending docs/design/reference-behaviour.md#d-i-networkpolicy-per-run):
// every run pod is selected by exactly one policy
// of its own, which admits what that run needs and nothing else. deploy/networkpolicy.yaml denies all ingress and
// egress to run pods by default (`agent-job-default-deny`); NetworkPolicies add up, so the run's policy is its only
// way out (and, for a realtime run, the controller's only way in).
//
// Egress: cluster DNS; public addresses on TCP 443 (the vendor APIs and the default git host); and every endpoint
// the AgentDefinition names: http sinks, http/sse MCP servers, repositories, the conversation store and the skills
// source. Ingress: none, except a realtime run's prompt port (8090) from the controller's pods.
//
// Trade-off: a NetworkPolicy matches IP blocks, never DNS names. An endpoint named by an IP literal is admitted to
// that address alone (/32 or /128); one named by a hostname is admitted to its TCP port on every address
// (0.0.0.0/0 and ::/0, but never the cloud metadata addresses), because the name may resolve anywhere, including
// to private or in-cluster addresses that the public rule excludes. Whether an ipBlock also matches in-cluster pod
// IPs is up to the CNI.

import type { Agent, AgentDefinition, Station } from '../api/index.ts';
import { COMPONENT_JOB, LABEL_AGENT, LABEL_COMPONENT, safeName } from './names.ts';
import { REALTIME_PORT } from './realtime.ts';
import { type RunObjectMetadata, runObjectMetadata } from './run-metadata.ts';
import { SERVER_PORT } from './server-names.ts';

/** apiVersion of the NetworkPolicy the controller creates. */
export const NETWORK_POLICY_API_VERSION = 'networking.k8s.io/v1';
/** Every IPv4 address: the destination of a sink named by a hostname. */
export const ANY_IPV4 = '0.0.0.0/0';
/** Every IPv6 address: the destination of a sink named by a hostname. */
export const ANY_IPV6 = '::/0';
/**
 * Cloud metadata addresses (instance credentials), never admitted by a rule that opens a port "everywhere" for a
 * hostname: link-local IPv4 and IPv6, and the IPv6 instance metadata address.
 */
export const METADATA_IPV4: readonly string[] = ['169.254.0.0/16'];
export const METADATA_IPV6: readonly string[] = ['fe80::/10', 'fd00:ec2::254/128'];

/** One peer of a rule: an IP block (with exceptions), or pods picked by namespace and labels. */
export type NetworkPolicyPeer =
  | { readonly ipBlock: { readonly cidr: string; readonly except?: readonly string[] } }
  | {
      readonly namespaceSelector: { readonly matchLabels: Readonly<Record<string, string>> };
      readonly podSelector: { readonly matchLabels: Readonly<Record<string, string>> };
    };

/** One port of a rule. */
export interface NetworkPolicyPort {
  readonly protocol: 'TCP' | 'UDP';
  readonly port: number;
}

/** One egress rule: these peers on these ports. */
export interface NetworkPolicyEgressRule {
  readonly to: readonly NetworkPolicyPeer[];
  readonly ports: readonly NetworkPolicyPort[];
}

/** One ingress rule: from these peers (absent: from anywhere) on these ports. */
export interface NetworkPolicyIngressRule {
  readonly from?: readonly NetworkPolicyPeer[];
  readonly ports: readonly NetworkPolicyPort[];
}

/** A networking.k8s.io/v1 NetworkPolicy manifest ready to POST. */
export interface NetworkPolicyManifest {
  readonly apiVersion: typeof NETWORK_POLICY_API_VERSION;
  readonly kind: 'NetworkPolicy';
  readonly metadata: RunObjectMetadata;
  readonly spec: {
    readonly podSelector: { readonly matchLabels: Readonly<Record<string, string>> };
    readonly policyTypes: readonly ['Ingress', 'Egress'];
    readonly ingress: readonly NetworkPolicyIngressRule[];
    readonly egress: readonly NetworkPolicyEgressRule[];
  };
}

/** What the policy is built from: the run's Agent, Station (labels), AgentDefinition (its endpoints). */
export interface RunNetworkPolicyInput {
  readonly agent: Agent;
  readonly station: Station;
  readonly definition: AgentDefinition;
  /** Namespace of the controller's pods, admitted to a realtime run's prompt port; none when unknown. */
  readonly controllerNamespace?: string | undefined;
  /**
   * Where the API server listens (the endpoints of Service `default/kubernetes`), for a run whose agent holds a
   * token (issue 9 §2): its egress admits those addresses and ports. Undefined: no such rule.
   */
  readonly apiServer?: ApiServerEndpoints | undefined;
  /** The ready endpoints of the Services the run depends on (issue 10 §4): admitted each alone, on their ports. */
  readonly dependencies?: readonly ApiServerEndpoints[] | undefined;
  /** The OTLP/HTTP traces URL the run pod exports its spans to (issue 10 §5), when the controller traces. */
  readonly tracesUrl?: string | undefined;
  /**
   * The model gateway's namespace (issue 28), when runs call their models through it: egress admits the gateway's
   * pods on its API port, and the public TCP 443 rule (the vendors' endpoints) is left out.
   */
  readonly gatewayNamespace?: string | undefined;
}

/** The label value of the gateway's pods (`agents.re-cinq.com/component`), and its model-API port. */
export const GATEWAY_COMPONENT = 'gateway';
export const GATEWAY_API_PORT = 8080;

/** The gateway's pods in `namespace`, on its model-API port. */
export function gatewayRule(namespace: string): NetworkPolicyEgressRule {
  return {
    to: [
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
        podSelector: { matchLabels: { [LABEL_COMPONENT]: GATEWAY_COMPONENT } },
      },
    ],
    ports: [{ protocol: 'TCP', port: GATEWAY_API_PORT }],
  };
}

/** The API server's endpoint addresses and ports (NetworkPolicies match after the Service's translation). */
export interface ApiServerEndpoints {
  readonly addresses: readonly string[];
  readonly ports: readonly number[];
}

/** One egress rule admitting endpoints (the API server, a dependency): each address alone, on each of its ports. */
export function endpointsRule(api: ApiServerEndpoints): NetworkPolicyEgressRule | undefined {
  const to = api.addresses.map((a) => ({ ipBlock: { cidr: a.includes(':') ? `${a}/128` : `${a}/32` } }));
  if (to.length === 0 || api.ports.length === 0) return undefined;
  return { to, ports: api.ports.map((port) => ({ protocol: 'TCP' as const, port })) };
}

/** Private and link-local IPv4 ranges the public 443 rule leaves out. */
export const PRIVATE_IPV4_RANGES: readonly string[] = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10',
  '169.254.0.0/16',
];

/** Cluster DNS: the kube-dns pods of kube-system on port 53, UDP and TCP. */
export const DNS_RULE: NetworkPolicyEgressRule = {
  to: [
    {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
      podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
    },
  ],
  ports: [
    { protocol: 'UDP', port: 53 },
    { protocol: 'TCP', port: 53 },
  ],
};

/** Public IPv4 addresses on TCP 443: the vendor APIs, the default git host, public https endpoints. */
export const PUBLIC_HTTPS_RULE: NetworkPolicyEgressRule = {
  to: [{ ipBlock: { cidr: ANY_IPV4, except: PRIVATE_IPV4_RANGES } }],
  ports: [{ protocol: 'TCP', port: 443 }],
};

/** Where an endpoint URL points: an exact address (CIDR) or, for a hostname, anywhere; and the TCP port. */
export interface Destination {
  /** `a.b.c.d/32` or `<ipv6>/128` for an IP literal; `undefined` for a hostname (every address). */
  readonly cidr: string | undefined;
  readonly port: number;
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'http:': 80, 'https:': 443, 'ssh:': 22 };
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
const IPV4_MAPPED = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/;

/** `::ffff:a01:203` → `10.1.2.3` (traffic to an IPv4-mapped address leaves as IPv4); any other IPv6 unchanged. */
function unmapIpv4(ipv6: string): string | undefined {
  const m = IPV4_MAPPED.exec(ipv6);
  if (m === null) return undefined;
  const hi = Number.parseInt(m[1] ?? '', 16);
  const lo = Number.parseInt(m[2] ?? '', 16);
  return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');
}

/**
 * Where an http(s) (or ssh) URL connects to, or `undefined` when nothing could use it (not an absolute URL of
 * those schemes, or port 0). Relies on WHATWG URL normalisation: IPv4 in any notation becomes dotted decimal, IPv6
 * is compressed and bracketed, and a port equal to the scheme default is dropped (so it reads as the default).
 * An IPv4-mapped IPv6 address is admitted as the IPv4 address it stands for.
 */
export function urlDestination(url: string): Destination | undefined {
  let u: URL;
  try {
    u = new URL(url.trim());
  } catch {
    return undefined;
  }
  const fallback = DEFAULT_PORTS[u.protocol];
  if (fallback === undefined) return undefined;
  const port = u.port === '' ? fallback : Number(u.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  const host = u.hostname;
  if (host.startsWith('[') && host.endsWith(']')) {
    const ipv6 = host.slice(1, -1);
    const ipv4 = unmapIpv4(ipv6);
    return { cidr: ipv4 === undefined ? `${ipv6}/128` : `${ipv4}/32`, port };
  }
  if (IPV4.test(host)) return { cidr: `${host}/32`, port };
  if (host === '') return undefined;
  return { cidr: undefined, port };
}

/** The egress rules admitting `destinations`: one per distinct pair, in first-seen order; hostnames cover IPs. */
function egressRules(destinations: readonly Destination[]): NetworkPolicyEgressRule[] {
  const anywhere = new Set(destinations.filter((d) => d.cidr === undefined).map((d) => d.port));
  const seen = new Set<string>();
  const rules: NetworkPolicyEgressRule[] = [];
  for (const d of destinations) {
    // An exact address on a port already open to every address adds nothing.
    if (d.cidr !== undefined && anywhere.has(d.port)) continue;
    const key = `${d.cidr ?? '*'} ${d.port}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const to =
      d.cidr === undefined
        ? [
            { ipBlock: { cidr: ANY_IPV4, except: METADATA_IPV4 } },
            { ipBlock: { cidr: ANY_IPV6, except: METADATA_IPV6 } },
          ]
        : [{ ipBlock: { cidr: d.cidr } }];
    rules.push({ to, ports: [{ protocol: 'TCP', port: d.port }] });
  }
  return rules;
}

/** A repository URL as the init hands it to git (`owner/name`, https, ssh, scp-like `user@host:path`). */
export function repoDestination(url: string): Destination | undefined {
  const raw = url.trim();
  // `owner/name` is GitHub over https: a public address on 443, which the public rule already admits.
  if (/^[A-Za-z0-9_][A-Za-z0-9_.-]*\/[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(raw)) return undefined;
  const scp = /^[A-Za-z0-9_][A-Za-z0-9_.-]*@([A-Za-z0-9][A-Za-z0-9.-]*):[^:]/.exec(raw);
  if (scp !== null) return urlDestination(`ssh://${scp[1]}/`);
  return urlDestination(raw);
}

/** Every endpoint the definition names, in a stable order: sinks, MCP servers, repositories, stores. */
export function definitionDestinations(definition: AgentDefinition): Destination[] {
  const { output, resources } = definition.spec;
  const urls: (Destination | undefined)[] = [
    ...output.sinks.map((sink) =>
      sink.type === 'http' && sink.url !== undefined ? urlDestination(sink.url) : undefined,
    ),
    ...resources.mcp_servers.map((m) =>
      m.transport !== 'stdio' && m.url !== undefined ? urlDestination(m.url) : undefined,
    ),
    ...resources.repos.map((r) => repoDestination(r.url)),
    ...(resources.conversation?.source !== undefined ? [urlDestination(resources.conversation.source)] : []),
    ...(resources.skills_source !== undefined ? [urlDestination(resources.skills_source)] : []),
  ];
  return urls.filter((d): d is Destination => d !== undefined);
}

/**
 * The NetworkPolicy of this run. Pure and total.
 *
 * Guarantees: named like the run's Job (`jobNameFor(agent)`), in the Agent's namespace, with the Job's labels and
 * Agent uid annotation, controlled by the Agent (ownerReference with controller and blockOwnerDeletion, so it is
 * garbage-collected with the run); selects only the pods of this run (`agents.re-cinq.com/component: job` and
 * `agents.re-cinq.com/agent: safeName(agent name)`, the labels the Job's pod template carries); both policy types.
 * Egress: DNS, public TCP 443 (behind the model gateway: the gateway's pods on 8080 instead), then one rule per distinct (destination, TCP port) the definition names that those
 * do not already cover: an IP literal → that address alone, a hostname → the port on every IPv4 and IPv6 address.
 * A URL without a port uses 80 for http, 443 for https, 22 for ssh. Ingress: none, or for a realtime run the
 * controller's pods (label `agents.re-cinq.com/component: controller` in `controllerNamespace`) on TCP 8090, or for a
 * server (issue 12) its clients, from anywhere, on TCP 8080.
 * A run holding a token (`apiServer` given) also reaches the API server's endpoints, each address alone; a traced
 * run (`tracesUrl`) its OTLP endpoint, like a sink.
 */
export function buildRunNetworkPolicy(input: RunNetworkPolicyInput): NetworkPolicyManifest {
  const { agent, station, definition, controllerNamespace } = input;
  const api = input.apiServer !== undefined ? endpointsRule(input.apiServer) : undefined;
  const ingress: NetworkPolicyIngressRule[] =
    definition.spec.execution === 'server'
      ? [{ ports: [{ protocol: 'TCP', port: SERVER_PORT }] }]
      : definition.spec.execution === 'realtime' && controllerNamespace !== undefined
        ? [
            {
              from: [
                {
                  namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': controllerNamespace } },
                  podSelector: { matchLabels: { [LABEL_COMPONENT]: 'controller' } },
                },
              ],
              ports: [{ protocol: 'TCP', port: REALTIME_PORT }],
            },
          ]
        : [];
  return {
    apiVersion: NETWORK_POLICY_API_VERSION,
    kind: 'NetworkPolicy',
    metadata: runObjectMetadata(agent, station.metadata.name),
    spec: {
      podSelector: {
        matchLabels: { [LABEL_COMPONENT]: COMPONENT_JOB, [LABEL_AGENT]: safeName(agent.metadata.name) },
      },
      policyTypes: ['Ingress', 'Egress'],
      ingress,
      egress: [
        DNS_RULE,
        ...(input.gatewayNamespace !== undefined
          ? [gatewayRule(input.gatewayNamespace)]
          : [PUBLIC_HTTPS_RULE]),
        ...egressRules([
          ...definitionDestinations(definition),
          ...(input.tracesUrl !== undefined ? [urlDestination(input.tracesUrl)] : []).filter(
            (d): d is Destination => d !== undefined,
          ),
        ]),
        ...(api !== undefined ? [api] : []),
        ...(input.dependencies ?? []).flatMap((d) => {
          const rule = endpointsRule(d);
          return rule !== undefined ? [rule] : [];
        }),
      ],
    },
  };
}
