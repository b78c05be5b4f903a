import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { pollUntil } from '../test/support/index.ts';
import { countRunPodProcesses, procPeaks, runPodRole } from './host-procs.ts';

describe('runPodRole', () => {
  it('recognises the init container and the supervisor, on Node and through deno run', () => {
    assert.equal(runPodRole(['/usr/bin/node', '/work/main/dist/agent-controller.mjs', 'init']), 'init');
    assert.equal(
      runPodRole([
        '/pods/u/agent/bin/node',
        '/pods/u/agent/bin/agent-controller.mjs',
        'supervisor',
        '--',
        'true',
      ]),
      'supervisor',
    );
    assert.equal(runPodRole(['deno', 'run', '-A', '/x/agent-controller.mjs', 'init']), 'init');
  });

  it('ignores the controller, other subcommands and unrelated processes', () => {
    assert.equal(
      runPodRole(['node', 'dist/agent-controller.mjs', 'controller', '--namespace', 'x']),
      undefined,
    );
    assert.equal(runPodRole(['node', 'dist/agent-controller.mjs']), undefined);
    assert.equal(runPodRole(['node', 'not-agent-controller.mjs.bak', 'init']), undefined);
    assert.equal(runPodRole(['true']), undefined);
    assert.equal(runPodRole([]), undefined);
  });
});

describe('procPeaks', () => {
  it('keeps the largest counts seen, per role and together', () => {
    assert.deepEqual(
      procPeaks([
        { init: 3, supervisor: 0 },
        { init: 1, supervisor: 4 },
        { init: 2, supervisor: 1 },
      ]),
      { samples: 3, peakInit: 3, peakSupervisor: 4, peakTotal: 5 },
    );
    assert.deepEqual(procPeaks([]), { samples: 0, peakInit: 0, peakSupervisor: 0, peakTotal: 0 });
  });
});

describe('countRunPodProcesses', () => {
  it('finds a live process that looks like an init container', {
    skip: process.platform !== 'linux',
  }, async (t) => {
    const child = spawn(
      process.execPath,
      ['-e', 'setTimeout(() => {}, 20000)', '/nonexistent/agent-controller.mjs', 'init'],
      { stdio: 'ignore' },
    );
    t.after(() => child.kill('SIGKILL'));
    const seen = await pollUntil(
      () => {
        const c = countRunPodProcesses();
        return c !== undefined && c.init >= 1 ? c : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 50, description: 'the fake init process in /proc' },
    );
    assert.ok(seen.init >= 1);
  });
});
