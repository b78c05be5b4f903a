/**
 * The controller's Grafana dashboard (deploy/monitoring/dashboard.json, written by `npm run gen:monitoring`):
 * runs by phase, throughput, queue wait and run duration histograms, failures by kind, tokens and cost, batch and
 * realtime work, the controller's own health (leader, watch reconnects and resyncs, API request latency,
 * reconciles, event loop, memory, CPU), and the model gateway (calls, refusals, tokens, latency, usage writes). Every query reads a `${datasource}` Prometheus data source and is limited
 * to the namespaces picked in `$namespace`. Plain JSON values, so the file is the same on every run.
 */
import { fromLeader } from './alerts.ts';

type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };
type JsonObject = { readonly [key: string]: Json };

/** Grafana's dashboard JSON model version this file is written in (Grafana 10.4 and later read it). */
export const DASHBOARD_SCHEMA_VERSION = 39;
export const DASHBOARD_UID = 'agent-controller';

/** Every query's data source: the dashboard's `datasource` variable, picked when the dashboard is opened. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: a Grafana variable reference, not a template
export const DATASOURCE_UID = '${datasource}';
const DATASOURCE: JsonObject = { type: 'prometheus', uid: DATASOURCE_UID };
const NS = 'namespace=~"$namespace"';
const RATE = '$__rate_interval';
const RANGE = '$__range';

/** Series of the controller's targets only: process metrics are exported by every Node.js or Go target. */
function ofController(expr: string): string {
  return `${expr} and on (job, instance) controller_is_leader`;
}

/** Series of the model gateway's targets only (they export `gateway_ready`). */
function ofGateway(expr: string): string {
  return `${expr} and on (job, instance) gateway_ready`;
}

/** `metric{namespace=~"$namespace",…}`. */
function sel(metric: string, matchers = ''): string {
  return `${metric}{${NS}${matchers === '' ? '' : `,${matchers}`}}`;
}

interface Target {
  readonly expr: string;
  readonly legend?: string;
  /** One value for the whole time range (stat and bar gauge panels), else a range query. */
  readonly instant?: boolean;
  readonly format?: 'time_series' | 'heatmap';
}

interface Box {
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
}

function targets(list: readonly Target[]): Json[] {
  return list.map((t, i) => ({
    datasource: DATASOURCE,
    editorMode: 'code',
    expr: t.expr,
    format: t.format ?? 'time_series',
    instant: t.instant === true,
    legendFormat: t.legend ?? '__auto',
    range: t.instant !== true,
    refId: String.fromCharCode(65 + i),
  }));
}

type Threshold = readonly [color: string, from: number | null];

function thresholds(steps: readonly Threshold[]): JsonObject {
  return { mode: 'absolute', steps: steps.map(([color, value]) => ({ color, value })) };
}

interface SeriesOptions {
  readonly unit?: string;
  readonly stack?: boolean;
  readonly bars?: boolean;
  readonly min?: number;
  readonly max?: number;
  readonly description?: string;
}

/** Builds the panel list, numbering panels and placing them left to right, top to bottom. */
class Layout {
  readonly panels: JsonObject[] = [];
  private y = 0;
  private x = 0;
  private rowHeight = 0;

  private place(w: number, h: number): Box {
    if (this.x + w > 24) this.newLine();
    const box = { x: this.x, y: this.y, w, h };
    this.x += w;
    this.rowHeight = Math.max(this.rowHeight, h);
    return box;
  }

  private newLine(): void {
    this.y += this.rowHeight;
    this.x = 0;
    this.rowHeight = 0;
  }

  private push(panel: Record<string, Json>, box: Box): void {
    this.panels.push({
      id: this.panels.length + 1,
      gridPos: { h: box.h, w: box.w, x: box.x, y: box.y },
      ...panel,
    });
  }

  row(title: string): void {
    if (this.x > 0) this.newLine();
    const box = this.place(24, 1);
    this.push({ type: 'row', title, collapsed: false, panels: [] }, box);
    this.newLine();
  }

