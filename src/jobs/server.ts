// The objects of a server (execution: server, issue 12), built from the same pod template as a Job run: a Deployment
// `<agent>-server` whose pods run the supervisor in server mode, a Service of the same name, and, when the Station
// names a Gateway, an HTTPRoute to the Service. Pure and total; the API-key Secret is made by the shell (it holds a
// random key). The pods read the key from that Secret mounted as a file, never from their environment: the kubelet
// refreshes the file when the Secret changes, so a new key reaches running pods without a rollout.

import type { Agent, Station } from '../api/index.ts';
import type { JsonObject } from '../shared/json-object.ts';
import { fnv1a64 } from '../shared/trace-context.ts';
import type { JobManifest } from './build-job.ts';
import { COMPONENT_JOB, LABEL_AGENT, LABEL_COMPONENT, safeName } from './names.ts';

import { LABEL_EXECUTION } from './realtime.ts';
import { runObjectMetadata } from './run-metadata.ts';
import {
  ANNOTATION_SPEC_HASH,
  COMPONENT_SERVER,
  HTTPROUTE_API_VERSION,
  SERVER_API_KEY_DIR,
  SERVER_API_KEY_FILE,
  SERVER_API_KEY_FILE_ENV,
  SERVER_API_KEY_KEY,
  SERVER_API_KEY_VOLUME,
  SERVER_PORT,
  serverName,
} from './server-names.ts';

/**
 * Env of a Job run that a server pod does not get: the run deadline (a server has none: it ends when its Agent is
 * deleted), the API key's value (the pods read it from the mounted Secret) and any other value of the key file's
 * variable (the controller's wins).
 */
const NOT_FOR_SERVERS: ReadonlySet<string> = new Set([
  'AGENT_DEADLINE_AT',
  'AGENT_DEADLINE_MS',
  'AGENT_SERVER_API_KEY',
  SERVER_API_KEY_FILE_ENV,
]);

/** Where the supervisor answers the liveness probe (no authentication): the process serves. */
export const SERVER_HEALTH_PATH = '/healthz';
/** Where the supervisor answers the readiness probe (no authentication): it serves and has a usable API key. */
export const SERVER_READY_PATH = '/readyz';
/** Mode of the key file: read-only to its owner (root) and the pod's fsGroup (1000, the agent's user is in it). */
export const SERVER_API_KEY_MODE = 0o440;

/** Metadata of a server object: the run's, under the server's name, labelled as a server, with its spec hash. */
export interface ServerObjectMetadata {
  readonly name: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly ownerReferences: JobManifest['metadata']['ownerReferences'];
}

/** An object the controller writes for a server, with the API resource it is written to. */
export interface ServerObject {
  readonly resource: 'deployments' | 'services' | 'httproutes';
  readonly manifest: {
    readonly apiVersion: string;
    readonly kind: 'Deployment' | 'Service' | 'HTTPRoute';
    readonly metadata: ServerObjectMetadata;
    readonly spec: JsonObject;
  };
}

/** The objects of one server. `route` only when its Station names a Gateway. */
export interface ServerObjects {
  readonly deployment: ServerObject;
  readonly service: ServerObject;
  readonly route: ServerObject | undefined;
}

/** What a server is built from: the run's Job (its pod template), the Station's server settings, the suspension. */
export interface ServerInput {
  readonly agent: Agent;
  readonly station: Station;
  /** The Job a run of this Agent would get (built with the Agent's creation time, so it never changes by itself). */
  readonly job: JobManifest;
  /** The Secret holding the API key (`api-key`): mounted into the agent container, read by the supervisor live. */
  readonly apiKeySecret: string;
  /** The input ConfigMap's data: a changed system prompt rolls the pods (they mount it at start). */
  readonly inputData?: Readonly<Record<string, string>> | undefined;
}

/** Pod-template annotation: the hash of the input (system prompt) the pods were started with. */
export const ANNOTATION_INPUT_HASH = 'agents.re-cinq.com/input-hash';

