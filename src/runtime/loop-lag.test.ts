import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startLoopLagProbe } from './loop-lag.ts';

describe('startLoopLagProbe', () => {
  it('reports a synchronous block as lag, and a quiet loop as (almost) none', async () => {
    const seen: number[] = [];
    const probe = startLoopLagProbe({ observe: (s) => seen.push(s), intervalMs: 10, windowMs: 5000 });
    await new Promise((r) => setTimeout(r, 60));
    const quiet = Math.max(...seen);
    const until = performance.now() + 150;
    while (performance.now() < until) {
      // block the loop for 150 ms
    }
    await new Promise((r) => setTimeout(r, 40));
    probe.stop();
    assert.ok(seen.length >= 3, `samples: ${seen.length}`);
    assert.ok(quiet < 0.1, `quiet loop lag ${quiet}`);
    assert.ok(probe.maxSeconds() >= 0.1, `blocked loop lag ${probe.maxSeconds()}`);
    const n = seen.length;
    await new Promise((r) => setTimeout(r, 40));
    assert.equal(seen.length, n, 'no sample after stop');
  });
});
