// The gateway process's wiring: the Agent informer, the credential key, the vendor keys, the usage writer, the
// model-API server and the health and metrics server; and the order of a graceful stop (not ready, calls in flight
// finish or are cut at the deadline, every measured delta written, then the watches stop).

import { GATEWAY_VENDORS } from '../api/gateway.ts';
import type { GatewayConfig } from '../config/gateway-config.ts';
import type { Transport } from '../kube/index.ts';
import type { GatewayMetrics } from '../metrics/gateway.ts';
import type { Clock } from '../runtime/index.ts';
import { createApp, type RunningServer, serveApp } from '../server/index.ts';
import type { Logger } from '../shared/log.ts';
import { createGatewayApp } from './app.ts';
import { agentSource, keepHmacKey, vendorKeys } from './cluster.ts';
import { usageFlusher } from './flusher.ts';
import { rateLimitGate } from './limits/wiring.ts';

/** How long calls in flight may go on after a stop was asked, before they are cut. */
export const DRAIN_MS = 20_000;
/** How long the last usage writes may take at a stop. */
export const FINAL_FLUSH_MS = 5_000;

export interface RunningGateway {
  readonly apiPort: number;
  readonly metricsPort: number;
  /** Stops as described in the header; resolves when everything is closed. */
  stop(): Promise<void>;
}

export async function startGateway(o: {
  readonly config: GatewayConfig;
  readonly transport: Transport;
  readonly clock: Clock;
  readonly random: () => number;
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  readonly fetch?: typeof fetch;
  readonly drainMs?: number;
}): Promise<RunningGateway> {
  const { config, transport, clock, logger: log, metrics } = o;
  const life = new AbortController();
  const agents = agentSource({ transport, clock, random: o.random, logger: log });
  const watching = agents.informer.run(life.signal);
  let hmacKey: Uint8Array | undefined;
  const keyLoop = keepHmacKey({
    transport,
    namespace: config.namespace,
    clock,
    logger: log,
    signal: life.signal,
    onKey: (key) => {
      hmacKey = key;
    },
  });
  const flusher = usageFlusher({ transport, agents, clock, logger: log, metrics });
  const keys = vendorKeys({ transport, now: () => clock.now() });
  let stopping = false;
  const active = new Set<AbortController>();
  const api = createGatewayApp({
    upstreams: config.upstreams,
    metrics,
    logger: log,
    flusher,
    now: () => performance.now(),
    fetch: o.fetch ?? fetch,
    active,
    hmacKey: () => hmacKey,
    agent: (run, fresh) => agents.find(run, fresh),
    vendorKey: (ns, name) => keys.get(ns, name),
    rateLimits: rateLimitGate({ config, transport, clock, logger: log, metrics, keys }),
  });
  const checks = [
    { name: 'agents', ready: () => agents.informer.store.hasSynced() },
    { name: 'credential-key', ready: () => hmacKey !== undefined },
    { name: 'not-stopping', ready: () => !stopping },
  ];
  const health = createApp({
    checks,
    metrics: async () => {
      metrics.ready.set(checks.every((c) => c.ready()) ? 1 : 0);
      return { body: await metrics.registry.metrics(), contentType: metrics.registry.contentType };
    },
  });
  const started: RunningServer[] = [];
  try {
    started.push(await serveApp(health, config.metricsPort, config.bindAddress));
    started.push(await serveApp(api, config.port, config.bindAddress));
  } catch (error) {
    life.abort();
    for (const s of started) await s.close();
    await Promise.allSettled([watching, keyLoop]);
    throw error;
  }
  const [healthServer, apiServer] = started as [RunningServer, RunningServer];
  log.info('Serving health and metrics', { port: healthServer.port, address: config.bindAddress });
  log.info('Serving the model APIs', {
    port: apiServer.port,
    address: config.bindAddress,
    vendors: GATEWAY_VENDORS,
    upstreams: Object.fromEntries(Object.entries(config.upstreams).map(([k, u]) => [k, withoutUserInfo(u)])),
  });
  return {
    apiPort: apiServer.port,
    metricsPort: healthServer.port,
    async stop() {
      stopping = true;
      const closed = apiServer.close();
      const cut = clock.setTimer(o.drainMs ?? DRAIN_MS, () => {
        for (const call of active) call.abort(new Error('the gateway is stopping'));
        apiServer.closeConnections();
      });
      await closed;
      cut();
      await flusher.flushAll(FINAL_FLUSH_MS);
      life.abort();
      await Promise.allSettled([watching, keyLoop]);
      await healthServer.close();
    },
  };
}

/** A URL as it may be logged: a user and password in it (a proxy's) left out. */
function withoutUserInfo(url: string): string {
  const u = new URL(url);
  u.username = '';
  u.password = '';
  return u.toString().replace(/\/$/, '');
}
