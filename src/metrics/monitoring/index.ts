export { ALERT_GROUPS, type AlertRule, fromLeader, type RuleGroup, type Severity } from './alerts.ts';
export { buildDashboard, DASHBOARD_SCHEMA_VERSION, DASHBOARD_UID, DATASOURCE_UID } from './dashboard.ts';
export {
  buildPrometheusRule,
  DASHBOARD_FILE,
  type GeneratedFile,
  MONITORING_FILE_HEADER,
  PROMETHEUS_RULE_FILE,
  RULES_FILE,
  renderMonitoringFiles,
  ruleGroupsJson,
} from './files.ts';
export {
  grafanaVariableQueryNames,
  PROMQL_FUNCTIONS,
  type PromqlNames,
  PromqlReadError,
  promqlNames,
} from './promql.ts';