/** The hash recorded on a server object: of its spec as the controller writes it. */
export function specHash(spec: unknown): string {
  return fnv1a64(JSON.stringify(spec));
}

function metadataFor(agent: Agent, station: Station, spec: unknown): ServerObjectMetadata {
  const run = runObjectMetadata(agent, station.metadata.name);
  return {
    name: serverName(agent.metadata.name),
    namespace: run.namespace,
    labels: { ...run.labels, [LABEL_COMPONENT]: COMPONENT_SERVER, [LABEL_EXECUTION]: 'server' },
    annotations: { ...run.annotations, [ANNOTATION_SPEC_HASH]: specHash(spec) },
    ownerReferences: run.ownerReferences,
  };
}

/** The labels of a server's pods that its Deployment and Service select on. */
export function serverPodSelector(agentName: string): Record<string, string> {
  return {
    [LABEL_COMPONENT]: COMPONENT_JOB,
    [LABEL_AGENT]: safeName(agentName),
    [LABEL_EXECUTION]: 'server',
  };
}

/** The replicas a server runs: 0 while its Agent is suspended, else the Station's `server.replicas`. */
export function serverReplicas(agent: Agent, station: Station): number {
  return agent.spec.suspend === true ? 0 : station.spec.server.replicas;
}

const listOf = (x: unknown): JsonObject[] => (Array.isArray(x) ? (x as JsonObject[]) : []);

/**
 * The server pod's volume of the API-key Secret: its key `api-key` only, as the file `api-key`. Not optional, on
 * purpose: while a generated key is made again after its Secret was deleted (a rotation), running pods keep the last
 * files the kubelet wrote and go on serving with the old key until the new one reaches them (an optional volume would
 * be emptied meanwhile: an outage). A missing Secret, or one without `api-key`, holds a new pod in ContainerCreating
 * with the kubelet's FailedMount Event saying why; an empty or too short key gives 503 and a failing /readyz.
 */
export function apiKeyVolume(secretName: string): JsonObject {
  return {
    name: SERVER_API_KEY_VOLUME,
    secret: {
      secretName,
      defaultMode: SERVER_API_KEY_MODE,
      items: [{ key: SERVER_API_KEY_KEY, path: SERVER_API_KEY_KEY }],
    },
  };
}

/**
 * The Job's pod template as a Deployment's: restarted always, no run deadline, probed (liveness on the health
 * endpoint, readiness on the ready one), the API-key Secret mounted read-only into the agent container only (its
 * file named by `AGENT_SERVER_API_KEY_FILE`; a volume or mount of the Station's at that name or path is replaced, and
 * no other container mounts it), and annotated with the hash of the input the pods read once at start, so a changed
 * input rolls them. A new key needs no rollout: the supervisor re-reads the file.
 */
function serverPodTemplate(input: ServerInput): JsonObject {
  const template = structuredClone(input.job.spec.template);
  const metadata = (template.metadata ?? {}) as JsonObject;
  metadata.annotations = {
    ...((metadata.annotations ?? {}) as Record<string, string>),
    ...(input.inputData !== undefined ? { [ANNOTATION_INPUT_HASH]: specHash(input.inputData) } : {}),
  };
  template.metadata = metadata;
  const spec = template.spec as JsonObject;
  spec.restartPolicy = 'Always';
  delete spec.activeDeadlineSeconds;
  spec.volumes = [
    ...listOf(spec.volumes).filter((v) => v.name !== SERVER_API_KEY_VOLUME),
    apiKeyVolume(input.apiKeySecret),
  ];
  const containers = listOf(spec.containers);
  for (const c of [...listOf(spec.initContainers), ...containers]) {
    if (c.name === 'agent' || !Array.isArray(c.volumeMounts)) continue;
    c.volumeMounts = listOf(c.volumeMounts).filter((m) => m.name !== SERVER_API_KEY_VOLUME);
  }
  const agent = containers.find((c) => c.name === 'agent');
  if (agent !== undefined) {
    agent.env = [
      ...listOf(agent.env).filter((e) => !NOT_FOR_SERVERS.has(String(e.name))),
      { name: SERVER_API_KEY_FILE_ENV, value: SERVER_API_KEY_FILE },
    ];
    agent.volumeMounts = [
      ...listOf(agent.volumeMounts).filter(
        (m) => m.name !== SERVER_API_KEY_VOLUME && m.mountPath !== SERVER_API_KEY_DIR,
      ),
      { name: SERVER_API_KEY_VOLUME, mountPath: SERVER_API_KEY_DIR, readOnly: true },
    ];
    agent.readinessProbe = {
      httpGet: { path: SERVER_READY_PATH, port: SERVER_PORT },
      periodSeconds: 5,
      failureThreshold: 3,
    };
    agent.livenessProbe = {
      httpGet: { path: SERVER_HEALTH_PATH, port: SERVER_PORT },
      initialDelaySeconds: 10,
      periodSeconds: 10,
      failureThreshold: 3,
    };
  }
  return template;
}

