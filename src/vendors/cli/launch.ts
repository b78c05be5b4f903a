// What a vendor CLI needs from the run's environment when the supervisor starts it, in every execution mode (Job,
// realtime turn, server turn): the argv and env the process really gets. Decided here rather than in the controller
// because the env (a `resources.env` base URL, a key from `resources.secrets`) is only complete in the pod, and
// every mode starts its CLI through the supervisor's one `launch`. Facts: docs/reference/vendor-clis.md. Pure.

import type { Vendor } from './route.ts';
import { type JsonObject, mergeSettings } from './settings.ts';

/** A process environment (unset entries allowed). */
export type LaunchEnv = Readonly<Record<string, string | undefined>>;

/** The argv (program first) and env a CLI is started with. */
export interface VendorLaunch {
  readonly argv: readonly string[];
  readonly env: LaunchEnv;
}

/** The id of the Codex model provider made from `OPENAI_BASE_URL`. */
export const CODEX_PROVIDER_ID = 'agent-controller';

const set = (env: LaunchEnv, name: string): string | undefined => {
  const value = env[name];
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
};

/** A TOML basic string (JSON's escapes are all valid TOML escapes). */
const toml = (s: string): string => JSON.stringify(s);

/**
 * Codex 0.171 ignores `OPENAI_BASE_URL` (it went to the vendor host) and its built-in provider always tries a
 * Responses WebSocket first, which only a custom provider can switch off (6 s lost against a 404, ~112 s against a
 * server that never answers the upgrade): with a base URL in the environment, a custom provider on it, given as
 * `-c` overrides before the `--` fence (docs/reference/vendor-clis.md#endpoint-key-files-1,
 * docs/reference/vendor-clis.md#requests). Its `env_key` names the variable holding the key (`OPENAI_API_KEY`, else
 * `CODEX_API_KEY` when only that is set): the key itself never enters the argv. The built-in provider sends no key
 * when only `OPENAI_API_KEY` is set (it reads `CODEX_API_KEY`), so without a base URL `CODEX_API_KEY` gets
 * `OPENAI_API_KEY`'s value unless it is set.
 */
function codexLaunch(argv: readonly string[], env: LaunchEnv): VendorLaunch {
  const baseUrl = set(env, 'OPENAI_BASE_URL');
  if (baseUrl === undefined) {
    const key = set(env, 'OPENAI_API_KEY');
    if (key === undefined || set(env, 'CODEX_API_KEY') !== undefined) return { argv, env };
    return { argv, env: { ...env, CODEX_API_KEY: key } };
  }
  const fence = argv.indexOf('--');
  if (fence === -1) return { argv, env };
  const envKey =
    set(env, 'OPENAI_API_KEY') === undefined && set(env, 'CODEX_API_KEY') !== undefined
      ? 'CODEX_API_KEY'
      : 'OPENAI_API_KEY';
  const p = `model_providers.${CODEX_PROVIDER_ID}`;
  const overrides = [
    `model_provider=${toml(CODEX_PROVIDER_ID)}`,
    `${p}.name=${toml('OpenAI-compatible (OPENAI_BASE_URL)')}`,
    `${p}.base_url=${toml(baseUrl.trim())}`,
    `${p}.env_key=${toml(envKey)}`,
    `${p}.wire_api="responses"`,
    `${p}.supports_websockets=false`,
  ].flatMap((o) => ['-c', o]);
  return { argv: [...argv.slice(0, fence), ...overrides, ...argv.slice(fence)], env };
}

/**
 * OpenCode switches that keep a headless run off the network beyond its model API (the model catalogue, the npm
 * registry for default plugins, sharing, LSP downloads, self-update; docs/reference/vendor-clis.md#requests-opencode-run---format-json).
 * A value the run's environment sets wins.
 */
export const OPENCODE_QUIET_ENV: Readonly<Record<string, string>> = {
  OPENCODE_DISABLE_MODELS_FETCH: '1',
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
  OPENCODE_DISABLE_SHARE: '1',
  OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
};

/**
 * OpenCode's built-in providers on the base URLs of the environment (the model gateway sets all three;
 * docs/reference/vendor-clis.md#endpoint-key-files-3): Anthropic on `ANTHROPIC_BASE_URL` + `/v1` (its `baseURL`
 * ends in `/v1`, where `ANTHROPIC_BASE_URL` does not); Google on `GOOGLE_GEMINI_BASE_URL` + `/v1beta` (it reads no
 * base-URL variable), with its key read from `GEMINI_API_KEY` (else `GOOGLE_API_KEY`) by reference
 * (`{env:NAME}`) unless `GOOGLE_GENERATIVE_AI_API_KEY`, the variable it reads itself, is set. OpenAI needs nothing:
 * it reads `OPENAI_BASE_URL` (with `/v1`) and `OPENAI_API_KEY` itself.
 */
function opencodeProviders(env: LaunchEnv): Record<string, unknown> {
  const provider: Record<string, unknown> = {};
  const bare = (url: string, version: string) =>
    url
      .trim()
      .replace(/\/+$/, '')
      .replace(new RegExp(`/${version}$`), '');
  const anthropic = set(env, 'ANTHROPIC_BASE_URL');
  if (anthropic !== undefined) provider.anthropic = { options: { baseURL: `${bare(anthropic, 'v1')}/v1` } };
  const google = set(env, 'GOOGLE_GEMINI_BASE_URL');
  if (google !== undefined) {
    const keyEnv =
      set(env, 'GOOGLE_GENERATIVE_AI_API_KEY') !== undefined
        ? undefined
        : ['GEMINI_API_KEY', 'GOOGLE_API_KEY'].find((n) => set(env, n) !== undefined);
    provider.google = {
      options: {
        baseURL: `${bare(google, 'v1beta')}/v1beta`,
        ...(keyEnv !== undefined ? { apiKey: `{env:${keyEnv}}` } : {}),
      },
    };
  }
  return provider;
}

