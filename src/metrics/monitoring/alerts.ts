/**
 * The controller's Prometheus alert rules: the one source of charts/monitoring/rules.yaml (a plain rules file) and
 * deploy/monitoring/prometheus-rule.yaml (the same groups in a Prometheus Operator PrometheusRule), written by
 * `npm run gen:monitoring`. charts/monitoring/rules.test.yaml holds their promtool unit tests and
 * deploy/monitoring/README.md what each alert means and what to do.
 *
 * Series are summed `by (namespace)`: one controller Deployment per namespace (as deploy/ installs it) is one
 * group. The model gateway's rules (group `agent-gateway`) read `namespace` the same way: the namespace of the
 * gateway's pods, which the scrape adds (the gateway's own `namespace` label, the run's, then becomes
 * `exported_namespace`). Gauges only the leader sets (`controller_agents` and the other poll gauges) are read from the replica
 * whose `controller_is_leader` is 1: a replica that lost the Lease keeps exporting the values of its last poll.
 */

export type Severity = 'critical' | 'warning' | 'info';

/** One alerting rule, in the field order of Prometheus' rule files. */
export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  /** How long `expr` must hold before the alert fires (omitted: at once). */
  readonly for?: string;
  readonly labels: { readonly severity: Severity };
  readonly annotations: { readonly summary: string; readonly description: string };
}

export interface RuleGroup {
  readonly name: string;
  readonly rules: readonly AlertRule[];
}

/** The leader's value of a gauge only the leader sets (`selector` is a metric with optional matchers). */
export function fromLeader(selector: string): string {
  return `${selector} and on (job, instance) (controller_is_leader == 1)`;
}

/** A long expression written over several lines (a literal block in the YAML files). */
function lines(...parts: readonly string[]): string {
  return parts.join('\n');
}

/** The model gateway (`agent-controller gateway`, deploy/components/gateway): down, refusing, not recording usage. */
const GATEWAY_GROUP: RuleGroup = {
  name: 'agent-gateway',
  rules: [
    {
      alert: 'AgentGatewayDown',
      expr: lines(
        'sum by (namespace) (max_over_time(gateway_ready[6h])) > 0',
        'unless on (namespace)',
        'sum by (namespace) (gateway_ready) > 0',
      ),
      // A rolling update of the two replicas keeps one ready (the default maxUnavailable, 25%, rounds down to 0);
      // a lone replica restarting is ready again within a minute.
      for: '3m',
      labels: { severity: 'critical' },
      annotations: {
        summary: 'No model gateway replica is ready in {{ $labels.namespace }}',
        description:
          'For 3 minutes no agent-gateway replica in namespace {{ $labels.namespace }} has reported ready ' +
          '(gateway_ready), though one did in the last 6 hours: every replica is down, not ready, or no longer ' +
          'scraped. Runs behind the gateway hold no vendor key, so every model call they make fails. Check the pods ' +
          '(kubectl get pods -l agents.re-cinq.com/component=gateway), /readyz?verbose on port 9090 (agents, ' +
          'credential-key, not-stopping) and their logs.',
      },
    },
    {
      alert: 'AgentGatewayReplicaNotReady',
      expr: 'gateway_ready == 0',
      for: '10m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'Model gateway replica {{ $labels.instance }} in {{ $labels.namespace }} is not ready',
        description:
          'The agent-gateway replica {{ $labels.instance }} has served /metrics but failed a readiness check for ' +
          '10 minutes, so the Service sends it no calls. /readyz?verbose on port 9090 names the check: agents (its ' +
          'Agent informer has not listed: RBAC on agents, the API server), credential-key (the Secret ' +
          'agent-controller-gateway is missing: the controller creates it), not-stopping.',
      },
    },
    {
      alert: 'AgentGatewayRefusalRatioHigh',
      expr: lines(
        'sum by (namespace, reason) (increase(gateway_refusals_total{reason!~"route|budget"}[15m]))',
        '  / on (namespace) group_left',
        '  sum by (namespace) (increase(gateway_requests_total[15m])) > 0.1',
        'and on (namespace)',
        'sum by (namespace) (increase(gateway_requests_total[15m])) >= 20',
      ),
      for: '10m',
      labels: { severity: 'warning' },
      annotations: {
        summary:
          '{{ $value | humanizePercentage }} of the model calls through the gateway in {{ $labels.namespace }} refused: {{ $labels.reason }}',
        description:
          'Over 15 minutes (at least 20 calls) more than 10% of the calls the gateway in namespace ' +
          '{{ $labels.namespace }} answered were its own refusals with reason {{ $labels.reason }} ' +
          '(gateway_refusals_total; left out: route, a path it does not forward, and budget, runs held to their cap as configured). credential, unknown_run, ' +
          'run_ended: clients with a wrong or stale credential (a CLI still calling after its run ended, or ' +
          'something that is not a run); model, vendor: runs calling what their AgentPolicy does not allow; ' +
          'no_key: agent-secrets lacks the key the recipe names; unavailable: the gateway lacks its credential key ' +
          "or the API server; upstream: the vendor cannot be reached. The gateway's info logs name each refused run.",
      },
    },
    {
      alert: 'AgentGatewaySpendRateHigh',
      // The threshold is the gateway's own setting (AGENT_GATEWAY_SPEND_ALERT_USD_PER_HOUR, a gauge; 0 is off), so
      // it is changed on the Deployment, not in the rules.
      expr: lines(
        'sum by (namespace, exported_namespace) (rate(gateway_cost_usd_total[15m])) * 3600',
        '  > on (namespace) group_left ()',
        'max by (namespace) (gateway_spend_alert_usd_per_hour > 0)',
      ),
      for: '10m',
      labels: { severity: 'warning' },
      annotations: {
        summary:
          'Namespace {{ $labels.exported_namespace }} spends {{ $value | humanize }} USD per hour through the model gateway',
        description:
          'For 10 minutes the runs of namespace {{ $labels.exported_namespace }} have spent {{ $value | humanize }} ' +
          'USD per hour (15-minute rate of gateway_cost_usd_total, priced with the price table) through the gateway ' +
          'in {{ $labels.namespace }}, above its AGENT_GATEWAY_SPEND_ALERT_USD_PER_HOUR ' +
          '(gateway_spend_alert_usd_per_hour). A runaway loop or many runs at once: the dashboard row "Model ' +
          'gateway" splits the spend by Station and model. Per-run caps (status.gateway.budget) stop a single run; ' +
          'a model the table does not price counts nothing here.',
      },
    },
    {
      alert: 'AgentGatewayUsageWritesFailing',
      expr: 'sum by (namespace) (increase(gateway_usage_writes_total{result="error"}[5m])) > 0',
      for: '15m',
      labels: { severity: 'warning' },
      annotations: {
        summary: 'The model gateway in {{ $labels.namespace }} keeps failing to record usage on Agents',
        description:
          'For 15 minutes the gateway in namespace {{ $labels.namespace }} has failed writes of measured usage to ' +
          'Agents\' agents.re-cinq.com/gateway-usage annotation (gateway_usage_writes_total{result="error"}). ' +
          'It keeps the deltas in memory and tries again (gateway_usage_pending_runs counts the runs waiting), but ' +
          'status.tokenUsage and costEstimate lag, and a replica that stops meanwhile loses what it holds after 5 s. ' +
          "Its logs give the API server's answer: RBAC (agents patch), the API server overloaded or unreachable.",
      },
    },
  ],
};

