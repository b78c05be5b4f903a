import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { observe } from '../effects/execute.ts';
import { RUN_FAILURE_KINDS } from '../reconcile/actions.ts';
import { createControllerMetrics } from './registry.ts';

describe('createControllerMetrics', () => {
  it('starts the usual run endings at 0, so the first run of each is counted by increase()', async () => {
    const m = createControllerMetrics(false);
    const text = await m.registry.metrics();
    for (const series of [
      'controller_runs_completed_total{phase="Succeeded",exit_code="0"} 0',
      'controller_runs_completed_total{phase="Succeeded",exit_code=""} 0',
      'controller_runs_completed_total{phase="Failed",exit_code="1"} 0',
      'controller_runs_completed_total{phase="Failed",exit_code=""} 0',
      'controller_run_duration_seconds_count{phase="Succeeded"} 0',
      'controller_run_duration_seconds_count{phase="Failed"} 0',
    ]) {
      assert.ok(text.split('\n').includes(series), `missing: ${series}`);
    }
  });

  it('starts controller_run_failures_total at 0 for exactly the failure kinds of the core', async () => {
    const m = createControllerMetrics(false);
    const lines = (await m.registry.metrics()).split('\n');
    for (const kind of RUN_FAILURE_KINDS) {
      const series = `controller_run_failures_total{kind="${kind}"} 0`;
      assert.ok(lines.includes(series), `missing: ${series}`);
    }
    const kinds = lines.flatMap((l) => /^controller_run_failures_total\{kind="([^"]*)"\}/.exec(l)?.[1] ?? []);
    assert.deepEqual(kinds.sort(), [...RUN_FAILURE_KINDS].sort());
  });

  it('counts a run on the series it started at 0', async () => {
    const m = createControllerMetrics(false);
    observe(m, { metric: 'runCompleted', phase: 'Failed', exitCode: 1 });
    observe(m, { metric: 'runCompleted', phase: 'Failed', exitCode: 3 });
    const lines = (await m.registry.metrics()).split('\n');
    assert.ok(lines.includes('controller_runs_completed_total{phase="Failed",exit_code="1"} 1'));
    assert.ok(lines.includes('controller_runs_completed_total{phase="Failed",exit_code="3"} 1'));
    assert.ok(lines.includes('controller_runs_completed_total{phase="Succeeded",exit_code="0"} 0'));
  });
});