  timeseries(title: string, w: number, list: readonly Target[], o: SeriesOptions = {}): void {
    const box = this.place(w, 8);
    this.push(
      {
        type: 'timeseries',
        title,
        description: o.description ?? '',
        datasource: DATASOURCE,
        fieldConfig: {
          defaults: {
            unit: o.unit ?? 'short',
            ...(o.min === undefined ? {} : { min: o.min }),
            ...(o.max === undefined ? {} : { max: o.max }),
            color: { mode: 'palette-classic' },
            custom: {
              drawStyle: o.bars === true ? 'bars' : 'line',
              fillOpacity: o.stack === true || o.bars === true ? 60 : 10,
              lineWidth: 1,
              showPoints: 'never',
              spanNulls: false,
              stacking: { group: 'A', mode: o.stack === true ? 'normal' : 'none' },
            },
            thresholds: thresholds([['green', null]]),
          },
          overrides: [],
        },
        options: {
          legend: { calcs: [], displayMode: 'list', placement: 'bottom', showLegend: true },
          tooltip: { mode: 'multi', sort: 'desc' },
        },
        targets: targets(list),
      },
      box,
    );
  }

  stat(
    title: string,
    w: number,
    target: Target,
    o: { readonly unit?: string; readonly steps?: readonly Threshold[]; readonly description?: string } = {},
  ): void {
    const box = this.place(w, 4);
    this.push(
      {
        type: 'stat',
        title,
        description: o.description ?? '',
        datasource: DATASOURCE,
        fieldConfig: {
          defaults: {
            unit: o.unit ?? 'short',
            color: { mode: 'thresholds' },
            thresholds: thresholds(o.steps ?? [['green', null]]),
          },
          overrides: [],
        },
        options: {
          colorMode: 'value',
          graphMode: target.instant === true ? 'none' : 'area',
          justifyMode: 'auto',
          orientation: 'auto',
          reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
          textMode: 'auto',
        },
        targets: targets([target]),
      },
      box,
    );
  }

  barGauge(title: string, w: number, target: Target, unit: string, description = ''): void {
    const box = this.place(w, 8);
    this.push(
      {
        type: 'bargauge',
        title,
        description,
        datasource: DATASOURCE,
        fieldConfig: {
          defaults: { unit, color: { mode: 'palette-classic' }, thresholds: thresholds([['green', null]]) },
          overrides: [],
        },
        options: {
          displayMode: 'basic',
          orientation: 'horizontal',
          reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
          showUnfilled: true,
        },
        targets: targets([{ ...target, instant: true }]),
      },
      box,
    );
  }

  heatmap(title: string, w: number, bucketMetric: string, description: string): void {
    const box = this.place(w, 8);
    this.push(
      {
        type: 'heatmap',
        title,
        description,
        datasource: DATASOURCE,
        fieldConfig: { defaults: {}, overrides: [] },
        options: {
          calculate: false,
          cellGap: 1,
          color: {
            exponent: 0.5,
            fill: 'dark-orange',
            mode: 'scheme',
            reverse: false,
            scheme: 'Oranges',
            steps: 64,
          },
          exemplars: { color: 'rgba(255,0,255,0.7)' },
          filterValues: { le: 1e-9 },
          legend: { show: true },
          rowsFrame: { layout: 'auto' },
          tooltip: { mode: 'single', showColorScale: false, yHistogram: false },
          yAxis: { axisPlacement: 'left', reverse: false, unit: 's' },
        },
        targets: targets([
          {
            expr: `sum by (le) (increase(${sel(bucketMetric)}[${RATE}]))`,
            legend: '{{le}}',
            format: 'heatmap',
          },
        ]),
      },
      box,
    );
  }
}

