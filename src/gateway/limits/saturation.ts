// Publishing saturated keys for the controller's admission (src/shared/key-saturation.ts): the gateway merges its
// entries into the ConfigMap agent-gateway-saturation of its namespace (deployed empty with the component; the
// gateway may only get and patch it, by name). An entry is written when it is new or moves later by a second or
// more, at most once per `intervalMs`; entries in the past are removed with the next write. Two replicas write
// disjoint or equal facts: a merge patch of single entries, the later time wins within a round.
import * as v from 'valibot';
import { CONFIG_MAPS, describeKubeError, isNotFound, mergePatch, type Transport } from '../../kube/index.ts';
import type { GatewayLimiterMetrics } from '../../metrics/gateway-limits.ts';
import type { Clock } from '../../runtime/index.ts';
import { KEY_SATURATION_CONFIGMAP, saturationEntry } from '../../shared/key-saturation.ts';
import type { Logger } from '../../shared/log.ts';
import type { KeyId } from './limiter.ts';

export interface SaturationPublisher {
  /** `id` has no capacity until `until` (ms). */
  saturated(id: KeyId, until: number): void;
}

const Written = v.object({ metadata: v.object({ name: v.string() }) });

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

  const write = async (): Promise<void> => {
    scheduled = false;
    const now = o.clock.now();
    const data: Record<string, string | null> = {};
    for (const [entry, until] of pending) data[entry] = new Date(until).toISOString();
    for (const [entry, until] of written) if (until <= now && !pending.has(entry)) data[entry] = null;
    const batch = new Map(pending);
    pending.clear();
    if (Object.keys(data).length === 0) return;
    const r = await mergePatch(
      o.transport,
      CONFIG_MAPS,
      { namespace: o.namespace, name: KEY_SATURATION_CONFIGMAP },
      { data },
      Written,
      { fieldManager: 'agent-gateway', timeoutMs: 10_000 },
    );
    if (r.ok) {
      o.metrics.saturationWrites.inc({ result: 'written' });
      for (const [entry, value] of Object.entries(data))
        if (value === null) written.delete(entry);
        else written.set(entry, batch.get(entry) ?? 0);
      return;
    }
    const missing = isNotFound(r.error);
    o.metrics.saturationWrites.inc({ result: missing ? 'missing' : 'error' });
    if (!missing || !missingLogged)
      o.logger.warn('Could not publish saturated keys', {
        configMap: `${o.namespace}/${KEY_SATURATION_CONFIGMAP}`,
        error: describeKubeError(r.error),
      });
    if (missing) missingLogged = true;
    else for (const [entry, until] of batch) if (!pending.has(entry)) pending.set(entry, until);
  };

  return {
    saturated(id, until) {
      const entry = saturationEntry(id.namespace, id.vendor, id.key);
      const known = Math.max(written.get(entry) ?? 0, pending.get(entry) ?? 0);
      if (until < known + 1000) return;
      pending.set(entry, until);
      if (scheduled) return;
      scheduled = true;
      o.clock.setTimer(written.size === 0 ? 0 : interval, () => {
        void write().catch((error: unknown) =>
          o.logger.warn('Could not publish saturated keys', { error: String(error) }),
        );
      });
    },
  };
}
