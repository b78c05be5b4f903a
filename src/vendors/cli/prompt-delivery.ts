// How the supervisor hands a run's prompt to the vendor CLI (issue 10 §1). The prompt is not in the Job: the
// supervisor reads it from the run's input ConfigMap and gives it to the CLI as its last argument, where every CLI
// takes it (reference-system.md 9, vendors.md 6); a prompt too long for one argument goes to the CLI's standard
// input instead, for the CLIs that read a prompt from there:
// - Claude Code: `claude -p` without a prompt argument reads the prompt from stdin (the `--` fence is dropped);
// - Codex: `codex exec … -- -` (a prompt of `-` means "read it from stdin"), fresh and resumed alike;
// - Gemini CLI: headless with the prompt on stdin and no `--prompt` (a resumed session needs `--prompt`: refused);
// - exec recipes: the command gets no prompt argument and the prompt on stdin (and `AGENT_PROMPT_FILE` to read);
// - OpenCode: no documented stdin prompt: refused.
// The stdin forms were verified only against the fake CLIs of the test suite.

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
 * Puts `prompt` back into `argv` (a vendor argv without its prompt, see {@link argvWithoutPrompt}): as the last
 * argument when it fits in one, else on stdin in the vendor's form. Errors (one line, for a run's failure reason):
 * a prompt over {@link MAX_PROMPT_BYTES}, or one too long for an argument for a CLI that cannot read it from stdin.
 */
export function deliverPrompt(
  vendor: Vendor,
  argv: readonly string[],
  prompt: string,
): Result<PromptDelivery, string> {
  const bytes = utf8Bytes(prompt);
  if (bytes > MAX_PROMPT_BYTES) {
    return err(
      `the prompt is ${bytes} bytes: a run's prompt holds at most ${MAX_PROMPT_BYTES} bytes (900 KiB)`,
    );
  }
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
    case 'opencode':
      return err(`${tooLong}, and the OpenCode CLI takes a prompt only as an argument`);
  }
}