/** Quantiles (default p50, p95, p99) of a classic histogram, optionally split by `by` labels. */
function quantiles(
  bucketMetric: string,
  o: { readonly qs?: readonly number[]; readonly by?: string } = {},
): Target[] {
  const by = o.by ?? '';
  const labels = by === '' ? 'le' : `le, ${by}`;
  const legendBy = by === '' ? '' : ` {{${by}}}`;
  return (o.qs ?? [0.5, 0.95, 0.99]).map((q) => ({
    expr: `histogram_quantile(${q}, sum by (${labels}) (rate(${sel(bucketMetric)}[${RATE}])))`,
    legend: `p${Math.round(q * 100)}${legendBy}`,
  }));
}

function panels(): JsonObject[] {
  const l = new Layout();
  const leaderOnly = (metric: string, matchers = '') => fromLeader(sel(metric, matchers));

  l.row('Overview');
  l.stat(
    'Replicas holding the Lease',
    4,
    { expr: `sum(${sel('controller_is_leader')})` },
    {
      steps: [
        ['red', null],
        ['green', 1],
        ['orange', 2],
      ],
      description:
        'Exactly 1 while the controller works: 0 means no replica reconciles (alert AgentControllerNoLeader).',
    },
  );
  l.stat(
    'Pending',
    4,
    { expr: `sum(${leaderOnly('controller_agents', 'phase="Pending"')})` },
    { description: 'Agents waiting to start (queued behind a Station limit, or waiting for dependencies).' },
  );
  l.stat('Running', 4, { expr: `sum(${leaderOnly('controller_agents', 'phase="Running"')})` });
  l.stat('Runs finished', 4, {
    expr: `sum(increase(${sel('controller_runs_completed_total')}[${RANGE}]))`,
    instant: true,
  });
  l.stat(
    'Failed',
    4,
    {
      expr:
        `sum(increase(${sel('controller_runs_completed_total', 'phase="Failed"')}[${RANGE}])) ` +
        `/ sum(increase(${sel('controller_runs_completed_total')}[${RANGE}]))`,
      instant: true,
    },
    {
      unit: 'percentunit',
      steps: [
        ['green', null],
        ['orange', 0.1],
        ['red', 0.25],
      ],
      description: 'Share of the runs finished in the time range that ended Failed.',
    },
  );
  l.stat(
    'Estimated cost',
    4,
    { expr: `sum(increase(${sel('controller_run_cost_usd_total')}[${RANGE}]))`, instant: true },
    { unit: 'currencyUSD', description: 'Estimated cost of the runs finished in the time range.' },
  );

  l.row('Runs');
  l.timeseries(
    'Agents by phase',
    12,
    [{ expr: `sum by (phase) (${leaderOnly('controller_agents')})`, legend: '{{phase}}' }],
    { stack: true, min: 0, description: "The leader's count of Agents per phase at its last poll." },
  );
  l.timeseries(
    'Throughput (per minute)',
    12,
    [
      {
        expr: `sum by (phase) (rate(${sel('controller_runs_completed_total')}[${RATE}])) * 60`,
        legend: 'finished {{phase}}',
      },
      { expr: `sum(rate(${sel('controller_jobs_created_total')}[${RATE}])) * 60`, legend: 'Jobs created' },
      {
        expr: `sum(rate(${sel('controller_run_queue_seconds_count')}[${RATE}])) * 60`,
        legend: 'runs started',
      },
    ],
    { min: 0, description: 'Runs finished (by phase), runs started (Jobs created and batches submitted).' },
  );
  l.heatmap(
    'Queue wait',
    12,
    'controller_run_queue_seconds_bucket',
    "Time from an Agent's creation to its Job's creation (or its batch's submission).",
  );
  l.timeseries('Queue wait quantiles', 12, quantiles('controller_run_queue_seconds_bucket'), { unit: 's' });
  l.heatmap(
    'Run duration',
    12,
    'controller_run_duration_seconds_bucket',
    'Run duration from startedAt to the terminal status, both phases.',
  );
  l.timeseries(
    'Run duration quantiles by phase',
    12,
    quantiles('controller_run_duration_seconds_bucket', { qs: [0.5, 0.95], by: 'phase' }),
    { unit: 's' },
  );

  l.row('Failures');
  l.timeseries(
    'Failures by kind',
    12,
    [
      {
        expr: `sum by (kind) (increase(${sel('controller_run_failures_total')}[${RATE}])) > 0`,
        legend: '{{kind}}',
      },
    ],
    {
      bars: true,
      stack: true,
      description: 'Failed runs by failure kind (README "Observability" lists the kinds).',
    },
  );
  l.timeseries(
    'Failure ratio',
    12,
    [
      {
        expr:
          `sum(rate(${sel('controller_runs_completed_total', 'phase="Failed"')}[${RATE}])) ` +
          `/ sum(rate(${sel('controller_runs_completed_total')}[${RATE}]))`,
        legend: 'failed / finished',
      },
    ],
    {
      unit: 'percentunit',
      min: 0,
      max: 1,
      description: 'Alert AgentRunFailureRatioHigh fires above 25% over 30 minutes.',
    },
  );

  l.row('Tokens and cost');
  l.timeseries(
    'Tokens per hour by model and kind',
    12,
    [
      {
        expr: `sum by (model, kind) (rate(${sel('controller_run_tokens_total')}[${RATE}])) * 3600`,
        legend: '{{model}} {{kind}}',
      },
    ],
    {
      stack: true,
      min: 0,
      description: 'Counted when a run finishes; kind is input, output, cache_read, cache_write.',
    },
  );
  l.timeseries(
    'Estimated cost per hour by model',
    12,
    [
      {
        expr: `sum by (model) (rate(${sel('controller_run_cost_usd_total')}[${RATE}])) * 3600`,
        legend: '{{model}}',
      },
    ],
    {
      unit: 'currencyUSD',
      stack: true,
      min: 0,
      description: 'model is the price-table entry that priced the run.',
    },
  );
  l.barGauge(
    'Tokens in the time range by model',
    12,
    {
      expr: `sum by (model) (increase(${sel('controller_run_tokens_total')}[${RANGE}]))`,
      legend: '{{model}}',
    },
    'short',
  );
  l.barGauge(
    'Estimated cost in the time range by model',
    12,
    {
      expr: `sum by (model) (increase(${sel('controller_run_cost_usd_total')}[${RANGE}]))`,
      legend: '{{model}}',
    },
    'currencyUSD',
  );

  l.row('Batch and realtime');
  l.timeseries(
    'Batches in flight and realtime sessions',
    8,
    [
      { expr: `sum(${leaderOnly('controller_batches_in_flight')})`, legend: 'batches in flight' },
      { expr: `sum(${leaderOnly('controller_realtime_sessions')})`, legend: 'realtime sessions' },
    ],
    { min: 0 },
  );
  l.timeseries(
    'Batch cleanup failures and orphans',
    8,
    [
      {
        expr: `sum(increase(${sel('controller_batch_cleanup_failures_total')}[${RATE}]))`,
        legend: 'cleanup failures',
      },
      {
        expr: `sum by (provider) (increase(${sel('controller_batch_orphans_total')}[${RATE}]))`,
        legend: 'orphans {{provider}}',
      },
    ],
    { bars: true, min: 0, description: 'Alerts AgentBatchCleanupFailuresRising and AgentBatchOrphans.' },
  );
  l.timeseries(
    'Batch polls by result (per second)',
    8,
    [
      {
        expr: `sum by (provider, result) (rate(${sel('controller_batch_polls_total')}[${RATE}]))`,
        legend: '{{provider}} {{result}}',
      },
    ],
    { unit: 'reqps', min: 0 },
  );
  l.timeseries(
    'Realtime prompts by result (per second)',
    12,
    [
      {
        expr: `sum by (action, result) (rate(${sel('controller_prompts_total')}[${RATE}]))`,
        legend: '{{action}} {{result}}',
      },
    ],
    { unit: 'reqps', min: 0 },
  );
  l.timeseries(
    'Realtime prompt latency to the first line',
    12,
    quantiles('controller_prompt_first_line_seconds_bucket', { qs: [0.95, 0.99] }),
    { unit: 's' },
  );

  l.row('Controller health');
  l.timeseries('Leader', 8, [{ expr: sel('controller_is_leader'), legend: '{{instance}}' }], {
    min: 0,
    max: 1,
    description: '1 on the replica holding the Lease.',
  });
  l.timeseries(
    'Watch reconnects by resource',
    8,
    [
      {
        expr: `sum by (resource) (increase(${sel('controller_watch_reconnects_total')}[${RATE}]))`,
        legend: '{{resource}}',
      },
    ],
    {
      bars: true,
      min: 0,
      description: 'Watches lost and opened again (alert AgentControllerWatchReconnectStorm).',
    },
  );
  l.timeseries(
    'Resyncs (full LISTs of Agents)',
    8,
    [
      {
        expr: `sum by (instance) (increase(${sel('controller_resyncs_total')}[${RATE}]))`,
        legend: '{{instance}}',
      },
    ],
    {
      bars: true,
      min: 0,
      description: 'At start, on every poll of the leader, and after a watch expired (410).',
    },
  );
  l.timeseries(
    'API request latency by verb',
    12,
    quantiles('controller_apiserver_request_duration_seconds_bucket', { qs: [0.5, 0.99], by: 'verb' }),
    { unit: 's', description: 'Non-watch requests to the Kubernetes API server.' },
  );
  l.timeseries(
    'API requests by code (per second)',
    12,
    [
      {
        expr: `sum by (code) (rate(${sel('controller_apiserver_request_duration_seconds_count')}[${RATE}]))`,
        legend: '{{code}}',
      },
    ],
    { unit: 'reqps', stack: true, min: 0 },
  );
  l.timeseries(
    'Reconciles by result (per second)',
    12,
    [
      {
        expr: `sum by (result) (rate(${sel('controller_reconciles_total')}[${RATE}]))`,
        legend: '{{result}}',
      },
    ],
    { unit: 'ops', stack: true, min: 0 },
  );
  l.timeseries('Reconcile duration', 12, quantiles('controller_reconcile_duration_seconds_bucket'), {
    unit: 's',
  });
  l.timeseries(
    'Event loop lag',
    8,
    [
      ...quantiles('controller_event_loop_lag_seconds_bucket', { qs: [0.99], by: 'instance' }),
      { expr: sel('controller_event_loop_max_lag_seconds'), legend: 'max 10 s {{instance}}' },
    ],
    {
      unit: 's',
      description: 'How late a 100 ms timer fired: time the event loop was busy with something else.',
    },
  );
  processPanels(l, ['Resident memory', 'CPU'], ofController);
  gatewayOverview(l);
  gatewayDetail(l);
  return l.panels;
}

