// What the host tests of the pod's supervisors share: a free loopback port, polling with a deadline, and a child
// process's output as they read it (stdout as complete lines, stderr as text, its exit).
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/** A loopback port free at the time of asking. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Polls `probe` every 25 ms until it returns a value; fails the test after `ms`. */
export async function waitFor<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  ms: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) assert.fail(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

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
