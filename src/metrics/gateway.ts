import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** Seconds buckets from a fast refusal (ms) to a long streamed answer (minutes). */
const CALL_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/**
 * The model gateway's metrics (`agent-controller gateway`, served on its metrics port), on a registry of their own.
 * Names follow Prometheus conventions (`gateway_*`, `_total`, `_seconds`). `station` is the run's Station, empty when
 * the call was refused before its run was known; `model` is the model the call named.
 */
export interface GatewayMetrics {
  readonly registry: Registry;
  readonly requests: Counter<'namespace' | 'station' | 'model' | 'vendor' | 'code'>;
  readonly tokens: Counter<'namespace' | 'station' | 'model' | 'vendor' | 'kind'>;
  readonly cost: Counter<'namespace' | 'station' | 'model' | 'vendor'>;
  readonly spendAlert: Gauge;
  readonly duration: Histogram<'vendor'>;
  readonly firstByte: Histogram<'vendor'>;
  readonly refusals: Counter<'vendor' | 'reason'>;
  readonly inFlight: Gauge<'vendor'>;
  readonly ready: Gauge;
  readonly usageWrites: Counter<'result'>;
  readonly usagePending: Gauge;
}

/** Creates the registry and every metric; `withProcessMetrics` adds prom-client's default process metrics. */
export function createGatewayMetrics(
  reasons: readonly string[],
  vendors: readonly string[],
  withProcessMetrics = true,
): GatewayMetrics {
  const registry = new Registry();
  const registers = [registry];
  const m: GatewayMetrics = {
    registry,
    requests: new Counter({
      name: 'gateway_requests_total',
      help: 'Calls answered by the gateway, by namespace, Station, model, vendor and HTTP status (its own refusals included)',
      labelNames: ['namespace', 'station', 'model', 'vendor', 'code'],
      registers,
    }),
    tokens: new Counter({
      name: 'gateway_tokens_total',
      help: 'Tokens measured in answers, by namespace, Station, model, vendor and kind (input, output, cache_read, cache_write)',
      labelNames: ['namespace', 'station', 'model', 'vendor', 'kind'],
      registers,
    }),
    cost: new Counter({
      name: 'gateway_cost_usd_total',
      help: "US dollars of the tokens measured, priced with the price table (the controller's, with agent-prices), by namespace, Station, model and vendor; a model the table does not price adds nothing",
      labelNames: ['namespace', 'station', 'model', 'vendor'],
      registers,
    }),
    spendAlert: new Gauge({
      name: 'gateway_spend_alert_usd_per_hour',
      help: 'The spend rate (US dollars per hour, per run namespace) above which AgentGatewaySpendRateHigh fires (AGENT_GATEWAY_SPEND_ALERT_USD_PER_HOUR; 0: off)',
      registers,
    }),
    duration: new Histogram({
      name: 'gateway_request_duration_seconds',
      help: 'Time from a call arriving to the end of its answer (the last byte of a stream), by vendor',
      labelNames: ['vendor'],
      buckets: CALL_BUCKETS,
      registers,
    }),
    firstByte: new Histogram({
      name: 'gateway_upstream_first_byte_seconds',
      help: 'Time from a forwarded call arriving to the vendor answer headers, by vendor',
      labelNames: ['vendor'],
      buckets: CALL_BUCKETS,
      registers,
    }),
    refusals: new Counter({
      name: 'gateway_refusals_total',
      help: 'Calls the gateway answered itself, by vendor and reason (credential, unknown_run, run_ended, model, …)',
      labelNames: ['vendor', 'reason'],
      registers,
    }),
    inFlight: new Gauge({
      name: 'gateway_requests_in_flight',
      help: 'Calls being forwarded now, by vendor',
      labelNames: ['vendor'],
      registers,
    }),
    ready: new Gauge({
      name: 'gateway_ready',
      help: '1 while every readiness check passes (what /readyz answers 200 to), else 0; set at each scrape',
      registers,
    }),
    usageWrites: new Counter({
      name: 'gateway_usage_writes_total',
      help: "Writes of measured usage to Agents' annotation, by result (written, conflict, gone, error)",
      labelNames: ['result'],
      registers,
    }),
    usagePending: new Gauge({
      name: 'gateway_usage_pending_runs',
      help: 'Runs with measured usage not yet written to their Agent',
      registers,
    }),
  };
  for (const vendor of vendors) {
    m.inFlight.set({ vendor }, 0);
    for (const reason of reasons) m.refusals.inc({ vendor, reason }, 0);
  }
  for (const result of ['written', 'conflict', 'gone', 'error']) m.usageWrites.inc({ result }, 0);
  m.usagePending.set(0);
  m.ready.set(0);
  if (withProcessMetrics) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });
  return m;
}
