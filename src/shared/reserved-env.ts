/** The env a realtime run's agent container gets on top of the run env (never from a recipe). */
const REALTIME_ENV_NAMES_LIST = [
  'AGENT_EXECUTION',
  'AGENT_PROMPT_TOKEN',
  'AGENT_PROMPT_PORT',
  'AGENT_POD_IP',
  'AGENT_RUN_RECIPE',
  'AGENT_RESUME_SESSION',
  'AGENT_SESSION_RESTORE',
] as const;
export const REALTIME_ENV_NAMES: ReadonlySet<string> = new Set(REALTIME_ENV_NAMES_LIST);

/** The env a server run's agent container gets on top of the run env (issue 12; never from a recipe). */
const SERVER_ENV_NAMES_LIST = [
  'AGENT_SERVER_PORT',
  'AGENT_SERVER_API_KEY',
  'AGENT_SERVER_API_KEY_FILE',
  'AGENT_SERVER_CONCURRENCY',
  'AGENT_SERVER_REQUEST_TIMEOUT_SECONDS',
  'AGENT_SERVER_MAX_BODY_BYTES',
] as const;
export const SERVER_ENV_NAMES: ReadonlySet<string> = new Set(SERVER_ENV_NAMES_LIST);

/**
 * Env names the controller owns. A recipe-supplied name (env, secret, sink/conversation `headers_secret`, repo
 * `token_secret`, MCP header env name) equal to one of these is dropped or blanked, so the controller's value wins.
 * The reference's 23 names plus `AGENT_DEADLINE_AT`, `AGENT_PROMPT_FILE` and `AGENT_PARAMETERS_FILE` (the input ConfigMap's), the run's trace context
 * (`TRACEPARENT`, `AGENT_OTLP_TRACES_ENDPOINT`), the CLI settings the run's recipe makes (`AGENT_CLI_SETTINGS`), the realtime run's own (`AGENT_EXECUTION`, `AGENT_PROMPT_*`,
 * `AGENT_RUN_RECIPE`, `AGENT_RESUME_SESSION`, `AGENT_SESSION_RESTORE`) and the server run's (`AGENT_SERVER_*`).
 */
export const RESERVED_ENV_NAMES: ReadonlySet<string> = new Set([
  'AGENT_SINKS',
  'AGENT_REPOS',
  'AGENT_SKILLS',
  'AGENT_SKILLS_SOURCE',
  'AGENT_CONVERSATION_SOURCE',
  'AGENT_CONVERSATION_ID',
  'AGENT_CONVERSATION_PIN',
  'AGENT_CONVERSATION_AUTH',
  'AGENT_SELECT',
  'AGENT_WATCH',
  'WORKSPACE_DIR',
  'AGENT_PARAMETERS',
  'TARGET_REPO',
  'BRANCH_NAME',
  'AGENT_MODEL',
  'AGENT_NAME',
  'STATION_NAME',
  'TASK_ID',
  'POD_NAME',
  'POD_NAMESPACE',
  'AGENT_DEADLINE_MS',
  'AGENT_DEADLINE_AT',
  'AGENT_PROMPT_FILE',
  'AGENT_SYSTEM_PROMPT_FILE',
  'AGENT_PARAMETERS_FILE',
  'AGENT_OTLP_TRACES_ENDPOINT',
  'AGENT_CLI_SETTINGS',
  'TRACEPARENT',
  'HOME',
  'PATH',
  ...REALTIME_ENV_NAMES_LIST,
  ...SERVER_ENV_NAMES_LIST,
]);
