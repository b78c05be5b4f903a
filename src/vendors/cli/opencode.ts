// OpenCode argv (docs/design/reference-behaviour.md#vendor-routing-and-argv).

import type { VendorRunInput } from './input.ts';

/**
 * The `--model` value for OpenCode: `opencode/<provider>/<model>` → `<provider>/<model>`; `opencode` alone → none
 * (the CLI's configured default); anything else as given.
 */
export function opencodeModel(model: string): string | undefined {
  const m = model.trim();
  if (m.toLowerCase() === 'opencode' || m === '') return undefined;
  if (m.toLowerCase().startsWith('opencode/')) {
    const rest = m.slice('opencode/'.length);
    return rest === '' ? undefined : rest;
  }
  return m;
}

/**
 * `opencode run --format json [--model p/m] [--session <id>] -- <prompt>`. Permission mode, the allow list and max
 * turns have no OpenCode flag and are ignored, as in the reference; the deny list and MCP servers go to its config
 * through `AGENT_CLI_SETTINGS` (src/vendors/cli/settings.ts). A resume id continues that session. The prompt
 * is last like every vendor's, but the supervisor hands it over on stdin instead (see `deliverPrompt`).
 */
export function opencodeArgv(input: VendorRunInput): string[] {
  const argv = ['opencode', 'run', '--format', 'json'];
  const model = opencodeModel(input.model);
  if (model !== undefined) argv.push('--model', model);
  if (input.resumeSession) argv.push('--session', input.resumeSession);
  argv.push('--', input.prompt);
  return argv;
}
