// How the supervisor hands a run's prompt to the vendor CLI (issue 10 §1). The prompt is not in the Job: the
// supervisor reads it from the run's input ConfigMap and gives it to the CLI as its last argument, where every CLI
// takes it (docs/design/reference-behaviour.md#vendor-routing-and-argv, docs/reference/vendor-cli-events.md); a
// prompt too long for one argument goes to the CLI's standard
// input instead, for the CLIs that read a prompt from there:
// - Claude Code: `claude -p` without a prompt argument reads the prompt from stdin (the `--` fence is dropped);
// - Codex: `codex exec … -- -` (a prompt of `-` means "read it from stdin"), fresh and resumed alike;
// - Gemini CLI: headless with the prompt on stdin and no `--prompt` (a resumed session needs `--prompt`: refused);
// - exec recipes: the command gets no prompt argument and the prompt on stdin (and `AGENT_PROMPT_FILE` to read).
// OpenCode gets its prompt on stdin always, whatever its size: given as an argument, a prompt with a space reaches
// the model wrapped in double quotes, while stdin text arrives as is, and `opencode run` with no message argument
// takes stdin as the prompt (docs/reference/vendor-clis.md#endpoint-key-files-3; observed with OpenCode 1.18.33).
// The other stdin forms were verified only against the fake CLIs of the test suite.

import { err, ok, type Result } from '../../shared/result.ts';
import type { Vendor } from './route.ts';

/** The largest single argument Linux passes to a program (MAX_ARG_STRLEN, 32 pages, less the terminating NUL). */
export const MAX_ARG_BYTES = 131071;

/** The largest prompt a run takes (it must fit, with the run's ids, in its input ConfigMap of at most 1 MiB). */
export const MAX_PROMPT_BYTES = 900 * 1024;

/** The argv the CLI is started with, and what it reads on stdin (undefined: stdin stays closed). */
export interface PromptDelivery {
  readonly argv: readonly string[];
  readonly stdin?: string;
}

const encoder = new TextEncoder();

/** The longest system prompt (one argument of Claude's, with room to spare). */
export const MAX_SYSTEM_PROMPT_ARG_BYTES = 65536;

/** Claude's argv (without its prompt) with `--append-system-prompt <text>` before the `--` fence. */
function withClaudeSystemPrompt(argv: readonly string[], system: string): string[] {
  const fence = argv.lastIndexOf('--');
  const at = fence === -1 ? argv.length : fence;
  return [...argv.slice(0, at), '--append-system-prompt', system, ...argv.slice(at)];
}

/** The UTF-8 size of `s` in bytes. */
export function utf8Bytes(s: string): number {
  return encoder.encode(s).length;
}

/**
 * The vendor argv without its last element, which is always the prompt (`--prompt=<p>` for Gemini): what the Job
 * carries when the prompt travels in the input ConfigMap.
 */
export function argvWithoutPrompt(argv: readonly string[]): string[] {
  return argv.slice(0, -1);
}

/**
 * Puts `userPrompt` back into `argv` (a vendor argv without its prompt, see {@link argvWithoutPrompt}): as the last
 * argument when it fits in one, else on stdin in the vendor's form (OpenCode: on stdin always). A `systemPrompt`
 * goes to Claude as `--append-system-prompt` and before the prompt (a blank line between) for the others. Errors
 * (one line, for a run's failure reason): a prompt over {@link MAX_PROMPT_BYTES}, a system prompt over 64 KiB, or a
 * prompt too long for an argument for a resumed Gemini session.
 */
export function deliverPrompt(
  vendor: Vendor,
  argv: readonly string[],
  userPrompt: string,
  systemPrompt?: string,
): Result<PromptDelivery, string> {
  const system = systemPrompt === undefined || systemPrompt.trim() === '' ? undefined : systemPrompt;
  if (system !== undefined && utf8Bytes(system) > MAX_SYSTEM_PROMPT_ARG_BYTES) {
    return err(
      `the system prompt is ${utf8Bytes(system)} bytes: at most ${MAX_SYSTEM_PROMPT_ARG_BYTES} bytes (64 KiB)`,
    );
  }
  // Claude takes the system prompt as an option; every other CLI reads it before the prompt.
  const claudeSystem = vendor === 'claude' && system !== undefined;
  if (claudeSystem) argv = withClaudeSystemPrompt(argv, system);
  const prompt = system === undefined || claudeSystem ? userPrompt : `${system}\n\n${userPrompt}`;
  if (prompt.includes('\u0000') || (system ?? '').includes('\u0000')) {
    return err(
      'the prompt contains a NUL character (U+0000), which no CLI argument or prompt text can carry (check the parameters and the template)',
    );
  }
  const bytes = utf8Bytes(prompt);
  if (bytes > MAX_PROMPT_BYTES) {
    return err(
      `the prompt is ${bytes} bytes: a run's prompt holds at most ${MAX_PROMPT_BYTES} bytes (900 KiB)`,
    );
  }
  // OpenCode: on stdin always (see the header); the `--` fence stays, with nothing after it.
  if (vendor === 'opencode') return ok({ argv: [...argv], stdin: prompt });
  const asArgument = vendor === 'gemini' ? `--prompt=${prompt}` : prompt;
  if (utf8Bytes(asArgument) <= MAX_ARG_BYTES) return ok({ argv: [...argv, asArgument] });
  const tooLong = `the prompt is ${bytes} bytes, over the ${MAX_ARG_BYTES}-byte limit of one CLI argument`;
  switch (vendor) {
    case 'claude':
      return ok({ argv: argv.at(-1) === '--' ? argv.slice(0, -1) : [...argv], stdin: prompt });
    case 'codex':
      return ok({ argv: [...argv, '-'], stdin: prompt });
    case 'gemini':
      return argv.includes('--resume')
        ? err(`${tooLong}, and the Gemini CLI takes a resumed session's prompt only as an argument`)
        : ok({ argv: [...argv], stdin: prompt });
    case 'exec':
      return ok({ argv: [...argv], stdin: prompt });
  }
}
