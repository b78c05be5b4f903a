// Public surface of the vendor CLI recipes: routing, argv builders, vendor facts, stdout line classifiers and the
// run result read from those lines (with its run report encoding).
// Pure: nothing here does I/O.

export { sessionIdProblem, type VendorCommand, vendorCommand } from './argv.ts';
export { CLAUDE_SETTINGS_PATH, claudeArgv, claudeMcpConfig } from './claude.ts';
export { codexArgv } from './codex.ts';
export {
  type ClassifiedEvent,
  classifySelectEvent,
  SELECT_EVENTS,
  type SelectEvent,
} from './events.ts';
export { EXEC_ERRORS, execArgv } from './exec.ts';
export { geminiArgv } from './gemini.ts';
export { type Installer, VENDOR_INFO, type VendorInfo } from './info.ts';
export { type McpServerSpec, type PermissionMode, permissionModeOf, type VendorRunInput } from './input.ts';
export {
  CODEX_PROVIDER_ID,
  GEMINI_SETTINGS_FILE,
  geminiSettings,
  type LaunchEnv,
  OPENCODE_QUIET_ENV,
  type VendorLaunch,
  vendorLaunch,
} from './launch.ts';
export { mcpHeaderEnvName } from './mcp.ts';
export { opencodeArgv, opencodeModel } from './opencode.ts';
export {
  argvWithoutPrompt,
  deliverPrompt,
  MAX_ARG_BYTES,
  MAX_PROMPT_BYTES,
  type PromptDelivery,
  utf8Bytes,
} from './prompt-delivery.ts';
export {
  addTurnResult,
  extractRunResult,
  extractRunResultFromText,
  MAX_RESULT_TEXT_BYTES,
  type ResultAccumulator,
  resultAccumulator,
} from './result.ts';
export { DEFAULT_MODEL, VENDORS, type Vendor, vendorForModel } from './route.ts';
export {
  costAmount,
  encodeRunReport,
  MAX_COST_USD,
  MAX_TOKENS,
  parseRunReport,
  type RunResult,
  TERMINATION_MESSAGE_MAX_BYTES,
  type TokenUsage,
  tokenCount,
  usageOf,
} from './run-report.ts';
export { sessionIdInOutput, sessionIdOf } from './session.ts';
export { CLI_SETTINGS_ENV, cliSettings, mergeSettings } from './settings.ts';
export {
  classifyEvent,
  classifyLine,
  isTerminal,
  type LineClass,
  type LineKind,
  parseLine,
} from './terminal.ts';
