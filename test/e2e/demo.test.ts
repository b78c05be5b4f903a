// `npm run demo` end to end (issue 11 §5): the guided tour on the local control plane, to its end (`--exit`), in a
// namespace of its own: a streamed Job run, a failing run (exit 3), queueing behind a Forbid Station, a batch run
// against the fake vendor API, a realtime prompt, and the console's one-time link. Node pass only: the tour starts
// its own controller the way `npm start` does (on Node) and does not depend on the runtime under test.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { apiPath, controllerSkipReason, e2eCluster, e2eRuntime } from '../support/index.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip =
  controllerSkipReason(cluster) ||
  (runtime === 'deno' ? 'the demo runs its own controller on Node; it runs in the node pass only' : false);
const ROOT = join(import.meta.dirname, '..', '..');

/** Signals the tour's process group: the tour, npm start's process, the controller, the fake vendors, its CLI. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/**
 * Runs the tour to its end (`--exit`) in a process group of its own and returns its exit code and output. Past
 * `timeoutMs` the group gets SIGTERM (the tour stops the controller, and npm start removes its image table), and
 * SIGKILL 30 s later: nothing of the demo outlives the test, and the test never waits on it forever.
 */
function runTour(ns: string, timeoutMs: number): Promise<{ status: number | null; out: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'scripts/demo/tour.ts', '--exit', '--namespace', ns],
    { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const term = setTimeout(() => {
    out += `\n[test: the tour took longer than ${timeoutMs} ms: SIGTERM]\n`;
    signalGroup(child, 'SIGTERM');
  }, timeoutMs);
  const kill = setTimeout(() => signalGroup(child, 'SIGKILL'), timeoutMs + 30_000);
  // Its own group does not get the terminal's Ctrl-C: pass it on, then end as the signal would have.
  const passOn = (signal: NodeJS.Signals): void => {
    signalGroup(child, 'SIGTERM');
    process.kill(process.pid, signal);
  };
  process.once('SIGINT', passOn);
  process.once('SIGTERM', passOn);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearTimeout(term);
      clearTimeout(kill);
      process.off('SIGINT', passOn);
      process.off('SIGTERM', passOn);
      resolve({ status: code, out });
    });
  });
}

describe('npm run demo', { skip }, () => {
  if (typeof cluster === 'string') return;
  const ns = `demo-${Math.random().toString(36).slice(2, 8)}`;
  after(async () => {
    await cluster.client.request('DELETE', apiPath('v1', 'namespaces', { name: ns }));
    cluster.client.close();
  });

  it('walks through every step and ends with the console link', { timeout: 330_000 }, async () => {
    const r = await runTour(ns, 280_000);
    const out = r.out;
    assert.equal(r.status, 0, out.slice(-4000));
    for (const step of [
      /== 1\. A run, its output streamed/,
      /step: running the tests\nall green/,
      /Succeeded · exit 0/,
      /\(exit code 3\)/,
      /queued-2 +Pending +demo-queue/,
      /queued-4 +Succeeded · exit 0/,
      /Batch: +anthropic msgbatch_/,
      /echo: what changed today\?/,
      /closed pair-1/,
      /Open http:\/\/127\.0\.0\.1:\d+\/login\?code=[\w-]+/,
      /demo: done/,
    ])
      assert.match(out, step);
  });
});
