// What the dependencies gate and the egress of token-holding runs read about Services and the API server: the
// EndpointSlice cache (issue 10 §4) and EndpointSlice default/kubernetes.

import { endpointView, LABEL_SERVICE_NAME, readApiServerEndpoints } from '../effects/api-server.ts';
import type { ApiServerEndpoints } from '../jobs/index.ts';
import { describeKubeError, type KubeObject, type Transport } from '../kube/index.ts';
import type { EndpointObservation, EndpointView } from '../reconcile/index.ts';
import type { Clock, StoreReader } from '../runtime/index.ts';
import type { Logger } from '../shared/log.ts';

/** The EndpointSlices of Services, from the cache; `unavailable` while the controller may not watch them. */
export function createEndpointSource(slices: StoreReader<KubeObject>) {
  let unavailable: string | undefined;
  return {
    /** The LIST was refused. */
    forbidden(why: string): void {
      unavailable = why;
    },
    /** A slice was seen: the watch works. */
    seen(): void {
      unavailable = undefined;
    },
    /** The EndpointSlices of these Services of a namespace. */
    of(namespace: string, services: readonly string[]): EndpointObservation {
      if (unavailable !== undefined) return { kind: 'unavailable', message: unavailable };
      if (!slices.hasSynced()) return { kind: 'unsynced' };
      const wanted = new Set(services);
      const byService = new Map<string, EndpointView[]>();
      for (const raw of slices.list()) {
        if (raw.metadata.namespace !== namespace) continue;
        const service = raw.metadata.labels?.[LABEL_SERVICE_NAME];
        if (service === undefined || !wanted.has(service)) continue;
        const view = endpointView(raw);
        if (view !== undefined) byService.set(service, [...(byService.get(service) ?? []), view]);
      }
      return { kind: 'observed', byService };
    },
  };
}

/**
 * Where the API server listens (EndpointSlice default/kubernetes), for the egress of token-holding runs. Read only
 * when a run that holds a token asks, at most once per `everyMs` (a controller without the run-rbac component
 * never asks, so it is never refused); a failed read keeps the last known address (the API server rarely moves).
 */
export function createApiServerSource(opts: {
  readonly transport: Transport;
  readonly clock: Clock;
  readonly everyMs: number;
  readonly logger: Logger;
}): () => Promise<ApiServerEndpoints | undefined> {
  let known: ApiServerEndpoints | undefined;
  let readAt = Number.NEGATIVE_INFINITY;
  let unreadable = false;
  return async () => {
    if (opts.clock.now() - readAt < opts.everyMs) return known;
    readAt = opts.clock.now();
    const r = await readApiServerEndpoints(opts.transport);
    if (r.ok) {
      known = r.value;
      unreadable = false;
    } else if (!unreadable) {
      unreadable = true;
      opts.logger.info(
        'EndpointSlice default/kubernetes cannot be read: runs that hold a token get no egress rule to the API server',
        { error: describeKubeError(r.error) },
      );
    }
    return known;
  };
}
