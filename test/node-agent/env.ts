// Container environment, resolved like the kubelet: envFrom first, then env in order, each value
// `$(VAR)`-expanded against what is defined so far. Secrets and ConfigMaps come from injected lookups.
import { parseQuantity as parseResourceQuantity } from '../../src/shared/quantity.ts';
import { err, ok, type Result } from '../../src/shared/result.ts';
import { DEFAULT_PATH, expandVars, type Waiting } from './plan.ts';
import type { Container } from './pod-spec.ts';

/** Reads Secret / ConfigMap data (values already decoded); undefined when the object does not exist. */
export interface EnvSources {
  secret(namespace: string, name: string): Promise<Readonly<Record<string, string>> | undefined>;
  configMap(namespace: string, name: string): Promise<Readonly<Record<string, string>> | undefined>;
}

/** What the downward API (fieldRef) can expose about the pod. */
export interface PodFacts {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  readonly nodeName: string;
  readonly serviceAccountName: string;
  readonly hostIP: string;
  readonly podIP: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

/** Node capacity used when a resourceFieldRef asks for a limit the container does not set. */
export const NODE_CAPACITY = { cpu: '8', memory: '16Gi', 'ephemeral-storage': '100Gi', pods: '110' } as const;

const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

/** Parses a resource quantity ("500m", "1Gi", "2", 3); undefined when malformed. */
export function parseQuantity(q: string | number): number | undefined {
  return typeof q === 'number' ? q : parseResourceQuantity(q);
}

/** The value of a downward API fieldPath (env `fieldRef`); undefined when the test node does not know it. */
export function fieldValue(path: string, facts: PodFacts): string | undefined {
  const keyed = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (keyed) return (keyed[1] === 'labels' ? facts.labels : facts.annotations)[keyed[2] ?? ''] ?? '';
  switch (path) {
    case 'metadata.name':
      return facts.name;
    case 'metadata.namespace':
      return facts.namespace;
    case 'metadata.uid':
      return facts.uid;
    case 'spec.nodeName':
      return facts.nodeName;
    case 'spec.serviceAccountName':
      return facts.serviceAccountName;
    case 'status.hostIP':
    case 'status.hostIPs':
      return facts.hostIP;
    case 'status.podIP':
    case 'status.podIPs':
      return facts.podIP;
    default:
      return undefined;
  }
}

/**
 * The value of a `resourceFieldRef` (limits.cpu, requests.memory, …) in units of its divisor, rounded up: of
 * the container it names, else of `container`. Undefined when unknown.
 */
export function resourceValue(
  ref: { resource: string; containerName?: string | undefined; divisor?: unknown },
  container: Container | undefined,
  all: readonly Container[],
): string | undefined {
  const target = ref.containerName ? all.find((c) => c.name === ref.containerName) : container;
  if (!target) return undefined;
  const [kind, name] = ref.resource.split('.', 2) as [string, string | undefined];
  if ((kind !== 'limits' && kind !== 'requests') || name === undefined) return undefined;
  const set =
    target.resources?.[kind]?.[name] ?? (kind === 'requests' ? target.resources?.limits?.[name] : undefined);
  const capacity = NODE_CAPACITY[name as keyof typeof NODE_CAPACITY];
  const raw = set ?? (kind === 'limits' ? capacity : name === 'cpu' || name === 'memory' ? '0' : undefined);
  if (raw === undefined) return undefined;
  const value = parseQuantity(raw);
  const divisor =
    typeof ref.divisor === 'string' || typeof ref.divisor === 'number' ? parseQuantity(ref.divisor) : 1;
  if (value === undefined || divisor === undefined || divisor === 0) return undefined;
  return String(Math.ceil(value / divisor - 1e-9));
}

/**
 * The variables the kubelet gives every container for the `kubernetes` Service (default namespace, port named
 * https), as Docker-link-style service variables: KUBERNETES_SERVICE_HOST/_PORT/_PORT_HTTPS, KUBERNETES_PORT and
 * KUBERNETES_PORT_<port>_TCP(_PROTO/_PORT/_ADDR). `host`/`port` are the Service's address; on the test node, the
 * API server's own (there is no ClusterIP), so in-cluster clients reach it.
 */
export function kubernetesServiceEnv(host: string, port: string): Map<string, string> {
  const addr = host.replace(/^\[(.*)\]$/, '$1');
  const url = `tcp://${addr.includes(':') ? `[${addr}]` : addr}:${port}`;
  const link = `KUBERNETES_PORT_${port}_TCP`;
  return new Map([
    ['KUBERNETES_SERVICE_HOST', addr],
    ['KUBERNETES_SERVICE_PORT', port],
    ['KUBERNETES_SERVICE_PORT_HTTPS', port],
    ['KUBERNETES_PORT', url],
    [link, url],
    [`${link}_PROTO`, 'tcp'],
    [`${link}_PORT`, port],
    [`${link}_ADDR`, addr],
  ]);
}

/**
 * A container's final environment: PATH (the OCI default), overridden by the image's env, by the service
 * variables (and other `node` variables such as HOSTNAME), then by the container's own resolved env: explicit
 * env wins, as with the kubelet and the runtime.
 */
export function containerEnvironment(
  imageEnv: Readonly<Record<string, string>>,
  node: ReadonlyMap<string, string>,
  container: ReadonlyMap<string, string>,
): Map<string, string> {
  const env = new Map<string, string>([['PATH', DEFAULT_PATH], ...Object.entries(imageEnv), ...node]);
  for (const [k, val] of container) env.set(k, val);
  return env;
}

/**
 * Resolves a container's environment in Kubernetes order. `$(VAR)` in a value refers to the container's
 * variables defined so far, then to `serviceEnv` (the kubelet's service variables). A missing Secret/ConfigMap
 * or key that is not optional gives the kubelet's CreateContainerConfigError message; so does a Secret or
 * ConfigMap that could not be read (the API server restarting, a connection reset), with the error: the caller
 * retries later in both cases, never sees a rejection.
 */
export async function resolveEnv(
  container: Container,
  allContainers: readonly Container[],
  facts: PodFacts,
  sources: EnvSources,
  serviceEnv: ReadonlyMap<string, string> = new Map(),
): Promise<Result<Map<string, string>, Waiting>> {
  try {
    return await resolveWithSources(container, allContainers, facts, sources, serviceEnv);
  } catch (error) {
    return err({
      reason: 'CreateContainerConfigError',
      message: error instanceof Error ? error.message : String(error),
    });
  }
}

async function resolveWithSources(
  container: Container,
  allContainers: readonly Container[],
  facts: PodFacts,
  sources: EnvSources,
  serviceEnv: ReadonlyMap<string, string>,
): Promise<Result<Map<string, string>, Waiting>> {
  const env = new Map<string, string>();
  const fail = (message: string): Result<never, Waiting> =>
    err({ reason: 'CreateContainerConfigError', message });
  const ns = facts.namespace;
  for (const from of container.envFrom) {
    const prefix = from.prefix ?? '';
    if (from.configMapRef) {
      const data = await sources.configMap(ns, from.configMapRef.name);
      if (!data) {
        if (from.configMapRef.optional) continue;
        return fail(`configmap "${from.configMapRef.name}" not found`);
      }
      for (const [k, val] of Object.entries(data)) if (ENV_NAME.test(prefix + k)) env.set(prefix + k, val);
    } else if (from.secretRef) {
      const data = await sources.secret(ns, from.secretRef.name);
      if (!data) {
        if (from.secretRef.optional) continue;
        return fail(`secret "${from.secretRef.name}" not found`);
      }
      for (const [k, val] of Object.entries(data)) if (ENV_NAME.test(prefix + k)) env.set(prefix + k, val);
    }
  }
  for (const e of container.env) {
    const from = e.valueFrom;
    if (!from) {
      env.set(
        e.name,
        expandVars(e.value ?? '', (n) => env.get(n) ?? serviceEnv.get(n)),
      );
      continue;
    }
    if (from.fieldRef) {
      const value = fieldValue(from.fieldRef.fieldPath, facts);
      if (value === undefined) return fail(`unsupported fieldPath: ${from.fieldRef.fieldPath}`);
      env.set(e.name, value);
    } else if (from.resourceFieldRef) {
      const value = resourceValue(from.resourceFieldRef, container, allContainers);
      if (value === undefined) return fail(`unsupported resourceFieldRef: ${from.resourceFieldRef.resource}`);
      env.set(e.name, value);
    } else if (from.secretKeyRef) {
      const ref = from.secretKeyRef;
      const data = await sources.secret(ns, ref.name);
      if (!data) {
        if (ref.optional) continue;
        return fail(`secret "${ref.name}" not found`);
      }
      const value = data[ref.key];
      if (value === undefined) {
        if (ref.optional) continue;
        return fail(`couldn't find key ${ref.key} in Secret ${ns}/${ref.name}`);
      }
      env.set(e.name, value);
    } else if (from.configMapKeyRef) {
      const ref = from.configMapKeyRef;
      const data = await sources.configMap(ns, ref.name);
      if (!data) {
        if (ref.optional) continue;
        return fail(`configmap "${ref.name}" not found`);
      }
      const value = data[ref.key];
      if (value === undefined) {
        if (ref.optional) continue;
        return fail(`couldn't find key ${ref.key} in ConfigMap ${ns}/${ref.name}`);
      }
      env.set(e.name, value);
    } else {
      return fail(`env var "${e.name}": unsupported valueFrom`);
    }
  }
  return ok(env);
}