/**
 * The model gateway's row, first part: replicas ready, calls, refusals, tokens. `namespace` is the gateway pods'
 * (the scrape's); the gateway has no cost metric (the controller prices runs: "Tokens and cost" above).
 */
function gatewayOverview(l: Layout): void {
  l.row('Model gateway');
  l.stat(
    'Gateway replicas ready',
    4,
    { expr: `sum(${sel('gateway_ready')})` },
    {
      steps: [
        ['red', null],
        ['orange', 1],
        ['green', 2],
      ],
      description:
        'Replicas whose readiness checks pass (alerts AgentGatewayDown, AgentGatewayReplicaNotReady).',
    },
  );
  l.stat('Calls in flight', 4, { expr: `sum(${sel('gateway_requests_in_flight')})` });
  l.stat(
    'Calls refused',
    4,
    {
      expr:
        `sum(increase(${sel('gateway_refusals_total')}[${RANGE}])) ` +
        `/ sum(increase(${sel('gateway_requests_total')}[${RANGE}]))`,
      instant: true,
    },
    {
      unit: 'percentunit',
      steps: [
        ['green', null],
        ['orange', 0.05],
        ['red', 0.1],
      ],
      description: "Share of the gateway's answers in the time range that were its own refusals.",
    },
  );
  l.stat('Tokens measured', 4, {
    expr: `sum(increase(${sel('gateway_tokens_total')}[${RANGE}]))`,
    instant: true,
  });
  l.stat(
    'Usage writes failed',
    4,
    {
      expr: `sum(increase(${sel('gateway_usage_writes_total', 'result="error"')}[${RANGE}]))`,
      instant: true,
    },
    {
      steps: [
        ['green', null],
        ['red', 1],
      ],
      description:
        'Failed writes of measured usage to Agents in the time range (alert AgentGatewayUsageWritesFailing).',
    },
  );
  l.stat(
    'Runs with usage not yet written',
    4,
    { expr: `sum(${sel('gateway_usage_pending_runs')})` },
    { description: 'Runs whose measured usage waits in a replica for its write (written every second).' },
  );
  l.timeseries(
    'Gateway calls by vendor and code (per second)',
    12,
    [
      {
        expr: `sum by (vendor, code) (rate(${sel('gateway_requests_total')}[${RATE}]))`,
        legend: '{{vendor}} {{code}}',
      },
    ],
    {
      unit: 'reqps',
      stack: true,
      min: 0,
      description: "Every call answered, the gateway's own refusals included.",
    },
  );
  l.timeseries(
    'Gateway refusals by reason (per second)',
    12,
    [
      {
        expr: `sum by (reason) (rate(${sel('gateway_refusals_total')}[${RATE}])) > 0`,
        legend: '{{reason}}',
      },
    ],
    {
      unit: 'reqps',
      stack: true,
      min: 0,
      description: 'docs/design/gateway.md lists the reasons (alert AgentGatewayRefusalRatioHigh).',
    },
  );
  l.timeseries(
    'Gateway tokens per hour by model and kind',
    12,
    [
      {
        expr: `sum by (model, kind) (rate(${sel('gateway_tokens_total')}[${RATE}])) * 3600`,
        legend: '{{model}} {{kind}}',
      },
    ],
    {
      stack: true,
      min: 0,
      description:
        'Measured in the answers as they pass, while runs go on; kind: input, output, cache_read, cache_write.',
    },
  );
  l.timeseries(
    'Gateway tokens per hour by Station',
    12,
    [
      {
        expr: `sum by (station) (rate(${sel('gateway_tokens_total')}[${RATE}])) * 3600`,
        legend: '{{station}}',
      },
    ],
    {
      stack: true,
      min: 0,
      description: "The run's Station; same-named Stations of several namespaces add up.",
    },
  );
}

