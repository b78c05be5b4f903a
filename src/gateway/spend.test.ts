// A run's spend as one replica knows it: the annotation (the informer's copy, or this replica's newer one), the
// deltas not written, and the calls in flight with what they have carried so far.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GatewayUsage } from '../api/gateway.ts';
import { DEFAULT_PRICES } from '../reconcile/results/prices.ts';
import { EMPTY_USAGE } from './accumulator.ts';
import type { Unwritten, UsageFlusher } from './flusher.ts';
import { currentSpend, LiveCalls } from './spend.ts';

const m = (input: number, output: number, calls = 1) => ({
  calls,
  input,
  output,
  cacheRead: 0,
  cacheWrite: 0,
});
const flusherWith = (u: Unwritten): UsageFlusher => ({
  record: () => {},
  flushAll: async () => {},
  pending: () => 0,
  unwritten: () => u,
});
const annotation = (u: GatewayUsage) => JSON.stringify(u);

describe('the calls in flight', () => {
  it('count what they carried so far, until taken off', () => {
    const live = new LiveCalls();
    let soFar: { input: number; output: number; cacheRead: number; cacheWrite: number } | undefined;
    const end = live.begin('uid-1', 'claude-sonnet-5-5', () => soFar);
    live.begin('uid-2', 'other', () => ({ input: 1, output: 0, cacheRead: 0, cacheWrite: 0 }));
    assert.deepEqual(live.of('uid-1'), [], 'nothing read yet');
    assert.equal(live.count('uid-1'), 1);
    soFar = { input: 120, output: 1, cacheRead: 0, cacheWrite: 0 };
    assert.deepEqual(live.of('uid-1'), [{ model: 'claude-sonnet-5-5', tokens: soFar }]);
    end();
    end();
    assert.deepEqual(live.of('uid-1'), []);
    assert.equal(live.count('uid-1'), 0);
    assert.equal(live.count('uid-2'), 1);
  });
});

describe('a run’s spend now', () => {
  const prices = () => DEFAULT_PRICES;

  it('the annotation + what is pending + the calls in flight', () => {
    const live = new LiveCalls();
    live.begin('u', 'claude-sonnet-5-5', () => ({ input: 7, output: 0, cacheRead: 0, cacheWrite: 0 }));
    const flusher = flusherWith({ pending: { models: { 'claude-sonnet-5-5': m(20, 3) } }, view: undefined });
    const spend = currentSpend(
      { flusher, live, prices },
      'u',
      annotation({ models: { 'claude-sonnet-5-5': m(100, 10, 2) } }),
    );
    assert.equal(spend.tokens, 110 + 23 + 7);
    // (127 × 2 + 13 × 10) / 1e6
    assert.ok(Math.abs(spend.usd - 384e-6) < 1e-12, String(spend.usd));
  });

  it('this replica’s own write counts once, whether or not the informer has seen it', () => {
    const live = new LiveCalls();
    const before = { models: { a: m(100, 10, 2) } };
    const written = { models: { a: m(150, 12, 3) } };
    const flusher = flusherWith({ pending: EMPTY_USAGE, view: written });
    // The informer lags (still the older value), or has caught up: both read 162 tokens.
    assert.equal(currentSpend({ flusher, live, prices }, 'u', annotation(before)).tokens, 162);
    assert.equal(currentSpend({ flusher, live, prices }, 'u', annotation(written)).tokens, 162);
    // Another replica wrote on top since: the informer's is then the newer.
    const more = { models: { a: m(200, 20, 4) } };
    assert.equal(currentSpend({ flusher, live, prices }, 'u', annotation(more)).tokens, 220);
  });

  it('an absent or unreadable annotation counts as none', () => {
    const live = new LiveCalls();
    const flusher = flusherWith({ pending: { models: { a: m(5, 5) } }, view: undefined });
    assert.equal(currentSpend({ flusher, live, prices }, 'u', undefined).tokens, 10);
    assert.equal(currentSpend({ flusher, live, prices }, 'u', 'not json').tokens, 10);
  });
});
