// OpenAI Codex CLI argv (docs/design/reference-behaviour.md#vendor-routing-and-argv;
// docs/reference/vendor-cli-events.md#codex-exec-json).

import { permissionModeOf, type VendorRunInput } from './input.ts';

/**
 * Fresh: `codex exec --json [--model m] [--dangerously-bypass-approvals-and-sandbox] -- <prompt>`.
 * Resume: `codex exec resume --json [--model m] [--dangerously-bypass-approvals-and-sandbox] -- <id> <prompt>`
 * (the flags are global to `codex exec`; unlike the reference, the session id and the prompt are fenced after
 * `--` so neither can be read as a flag). The model `codex` alone means the CLI's default and adds no flag.
 * Allowed/disallowed tools and max turns have no Codex equivalent.
 */
export function codexArgv(input: VendorRunInput): string[] {
  const resume = input.resumeSession ?? '';
  const argv = resume === '' ? ['codex', 'exec', '--json'] : ['codex', 'exec', 'resume', '--json'];
  const model = input.model.trim();
  if (model !== '' && model.toLowerCase() !== 'codex') argv.push('--model', model);
  if (permissionModeOf(input.permissionMode) === 'bypass')
    argv.push('--dangerously-bypass-approvals-and-sandbox');
  argv.push('--');
  if (resume !== '') argv.push(resume);
  argv.push(input.prompt);
  return argv;
}
