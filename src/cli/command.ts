import { type ParseArgsConfig, parseArgs } from 'node:util';

/** A command-line mistake: printed as one line on stderr, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** What a subcommand needs to run: its argv (after the subcommand name) and the process's streams. */
export interface CommandIo {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

/** One subcommand of the bundle. `run` resolves to the process exit code. */
export interface Command {
  readonly name: string;
  readonly summary: string;
  readonly usage: string;
  readonly run: (io: CommandIo) => Promise<number>;
  /**
   * Exit the process as soon as `run` resolves, even if a handle (a keep-alive socket, a runtime timer) would keep
   * it alive: a long-running service that has finished its own graceful shutdown.
   */
  readonly exitWhenDone?: boolean;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * Parses flags strictly. Unknown flags, missing values and stray positionals become a UsageError
 * whose message is one line. `--help`/`-h` is always accepted and reported as `help: true`.
 */
export function parseFlags<O extends Options>(
  argv: readonly string[],
  options: O,
  allowPositionals = false,
): { values: Record<string, string | boolean | string[] | undefined>; positionals: string[]; help: boolean } {
  try {
    const parsed = parseArgs({
      args: [...argv],
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals,
    });
    const values = parsed.values as Record<string, string | boolean | string[] | undefined>;
    return { values, positionals: parsed.positionals, help: values.help === true };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new UsageError(message.split('\n')[0] ?? message);
  }
}
