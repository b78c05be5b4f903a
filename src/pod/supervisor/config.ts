import * as v from 'valibot';
import { TERMINATION_MESSAGE_PATH } from '../../jobs/bundle.ts';
import { CLI_SETTINGS_ENV, VENDOR_INFO, type Vendor, vendorForModel } from '../../vendors/cli/index.ts';
import {
  type Env,
  type EnvProblem,
  type EventSource,
  parseRetryConfig,
  parseSinkConfig,
  RESERVED_ENV_NAMES,
  type RetryConfig,
  readInt,
  readOptionalPositiveInt,
  readString,
  type SinkConfig,
  sourceFromEnv,
} from '../shared/index.ts';
import { parseSelectors, type Selector } from './select.ts';
import { DEFAULT_WORKSPACE, normalizeRoot, parseWatch, type WatchEntry } from './watch.ts';

/** Default grace after a terminal event (and between SIGTERM and SIGKILL), ms. */
export const DEFAULT_EXIT_GRACE_MS = 5000;
/** Default budget for delivering what is still queued for the sinks when the run ends, ms. */
export const DEFAULT_SINK_FLUSH_MS = 10000;

/**
 * Where and how to save the CLI conversation after the run
 * (docs/design/reference-behaviour.md#conversation-continuity).
 */
export interface ConversationSave {
  readonly source: string;
  readonly pin: string;
  /** Name of the env var holding header lines for the upload, or ''. */
  readonly authEnvName: string;
  /** `$HOME/<stateDir>` is archived; members are named relative to `home`. */
  readonly home: string;
  readonly stateDir: string;
}

/** Everything the supervisor reads from its environment, validated. */
export interface SupervisorConfig {
  readonly sinks: readonly SinkConfig[];
  readonly retry: RetryConfig;
  readonly source: EventSource;
  readonly model: string;
  readonly vendor: Vendor;
  readonly selectors: readonly Selector[];
  readonly graceMs: number;
  /** `AGENT_DEADLINE_MS`: run deadline relative to the supervisor's start. */
  readonly deadlineMs?: number;
  /** `AGENT_DEADLINE_AT`: absolute run deadline, Unix epoch ms. */
  readonly deadlineAt?: number;
  /** Normalized absolute workspace root (`WORKSPACE_DIR`, default `/workspace`). */
  readonly workspace: string;
  readonly watch: readonly WatchEntry[];
  readonly conversation?: ConversationSave;
  /** Budget for the final sink flush (`AGENT_SINK_FLUSH_MS`, default 10000). */
  readonly flushMs: number;
  /**
   * Where the run report goes: the agent container's termination message file (`AGENT_TERMINATION_MESSAGE_PATH`, an
   * absolute path, for tests; default {@link TERMINATION_MESSAGE_PATH}).
   */
  readonly terminationMessagePath: string;
  /** `AGENT_CLI_SETTINGS`: what the recipe asks of the CLI's own settings (src/vendors/cli/settings.ts). */
  readonly cliSettings?: Record<string, unknown>;
}

const CliSettingsSchema = v.record(v.string(), v.unknown());

