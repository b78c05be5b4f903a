// The exec vendor: a recipe-supplied argv plus the prompt
// (docs/design/reference-behaviour.md#vendor-routing-and-argv).

import { err, ok, type Result } from '../../shared/result.ts';

/** Build errors of the exec vendor, exactly as the run's failureReason shows them. */
export const EXEC_ERRORS = {
  missing: 'exec recipe needs tool_config.command (the argv to spawn)',
  notArray: 'exec recipe tool_config.command must be a non-empty array of strings',
  notStrings: 'exec recipe tool_config.command entries must be strings',
  emptyProgram: 'exec recipe tool_config.command[0] must name a program',
} as const;

/**
 * `tool_config.command` followed by the prompt as the last element. Errors when `tool_config` or its `command` is
 * missing, when `command` is not a non-empty array, when an entry is not a string, or when the program is `""`.
 */
export function execArgv(toolConfig: unknown, prompt: string): Result<string[], string> {
  if (typeof toolConfig !== 'object' || toolConfig === null || Array.isArray(toolConfig)) {
    return err(EXEC_ERRORS.missing);
  }
  const command: unknown = (toolConfig as Record<string, unknown>).command;
  if (command === undefined || command === null) return err(EXEC_ERRORS.missing);
  if (!Array.isArray(command) || command.length === 0) return err(EXEC_ERRORS.notArray);
  const argv: string[] = [];
  for (const entry of command as unknown[]) {
    if (typeof entry !== 'string') return err(EXEC_ERRORS.notStrings);
    argv.push(entry);
  }
  if (argv[0] === '') return err(EXEC_ERRORS.emptyProgram);
  argv.push(prompt);
  return ok(argv);
}