/**
 * Spend budgets (issue 28 §4): a windowed budget at 80 % of its limit, as the controller's last admission counted it.
 * The controller's `namespace` label (the runs') becomes `exported_namespace` at the scrape, as the gateway's does.
 */
const BUDGET_GROUP: RuleGroup = {
  name: 'agent-budgets',
  rules: [
    {
      alert: 'AgentBudgetAt80Percent',
      expr: lines(
        'max by (namespace, exported_namespace, station, window) (agent_budget_spent_usd / agent_budget_limit_usd) >= 0.8',
        'or',
        'max by (namespace, exported_namespace, station, window) (agent_budget_spent_tokens / agent_budget_limit_tokens) >= 0.8',
      ),
      // The gauges move at admissions: five minutes keeps one admission's reading from paging on its own.
      for: '5m',
      labels: { severity: 'warning' },
      annotations: {
        summary:
          'The {{ $labels.window }} spend budget of {{ $labels.exported_namespace }} {{ $labels.station }} is at {{ $value | humanizePercentage }}',
        description:
          'Runs of namespace {{ $labels.exported_namespace }} (Station {{ $labels.station }}; empty: the namespace budget) ' +
          'have spent {{ $value | humanizePercentage }} of their {{ $labels.window }} budget ' +
          '(agent_budget_spent_usd / agent_budget_limit_usd, or the tokens pair). At 100 % new runs wait ' +
          '(Ready=False, reason BudgetExhausted) or fail, as the budget says, until the window frees spend. Raise ' +
          'the budget (AgentPolicy or Station spec.budgets) or find the runs that spend (status.costEstimate).',
      },
    },
  ],
};

