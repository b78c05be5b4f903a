// Publishing saturated keys for the controller's admission (src/shared/key-saturation.ts): the gateway merges its
// entries into the ConfigMap agent-gateway-saturation of its namespace (deployed empty with the component; the
// gateway may only get and patch it, by name). An entry is written when it is new or moves later by a second or
// more, at most once per `intervalMs` (a merge patch of those entries: the two replicas' entries do not overwrite
// each other's others; of one entry the last write stands); entries are removed a moment after they end.
import * as v from 'valibot';
import {
  CONFIG_MAPS,
  describeKubeError,
  getObject,
  isNotFound,
  mergePatch,
  type Transport,
} from '../../kube/index.ts';
import type { GatewayLimiterMetrics } from '../../metrics/gateway-limits.ts';
import type { Clock } from '../../runtime/index.ts';
import { KEY_SATURATION_CONFIGMAP, parseSaturation, saturationEntry } from '../../shared/key-saturation.ts';
import type { Logger } from '../../shared/log.ts';
import type { KeyId } from './limiter.ts';

export interface SaturationPublisher {
  /** `id` has no capacity until `until` (ms). */
  saturated(id: KeyId, until: number): void;
}

const Current = v.object({
  metadata: v.object({ resourceVersion: v.optional(v.string()) }),
  data: v.optional(v.nullable(v.record(v.string(), v.string()))),
});

export function saturationPublisher(o: {
  readonly transport: Transport;
  readonly namespace: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: GatewayLimiterMetrics;
  readonly intervalMs?: number;
}): SaturationPublisher {
  const interval = o.intervalMs ?? 1000;
  /** What this replica last wrote, per entry. */
  const written = new Map<string, number>();
  const pending = new Map<string, number>();
  let scheduled = false;
  let missingLogged = false;
  const ref = { namespace: o.namespace, name: KEY_SATURATION_CONFIGMAP };

  const write = async (): Promise<void> => {
    scheduled = false;
    const now = o.clock.now();
    const data: Record<string, string | null> = {};
    for (const [entry, until] of pending) data[entry] = new Date(until).toISOString();
    const batch = new Map(pending);
    pending.clear();
    // Entries over are removed as the ConfigMap has them (whichever replica wrote them), under the version read:
    // one another replica just moved later is kept.
    let resourceVersion: string | undefined;
    const over = [...written].filter(([, until]) => until <= now).map(([entry]) => entry);
    if (over.length > 0) {
      const current = await getObject(o.transport, CONFIG_MAPS, ref, Current, { timeoutMs: 10_000 });
      if (current.ok) {
        resourceVersion = current.value.metadata.resourceVersion;
        for (const [entry, at] of parseSaturation(current.value.data ?? undefined))
          if (at <= now && !(entry in data)) data[entry] = null;
      }
    }
    if (Object.keys(data).length === 0) {
      for (const entry of over) written.delete(entry);
      return;
    }
    const r = await mergePatch(o.transport, CONFIG_MAPS, ref, { data }, Current, {
      fieldManager: 'agent-gateway',
      timeoutMs: 10_000,
      ...(resourceVersion !== undefined ? { resourceVersion } : {}),
    });
    if (r.ok) {
      o.metrics.saturationWrites.inc({ result: 'written' });
      for (const entry of over) written.delete(entry);
      for (const [entry, until] of batch) written.set(entry, until);
      return;
    }
    const missing = isNotFound(r.error);
    o.metrics.saturationWrites.inc({ result: missing ? 'missing' : 'error' });
    if (!missing || !missingLogged)
      o.logger.warn('Could not publish saturated keys', {
        configMap: `${o.namespace}/${KEY_SATURATION_CONFIGMAP}`,
        error: describeKubeError(r.error),
      });
    if (missing) {
      missingLogged = true;
      return;
    }
    for (const [entry, until] of batch) if (!pending.has(entry)) pending.set(entry, until);
    schedule(interval);
  };

  const schedule = (ms: number): void => {
    if (scheduled) return;
    scheduled = true;
    o.clock.setTimer(ms, () => {
      void write().catch((error: unknown) =>
        o.logger.warn('Could not publish saturated keys', { error: String(error) }),
      );
    });
  };
  return {
    saturated(id, until) {
      const entry = saturationEntry(id.namespace, id.vendor, id.key);
      const known = Math.max(written.get(entry) ?? 0, pending.get(entry) ?? 0);
      if (until < known + 1000) return;
      pending.set(entry, until);
      schedule(written.size === 0 ? 0 : interval);
      // Removed a moment after it is over (a write with nothing new removes the entries in the past).
      o.clock.setTimer(Math.max(0, until - o.clock.now()) + interval, () => schedule(0));
    },
  };
}
