import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Seconds a call waited for its key's capacity: from none to the longest wait (docs/design/gateway.md#rate-limits). */
const WAIT_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60];

/** The gateway's rate-limit metrics, on its registry (`gateway_throttled_total`, …). */
export interface GatewayLimiterMetrics {
  readonly throttled: Counter<'namespace' | 'vendor' | 'reason'>;
  readonly wait: Histogram<'namespace' | 'vendor'>;
  readonly saturated: Gauge<'namespace' | 'vendor' | 'key'>;
  readonly saturationWrites: Counter<'result'>;
}

export function createGatewayLimiterMetrics(registry: Registry): GatewayLimiterMetrics {
  const registers = [registry];
  const m: GatewayLimiterMetrics = {
    throttled: new Counter({
      name: 'gateway_throttled_total',
      help: "Calls held for their vendor key's rate limit, by namespace, vendor and reason (queued: waited; refused: answered 429 by the gateway)",
      labelNames: ['namespace', 'vendor', 'reason'],
      registers,
    }),
    wait: new Histogram({
      name: 'gateway_limiter_wait_seconds',
      help: "Time calls waited for their vendor key's capacity (those that waited), by namespace and vendor",
      labelNames: ['namespace', 'vendor'],
      buckets: WAIT_BUCKETS,
      registers,
    }),
    saturated: new Gauge({
      name: 'gateway_key_saturated',
      help: 'Whether a vendor key has no capacity now (calls waiting, or the vendor holding it): 1 or 0, by namespace, vendor and key name',
      labelNames: ['namespace', 'vendor', 'key'],
      registers,
    }),
    saturationWrites: new Counter({
      name: 'gateway_saturation_writes_total',
      help: 'Writes of the ConfigMap agent-gateway-saturation, by result (written, missing, error)',
      labelNames: ['result'],
      registers,
    }),
  };
  for (const result of ['written', 'missing', 'error']) m.saturationWrites.inc({ result }, 0);
  return m;
}
