// Where the CLI finds the controller's prompt API when no `--endpoint` names it: the Service the realtime
// component installs (`agent-controller-api` in the controller's namespace), reached through a port-forward to one
// of the ready pods its selector matches, as `kubectl port-forward svc/...` does (and with the same grants: get
// services, list pods, create pods/portforward in that namespace). Without that Service (a controller running locally,
// as `npm start` does) the local default is used.
import * as v from 'valibot';
import {
  type ClusterConfig,
  createTransport,
  decodeJson,
  describeKubeError,
  isNotFound,
} from '../kube/index.ts';
import { openPortForward } from '../kube/port-forward.ts';
import type { Result } from '../shared/result.ts';
import { err, ok } from '../shared/result.ts';

export const API_SERVICE = 'agent-controller-api';
export const DEFAULT_CONTROLLER_NAMESPACE = 'ai-agents';

const ServiceSchema = v.looseObject({
  spec: v.looseObject({
    selector: v.optional(v.nullable(v.record(v.string(), v.string()))),
    ports: v.optional(
      v.array(
        v.looseObject({
          name: v.optional(v.string()),
          port: v.number(),
          targetPort: v.optional(v.union([v.number(), v.string()])),
        }),
      ),
      [],
    ),
  }),
});

const PodListSchema = v.looseObject({
  items: v.array(
    v.looseObject({
      metadata: v.looseObject({ name: v.string(), deletionTimestamp: v.optional(v.nullable(v.string())) }),
      spec: v.looseObject({
        containers: v.array(
          v.looseObject({
            ports: v.optional(
              v.nullable(v.array(v.looseObject({ name: v.optional(v.string()), containerPort: v.number() }))),
            ),
          }),
        ),
      }),
      status: v.optional(
        v.looseObject({
          phase: v.optional(v.string()),
          conditions: v.optional(
            v.nullable(v.array(v.looseObject({ type: v.string(), status: v.string() }))),
          ),
        }),
      ),
    }),
  ),
});
export type Service = v.InferOutput<typeof ServiceSchema>;
export type PodList = v.InferOutput<typeof PodListSchema>;

/** A pod serving the prompt API and the container port to forward to. */
export interface ApiPod {
  readonly pod: string;
  readonly port: number;
}

/**
 * Picks the pod and port behind the Service's first port, as `kubectl port-forward svc/...` resolves them (pure):
 * a Running, Ready pod not being deleted, in name order so repeated calls choose the same replica; the port is the
 * Service's numeric targetPort, or the pod's container port of that name, or the Service port itself.
 */
export function pickApiPod(service: Service, pods: PodList): Result<ApiPod, string> {
  const servicePort = service.spec.ports[0];
  if (servicePort === undefined) return err(`service ${API_SERVICE} has no ports`);
  const ready = pods.items
    .filter(
      (p) =>
        !p.metadata.deletionTimestamp &&
        p.status?.phase === 'Running' &&
        (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
    )
    .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const target = servicePort.targetPort ?? servicePort.port;
  for (const pod of ready) {
    if (typeof target === 'number') return ok({ pod: pod.metadata.name, port: target });
    const port = pod.spec.containers
      .flatMap((c) => c.ports ?? [])
      .find((p) => p.name === target)?.containerPort;
    if (port !== undefined) return ok({ pod: pod.metadata.name, port });
  }
  return err(`no ready pod behind service ${API_SERVICE}`);
}

/** The prompt API to talk to: the local default, or a local port forwarded to a controller pod. */
export type PromptApi =
  | { readonly kind: 'local' }
  | {
      readonly kind: 'forwarded';
      /** https://127.0.0.1:<port>, forwarded to the pod. */
      readonly endpoint: string;
      /** The name the API's certificate is issued for (the Service's cluster DNS name). */
      readonly servername: string;
      readonly pod: string;
      close(): void;
    };

/** Finds the prompt API from the kubeconfig's cluster; an error is one line for the user. */
export async function findPromptApi(
  cluster: ClusterConfig,
  namespace: string,
): Promise<Result<PromptApi, string>> {
  const transport = createTransport({
    server: cluster.server,
    credentials: cluster.credentials,
    timeoutMs: 15_000,
  });
  try {
    const base = `/api/v1/namespaces/${encodeURIComponent(namespace)}`;
    const svc = await transport.request('GET', `${base}/services/${API_SERVICE}`);
    if (!svc.ok) {
      if (isNotFound(svc.error)) return ok({ kind: 'local' });
      return err(`cannot look up service ${namespace}/${API_SERVICE}: ${describeKubeError(svc.error)}`);
    }
    const service = decodeJson(svc.value.text, ServiceSchema, `service ${API_SERVICE}`);
    if (!service.ok) return err(describeKubeError(service.error));
    const selector = Object.entries(service.value.spec.selector ?? {})
      .map(([k, val]) => `${k}=${val}`)
      .join(',');
    if (selector === '') return err(`service ${namespace}/${API_SERVICE} has no selector; pass --endpoint`);
    const list = await transport.request('GET', `${base}/pods`, { query: { labelSelector: selector } });
    if (!list.ok)
      return err(`cannot list the pods of ${namespace}/${API_SERVICE}: ${describeKubeError(list.error)}`);
    const pods = decodeJson(list.value.text, PodListSchema, 'pods');
    if (!pods.ok) return err(describeKubeError(pods.error));
    const picked = pickApiPod(service.value, pods.value);
    if (!picked.ok) return err(`${picked.error} in namespace ${namespace}`);
    const forward = await openPortForward(cluster, { namespace, pod: picked.value.pod });
    if (!forward.ok) {
      return err(
        `cannot port-forward to pod ${namespace}/${picked.value.pod}: ${describeKubeError(forward.error)}`,
      );
    }
    let local: Awaited<ReturnType<typeof forward.value.listen>>;
    try {
      local = await forward.value.listen(picked.value.port);
    } catch (error) {
      forward.value.close();
      return err(
        `cannot listen locally for the port-forward: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    return ok({
      kind: 'forwarded',
      endpoint: `https://127.0.0.1:${local.port}`,
      servername: `${API_SERVICE}.${namespace}.svc`,
      pod: picked.value.pod,
      close: () => {
        local.close();
        forward.value.close();
      },
    });
  } finally {
    transport.close();
  }
}
