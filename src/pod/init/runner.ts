import { spawn } from 'node:child_process';

/** Options of one child process run by the init. */
export interface RunOptions {
  /** The child's complete environment (also used for the PATH lookup of argv[0]). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd?: string | undefined;
}

/**
 * Runs argv and resolves to its exit code. Contract: never rejects; an executable that cannot be found or
 * started resolves to 2 (docs/design/reference-behaviour.md#init-steps); death by signal N resolves to 128 + N.
 */
export type CommandRunner = (argv: readonly string[], options: RunOptions) => Promise<number>;

const SIGNALS: Readonly<Record<string, number>> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGKILL: 9,
  SIGTERM: 15,
};

/**
 * The real runner: spawns without a shell, stdin closed, and copies the child's stdout and stderr to the
 * init's stderr, so the init's stdout carries only lifecycle event lines.
 */
export function createProcessRunner(
  writeErr: (chunk: Uint8Array | string) => void = (c) => void process.stderr.write(c),
): CommandRunner {
  return (argv, options) =>
    new Promise((resolve) => {
      const [command, ...args] = argv;
      if (command === undefined) {
        resolve(2);
        return;
      }
      let settled = false;
      const finish = (code: number): void => {
        if (!settled) {
          settled = true;
          resolve(code);
        }
      };
      let child: ReturnType<typeof spawn>;
      try {
        child = spawn(command, args, {
          env: { ...options.env },
          cwd: options.cwd,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
      } catch {
        finish(2);
        return;
      }
      child.stdout?.on('data', (chunk: Uint8Array) => writeErr(chunk));
      child.stderr?.on('data', (chunk: Uint8Array) => writeErr(chunk));
      child.on('error', () => finish(2));
      child.on('close', (code, signal) => {
        if (typeof code === 'number') finish(code);
        else finish(128 + (signal ? (SIGNALS[signal] ?? 1) : 1));
      });
    });
}
