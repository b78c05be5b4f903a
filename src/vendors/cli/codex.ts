// OpenAI Codex CLI argv (docs/design/reference-behaviour.md#vendor-routing-and-argv;
// docs/reference/vendor-cli-events.md#codex-exec-json; what Codex 0.171 needs: docs/reference/vendor-clis.md#codex-01710).

import { type McpServerSpec, permissionModeOf, type VendorRunInput } from './input.ts';
import { mcpHeaderEnvName } from './mcp.ts';

/**
 * The sandbox and approvals of a run that does not bypass them, as config overrides: no sandbox of Codex's own, and
 * `codex exec`'s approval policy (never ask) said outright. The run pod is the sandbox (non-root, restricted, its root
 * read-only, RuntimeDefault seccomp, a NetworkPolicy of its own). Codex's own sandboxes on Linux are bubblewrap,
 * which needs an unprivileged user namespace, and the RuntimeDefault seccomp profile every run pod has forbids that
 * on a real kubelet: under `workspace-write` every command failed (`bwrap: No permissions to create a new
 * namespace …`), and `codex exec`'s default (`read-only`) cannot write the workspace at all. Overrides, not `-s`:
 * `exec resume` refuses `-s` (docs/reference/vendor-clis.md#sandbox-and-approvals).
 */
export const CODEX_POD_SANDBOX: readonly string[] = [
  '-c',
  'sandbox_mode="danger-full-access"',
  '-c',
  'approval_policy="never"',
];

/** A TOML basic string (JSON's escapes are all valid TOML escapes). */
const toml = (s: string): string => JSON.stringify(s);

/**
 * The recipe's MCP servers as `-c mcp_servers.<name>.…` overrides (docs/reference/vendor-clis.md#mcp-1): an http or
 * sse server by `url` (Codex speaks Streamable HTTP), its `headers_secret` as `env_http_headers` (the header's value
 * is read from the env var, never put in the argv); a stdio server by `command` and `args`. Every server gets
 * `default_tools_approval_mode="approve"`: `codex exec` never asks, so without it each MCP call fails with "MCP tool
 * call requires approval, but approval policy is never" (observed on 0.171.0); the recipe named the server, so its
 * tools are the run's to call.
 */
export function codexMcpOverrides(servers: readonly McpServerSpec[]): string[] {
  const out: string[] = [];
  for (const s of servers) {
    const at = `mcp_servers.${/^[A-Za-z0-9_-]+$/.test(s.name) ? s.name : toml(s.name)}`;
    if (s.transport === 'http' || s.transport === 'sse') {
      if (s.url !== undefined) out.push('-c', `${at}.url=${toml(s.url)}`);
      if (s.headers_secret)
        out.push(
          '-c',
          `${at}.env_http_headers={ Authorization = ${toml(mcpHeaderEnvName(s.headers_secret))} }`,
        );
    } else {
      if (s.command !== undefined) out.push('-c', `${at}.command=${toml(s.command)}`);
      out.push('-c', `${at}.args=[${(s.args ?? []).map(toml).join(', ')}]`);
    }
    out.push('-c', `${at}.default_tools_approval_mode="approve"`);
  }
  return out;
}

/**
 * Fresh: `codex exec --json --skip-git-repo-check [--model m] (--dangerously-bypass-approvals-and-sandbox |
 * -c sandbox_mode="danger-full-access" -c approval_policy="never") -- <prompt>` ({@link CODEX_POD_SANDBOX}).
 * Resume: `codex exec resume --json --skip-git-repo-check [--model m] (…the same…) -- <id> <prompt>`
 * (the flags are global to `codex exec`; unlike the reference, the session id and the prompt are fenced after
 * `--` so neither can be read as a flag). The model `codex` alone means the CLI's default and adds no flag.
 * `--skip-git-repo-check` always: the workspace need not be a git repository, and without the flag Codex exits 1
 * there before any request ("Not inside a trusted directory…", docs/reference/vendor-clis.md#endpoint-key-files-1).
 * MCP servers as `-c` overrides ({@link codexMcpOverrides}). Allowed tools and max turns have no Codex equivalent;
 * a deny list is refused before (src/vendors/cli/argv.ts `denyListProblem`). The model provider (a base URL from the run's
 * environment) is added by the supervisor when it starts the CLI (src/vendors/cli/launch.ts).
 */
export function codexArgv(input: VendorRunInput): string[] {
  const resume = input.resumeSession ?? '';
  const argv = resume === '' ? ['codex', 'exec', '--json'] : ['codex', 'exec', 'resume', '--json'];
  argv.push('--skip-git-repo-check');
  const model = input.model.trim();
  if (model !== '' && model.toLowerCase() !== 'codex') argv.push('--model', model);
  if (permissionModeOf(input.permissionMode) === 'bypass')
    argv.push('--dangerously-bypass-approvals-and-sandbox');
  else argv.push(...CODEX_POD_SANDBOX);
  argv.push(...codexMcpOverrides(input.mcpServers ?? []));
  argv.push('--');
  if (resume !== '') argv.push(resume);
  argv.push(input.prompt);
  return argv;
}
