// OpenAI Codex CLI argv (docs/design/reference-behaviour.md#vendor-routing-and-argv;
// docs/reference/vendor-cli-events.md#codex-exec-json; what Codex 0.171 needs: docs/reference/vendor-clis.md#codex-01710).

import { permissionModeOf, type VendorRunInput } from './input.ts';

/**
 * The sandbox of a run that does not bypass it, as a config override: `codex exec` alone runs commands read-only
 * (it cannot write the workspace), and `exec resume` has no `-s` flag (it refuses it), while `-c sandbox_mode=…`
 * works for both (docs/reference/vendor-clis.md#sandbox-and-approvals).
 */
export const CODEX_WORKSPACE_WRITE = 'sandbox_mode="workspace-write"';

/**
 * Fresh: `codex exec --json --skip-git-repo-check [--model m] (--dangerously-bypass-approvals-and-sandbox |
 * -c sandbox_mode="workspace-write") -- <prompt>`.
 * Resume: `codex exec resume --json --skip-git-repo-check [--model m] (…the same…) -- <id> <prompt>`
 * (the flags are global to `codex exec`; unlike the reference, the session id and the prompt are fenced after
 * `--` so neither can be read as a flag). The model `codex` alone means the CLI's default and adds no flag.
 * `--skip-git-repo-check` always: the workspace need not be a git repository, and without the flag Codex exits 1
 * there before any request ("Not inside a trusted directory…", docs/reference/vendor-clis.md#endpoint-key-files-1).
 * Allowed/disallowed tools and max turns have no Codex equivalent. The model provider (a base URL from the run's
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
  else argv.push('-c', CODEX_WORKSPACE_WRITE);
  argv.push('--');
  if (resume !== '') argv.push(resume);
  argv.push(input.prompt);
  return argv;
}