/** `AGENT_CLI_SETTINGS` as a JSON object; undefined when unset; a warning when it is something else. */
function cliSettingsFromEnv(env: Env, warnings: string[]): Record<string, unknown> | undefined {
  const raw = readString(env, CLI_SETTINGS_ENV);
  if (raw === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  const settings = v.safeParse(CliSettingsSchema, parsed);
  if (settings.success && !Array.isArray(parsed)) return settings.output;
  warnings.push(`[supervisor] ${CLI_SETTINGS_ENV} is not a JSON object; ignored`);
  return undefined;
}

/**
 * Reads the supervisor configuration from the run environment (docs/design/reference-behaviour.md#supervisor-flow
 * step 3 plus `AGENT_DEADLINE_AT`).
 * Never throws: every unusable value falls back to its documented default and adds one line to `warnings`.
 */
export function parseSupervisorConfig(env: Env): { config: SupervisorConfig; warnings: string[] } {
  const problems: EnvProblem[] = [];
  const warnings: string[] = [];
  const sinks = parseSinkConfig(env, problems);
  const retry = parseRetryConfig(env, problems);
  const graceMs = readInt(env, 'AGENT_EXIT_GRACE_MS', { fallback: DEFAULT_EXIT_GRACE_MS, min: 1 }, problems);
  const deadlineMs = readOptionalPositiveInt(env, 'AGENT_DEADLINE_MS', problems);
  const deadlineAt = readOptionalPositiveInt(env, 'AGENT_DEADLINE_AT', problems);
  const flushMs = readInt(env, 'AGENT_SINK_FLUSH_MS', { fallback: DEFAULT_SINK_FLUSH_MS, min: 0 }, problems);
  for (const p of problems) warnings.push(`[supervisor] ${p.message}`);

  const model = readString(env, 'AGENT_MODEL');
  const vendor = vendorForModel(model);
  const select = parseSelectors(env.AGENT_SELECT);
  warnings.push(...select.warnings);

  const rawWorkspace = readString(env, 'WORKSPACE_DIR');
  let workspace = normalizeRoot(rawWorkspace === '' ? DEFAULT_WORKSPACE : rawWorkspace);
  if (workspace === undefined) {
    warnings.push(`[supervisor] WORKSPACE_DIR must be an absolute path; using ${DEFAULT_WORKSPACE}`);
    workspace = DEFAULT_WORKSPACE;
  }
  const watch = parseWatch(env.AGENT_WATCH);
  warnings.push(...watch.warnings);

  const rawReportPath = readString(env, 'AGENT_TERMINATION_MESSAGE_PATH');
  let terminationMessagePath = TERMINATION_MESSAGE_PATH;
  if (rawReportPath !== '') {
    const normalized = normalizeRoot(rawReportPath);
    if (normalized === undefined) {
      warnings.push(
        `[supervisor] AGENT_TERMINATION_MESSAGE_PATH must be an absolute path; using ${TERMINATION_MESSAGE_PATH}`,
      );
    } else terminationMessagePath = normalized;
  }

  const conversation = conversationFromEnv(env, vendor);
  const cliSettings = cliSettingsFromEnv(env, warnings);
  return {
    config: {
      sinks,
      retry,
      source: sourceFromEnv(env),
      model,
      vendor,
      selectors: select.selectors,
      graceMs,
      ...(deadlineMs !== undefined ? { deadlineMs } : {}),
      ...(deadlineAt !== undefined ? { deadlineAt } : {}),
      workspace,
      watch: watch.entries,
      ...(conversation ? { conversation } : {}),
      flushMs,
      terminationMessagePath,
      ...(cliSettings !== undefined ? { cliSettings } : {}),
    },
    warnings,
  };
}

/**
 * Where a realtime session is saved when it ends: `AGENT_CONVERSATION_SOURCE`, keyed by the session id (so a later
 * run's `resumeSession` restores it); undefined without a source, a vendor state folder or HOME.
 */
export function conversationForPin(
  config: Pick<SupervisorConfig, 'vendor'>,
  env: Env,
  pin: string,
): ConversationSave | undefined {
  return conversationFromEnv({ ...env, AGENT_CONVERSATION_PIN: pin }, config.vendor);
}

function conversationFromEnv(env: Env, vendor: Vendor): ConversationSave | undefined {
  const source = readString(env, 'AGENT_CONVERSATION_SOURCE');
  const pin = readString(env, 'AGENT_CONVERSATION_PIN');
  const stateDir = VENDOR_INFO[vendor].stateDir;
  const home = normalizeRoot(readString(env, 'HOME'));
  if (source === '' || pin === '' || stateDir === undefined || home === undefined) return undefined;
  const auth = readString(env, 'AGENT_CONVERSATION_AUTH');
  return { source, pin, stateDir, home, authEnvName: RESERVED_ENV_NAMES.has(auth) ? '' : auth };
}

/**
 * The run's effective deadline (epoch ms): the earlier of `start + deadlineMs` and `deadlineAt`; undefined when
 * neither is set. Pure.
 */
export function effectiveDeadline(
  startMs: number,
  config: Pick<SupervisorConfig, 'deadlineMs' | 'deadlineAt'>,
) {
  const relative = config.deadlineMs !== undefined ? startMs + config.deadlineMs : undefined;
  if (relative === undefined) return config.deadlineAt;
  if (config.deadlineAt === undefined) return relative;
  return Math.min(relative, config.deadlineAt);
}