/** The model gateway's row, second part: latency, upstream first byte, in flight, usage writes, the process. */
function gatewayDetail(l: Layout): void {
  l.timeseries(
    'Gateway call latency (to the last byte)',
    8,
    quantiles('gateway_request_duration_seconds_bucket', { qs: [0.5, 0.99], by: 'vendor' }),
    {
      unit: 's',
      description: 'From a call arriving to the end of its answer: a long stream is a long call.',
    },
  );
  l.timeseries(
    'Vendor first byte',
    8,
    quantiles('gateway_upstream_first_byte_seconds_bucket', { qs: [0.5, 0.99], by: 'vendor' }),
    { unit: 's', description: "From a forwarded call arriving to the vendor's answer headers." },
  );
  l.timeseries(
    'Gateway calls in flight by vendor',
    8,
    [{ expr: `sum by (vendor) (${sel('gateway_requests_in_flight')})`, legend: '{{vendor}}' }],
    { min: 0 },
  );
  l.timeseries(
    'Usage writes by result (per second)',
    8,
    [
      {
        expr: `sum by (result) (rate(${sel('gateway_usage_writes_total')}[${RATE}]))`,
        legend: '{{result}}',
      },
      { expr: `sum(${sel('gateway_usage_pending_runs')})`, legend: 'runs pending' },
    ],
    {
      min: 0,
      description: "Merge patches of Agents' usage annotation: written, conflict (retried), gone, error.",
    },
  );
  processPanels(l, ['Gateway resident memory', 'Gateway CPU'], ofGateway);
  gatewayRateLimits(l);
}

