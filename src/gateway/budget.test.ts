// The run's cap at the gateway: reading the grant's budget, the run's spend (written, unwritten and in flight, priced
// with the table), and the decision for the next call. Expected figures are worked out by hand in the comments.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GatewayUsage } from '../api/gateway.ts';
import { DEFAULT_PRICES } from '../reconcile/results/prices.ts';
import { budgetDecision, newerOf, runCap, spendOf } from './budget.ts';

const keys = { anthropic: 'anthropic' };
const u = (input: number, output: number, cacheRead = 0, cacheWrite = 0, calls = 1) => ({
  calls,
  input,
  output,
  cacheRead,
  cacheWrite,
});
const t = (input: number, output: number, cacheRead = 0, cacheWrite = 0) => ({
  input,
  output,
  cacheRead,
  cacheWrite,
});

describe('the run cap of status.gateway.budget', () => {
  it('reads USD (a decimal string) and tokens; none, or an empty budget, is no cap', () => {
    assert.deepEqual(runCap({ keys, budget: { usd: '1.25', tokens: 5000 } }), { usd: 1.25, tokens: 5000 });
    assert.deepEqual(runCap({ keys, budget: { tokens: 0 } }), { tokens: 0 });
    assert.deepEqual(runCap({ keys, budget: { usd: '0.5' } }), { usd: 0.5 });
    assert.equal(runCap({ keys, budget: {} }), undefined);
    assert.equal(runCap({ keys }), undefined);
    assert.equal(runCap(undefined), undefined);
  });
});

describe('the newer of two readings of the annotation', () => {
  it('takes the larger of each field, model by model (the annotation only grows)', () => {
    const informer: GatewayUsage = { models: { a: u(100, 10, 0, 0, 1), b: u(5, 5) } };
    const own: GatewayUsage = { models: { a: u(150, 12, 0, 0, 2), c: u(1, 1) } };
    assert.deepEqual(newerOf(informer, own), {
      models: { a: u(150, 12, 0, 0, 2), b: u(5, 5), c: u(1, 1) },
    });
    assert.deepEqual(newerOf(own, informer), newerOf(informer, own));
  });
});

describe('a run’s spend', () => {
  it('sums every token kind of every model and of the calls in flight; prices them with the table', () => {
    // claude-sonnet-5-5: 2 $/MTok in, 10 out; cache read 10 % of input (0.2), cache write 125 % (2.5).
    const spend = spendOf(
      { models: { 'claude-sonnet-5-5': u(1000, 100, 2000, 400) } },
      [{ model: 'claude-sonnet-5-5', tokens: t(500, 0, 0, 0) }],
      DEFAULT_PRICES,
    );
    assert.equal(spend.tokens, 1000 + 100 + 2000 + 400 + 500);
    // (1500 × 2 + 100 × 10 + 2000 × 0.2 + 400 × 2.5) / 1e6 = (3000 + 1000 + 400 + 1000) / 1e6
    assert.ok(Math.abs(spend.usd - 5400 / 1e6) < 1e-12, String(spend.usd));
    assert.deepEqual(spend.unpriced, []);
  });

  it('a model the table does not price: its tokens count, its cost does not (named as unpriced)', () => {
    const spend = spendOf(
      { models: { 'gpt-9': u(1_000_000, 0), 'claude-haiku-5-5': u(1_000_000, 0) } },
      [],
      DEFAULT_PRICES,
    );
    assert.equal(spend.tokens, 2_000_000);
    assert.ok(Math.abs(spend.usd - 0.1) < 1e-12, String(spend.usd));
    assert.deepEqual(spend.unpriced, ['gpt-9']);
  });
});

describe('the decision for the next call', () => {
  const spend = (tokens: number, usd: number) => ({ tokens, usd, unpriced: [] });

  it('no cap: every call goes on', () => {
    assert.deepEqual(budgetDecision(undefined, spend(10 ** 9, 10 ** 6)), { ok: true });
  });

  it('tokens: under the cap goes on; at it or above is refused, naming the cap', () => {
    assert.deepEqual(budgetDecision({ tokens: 1000 }, spend(999, 0)), { ok: true });
    assert.deepEqual(budgetDecision({ tokens: 1000 }, spend(1000, 0)), {
      ok: false,
      which: 'tokens',
      message: 'budget exceeded: the run has used 1000 tokens of its cap of 1000 tokens',
    });
    const over = budgetDecision({ tokens: 1000 }, spend(4321, 0));
    assert.equal(over.ok, false);
    assert.match(over.ok ? '' : over.message, /^budget exceeded: .*4321 tokens of its cap of 1000 tokens$/);
  });

  it('USD: refused once the priced spend reaches the cap', () => {
    assert.deepEqual(budgetDecision({ usd: 0.01 }, spend(10, 0.009999)), { ok: true });
    assert.deepEqual(budgetDecision({ usd: 0.01 }, spend(10, 0.0123)), {
      ok: false,
      which: 'usd',
      message: 'budget exceeded: the run has spent 0.0123 USD of its cap of 0.01 USD',
    });
  });

  it('a cap of 0 refuses the first call', () => {
    assert.equal(budgetDecision({ tokens: 0 }, spend(0, 0)).ok, false);
    assert.equal(budgetDecision({ usd: 0 }, spend(0, 0)).ok, false);
  });

  it('both caps: whichever is reached first refuses', () => {
    assert.equal(budgetDecision({ usd: 1, tokens: 100 }, spend(100, 0.001)).ok, false);
    const usd = budgetDecision({ usd: 1, tokens: 10 ** 9 }, spend(100, 1));
    assert.equal(usd.ok ? '' : usd.which, 'usd');
  });

  it('an unpriced model: the USD cap is not reached by its tokens, a tokens cap is', () => {
    const s = spendOf({ models: { 'gpt-9': u(10 ** 7, 10 ** 6) } }, [], DEFAULT_PRICES);
    assert.deepEqual(budgetDecision({ usd: 0.01 }, s), { ok: true });
    assert.equal(budgetDecision({ usd: 0.01, tokens: 10 ** 6 }, s).ok, false);
  });
});