export const ALERT_GROUPS: readonly RuleGroup[] = [
  {
    name: 'agent-controller',
    rules: [
      {
        alert: 'AgentControllerNoLeader',
        expr: 'sum by (namespace) (controller_is_leader) < 1',
        // The Lease lasts 15 s: a handover or a rolling update leaves it unheld for well under a minute.
        for: '2m',
        labels: { severity: 'critical' },
        annotations: {
          summary: 'No agent-controller replica holds the Lease in {{ $labels.namespace }}',
          description:
            'For 2 minutes no replica of agent-controller in namespace {{ $labels.namespace }} has held its Lease: ' +
            'no Agent is admitted, started or finished. Check that the controller pods are Ready and read their ' +
            'logs for Lease errors (RBAC on coordination.k8s.io leases, the API server unreachable, a clock far off).',
        },
      },
      {
        alert: 'AgentControllerAbsent',
        expr: 'absent(controller_is_leader)',
        for: '10m',
        labels: { severity: 'critical' },
        annotations: {
          summary: 'Prometheus scrapes no agent-controller',
          description:
            'No controller_is_leader series for 10 minutes: every agent-controller replica is down, or Prometheus ' +
            'does not scrape them. Check the Deployment (kubectl -n ai-agents get pods) and the scrape configuration ' +
            '(the PodMonitor in deploy/monitoring, or the prometheus.io/scrape pod annotations).',
        },
      },
      {
        alert: 'AgentRunsStuckQueued',
        expr: lines(
          `sum by (namespace) (${fromLeader('controller_agents{phase="Pending"}')}) > 0`,
          'unless on (namespace)',
          'sum by (namespace) (increase(controller_run_queue_seconds_count[30m])) > 0',
        ),
        for: '15m',
        labels: { severity: 'warning' },
        annotations: {
          summary:
            '{{ $value | printf "%.0f" }} Agents wait in {{ $labels.namespace }} and no run has started for 30 minutes',
          description:
            'Agents are Pending in namespace {{ $labels.namespace }} but no run has left the queue (no Job created, ' +
            'no batch submitted) for the last 30 minutes. Either every Station slot is held by long runs or open ' +
            'realtime sessions (are any Agents Running?), or the Agents wait for a dependency Service ' +
            "(Ready=False/WaitingForDependencies), or the leader cannot start runs (its logs and the Agents' Warning Events).",
        },
      },
      {
        alert: 'AgentRunFailureRatioHigh',
        expr: lines(
          'sum by (namespace) (increase(controller_runs_completed_total{phase="Failed"}[30m]))',
          '  / sum by (namespace) (increase(controller_runs_completed_total[30m])) > 0.25',
          'and on (namespace)',
          'sum by (namespace) (increase(controller_runs_completed_total[30m])) >= 5',
        ),
        for: '15m',
        labels: { severity: 'warning' },
        annotations: {
          summary:
            '{{ $value | humanizePercentage }} of the runs in {{ $labels.namespace }} failed in the last 30 minutes',
          description:
            'More than 25% of the runs that finished in namespace {{ $labels.namespace }} over the last 30 minutes ' +
            '(at least 5 runs) ended Failed. The dashboard panel Failures by kind (controller_run_failures_total) ' +
            "shows which kind rose; kubectl get agents lists the runs, and each one's status.failureReason and Events say why.",
        },
      },
      {
        alert: 'AgentBatchCleanupFailuresRising',
        expr: 'sum by (namespace) (increase(controller_batch_cleanup_failures_total[1h])) > 10',
        for: '15m',
        labels: { severity: 'warning' },
        annotations: {
          summary:
            '{{ $value | printf "%.0f" }} failed batch cleanups in {{ $labels.namespace }} in the last hour',
          description:
            'The controller keeps failing to delete vendor batches and their files after batch runs in namespace ' +
            '{{ $labels.namespace }}. A run tries 5 times, then leaves its batch at the vendor (BatchOrphaned Warning ' +
            "Event). The controller logs give the vendor's answer: an expired or rotated API key in the Station's " +
            'Secret, a revoked permission, or a vendor outage.',
        },
      },
      {
        alert: 'AgentBatchOrphans',
        expr: 'sum by (namespace, provider) (increase(controller_batch_orphans_total[1h])) > 0',
        labels: { severity: 'info' },
        annotations: {
          summary: 'Batch runs in {{ $labels.namespace }} left batches at {{ $labels.provider }}',
          description:
            'In the last hour the controller gave up cleaning up {{ $value | printf "%.0f" }} {{ $labels.provider }} ' +
            'batch(es) of namespace {{ $labels.namespace }}, or could not tell which run a submission belonged to. ' +
            'They stay at the vendor: the BatchOrphaned Warning Events name each one; delete them there by hand.',
        },
      },
      {
        alert: 'AgentControllerWatchReconnectStorm',
        expr: 'sum by (namespace, instance) (increase(controller_watch_reconnects_total[10m])) > 10',
        for: '10m',
        labels: { severity: 'warning' },
        annotations: {
          summary:
            'agent-controller {{ $labels.instance }} in {{ $labels.namespace }} lost its watches {{ $value | printf "%.0f" }} times in 10 minutes',
          description:
            'Watches are ended by the API server about every minute and opened again, which is not counted; this ' +
            'replica keeps losing them to failed or silent connections ' +
            '(controller_watch_reconnects_total by resource on the dashboard), and a lost watch can cost a full ' +
            're-list (controller_resyncs_total) that loads the API server. Look for API server restarts or overload, ' +
            'a proxy or load balancer cutting long requests, or network trouble between the pod and the API server.',
        },
      },
    ],
  },
  GATEWAY_GROUP,
  BUDGET_GROUP,
];
