// The metrics of a server-mode run (`GET /metrics`, Prometheus text, no auth): API requests by how they ended and
// their duration, turns in flight and the concurrency limit. A request's `code` is what it ended as, which for a
// stream is not its status line: a streamed answer sends `200` before its turn runs, and one that ends with an error
// event is counted as that error (504 timeout, 500 CLI failure, 503 shutdown); a client that leaves before its answer
// is complete (streamed or not) is counted as 499, as proxies count it. On a registry of its own (never prom-client's global one). No
// label carries anything a client sent (no model, path or session), so nothing secret and no unbounded series.

import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Seconds buckets from a refused request (ms) to the longest turn a timeout allows by default (300 s) and beyond. */
export const REQUEST_DURATION_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

export interface ServerMetrics {
  /** Counts one API request that ended as `status` (see the header; not a stream's status line) after `seconds`. */
  requestDone(status: number, seconds: number): void;
  /** The number of turns in flight now. */
  setInFlight(n: number): void;
  /** The exposition text and its content type. */
  render(): Promise<{ readonly contentType: string; readonly body: string }>;
}

/** The metrics of one server, `limit` being its concurrency limit. */
export function createServerMetrics(limit: number): ServerMetrics {
  const registry = new Registry();
  const registers = [registry];
  const requests = new Counter({
    name: 'agent_server_requests_total',
    help:
      'API requests (not /healthz or /metrics) by the HTTP status they ended as: for a stream, whose status line says ' +
      '200 before its turn runs, the error it ended with (504, 500, 503); 499 for a client that left first',
    labelNames: ['code'],
    registers,
  });
  const duration = new Histogram({
    name: 'agent_server_request_duration_seconds',
    help: 'Time from an API request to the end of its answer (a streamed answer: its last byte)',
    buckets: REQUEST_DURATION_BUCKETS,
    registers,
  });
  const inFlight = new Gauge({
    name: 'agent_server_requests_in_flight',
    help: 'Turns (vendor CLI invocations) in flight',
    registers,
  });
  const concurrency = new Gauge({
    name: 'agent_server_concurrency_limit',
    help: 'The most turns in flight at once (AGENT_SERVER_CONCURRENCY); one more is refused with 429',
    registers,
  });
  concurrency.set(limit);
  inFlight.set(0);
  return {
    requestDone(status, seconds) {
      requests.inc({ code: String(status) });
      duration.observe(Math.max(0, seconds));
    },
    setInFlight: (n) => inFlight.set(n),
    render: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
  };
}
