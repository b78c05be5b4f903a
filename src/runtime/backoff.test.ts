import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { baseDelay, DEFAULT_BACKOFF, INITIAL_BACKOFF_STATE, nextBackoff } from './backoff.ts';

describe('baseDelay', () => {
  it('grows 800 ms × 2 and caps at 30 s', () => {
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5, 6, 10, 2000].map((n) => baseDelay(DEFAULT_BACKOFF, n)),
      [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000],
    );
  });
});

describe('nextBackoff', () => {
  it('keeps every delay within [base × (1 − jitter), base] for any random value', () => {
    let state = INITIAL_BACKOFF_STATE;
    for (let i = 0; i < 12; i++) {
      const base = baseDelay(DEFAULT_BACKOFF, i);
      for (const r of [0, 0.001, 0.25, 0.5, 0.999, 1]) {
        const { delayMs } = nextBackoff(DEFAULT_BACKOFF, state, 1000 + i, r);
        assert.ok(delayMs <= base && delayMs >= base * 0.5, `failure ${i} random ${r}: ${delayMs}`);
        assert.ok(delayMs <= 30_000);
      }
      state = nextBackoff(DEFAULT_BACKOFF, state, 1000 + i, 0).state;
    }
  });
  it('maps random 0 to the full base and random 1 to the low end', () => {
    assert.equal(nextBackoff(DEFAULT_BACKOFF, INITIAL_BACKOFF_STATE, 0, 0).delayMs, 800);
    assert.equal(nextBackoff(DEFAULT_BACKOFF, INITIAL_BACKOFF_STATE, 0, 1).delayMs, 400);
    assert.equal(nextBackoff({ ...DEFAULT_BACKOFF, jitter: 0 }, INITIAL_BACKOFF_STATE, 0, 0.7).delayMs, 800);
  });
  it('counts consecutive failures', () => {
    const a = nextBackoff(DEFAULT_BACKOFF, INITIAL_BACKOFF_STATE, 0, 0);
    const b = nextBackoff(DEFAULT_BACKOFF, a.state, 1000, 0);
    const c = nextBackoff(DEFAULT_BACKOFF, b.state, 2000, 0);
    assert.deepEqual([a.delayMs, b.delayMs, c.delayMs], [800, 1600, 3200]);
    assert.deepEqual(c.state, { failures: 3, lastFailureAt: 2000 });
  });
  it('starts over after a quiet period since the last failure', () => {
    let s = INITIAL_BACKOFF_STATE;
    for (let i = 0; i < 6; i++) s = nextBackoff(DEFAULT_BACKOFF, s, i, 0).state;
    assert.equal(nextBackoff(DEFAULT_BACKOFF, s, 5 + 119_999, 0).delayMs, 30_000);
    const after = nextBackoff(DEFAULT_BACKOFF, s, 5 + 120_000, 0);
    assert.equal(after.delayMs, 800);
    assert.equal(after.state.failures, 1);
  });
});
