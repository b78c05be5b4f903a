// What a recipe asks of Gemini CLI and OpenCode that no flag of theirs takes: settings, handed from the controller to
// the supervisor as the run env `AGENT_CLI_SETTINGS` (JSON, no secret) and merged by it into the CLI's own
// configuration (docs/reference/vendor-clis.md#tool-permissions-1, docs/reference/vendor-clis.md#tool-permissions-2).
// Pure.

import type { McpServerSpec, VendorRunInput } from './input.ts';
import { present } from './input.ts';
import { mcpHeaderEnvName } from './mcp.ts';
import type { Vendor } from './route.ts';

/** The run env that carries the settings. */
export const CLI_SETTINGS_ENV = 'AGENT_CLI_SETTINGS';

export type JsonObject = Record<string, unknown>;
const isJsonObject = (u: unknown): u is JsonObject =>
  typeof u === 'object' && u !== null && !Array.isArray(u);

/**
 * The settings a run of `vendor` needs beyond its argv, or undefined when none:
 * - Gemini CLI: `tools.exclude` = the deny list (an excluded tool is not offered, a call anyway is answered "not
 *   found" and never runs); `mcpServers` (http as `httpUrl`, sse as `url`, stdio as `command`/`args`; a
 *   `headers_secret` as an `Authorization` header read from its env var, which Gemini CLI expands in settings).
 * - OpenCode: `permission.<tool>: "deny"` per denied tool (not offered; a call anyway becomes the `invalid` tool);
 *   `mcp` (http and sse as `remote`, stdio as `local`; the header as `{env:NAME}`, which OpenCode expands).
 * Never a secret: header values are references to the env var that holds them.
 */
export function cliSettings(vendor: Vendor, input: VendorRunInput): JsonObject | undefined {
  const denied = present(input.disallowedTools);
  const servers = input.mcpServers ?? [];
  const settings: JsonObject = {};
  switch (vendor) {
    case 'gemini':
      if (denied.length > 0) settings.tools = { exclude: denied };
      if (servers.length > 0) settings.mcpServers = mcpEntries(servers, geminiMcp);
      break;
    case 'opencode':
      if (denied.length > 0) settings.permission = Object.fromEntries(denied.map((t) => [t, 'deny']));
      if (servers.length > 0) settings.mcp = mcpEntries(servers, opencodeMcp);
      break;
    default:
      return undefined;
  }
  return Object.keys(settings).length > 0 ? settings : undefined;
}

const mcpEntries = (servers: readonly McpServerSpec[], entry: (s: McpServerSpec) => JsonObject): JsonObject =>
  Object.fromEntries(servers.map((s) => [s.name, entry(s)]));

/** The env var holding a server's `Authorization` header, if it has one. */
const headerEnv = (s: McpServerSpec): string | undefined =>
  s.headers_secret ? mcpHeaderEnvName(s.headers_secret) : undefined;

function geminiMcp(s: McpServerSpec): JsonObject {
  if (s.transport !== 'http' && s.transport !== 'sse')
    return { command: s.command ?? '', args: [...(s.args ?? [])] };
  const env = headerEnv(s);
  return {
    [s.transport === 'http' ? 'httpUrl' : 'url']: s.url ?? '',
    ...(env !== undefined ? { headers: { Authorization: `\${${env}}` } } : {}),
  };
}

function opencodeMcp(s: McpServerSpec): JsonObject {
  if (s.transport !== 'http' && s.transport !== 'sse')
    return { type: 'local', command: [s.command ?? '', ...(s.args ?? [])] };
  const env = headerEnv(s);
  return {
    type: 'remote',
    url: s.url ?? '',
    ...(env !== undefined ? { headers: { Authorization: `{env:${env}}` } } : {}),
  };
}

/**
 * `overlay` merged into `base` (a copy): objects merge key by key, lists are joined without repeats, any other
 * overlay value replaces the base's. What the recipe denies thus always applies over a file's own settings.
 */
export function mergeSettings(base: JsonObject, overlay: JsonObject): JsonObject {
  const out: JsonObject = { ...base };
  for (const [key, value] of Object.entries(overlay)) {
    const before = out[key];
    if (isJsonObject(before) && isJsonObject(value)) out[key] = mergeSettings(before, value);
    else if (Array.isArray(before) && Array.isArray(value))
      out[key] = [...before, ...value.filter((v) => !before.includes(v))];
    else out[key] = value;
  }
  return out;
}