/** The model gateway's rate limits per vendor key (docs/design/gateway.md#rate-limits). */
function gatewayRateLimits(l: Layout): void {
  l.timeseries(
    'Calls held for their key’s rate limit (per second)',
    8,
    [
      {
        expr: `sum by (namespace, vendor, reason) (rate(${sel('gateway_throttled_total')}[${RATE}])) > 0`,
        legend: '{{namespace}} {{vendor}} {{reason}}',
      },
    ],
    {
      unit: 'reqps',
      min: 0,
      description: 'queued: waited for the key; refused: waited the longest and got 429 with retry-after.',
    },
  );
  l.timeseries(
    'Wait for a key’s capacity',
    8,
    quantiles('gateway_limiter_wait_seconds_bucket', { qs: [0.5, 0.99], by: 'vendor' }),
    { unit: 's', description: 'Calls that waited only; at most AGENT_GATEWAY_MAX_WAIT_SECONDS.' },
  );
  l.timeseries(
    'Saturated vendor keys',
    8,
    [
      {
        expr: `max by (namespace, vendor, key) (${sel('gateway_key_saturated')}) > 0`,
        legend: '{{namespace}} {{vendor}} {{key}}',
      },
    ],
    {
      min: 0,
      description:
        'A key with calls waiting, or held by the vendor (429, a used-up window). New runs using it wait (KeySaturated).',
    },
  );
}

