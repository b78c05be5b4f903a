// Keeps the batch poller's list in step with the Agents whose vendor batch is in flight (every Agent change).

import type { Agent, AgentDefinition } from '../api/index.ts';
import type { BatchPoller } from '../effects/batch/poller.ts';
import type { BatchRuntime } from '../effects/batch/runtime.ts';
import { parseCachedDefinition, parseCachedStation } from '../effects/gather.ts';
import type { KubeObject } from '../kube/index.ts';
import { apiKeySecretKey, isBatchProvider, renderContextFor } from '../reconcile/batch/plan.ts';
import { laneKey, type StationBook } from '../reconcile/index.ts';
import type { Change, Clock, StoreReader } from '../runtime/index.ts';

/** The AgentDefinition of an Agent's Station, from the caches (null when either is missing or invalid). */
export function definitionFrom(
  stations: StoreReader<KubeObject>,
  definitions: StoreReader<KubeObject>,
  a: Agent,
): AgentDefinition | null {
  const rawStation = stations.get(laneKey(a.metadata.namespace, a.spec.stationRef));
  const station = rawStation === undefined ? undefined : parseCachedStation(rawStation);
  if (!station?.ok) return null;
  const rawDef = definitions.get(`${a.metadata.namespace}/${station.value.spec.agentDefRef}`);
  const def = rawDef === undefined ? undefined : parseCachedDefinition(rawDef);
  return def?.ok ? def.value : null;
}

export function createBatchTracking(deps: {
  readonly poller: Pick<BatchPoller, 'track' | 'untrack'>;
  readonly runtime: Pick<BatchRuntime, 'nothingOutstanding' | 'cleanupNotBefore'>;
  readonly book: StationBook<Agent>;
  readonly definitionOf: (a: Agent) => AgentDefinition | null;
  readonly clock: Clock;
}): (c: Change<Agent>) => void {
  const { book, definitionOf, clock } = deps;
  return (c) => {
    const a = c.object;
    const uid = a.metadata.uid;
    const provider = a.status.batchProvider;
    const batchId = a.status.batchId ?? '';
    const inFlight =
      c.type !== 'deleted' &&
      a.status.phase === 'Running' &&
      a.metadata.deletionTimestamp === undefined &&
      a.status.batchFallback !== true &&
      batchId !== '' &&
      isBatchProvider(provider);
    if (c.type === 'deleted') {
      deps.runtime.nothingOutstanding.delete(uid);
      deps.runtime.cleanupNotBefore.delete(uid);
    }
    if (!inFlight || !isBatchProvider(provider)) {
      deps.poller.untrack(uid);
      return;
    }
    const key = `${a.metadata.namespace}/${a.metadata.name}`;
    deps.poller.track(uid, {
      key,
      namespace: a.metadata.namespace,
      provider,
      batchId,
      secretKey: apiKeySecretKey(definitionOf(a), provider),
      render: () => {
        const current = book.get(key);
        if (current === undefined || current.metadata.uid !== uid) return undefined;
        const started = Date.parse(current.status.startedAt ?? current.metadata.creationTimestamp);
        const ms = Number.isNaN(started) ? 0 : clock.now() - started;
        return renderContextFor(current, definitionOf(current), ms);
      },
    });
  };
}