/**
 * OpenCode takes its configuration from the environment only as `OPENCODE_CONFIG_CONTENT` (JSON;
 * docs/reference/vendor-clis.md#endpoint-key-files-3). When the run's environment sets none, it gets
 * `{"share": "disabled", "autoupdate": false}` and the built-in providers on the base URLs the environment sets
 * ({@link opencodeProviders}). Other providers (an OpenAI-compatible one) are the recipe's to configure through
 * `OPENCODE_CONFIG_CONTENT`; the one it sets is left as is.
 */
function opencodeLaunch(argv: readonly string[], env: LaunchEnv, settings?: JsonObject): VendorLaunch {
  const out: Record<string, string | undefined> = { ...env };
  for (const [name, value] of Object.entries(OPENCODE_QUIET_ENV))
    if (env[name] === undefined) out[name] = value;
  if (env.OPENCODE_CONFIG_CONTENT === undefined) {
    const config: Record<string, unknown> = { share: 'disabled', autoupdate: false };
    const provider = opencodeProviders(env);
    if (Object.keys(provider).length > 0) config.provider = provider;
    out.OPENCODE_CONFIG_CONTENT = JSON.stringify(settings ? mergeSettings(config, settings) : config);
  } else if (settings !== undefined) {
    // The recipe's own configuration gets the run's settings (its deny list) on top; one that is not a JSON object
    // is left alone and OpenCode reports it.
    const own = parseObject(env.OPENCODE_CONFIG_CONTENT);
    if (own !== undefined) out.OPENCODE_CONFIG_CONTENT = JSON.stringify(mergeSettings(own, settings));
  }
  return { argv, env: out };
}

const parseObject = (text: string): JsonObject | undefined => {
  try {
    const parsed: unknown = JSON.parse(text);
    return isJsonObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
};

/**
 * Claude Code's switch that keeps a headless run off the network beyond its model API (a connectivity check at the
 * base URL and telemetry to the vendor's host; docs/reference/vendor-clis.md#requests-one-prompt---print---verbose---output-format-stream-json).
 * A value the run's environment sets wins.
 */
export const CLAUDE_QUIET_ENV: Readonly<Record<string, string>> = {
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
};

function claudeLaunch(argv: readonly string[], env: LaunchEnv): VendorLaunch {
  const out: Record<string, string | undefined> = { ...env };
  for (const [name, value] of Object.entries(CLAUDE_QUIET_ENV))
    if (env[name] === undefined) out[name] = value;
  return { argv, env: out };
}

/**
 * The argv and env `vendor`'s CLI is started with, given the argv built for it, the run's environment and the
 * settings its recipe makes (`cliSettings`; OpenCode takes them in its config, Gemini CLI in its settings file).
 */
export function vendorLaunch(
  vendor: Vendor,
  argv: readonly string[],
  env: LaunchEnv,
  settings?: JsonObject,
): VendorLaunch {
  switch (vendor) {
    case 'codex':
      return codexLaunch(argv, env);
    case 'opencode':
      return opencodeLaunch(argv, env, settings);
    case 'claude':
      return claudeLaunch(argv, env);
    case 'gemini':
    case 'exec':
      return { argv, env };
  }
}

/** Gemini CLI's user settings file, relative to HOME. */
export const GEMINI_SETTINGS_FILE = '.gemini/settings.json';

type Json = JsonObject;
const isJsonObject = (u: unknown): u is Json => typeof u === 'object' && u !== null && !Array.isArray(u);

/** `obj[key]` as an object (a copy), or a fresh one when it is missing or not an object. */
const child = (obj: Json, key: string): Json => (isJsonObject(obj[key]) ? { ...(obj[key] as Json) } : {});

/**
 * Gemini CLI's user settings with what a headless run needs merged in, or undefined when `existing` (the file's
 * parsed content; undefined when there is none) is not a JSON object, which is then left alone (Gemini reports it
 * itself, exit 52). Gemini CLI 0.61 exits 41 "Invalid auth method selected." unless the settings choose
 * `security.auth.selectedType: "gemini-api-key"` (no env var does it headless), and sends usage statistics and
 * telemetry off the base URL unless `privacy.usageStatisticsEnabled` and `telemetry.enabled` are false
 * (docs/reference/vendor-clis.md#endpoint-key-files-2, docs/reference/vendor-clis.md#requests---output-format-stream-json---prompt).
 * Keys the file already sets are kept: a file from a skills or conversation restore, or the recipe's, wins; then
 * `overlay` (the run's `cliSettings`: its deny list as `tools.exclude`) is merged on top, lists joined.
 */
export function geminiSettings(existing: unknown, overlay?: Json): Json | undefined {
  if (existing !== undefined && !isJsonObject(existing)) return undefined;
  const settings: Json = overlay ? mergeSettings(existing ?? {}, overlay) : { ...(existing ?? {}) };
  const security = child(settings, 'security');
  const auth = child(security, 'auth');
  if (auth.selectedType === undefined) auth.selectedType = 'gemini-api-key';
  security.auth = auth;
  settings.security = security;
  const privacy = child(settings, 'privacy');
  if (privacy.usageStatisticsEnabled === undefined) privacy.usageStatisticsEnabled = false;
  settings.privacy = privacy;
  const telemetry = child(settings, 'telemetry');
  if (telemetry.enabled === undefined) telemetry.enabled = false;
  settings.telemetry = telemetry;
  return settings;
}
