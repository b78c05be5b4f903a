import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rawFigures } from './raw-figures.ts';

describe('rawFigures', () => {
  it('splits each item into its steps and measures throughput from the first call sent', () => {
    const f = rawFigures([
      { startMs: 0, agentMs: 10, jobMs: 30, runningMs: 40, doneMs: 60 },
      { startMs: 5, agentMs: 25, jobMs: 35, runningMs: 55, doneMs: 100 },
    ]);
    assert.equal(f.items, 2);
    assert.equal(f.failures, 0);
    assert.deepEqual(f.errors, []);
    assert.deepEqual(
      [f.item.min, f.item.max, f.agentPost.max, f.jobPost.min, f.jobPost.max, f.terminalPatch.max],
      [60, 95, 20, 10, 20, 45],
    );
    assert.equal(f.wallMs, 100);
    assert.equal(f.itemsPerSecond, 20);
    assert.equal(f.jobsPerSecond, (2 * 1000) / 35);
  });

  it('failed items count as failures only, with their first errors listed once', () => {
    const f = rawFigures([
      { startMs: 0, agentMs: 10, jobMs: 20, runningMs: 30, doneMs: 40 },
      { startMs: 1, error: 'POST …: HTTP 429 TooManyRequests' },
      { startMs: 2, agentMs: 12, error: 'POST …: HTTP 429 TooManyRequests' },
      { startMs: 3, agentMs: 13, error: 'POST …: HTTP 500' },
    ]);
    assert.equal(f.failures, 3);
    assert.deepEqual(f.errors, ['POST …: HTTP 429 TooManyRequests', 'POST …: HTTP 500']);
    assert.equal(f.item.count, 1);
    assert.equal(f.agentPost.count, 3);
    assert.equal(f.itemsPerSecond, 25);
  });

  it('nothing done: NaN rates, no crash', () => {
    const f = rawFigures([{ startMs: 0, error: 'boom' }]);
    assert.ok(Number.isNaN(f.wallMs));
    assert.ok(Number.isNaN(f.itemsPerSecond));
    assert.ok(Number.isNaN(f.jobsPerSecond));
    assert.equal(rawFigures([]).items, 0);
  });
});
