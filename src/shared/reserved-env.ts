/**
 * Env names the controller owns. A recipe-supplied name (env, secret, sink/conversation `headers_secret`, repo
 * `token_secret`, MCP header env name) equal to one of these is dropped or blanked, so the controller's value wins.
 * The reference's 23 names plus `AGENT_DEADLINE_AT`.
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
  'HOME',
  'PATH',
]);
