// deploy/monitoring and charts/monitoring through Prometheus' own promtool (built from its Go module by
// scripts/build-promtool, or $PROMTOOL): rules.yaml passes `promtool check rules`, its unit tests rules.test.yaml
// pass `promtool test rules` and fail when any alert is made to never fire or to always fire (so they test every
// alert both ways), the PrometheusRule carries exactly the groups of rules.yaml, and every dashboard query is valid
// PromQL (checked as a recording rule, Grafana's variables replaced). No cluster: runtime-independent, so it runs in
// the node pass only.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import * as v from 'valibot';
import { promtoolBinary, promtoolSkipReason, runPromtool } from '../support/promtool.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MONITORING = join(ROOT, 'deploy', 'monitoring');
const RULES_DIR = join(ROOT, 'charts', 'monitoring');
const read = (name: string) => readFileSync(join(MONITORING, name), 'utf8');
const readRules = (name: string) => readFileSync(join(RULES_DIR, name), 'utf8');

const skip =
  process.env.AGENT_E2E_RUNTIME === 'deno'
    ? 'promtool does not depend on the JavaScript runtime; it runs in the node pass only'
    : promtoolSkipReason();

const RuleSchema = v.looseObject({ alert: v.string(), expr: v.string() });
const GroupsSchema = v.array(v.looseObject({ name: v.string(), rules: v.array(RuleSchema) }));
const RulesFileSchema = v.strictObject({ groups: GroupsSchema });
const PrometheusRuleSchema = v.strictObject({
  apiVersion: v.literal('monitoring.coreos.com/v1'),
  kind: v.literal('PrometheusRule'),
  metadata: v.looseObject({ name: v.string(), namespace: v.string() }),
  spec: v.strictObject({ groups: GroupsSchema }),
});
const DashboardSchema = v.looseObject({
  panels: v.array(
    v.looseObject({
      id: v.number(),
      title: v.string(),
      targets: v.optional(v.array(v.looseObject({ expr: v.string(), refId: v.string() }))),
    }),
  ),
});

/** A query as Prometheus would get it from Grafana: the dashboard's variables replaced by typical values. */
function asGrafanaSends(expr: string): string {
  return expr
    .replaceAll('$__rate_interval', '1m')
    .replaceAll('$__range', '6h')
    .replaceAll('$namespace', 'ai-agents|team-a');
}

describe('deploy/monitoring with promtool', { skip }, () => {
  let promtool = '';
  let work = '';
  before(
    () => {
      promtool = promtoolBinary();
      work = mkdtempSync(join(tmpdir(), 'monitoring-'));
    },
    // A cold build takes several minutes (npm test starts it in the background before the e2e tier).
    { timeout: 1_800_000 },
  );
  after(() => {
    if (work !== '') rmSync(work, { recursive: true, force: true });
  });

  it('rules.yaml passes promtool check rules', () => {
    const r = runPromtool(promtool, ['check', 'rules', 'charts/monitoring/rules.yaml']);
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    const count = v
      .parse(RulesFileSchema, load(readRules('rules.yaml')))
      .groups.flatMap((g) => g.rules).length;
    assert.match(r.stdout, new RegExp(`SUCCESS: ${count} rules found`));
  });

  it('rules.test.yaml passes promtool test rules', () => {
    const r = runPromtool(promtool, ['test', 'rules', 'charts/monitoring/rules.test.yaml']);
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /SUCCESS/);
  });

  it('the unit tests fail for any alert that never fires or always fires', () => {
    const rules = v.parse(RulesFileSchema, load(readRules('rules.yaml')));
    copyFileSync(join(RULES_DIR, 'rules.test.yaml'), join(work, 'rules.test.yaml'));
    const mutants: string[] = [];
    for (const [g, group] of rules.groups.entries()) {
      for (const [i, rule] of group.rules.entries()) {
        for (const [what, expr] of [
          ['never fires', 'vector(0) > 1'],
          ['always fires', 'vector(1)'],
        ] as const) {
          const groups = rules.groups.map((gr, gi) => ({
            ...gr,
            rules: gr.rules.map((ru, ri) => (gi === g && ri === i ? { ...ru, expr } : ru)),
          }));
          // JSON is YAML: promtool reads the mutated rules as it reads rules.yaml.
          writeFileSync(join(work, 'rules.yaml'), JSON.stringify({ groups }));
          const r = runPromtool(promtool, ['test', 'rules', 'rules.test.yaml'], work);
          if (r.status === 0) mutants.push(`${rule.alert} ${what}`);
        }
      }
    }
    assert.deepEqual(mutants, [], 'rules.test.yaml still passes with these alerts broken');
  });

  it('a broken rule fails promtool check rules (the check reads what we give it)', () => {
    writeFileSync(
      join(work, 'broken.yaml'),
      JSON.stringify({ groups: [{ name: 'x', rules: [{ alert: 'X', expr: 'sum(rate(x[5m])' }] }] }),
    );
    const r = runPromtool(promtool, ['check', 'rules', 'broken.yaml'], work);
    assert.notEqual(r.status, 0, r.stdout);
  });

  it('prometheus-rule.yaml carries exactly the groups of rules.yaml', () => {
    const plain = v.parse(RulesFileSchema, load(readRules('rules.yaml')));
    const operator = v.parse(PrometheusRuleSchema, load(read('prometheus-rule.yaml')));
    assert.deepEqual(operator.spec.groups, plain.groups);
    assert.equal(operator.metadata.namespace, 'ai-agents');
  });

  it('every dashboard query is valid PromQL', () => {
    const dashboard = v.parse(DashboardSchema, JSON.parse(read('dashboard.json')));
    const rules = dashboard.panels.flatMap((p) =>
      (p.targets ?? []).map((t) => ({
        record: `dashboard:panel_${p.id}:${t.refId.toLowerCase()}`,
        expr: asGrafanaSends(t.expr),
      })),
    );
    assert.ok(rules.length > 30, `${rules.length} queries`);
    for (const r of rules) assert.doesNotMatch(r.expr, /\$/, `${r.record} has a variable left: ${r.expr}`);
    writeFileSync(
      join(work, 'dashboard-queries.yaml'),
      JSON.stringify({ groups: [{ name: 'dashboard', rules }] }),
    );
    const r = runPromtool(promtool, ['check', 'rules', 'dashboard-queries.yaml'], work);
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  });
});
