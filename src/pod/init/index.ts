// The run pod's init container (docs/design/reference-behaviour.md#init-container): a pure planner (config → plan)
// and a thin executor.
export {
  type ConversationConfig,
  DEFAULT_HOME_DIR,
  DEFAULT_WORKSPACE_DIR,
  type InitConfig,
  type InitOverrides,
  isStrictlyBelow,
  normalizeAbsolute,
  parseInitConfig,
  type RepoSpec,
} from './config.ts';
export { CONVERSATION_AUTH_CHILD_ENV, type ConversationPlan, planConversation } from './conversation.ts';
export {
  BUNDLE_FILE,
  DENO_FILE,
  DENO_LAUNCHER,
  type Injected,
  injectSupervisor,
  RUNTIME_FILE,
  type RuntimeSource,
} from './inject.ts';
export { type InitPlan, planInit, requiredExecutables } from './plan.ts';
export { choosePackageManager, installCommands, type PackageManager, packageFor } from './prerequisites.ts';
export {
  ALLOWED_REPO_SCHEMES,
  credentialHelper,
  isLoopbackHost,
  isShellName,
  normalizeRepoUrl,
  planRepo,
  REPO_TOKEN_ALIAS,
  type RepoDecision,
  redactUrlCredentials,
  repoDestination,
} from './repos.ts';
export {
  type EmitInitEvent,
  INIT_FAILURE,
  type InitEventDetails,
  type InitPorts,
  type InitStatus,
  RUN_GID,
  RUN_UID,
  runInit,
} from './run-init.ts';
export { type CommandRunner, createProcessRunner, type RunOptions } from './runner.ts';
export { isAllowedSourceUrl, isSafeSkillName, planSkills, type SkillsPlan } from './skills.ts';
export {
  chooseVariant,
  describeStep,
  type Step,
  type Tool,
  type ToolName,
  type ToolVariant,
} from './steps.ts';
export { type CliFacts, planVendorCli } from './vendor-cli.ts';
