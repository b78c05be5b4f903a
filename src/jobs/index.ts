// Public surface of the pure Job builder: names, bundle layout, run env, prompt templating, output capping,
// buildJob itself and the per-run sink NetworkPolicy. Nothing here does I/O or reads the clock.

export {
  type BuildError,
  type BuildJobInput,
  buildJob,
  JOB_BACKOFF_LIMIT,
  JOB_TTL_SECONDS_AFTER_FINISHED,
  type JobManifest,
  runLabels,
} from './build-job.ts';
export {
  AGENT_CONTAINER_NAME,
  AGENT_VOLUME_NAME,
  BUNDLE_BIN_DIR,
  BUNDLE_PATH,
  BUNDLE_ROOT,
  CLAUDE_CONFIG_DIR,
  CLAUDE_SETTINGS_PATH,
  CLAUDE_SKILLS_DIR,
  DEFAULT_WORKSPACE,
  INIT_ARGS,
  INIT_CONTAINER_NAME,
  LOCAL_BIN_DIR,
  OPENCODE_BIN_DIR,
  RUN_PATH,
  RUNTIME_PATH,
  supervisorCommand,
  WORKSPACE_VOLUME_NAME,
} from './bundle.ts';
export {
  AGENT_SECRETS_NAME,
  clampDeadlineMinutes,
  DEADLINE_MARGIN_MS,
  deadlineAt,
  deadlineMs,
  type EnvVar,
  headerEnvName,
  isReservedEnvName,
  RESERVED_ENV_NAMES,
  type RunEnvInput,
  runEnv,
} from './env.ts';
export {
  ANNOTATION_AGENT_UID,
  ANNOTATION_SAFE_TO_EVICT,
  COMPONENT_JOB,
  fnv1a8,
  JOB_LABEL_SELECTOR,
  JOB_NAME_PREFIX,
  jobNameFor,
  LABEL_AGENT,
  LABEL_COMPONENT,
  LABEL_JOB_NAME,
  LABEL_STATION,
  MAX_NAME_LENGTH,
  safeName,
} from './names.ts';
export { capOutput, MAX_OUTPUT_BYTES, truncationMarker } from './output-cap.ts';
export {
  AGENT_DEFAULT_RESOURCES,
  type JsonObject,
  TEMPLATE_ERRORS,
  templateProblem,
  wirePodTemplate,
} from './pod-template.ts';
export { renderPrompt } from './prompt.ts';
export {
  ANY_IPV4,
  ANY_IPV6,
  buildRunNetworkPolicy,
  type Destination,
  DNS_RULE,
  definitionDestinations,
  NETWORK_POLICY_API_VERSION,
  type NetworkPolicyEgressRule,
  type NetworkPolicyIngressRule,
  type NetworkPolicyManifest,
  PUBLIC_HTTPS_RULE,
  type RunNetworkPolicyInput,
  repoDestination,
  urlDestination,
} from './run-network-policy.ts';
export { buildRunServiceAccount, type ServiceAccountManifest } from './run-service-account.ts';
export {
  buildSidecars,
  DEFAULT_MCP_PATH,
  SIDECAR_DEFAULT_RESOURCES,
  sidecarMcpServers,
  sidecarProblem,
} from './sidecars.ts';
