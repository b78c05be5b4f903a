// `npm run demo` end to end (issue 11 §5): the guided tour on the local control plane, to its end (`--exit`), in a
// namespace of its own: a streamed Job run, a failing run (exit 3), queueing behind a Forbid Station, a batch run
// against the fake vendor API, a realtime prompt, and the console's one-time link. Node pass only: the tour starts
// its own controller the way `npm start` does (on Node) and does not depend on the runtime under test.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { apiPath, controllerSkipReason, e2eCluster, e2eRuntime } from '../support/index.ts';

const cluster = e2eCluster();
const runtime = typeof cluster === 'string' ? 'node' : e2eRuntime();
const skip =
  controllerSkipReason(cluster) ||
  (runtime === 'deno' ? 'the demo runs its own controller on Node; it runs in the node pass only' : false);
const ROOT = join(import.meta.dirname, '..', '..');

describe('npm run demo', { skip }, () => {
  if (typeof cluster === 'string') return;
  const ns = `demo-${Math.random().toString(36).slice(2, 8)}`;
  after(async () => {
    await cluster.client.request('DELETE', apiPath('v1', 'namespaces', { name: ns }));
    cluster.client.close();
  });

  it('walks through every step and ends with the console link', { timeout: 300_000 }, () => {
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'scripts/demo/tour.ts', '--exit', '--namespace', ns],
      {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, NO_COLOR: '1' },
        timeout: 280_000,
      },
    );
    const out = `${r.stdout}\n${r.stderr}`;
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
