// Where the API server listens, for the egress rule of runs that hold a token (issue 9 §2): the endpoints of the
// Service `default/kubernetes`, which the API server itself keeps in the EndpointSlice of that name.
import * as v from 'valibot';
import type { ApiServerEndpoints } from '../jobs/index.ts';
import { ENDPOINT_SLICES, getObject, type KubeError, type Transport } from '../kube/index.ts';
import type { EndpointView } from '../reconcile/snapshot.ts';
import { ok, type Result } from '../shared/result.ts';

const EndpointSliceSchema = v.object({
  endpoints: v.optional(
    v.nullable(
      v.array(
        v.object({
          addresses: v.array(v.string()),
          conditions: v.optional(v.object({ ready: v.optional(v.nullable(v.boolean())) })),
        }),
      ),
    ),
  ),
  ports: v.optional(v.nullable(v.array(v.object({ port: v.optional(v.nullable(v.number())) })))),
});

/** The label every EndpointSlice carries: the name of its Service. */
export const LABEL_SERVICE_NAME = 'kubernetes.io/service-name';

/** One cached EndpointSlice as readiness goes (undefined when it does not parse: it counts as not ready). */
export function endpointView(raw: unknown): EndpointView | undefined {
  const parsed = v.safeParse(EndpointSliceSchema, raw);
  if (!parsed.success) return undefined;
  const { addresses, ports } = apiServerEndpoints(parsed.output);
  return { readyAddresses: addresses, ports };
}

/** The API server's endpoints from EndpointSlice `default/kubernetes` (ready ones; unknown readiness counts). */
export function apiServerEndpoints(slice: v.InferOutput<typeof EndpointSliceSchema>): ApiServerEndpoints {
  const addresses = [
    ...new Set(
      (slice.endpoints ?? []).filter((e) => e.conditions?.ready !== false).flatMap((e) => e.addresses),
    ),
  ];
  const ports = [
    ...new Set(
      (slice.ports ?? [])
        .map((p) => p.port)
        .filter((p): p is number => typeof p === 'number' && Number.isInteger(p) && p > 0 && p < 65536),
    ),
  ];
  return { addresses, ports };
}

/** Reads EndpointSlice `default/kubernetes`; an answer without addresses or ports reads as unknown. */
export async function readApiServerEndpoints(
  t: Transport,
  timeoutMs?: number,
): Promise<Result<ApiServerEndpoints | undefined, KubeError>> {
  const r = await getObject(
    t,
    ENDPOINT_SLICES,
    { namespace: 'default', name: 'kubernetes' },
    EndpointSliceSchema,
    { timeoutMs },
  );
  if (!r.ok) return r;
  const found = apiServerEndpoints(r.value);
  return ok(found.addresses.length > 0 && found.ports.length > 0 ? found : undefined);
}
