import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  admitCall,
  availableAt,
  learn,
  nextCapacity,
  refill,
  settleCall,
  shareOf,
  vendorHoldUntil,
  withLimits,
} from './buckets.ts';

const T0 = 1_000_000;

describe('token buckets', () => {
  it('refill: capacity per minute, continuously, never past the capacity', () => {
    const b = { capacity: 60, level: 0, at: T0 };
    assert.equal(refill(b, T0 + 1000).level, 1);
    assert.equal(refill(b, T0 + 30_000).level, 30);
    assert.equal(refill(b, T0 + 600_000).level, 60);
    assert.equal(refill(b, T0 - 5).level, 0);
  });

  it('availableAt: now when the bucket holds it, else when it will; a call larger than the bucket waits for a full one', () => {
    const b = { capacity: 60, level: 0.5, at: T0 };
    assert.equal(availableAt(b, T0, 0.5), T0);
    assert.equal(availableAt(b, T0, 1), T0 + 500);
    assert.equal(availableAt({ capacity: 60, level: 30, at: T0 }, T0, 1000), T0 + 30_000);
  });

  it('a key at N requests per minute lets N go at once, then one every 60/N s', () => {
    let s = withLimits(undefined, { requestsPerMinute: 3 }, T0);
    for (let i = 0; i < 3; i++) {
      assert.equal(nextCapacity(s, T0, 0).at, T0);
      s = admitCall(s, T0, 0);
    }
    assert.deepEqual(nextCapacity(s, T0, 0), { at: T0 + 20_000, reason: 'requests' });
    assert.equal(nextCapacity(s, T0 + 20_000, 0).at, T0 + 20_000);
  });

  it('tokens per minute: the estimate is charged, the measured usage corrects it both ways', () => {
    let s = withLimits(undefined, { tokensPerMinute: 1000 }, T0);
    s = admitCall(s, T0, 800);
    assert.deepEqual(nextCapacity(s, T0, 500), { at: T0 + 18_000, reason: 'tokens' });
    // It used 100: 700 come back.
    const back = settleCall(s, T0, 800, 100);
    assert.equal(nextCapacity(back, T0, 500).at, T0);
    assert.equal(back.tokens?.level, 900);
    // It used 1200: 400 more are charged (the level goes below zero).
    const more = settleCall(s, T0, 800, 1200);
    assert.equal(more.tokens?.level, -200);
    // A refund never fills past the capacity.
    assert.equal(
      settleCall(withLimits(undefined, { tokensPerMinute: 1000 }, T0), T0, 800, 0).tokens?.level,
      1000,
    );
  });

  it('no limits configured: always capacity, until the vendor says otherwise', () => {
    let s = withLimits(undefined, {}, T0);
    for (let i = 0; i < 100; i++) s = admitCall(s, T0, 10_000);
    assert.equal(nextCapacity(s, T0, 10_000).at, T0);
    s = learn(s, { requests: { remaining: 0, resetAt: T0 + 7000 } });
    assert.deepEqual(nextCapacity(s, T0, 1), { at: T0 + 7000, reason: 'vendor_requests' });
    assert.equal(vendorHoldUntil(s, T0), T0 + 7000);
    assert.equal(nextCapacity(s, T0 + 7000, 1).at, T0 + 7000);
    assert.equal(vendorHoldUntil(s, T0 + 7000), undefined);
  });

  it('a 429 blocks until its time; a later one extends it, an earlier one does not shorten it', () => {
    let s = learn(withLimits(undefined, {}, T0), { blockedUntil: T0 + 10_000 });
    assert.deepEqual(nextCapacity(s, T0, 0), { at: T0 + 10_000, reason: 'blocked' });
    s = learn(s, { blockedUntil: T0 + 5000 });
    assert.equal(s.blockedUntil, T0 + 10_000);
    s = learn(s, { blockedUntil: T0 + 12_000 });
    assert.equal(vendorHoldUntil(s, T0), T0 + 12_000);
  });

  it('calls let go count down what the vendor said was left', () => {
    let s = learn(withLimits(undefined, {}, T0), { requests: { remaining: 2, resetAt: T0 + 60_000 } });
    s = admitCall(admitCall(s, T0, 0), T0, 0);
    assert.deepEqual(nextCapacity(s, T0, 0), { at: T0 + 60_000, reason: 'vendor_requests' });
  });

  it('changed limits keep the level (at most the new capacity); the same limits keep the state', () => {
    const s = admitCall(withLimits(undefined, { requestsPerMinute: 10 }, T0), T0, 0);
    assert.equal(withLimits(s, { requestsPerMinute: 10 }, T0), s);
    assert.equal(withLimits(s, { requestsPerMinute: 5 }, T0).requests?.level, 5);
    assert.equal(withLimits(s, { requestsPerMinute: 20 }, T0).requests?.level, 9);
    assert.equal(withLimits(s, {}, T0).requests, undefined);
  });

  it('shareOf: each replica enforces its part, rounded down, at least 1', () => {
    assert.deepEqual(shareOf({ requestsPerMinute: 50, tokensPerMinute: 40_000 }, 2), {
      requestsPerMinute: 25,
      tokensPerMinute: 20_000,
    });
    assert.deepEqual(shareOf({ requestsPerMinute: 5 }, 2), {
      requestsPerMinute: 2,
      tokensPerMinute: undefined,
    });
    assert.deepEqual(shareOf({ requestsPerMinute: 1 }, 3), {
      requestsPerMinute: 1,
      tokensPerMinute: undefined,
    });
    assert.deepEqual(shareOf({ requestsPerMinute: 7 }, 1), {
      requestsPerMinute: 7,
      tokensPerMinute: undefined,
    });
  });
});
