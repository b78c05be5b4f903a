// deploy/monitoring and charts/monitoring (the plain rules file and its promtool tests), read as users get them:
// every metric name the dashboard and the alert rules use is one the controller or the model gateway serves on
// /metrics (the text of the registries src/cmd/controller.ts and src/cmd/gateway.ts serve there, default process
// metrics included; a histogram only as its _bucket, _sum and _count series), the dashboard covers what issue 11 §3
// and issue 28 §3 list, the generated files are what
// src/metrics/monitoring renders, and every alert has promtool unit tests that see it fire and see it stay quiet.
// promtool itself runs in test/e2e/monitoring.test.ts. Also: docs/how-to/monitoring.md lists every run failure kind.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import * as v from 'valibot';
import { GATEWAY_VENDORS } from '../../src/api/gateway.ts';
import { REFUSAL_REASONS } from '../../src/gateway/refusals.ts';
import { createGatewayMetrics } from '../../src/metrics/gateway.ts';
import { createGatewayLimiterMetrics } from '../../src/metrics/gateway-limits.ts';
import { createControllerMetrics } from '../../src/metrics/index.ts';
import {
  DASHBOARD_SCHEMA_VERSION,
  DATASOURCE_UID,
  grafanaVariableQueryNames,
  MONITORING_FILE_HEADER,
  PROMQL_FUNCTIONS,
  promqlNames,
  renderMonitoringFiles,
} from '../../src/metrics/monitoring/index.ts';
import { RUN_FAILURE_KINDS } from '../../src/reconcile/actions.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** A file of the repository, by its repository-relative path. */
const read = (rel: string) => readFileSync(join(ROOT, rel), 'utf8');

const RuleSchema = v.strictObject({
  alert: v.string(),
  expr: v.string(),
  for: v.optional(v.string()),
  labels: v.strictObject({ severity: v.picklist(['critical', 'warning', 'info']) }),
  annotations: v.strictObject({ summary: v.string(), description: v.string() }),
});
const GroupsSchema = v.array(v.strictObject({ name: v.string(), rules: v.array(RuleSchema) }));
const RulesFileSchema = v.strictObject({ groups: GroupsSchema });

const TargetSchema = v.looseObject({ expr: v.string(), refId: v.string() });
const DatasourceSchema = v.strictObject({ type: v.literal('prometheus'), uid: v.literal(DATASOURCE_UID) });
const PanelSchema = v.looseObject({
  id: v.number(),
  type: v.string(),
  title: v.string(),
  gridPos: v.strictObject({ h: v.number(), w: v.number(), x: v.number(), y: v.number() }),
  datasource: v.optional(DatasourceSchema),
  targets: v.optional(v.array(TargetSchema)),
});
const VariableSchema = v.looseObject({
  name: v.string(),
  type: v.string(),
  query: v.union([v.string(), v.looseObject({ query: v.string() })]),
});
const DashboardSchema = v.looseObject({
  uid: v.string(),
  title: v.string(),
  schemaVersion: v.number(),
  panels: v.array(PanelSchema),
  templating: v.strictObject({ list: v.array(VariableSchema) }),
});

const TestFileSchema = v.looseObject({
  rule_files: v.array(v.string()),
  tests: v.array(
    v.looseObject({
      name: v.string(),
      alert_rule_test: v.array(
        v.looseObject({ eval_time: v.string(), alertname: v.string(), exp_alerts: v.array(v.unknown()) }),
      ),
    }),
  ),
});

const rules = v.parse(RulesFileSchema, load(read('charts/monitoring/rules.yaml')));
const dashboard = v.parse(DashboardSchema, JSON.parse(read('deploy/monitoring/dashboard.json')));
const alerts = rules.groups.flatMap((g) => g.rules);

/** Every PromQL expression of the dashboard, with where it is. */
function dashboardExprs(): { where: string; expr: string }[] {
  return dashboard.panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({ where: `panel "${p.title}" ${t.refId}`, expr: t.expr })),
  );
}

/** Sample names on the controller's and the gateway's /metrics → their metric family; histograms by their series. */
async function servedSeriesNames(): Promise<Map<string, string>> {
  const text = [
    await createControllerMetrics(true).registry.metrics(),
    await (() => {
      const gateway = createGatewayMetrics(REFUSAL_REASONS, GATEWAY_VENDORS, true);
      createGatewayLimiterMetrics(gateway.registry);
      return gateway.registry.metrics();
    })(),
  ].join('\n');
  const names = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (!m) continue;
    const [, name, type] = m as unknown as [string, string, string];
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.set(`${name}${s}`, name);
    else if (type === 'summary') for (const s of ['', '_sum', '_count']) names.set(`${name}${s}`, name);
    else names.set(name, name);
  }
  return names;
}