/** Memory and CPU of one program's replicas: `scope` limits the process metrics (every target has them) to its own. */
function processPanels(l: Layout, titles: readonly [string, string], scope: (expr: string) => string): void {
  l.timeseries(
    titles[0],
    8,
    [{ expr: scope(sel('process_resident_memory_bytes')), legend: '{{instance}}' }],
    {
      unit: 'bytes',
      min: 0,
    },
  );
  l.timeseries(
    titles[1],
    8,
    [{ expr: scope(`rate(${sel('process_cpu_seconds_total')}[${RATE}])`), legend: '{{instance}}' }],
    { unit: 'percentunit', min: 0, description: 'Cores used (1 = 100% of one core).' },
  );
}

/** The dashboard as a JSON value. */
export function buildDashboard(): JsonObject {
  return {
    annotations: {
      list: [
        {
          builtIn: 1,
          datasource: { type: 'grafana', uid: '-- Grafana --' },
          enable: true,
          hide: true,
          iconColor: 'rgba(0, 211, 255, 1)',
          name: 'Annotations & Alerts',
          type: 'dashboard',
        },
      ],
    },
    description:
      'agent-controller: runs, failures, tokens and cost, the controller itself, and the model gateway.',
    editable: true,
    fiscalYearStartMonth: 0,
    graphTooltip: 1,
    id: null,
    links: [],
    panels: panels(),
    refresh: '30s',
    schemaVersion: DASHBOARD_SCHEMA_VERSION,
    tags: ['agent-controller', 'kubernetes'],
    templating: {
      list: [
        {
          current: {},
          hide: 0,
          includeAll: false,
          label: 'Data source',
          multi: false,
          name: 'datasource',
          options: [],
          query: 'prometheus',
          refresh: 1,
          regex: '',
          skipUrlSync: false,
          type: 'datasource',
        },
        {
          allValue: '.*',
          current: {},
          datasource: DATASOURCE,
          definition: 'label_values(controller_is_leader, namespace)',
          hide: 0,
          includeAll: true,
          label: 'Namespace',
          multi: true,
          name: 'namespace',
          options: [],
          query: { qryType: 1, query: 'label_values(controller_is_leader, namespace)', refId: 'namespace' },
          refresh: 2,
          regex: '',
          skipUrlSync: false,
          sort: 1,
          type: 'query',
        },
      ],
    },
    time: { from: 'now-6h', to: 'now' },
    timepicker: {},
    timezone: '',
    title: 'agent-controller',
    uid: DASHBOARD_UID,
    version: 1,
    weekStart: '',
  };
}
