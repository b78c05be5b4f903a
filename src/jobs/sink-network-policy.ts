// The per-run egress NetworkPolicy that admits the http sinks an AgentDefinition names (decision (i)).
//
// The static policy `agent-job-egress` (deploy/networkpolicy.yaml, reference-system.md 10) lets run pods reach
// only cluster DNS and public addresses on TCP 443, so a sink on plain HTTP, on another port or at an in-cluster
// address is blocked wherever the CNI enforces policy. NetworkPolicies are additive: this one only widens egress,
// for the pods of one run, to exactly the (destination, port) pairs its sinks name.
//
// Trade-off: a NetworkPolicy matches IP blocks, never DNS names. A sink named by an IP literal is admitted to that
// address alone (/32 or /128); a sink named by a hostname is admitted to its TCP port on every address
// (0.0.0.0/0 and ::/0), because the name may resolve anywhere, including to private or in-cluster addresses that
// the static policy excludes. Whether an ipBlock also matches in-cluster pod IPs is up to the CNI.

import type { Agent, AgentDefinition, Station } from '../api/index.ts';
import { type RunObjectMetadata, runObjectMetadata } from './build-job.ts';
import { COMPONENT_JOB, LABEL_AGENT, LABEL_COMPONENT, safeName } from './names.ts';

/** apiVersion of the NetworkPolicy the controller creates. */
export const NETWORK_POLICY_API_VERSION = 'networking.k8s.io/v1';
/** Every IPv4 address: the destination of a sink named by a hostname. */
export const ANY_IPV4 = '0.0.0.0/0';
/** Every IPv6 address: the destination of a sink named by a hostname. */
export const ANY_IPV6 = '::/0';

/** One peer of an egress rule: always an IP block here. */
export interface NetworkPolicyPeer {
  readonly ipBlock: { readonly cidr: string };
}

/** One port of an egress rule: always TCP (http sinks speak HTTP over TCP). */
export interface NetworkPolicyPort {
  readonly protocol: 'TCP';
  readonly port: number;
}

/** One egress rule: these peers on these ports. */
export interface NetworkPolicyEgressRule {
  readonly to: readonly NetworkPolicyPeer[];
  readonly ports: readonly NetworkPolicyPort[];
}

/** A networking.k8s.io/v1 NetworkPolicy manifest ready to POST. */
export interface NetworkPolicyManifest {
  readonly apiVersion: typeof NETWORK_POLICY_API_VERSION;
  readonly kind: 'NetworkPolicy';
  readonly metadata: RunObjectMetadata;
  readonly spec: {
    readonly podSelector: { readonly matchLabels: Readonly<Record<string, string>> };
    readonly policyTypes: readonly ['Egress'];
    readonly egress: readonly NetworkPolicyEgressRule[];
  };
}

/** What the policy is built from: the run's Agent, Station (for the labels) and AgentDefinition (the sinks). */
export interface SinkNetworkPolicyInput {
  readonly agent: Agent;
  readonly station: Station;
  readonly definition: AgentDefinition;
}

/** Where a sink URL points: an exact address (CIDR) or, for a hostname, anywhere; and the TCP port. */
export interface SinkDestination {
  /** `a.b.c.d/32` or `<ipv6>/128` for an IP literal; `undefined` for a hostname (every address). */
  readonly cidr: string | undefined;
  readonly port: number;
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'http:': 80, 'https:': 443 };
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
 * Where an http sink URL sends to, or `undefined` when the supervisor could not use it either (not an absolute
 * http(s) URL, or port 0). Relies on WHATWG URL normalisation: IPv4 in any notation becomes dotted decimal, IPv6
 * is compressed and bracketed, and a port equal to the scheme default is dropped (so it reads as the default).
 * An IPv4-mapped IPv6 address is admitted as the IPv4 address it stands for.
 */
export function sinkDestination(url: string): SinkDestination | undefined {
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
function egressRules(destinations: readonly SinkDestination[]): NetworkPolicyEgressRule[] {
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
        ? [{ ipBlock: { cidr: ANY_IPV4 } }, { ipBlock: { cidr: ANY_IPV6 } }]
        : [{ ipBlock: { cidr: d.cidr } }];
    rules.push({ to, ports: [{ protocol: 'TCP', port: d.port }] });
  }
  return rules;
}

/**
 * The NetworkPolicy that lets the pods of this run reach the http sinks its AgentDefinition names, or `undefined`
 * when it names none that can be used (no http sinks, or only URLs that do not parse as http(s)). Pure and total.
 *
 * Guarantees: named like the run's Job (`jobNameFor(agent)`), in the Agent's namespace, with the Job's labels and
 * Agent uid annotation, controlled by the Agent (ownerReference with controller and blockOwnerDeletion, so it is
 * garbage-collected with the run); selects only the pods of this run (`agents.re-cinq.com/component: job` and
 * `agents.re-cinq.com/agent: safeName(agent name)`, the labels the Job's pod template carries); policy type Egress
 * only (ingress stays as the static policy has it); one rule per distinct (destination, TCP port): an IP literal
 * → that address alone, a hostname → the port on every IPv4 and IPv6 address (NetworkPolicy cannot match names).
 * A URL without a port uses 80 for http and 443 for https.
 */
export function buildSinkNetworkPolicy(input: SinkNetworkPolicyInput): NetworkPolicyManifest | undefined {
  const { agent, station, definition } = input;
  const destinations = definition.spec.output.sinks.flatMap((sink) => {
    if (sink.type !== 'http' || sink.url === undefined) return [];
    const d = sinkDestination(sink.url);
    return d === undefined ? [] : [d];
  });
  const egress = egressRules(destinations);
  if (egress.length === 0) return undefined;
  return {
    apiVersion: NETWORK_POLICY_API_VERSION,
    kind: 'NetworkPolicy',
    metadata: runObjectMetadata(agent, station.metadata.name),
    spec: {
      podSelector: {
        matchLabels: { [LABEL_COMPONENT]: COMPONENT_JOB, [LABEL_AGENT]: safeName(agent.metadata.name) },
      },
      policyTypes: ['Egress'],
      egress,
    },
  };
}