describe('deploy/monitoring and charts/monitoring', () => {
  it('is exactly what src/metrics/monitoring generates (run npm run gen:monitoring after changing it)', () => {
    const files = renderMonitoringFiles();
    assert.deepEqual(
      files.map((f) => f.path),
      [
        'charts/monitoring/rules.yaml',
        'deploy/monitoring/prometheus-rule.yaml',
        'deploy/monitoring/dashboard.json',
      ],
    );
    for (const f of files) {
      assert.equal(readFileSync(join(ROOT, f.path), 'utf8'), f.content, `${f.path} drifted from its source`);
      if (f.path.endsWith('.yaml')) assert.equal(f.content.split('\n')[0], MONITORING_FILE_HEADER);
    }
  });

  it('uses only metric names the controller or the gateway serves on /metrics', async () => {
    const served = await servedSeriesNames();
    // The registries are the real ones: their own metrics and prom-client's default process metrics.
    assert.ok(served.has('controller_is_leader') && served.has('process_resident_memory_bytes'));
    assert.ok(served.has('gateway_ready') && served.has('gateway_requests_total'));
    const uses: { where: string; name: string }[] = [];
    for (const r of alerts)
      for (const name of promqlNames(r.expr).metrics) uses.push({ where: r.alert, name });
    for (const { where, expr } of dashboardExprs())
      for (const name of promqlNames(expr).metrics) uses.push({ where, name });
    for (const variable of dashboard.templating.list) {
      const query = typeof variable.query === 'string' ? variable.query : variable.query.query;
      if (variable.type !== 'query') continue;
      for (const name of grafanaVariableQueryNames(query).metrics)
        uses.push({ where: `variable $${variable.name}`, name });
    }
    const missing = uses.filter((u) => !served.has(u.name)).map((u) => `${u.where}: ${u.name}`);
    assert.deepEqual(missing, [], 'names not on /metrics (a histogram is read as _bucket, _sum or _count)');
    // Most of the registry is on show: a check that read nothing would pass the assertion above.
    const families = new Set(uses.map((u) => served.get(u.name)));
    assert.ok(families.size >= 34, `only ${families.size} metric families used`);
  });

  it('calls only PromQL functions (a misspelt one would read as a metric or fail in Grafana)', () => {
    const exprs = [...alerts.map((r) => r.expr), ...dashboardExprs().map((d) => d.expr)];
    const unknown = exprs.flatMap((e) => promqlNames(e).functions.filter((f) => !PROMQL_FUNCTIONS.has(f)));
    assert.deepEqual(unknown, []);
  });

  it('has a dashboard panel for everything issue 11 §3 lists', () => {
    const used = (metric: string) =>
      dashboardExprs()
        .filter(({ expr }) => promqlNames(expr).metrics.includes(metric))
        .map(({ where }) => where);
    const wanted: Record<string, string> = {
      'runs by phase': 'controller_agents',
      throughput: 'controller_runs_completed_total',
      'queue wait histogram': 'controller_run_queue_seconds_bucket',
      'run duration histogram': 'controller_run_duration_seconds_bucket',
      'failures by kind': 'controller_run_failures_total',
      tokens: 'controller_run_tokens_total',
      cost: 'controller_run_cost_usd_total',
      resyncs: 'controller_resyncs_total',
      reconnects: 'controller_watch_reconnects_total',
      leader: 'controller_is_leader',
      'API request latency': 'controller_apiserver_request_duration_seconds_bucket',
    };
    for (const [topic, metric] of Object.entries(wanted))
      assert.ok(used(metric).length > 0, `no panel shows ${topic} (${metric})`);
    // process_* and nodejs_* come from every Node.js (and Go) target: a query reads them of the controller or of
    // the gateway only.
    const ours = (n: string) => n.startsWith('controller_') || n.startsWith('gateway_');
    const unscoped = dashboardExprs().filter(({ expr }) => {
      const names = promqlNames(expr).metrics;
      return names.some((n) => !ours(n)) && !names.some(ours);
    });
    assert.deepEqual(
      unscoped,
      [],
      'queries of metrics other targets export too, not limited to the controller',
    );
    const heatmaps = dashboard.panels.filter((p) => p.type === 'heatmap').map((p) => p.title);
    assert.deepEqual(heatmaps, ['Queue wait', 'Run duration']);
  });

  it('has a panel for everything issue 28 §3 lists of the gateway, and its process figures from its targets only', () => {
    const used = (metric: string) =>
      dashboardExprs().filter(({ expr }) => promqlNames(expr).metrics.includes(metric));
    const wanted: Record<string, string> = {
      requests: 'gateway_requests_total',
      'refusals by reason': 'gateway_refusals_total',
      'tokens by kind': 'gateway_tokens_total',
      latency: 'gateway_request_duration_seconds_bucket',
      'upstream first byte': 'gateway_upstream_first_byte_seconds_bucket',
      'in flight': 'gateway_requests_in_flight',
      'usage writes by result': 'gateway_usage_writes_total',
      ready: 'gateway_ready',
    };
    for (const [topic, metric] of Object.entries(wanted))
      assert.ok(used(metric).length > 0, `no panel shows the gateway's ${topic} (${metric})`);
    const legends = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => [p.title, t.expr] as const));
    const byReason = legends.filter(([, e]) => /sum by \(reason\) \(rate\(gateway_refusals_total/.test(e));
    assert.equal(byReason.length, 1, 'refusals split by reason');
    const byKind = legends.filter(([, e]) => /sum by \(model, kind\) \(rate\(gateway_tokens_total/.test(e));
    assert.equal(byKind.length, 1, 'tokens split by kind');
    const processOfGateway = dashboardExprs().filter(
      ({ expr }) => expr.includes('process_') && expr.includes('and on (job, instance) gateway_ready'),
    );
    assert.equal(processOfGateway.length, 2, 'gateway memory and CPU, scoped to its targets');
  });

  it('is a Grafana dashboard reading the datasource variable, panels on the grid without overlap', () => {
    assert.equal(dashboard.schemaVersion, DASHBOARD_SCHEMA_VERSION);
    assert.equal(dashboard.uid, 'agent-controller');
    const ds = dashboard.templating.list.find((t) => t.name === 'datasource');
    assert.ok(ds && ds.type === 'datasource' && ds.query === 'prometheus');
    const ids = dashboard.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    const taken = new Set<string>();
    for (const p of dashboard.panels) {
      const { x, y, w, h } = p.gridPos;
      assert.ok(x >= 0 && w > 0 && x + w <= 24 && h > 0, `panel "${p.title}" fits the 24-column grid`);
      for (let i = x; i < x + w; i++)
        for (let j = y; j < y + h; j++) {
          assert.ok(!taken.has(`${i},${j}`), `panel "${p.title}" overlaps another at ${i},${j}`);
          taken.add(`${i},${j}`);
        }
      if (p.type === 'row') continue;
      assert.ok(p.datasource, `panel "${p.title}" reads the datasource variable`);
      assert.ok((p.targets ?? []).length > 0, `panel "${p.title}" has a query`);
    }
  });

  it('has alerts with a severity, a summary and a description, each name once', () => {
    const names = alerts.map((r) => r.alert);
    assert.equal(new Set(names).size, names.length);
    assert.deepEqual(names, [
      'AgentControllerNoLeader',
      'AgentControllerAbsent',
      'AgentRunsStuckQueued',
      'AgentRunFailureRatioHigh',
      'AgentBatchCleanupFailuresRising',
      'AgentBatchOrphans',
      'AgentControllerWatchReconnectStorm',
      'AgentGatewayDown',
      'AgentGatewayReplicaNotReady',
      'AgentGatewayRefusalRatioHigh',
      'AgentGatewayUsageWritesFailing',
    ]);
    for (const r of alerts) {
      assert.ok(r.annotations.summary.length > 10 && r.annotations.description.length > 80, r.alert);
      // Only an informational alert may fire without waiting.
      assert.ok(r.for !== undefined || r.labels.severity === 'info', `${r.alert} has a for:`);
    }
  });

  it('has promtool unit tests in which every alert fires and stays quiet', () => {
    const tests = v.parse(TestFileSchema, load(read('charts/monitoring/rules.test.yaml')));
    assert.deepEqual(tests.rule_files, ['rules.yaml']);
    const cases = tests.tests.flatMap((t) => t.alert_rule_test);
    for (const r of alerts) {
      const mine = cases.filter((c) => c.alertname === r.alert);
      assert.ok(
        mine.some((c) => c.exp_alerts.length > 0),
        `no test in rules.test.yaml sees ${r.alert} fire`,
      );
      assert.ok(
        mine.some((c) => c.exp_alerts.length === 0),
        `no test in rules.test.yaml sees ${r.alert} stay quiet`,
      );
    }
    const unknown = cases.map((c) => c.alertname).filter((n) => !alerts.some((r) => r.alert === n));
    assert.deepEqual(unknown, [], 'tests name alerts rules.yaml does not have');
  });
});

describe('docs/how-to/monitoring.md', () => {
  it('lists exactly the failure kinds of controller_run_failures_total (RUN_FAILURE_KINDS), each once', () => {
    const rows = read('docs/how-to/monitoring.md')
      .split('\n')
      .filter((l) => l.startsWith('| `controller_run_failures_total` |'));
    assert.equal(rows.length, 1, 'one row for controller_run_failures_total in the metrics table');
    const what = rows[0]?.split('|').at(-2) ?? '';
    assert.match(what, /failed runs: /);
    const listed = [...what.matchAll(/`([a-z_]+)`/g)].map((m) => m[1] ?? '');
    assert.deepEqual(
      RUN_FAILURE_KINDS.filter((k) => !listed.includes(k)),
      [],
      'kinds missing from the docs',
    );
    assert.deepEqual(
      listed.filter((k) => !(RUN_FAILURE_KINDS as readonly string[]).includes(k)),
      [],
      'kinds the controller does not have',
    );
    assert.equal(new Set(listed).size, listed.length, `a kind listed twice: ${listed.join(', ')}`);
  });
});
