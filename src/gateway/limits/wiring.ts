// The rate limits as the gateway process builds them: the limiter on the real clock, its metrics on the gateway's
// registry, saturation published to the ConfigMap agent-gateway-saturation, limits read from agent-secrets.
import type { GatewayConfig } from '../../config/gateway-config.ts';
import type { Transport } from '../../kube/index.ts';
import type { GatewayMetrics } from '../../metrics/gateway.ts';
import { createGatewayLimiterMetrics } from '../../metrics/gateway-limits.ts';
import type { Clock } from '../../runtime/index.ts';
import type { Logger } from '../../shared/log.ts';
import type { VendorKeys } from '../cluster.ts';
import { RATE_LIMITS_ANNOTATION } from './config.ts';
import { createRateLimitGate, type RateLimitGate } from './gate.ts';
import { createRateLimiter } from './limiter.ts';
import { saturationPublisher } from './saturation.ts';

export function rateLimitGate(o: {
  readonly config: GatewayConfig;
  readonly transport: Transport;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  readonly keys: VendorKeys;
}): RateLimitGate {
  const metrics = createGatewayLimiterMetrics(o.metrics.registry);
  const publisher = saturationPublisher({
    transport: o.transport,
    namespace: o.config.namespace,
    clock: o.clock,
    logger: o.logger,
    metrics,
  });
  const limiter = createRateLimiter({
    now: () => o.clock.now(),
    setTimer: (ms, fn) => o.clock.setTimer(ms, fn),
    maxWaitMs: o.config.rateLimits.maxWaitMs,
    metrics,
    logger: o.logger,
    saturated: (id, until) => publisher.saturated(id, until),
  });
  return createRateLimitGate({
    limiter,
    annotation: (ns) => o.keys.annotation(ns, RATE_LIMITS_ANNOTATION),
    replicas: o.config.rateLimits.replicas,
    now: () => o.clock.now(),
    metrics: o.metrics,
    logger: o.logger,
  });
}
