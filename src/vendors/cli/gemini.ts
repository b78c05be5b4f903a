// Gemini CLI argv (docs/reference/vendor-cli-events.md#gemini-cli-stream-json; the reference has no Gemini vendor).

import { permissionModeOf, present, type VendorRunInput } from './input.ts';

/**
 * `gemini --output-format stream-json --model <m> --skip-trust [--approval-mode=yolo | --allowed-tools=T …]
 * [--resume <id> | --session-id <pin>] --prompt=<prompt>`.
 * `--skip-trust`: a workspace not trusted before makes Gemini CLI 0.61 exit 55 before any request; the flag trusts it
 * for this run only (docs/reference/vendor-clis.md#endpoint-key-files-2). Its auth type lives in its settings file,
 * which the supervisor provides (src/vendors/cli/launch.ts).
 * The prompt goes last, bound with `=` to `--prompt` (headless mode; `--resume` needs `-p` rather than a
 * positional prompt): a value bound with `=` is never parsed as a flag, which is what the `--` fence guarantees
 * for the other CLIs. Tool names are bound with `=` too, so the array option cannot swallow the next argument.
 * Disallowed tools and MCP servers have no Gemini CLI flag: they go to its settings file through `AGENT_CLI_SETTINGS`
 * (src/vendors/cli/settings.ts). Max turns has neither and is ignored.
 */
export function geminiArgv(input: VendorRunInput): string[] {
  const argv = ['gemini', '--output-format', 'stream-json', '--model', input.model, '--skip-trust'];
  if (permissionModeOf(input.permissionMode) === 'bypass') argv.push('--approval-mode=yolo');
  else for (const tool of present(input.allowedTools)) argv.push(`--allowed-tools=${tool}`);
  if (input.resumeSession) argv.push('--resume', input.resumeSession);
  else if (input.conversationPin) argv.push('--session-id', input.conversationPin);
  argv.push(`--prompt=${input.prompt}`);
  return argv;
}
