// Claude Code argv (docs/design/reference-behaviour.md#vendor-routing-and-argv;
// docs/reference/vendor-cli-events.md#claude-code-stream-json).

import { type McpServerSpec, permissionModeOf, present, type VendorRunInput } from './input.ts';
import { mcpHeaderEnvName } from './mcp.ts';

/**
 * Claude Code's user settings under the run's HOME (`/agent`), which the CLI reads by itself; the init container
 * fills it from a skills source. Never passed with `--settings`: the CLI exits 1 ("Settings file not found") when
 * that flag names a missing file, and without a skills source (or when its download fails) there is none.
 */
export const CLAUDE_SETTINGS_PATH = '/agent/.claude/settings.json';

/**
 * The `--mcp-config` JSON: `{"mcpServers":{"<name>":…}}`; http/sse servers as `{type, url}` plus an
 * `Authorization` header read from the env var derived from a non-empty `headers_secret` (callers blank reserved
 * names first, so a controller value never leaks as a header); stdio servers as `{type: "stdio", command, args}`.
 */
export function claudeMcpConfig(servers: readonly McpServerSpec[]): string {
  const mcpServers: Record<string, unknown> = {};
  for (const s of servers) {
    if (s.transport === 'http' || s.transport === 'sse') {
      const entry: Record<string, unknown> = { type: s.transport };
      if (s.url !== undefined) entry.url = s.url;
      if (s.headers_secret) {
        entry.headers = { Authorization: `\${${mcpHeaderEnvName(s.headers_secret)}}` };
      }
      mcpServers[s.name] = entry;
    } else {
      const entry: Record<string, unknown> = { type: 'stdio' };
      if (s.command !== undefined) entry.command = s.command;
      entry.args = [...(s.args ?? [])];
      mcpServers[s.name] = entry;
    }
  }
  return JSON.stringify({ mcpServers });
}

/**
 * `claude --print --verbose --output-format stream-json --model <m> [--dangerously-skip-permissions |
 * --allowedTools T …] [--disallowedTools T …] [--mcp-config <json> --strict-mcp-config]
 * [--max-turns N] [--resume <id>] [--fork-session] [--session-id <pin>] -- <prompt>`. Deny lists apply in every
 * mode; `--fork-session` only when both a resume id and a pin are set.
 */
export function claudeArgv(input: VendorRunInput): string[] {
  const argv = ['claude', '--print', '--verbose', '--output-format', 'stream-json', '--model', input.model];
  if (permissionModeOf(input.permissionMode) === 'bypass') argv.push('--dangerously-skip-permissions');
  else for (const tool of present(input.allowedTools)) argv.push('--allowedTools', tool);
  for (const tool of present(input.disallowedTools)) argv.push('--disallowedTools', tool);
  const servers = input.mcpServers ?? [];
  if (servers.length > 0) argv.push('--mcp-config', claudeMcpConfig(servers), '--strict-mcp-config');
  const turns = Math.trunc(input.maxTurns ?? 0);
  if (turns > 0) argv.push('--max-turns', String(turns));
  const resume = input.resumeSession ?? '';
  const pin = input.conversationPin ?? '';
  if (resume !== '') argv.push('--resume', resume);
  if (resume !== '' && pin !== '') argv.push('--fork-session');
  if (pin !== '') argv.push('--session-id', pin);
  argv.push('--', input.prompt);
  return argv;
}
