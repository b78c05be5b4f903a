// A child process's output as host tests read it: stdout as complete lines, stderr as text, and its exit.
import type { ChildProcess } from 'node:child_process';

export interface Captured {
  /** Complete stdout lines so far (empty lines left out). */
  readonly stdout: string[];
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Settles with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
}

/** Starts collecting a spawned process's stdout lines and stderr (spawned with `stdio: ['ignore', 'pipe', 'pipe']`). */
export function capture(proc: ChildProcess): Captured {
  const stdout: string[] = [];
  let partial = '';
  let err = '';
  proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    stdout.push(...parts.filter((l) => l !== ''));
  });
  proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { stdout, stderr: () => err, exited };
}