/**
 * The Deployment, Service and (when the Station names a Gateway) HTTPRoute of a server. Each is named
 * `<agent>-server`, controlled by the Agent (ownerReference with controller and blockOwnerDeletion, so garbage
 * collection removes it with the Agent), labelled `agents.re-cinq.com/component: server` and annotated with the hash
 * of its spec. The Deployment's pods are the run's pod template with restartPolicy Always, without the run deadline,
 * with the API-key Secret mounted as a file, a liveness probe on `GET /healthz` and a readiness probe on
 * `GET /readyz` at port 8080; the Service selects them on port 8080; the route sends every `/v1` request on the
 * Station's Gateway (and hostname, if any) to the Service.
 */
export function buildServerObjects(input: ServerInput): ServerObjects {
  const { agent, station } = input;
  const name = serverName(agent.metadata.name);
  const selector = serverPodSelector(agent.metadata.name);
  const template = serverPodTemplate(input);
  const deploymentSpec: JsonObject = {
    replicas: serverReplicas(agent, station),
    selector: { matchLabels: selector },
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
    template,
  };
  const serviceSpec: JsonObject = {
    type: 'ClusterIP',
    selector,
    ports: [{ name: 'http', protocol: 'TCP', port: SERVER_PORT, targetPort: SERVER_PORT }],
  };
  const gateway = station.spec.gateway;
  const routeSpec: JsonObject | undefined =
    gateway === undefined
      ? undefined
      : {
          parentRefs: [
            {
              name: gateway.name,
              ...(gateway.namespace !== undefined ? { namespace: gateway.namespace } : {}),
            },
          ],
          ...(gateway.hostname !== undefined ? { hostnames: [gateway.hostname] } : {}),
          // Only the API: the unauthenticated /healthz and /metrics stay inside the cluster.
          rules: [
            {
              matches: [{ path: { type: 'PathPrefix', value: '/v1' } }],
              backendRefs: [{ name, port: SERVER_PORT }],
            },
          ],
        };
  return {
    deployment: {
      resource: 'deployments',
      manifest: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: metadataFor(agent, station, deploymentSpec),
        spec: deploymentSpec,
      },
    },
    service: {
      resource: 'services',
      manifest: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: metadataFor(agent, station, serviceSpec),
        spec: serviceSpec,
      },
    },
    route:
      routeSpec === undefined
        ? undefined
        : {
            resource: 'httproutes',
            manifest: {
              apiVersion: HTTPROUTE_API_VERSION,
              kind: 'HTTPRoute',
              metadata: metadataFor(agent, station, routeSpec),
              spec: routeSpec,
            },
          },
  };
}

/**
 * Where a server answers: `https://<hostname>/v1` through its route when the Station names a hostname and the route
 * exists, else its Service's in-cluster address.
 */
export function serverUrl(agent: Agent, station: Station, routed: boolean): string {
  const hostname = station.spec.gateway?.hostname;
  if (routed && hostname !== undefined) return `https://${hostname}/v1`;
  return `http://${serverName(agent.metadata.name)}.${agent.metadata.namespace}.svc:${SERVER_PORT}/v1`;
}
