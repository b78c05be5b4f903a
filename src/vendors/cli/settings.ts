// What a recipe asks of Gemini CLI and OpenCode that no flag of theirs takes: settings, handed from the controller to
// the supervisor as the run env `AGENT_CLI_SETTINGS` (JSON, no secret) and merged by it into the CLI's own
// configuration (docs/reference/vendor-clis.md#tool-permissions-1, docs/reference/vendor-clis.md#tool-permissions-2).
// Pure.

import type { VendorRunInput } from './input.ts';
import { present } from './input.ts';
import type { Vendor } from './route.ts';

/** The run env that carries the settings. */
export const CLI_SETTINGS_ENV = 'AGENT_CLI_SETTINGS';

export type JsonObject = Record<string, unknown>;
const isJsonObject = (u: unknown): u is JsonObject =>
  typeof u === 'object' && u !== null && !Array.isArray(u);

/**
 * The settings a run of `vendor` needs beyond its argv, or undefined when none:
 * - Gemini CLI: `tools.exclude` = the deny list (an excluded tool is not offered, a call anyway is answered "not
 *   found" and never runs).
 * - OpenCode: `permission.<tool>: "deny"` per denied tool (not offered; a call anyway becomes the `invalid` tool).
 */
export function cliSettings(vendor: Vendor, input: VendorRunInput): JsonObject | undefined {
  const denied = present(input.disallowedTools);
  if (denied.length === 0) return undefined;
  switch (vendor) {
    case 'gemini':
      return { tools: { exclude: denied } };
    case 'opencode':
      return { permission: Object.fromEntries(denied.map((t) => [t, 'deny'])) };
    default:
      return undefined;
  }
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
