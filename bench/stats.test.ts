import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { peakOverlap, percentile, perSecond, summarize } from './stats.ts';

describe('percentile (nearest rank)', () => {
  const hundred = Array.from({ length: 100 }, (_, i) => i + 1);

  it('picks measured values, never interpolating', () => {
    assert.equal(percentile(hundred, 50), 50);
    assert.equal(percentile(hundred, 90), 90);
    assert.equal(percentile(hundred, 99), 99);
    assert.equal(percentile(hundred, 100), 100);
    assert.equal(percentile([10, 20], 50), 10);
    assert.equal(percentile([10, 20], 51), 20);
  });

  it('a single value is every percentile; an empty sample is NaN', () => {
    assert.equal(percentile([7], 1), 7);
    assert.equal(percentile([7], 99), 7);
    assert.ok(Number.isNaN(percentile([], 50)));
  });

  it('small samples: p99 of 10 values is the maximum', () => {
    assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 99), 10);
    assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90), 9);
  });

  it('rejects percentiles outside (0, 100]', () => {
    assert.throws(() => percentile([1], 0), RangeError);
    assert.throws(() => percentile([1], 101), RangeError);
  });
});

describe('summarize', () => {
  it('sorts, drops non-finite values and reports order statistics and the mean', () => {
    const s = summarize([5, 1, Number.NaN, 3, Number.POSITIVE_INFINITY, 2, 4]);
    assert.deepEqual(s, { count: 5, min: 1, p50: 3, p90: 5, p99: 5, max: 5, mean: 3 });
  });

  it('an empty sample has count 0 and NaN figures', () => {
    const s = summarize([]);
    assert.equal(s.count, 0);
    for (const k of ['min', 'p50', 'p90', 'p99', 'max', 'mean'] as const) assert.ok(Number.isNaN(s[k]), k);
  });

  it('keeps negative values (clock skew between watches must stay visible)', () => {
    assert.equal(summarize([-2, 1]).min, -2);
  });
});

describe('perSecond', () => {
  it('is events per second over a span in ms, NaN for an empty span', () => {
    assert.equal(perSecond(50, 10_000), 5);
    assert.ok(Number.isNaN(perSecond(5, 0)));
    assert.ok(Number.isNaN(perSecond(5, -1)));
  });
});

describe('peakOverlap', () => {
  it('counts the most intervals open at once', () => {
    assert.equal(
      peakOverlap([
        { start: 0, end: 10 },
        { start: 5, end: 15 },
        { start: 12, end: 20 },
      ]),
      2,
    );
  });

  it('an end at the same instant as a start closes first', () => {
    assert.equal(
      peakOverlap([
        { start: 0, end: 5 },
        { start: 5, end: 10 },
      ]),
      1,
    );
  });

  it('intervals without an end stay open', () => {
    assert.equal(peakOverlap([{ start: 0 }, { start: 1 }, { start: 2, end: 3 }]), 3);
    assert.equal(peakOverlap([]), 0);
  });
});
