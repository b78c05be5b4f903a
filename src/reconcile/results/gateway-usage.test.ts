import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANNOTATION_GATEWAY_USAGE } from '../../api/index.ts';
import { agent } from '../test-fixtures.ts';
import { gatewayTotals, readGatewayUsage, sameUsage, usageMismatch } from './gateway-usage.ts';
import { DEFAULT_PRICES } from './prices.ts';

const annotated = (value: string) => {
  const a = agent('a');
  return { ...a, metadata: { ...a.metadata, annotations: { [ANNOTATION_GATEWAY_USAGE]: value } } };
};
const u = (calls: number, input: number, output: number, cacheRead = 0, cacheWrite = 0) => ({
  calls,
  input,
  output,
  cacheRead,
  cacheWrite,
});

describe('the usage the gateway measured (issue 28)', () => {
  it('reads nothing, the usage, or says why the annotation is not usable', () => {
    assert.deepEqual(readGatewayUsage(agent('a')), { kind: 'none' });
    const good = { models: { 'claude-opus-5-5': u(2, 10, 20, 30, 40) } };
    assert.deepEqual(readGatewayUsage(annotated(JSON.stringify(good))), { kind: 'usage', usage: good });
    assert.deepEqual(readGatewayUsage(annotated('{')), {
      kind: 'invalid',
      message: `annotation ${ANNOTATION_GATEWAY_USAGE} is not JSON`,
    });
    for (const bad of [
      '[]',
      '{"models":{"m":{"calls":1}}}',
      '{"models":{"m":{"calls":-1,"input":0,"output":0,"cacheRead":0,"cacheWrite":0}}}',
    ]) {
      assert.equal(readGatewayUsage(annotated(bad)).kind, 'invalid', bad);
    }
  });

  it('sums the models and prices each with its own price (4 and 20 $/MTok; 2 and 10; cache at 0.1 and 1.25 of input)', () => {
    const totals = gatewayTotals(
      {
        models: { 'claude-opus-5-5': u(3, 1000, 500, 2000, 400), 'claude-sonnet-5-5': u(1, 100_000, 10_000) },
      },
      DEFAULT_PRICES,
    );
    assert.deepEqual(totals.tokenUsage, {
      input: 101_000,
      output: 10_500,
      cacheRead: 2000,
      cacheWrite: 400,
      total: 113_900,
    });
    // opus: 1000×4 + 500×20 + 2000×0.4 + 400×5 = 16,800 µ$; sonnet: 100,000×2 + 10,000×10 = 300,000 µ$.
    assert.equal(totals.costEstimate?.usd, '0.3168');
    assert.equal(totals.costEstimate?.source, 'gateway');
    assert.equal(totals.costEstimate?.model, undefined, 'two models: none named');
    assert.equal(totals.model, undefined);
  });

  it('names the model when there is one; no cost when a model has no price', () => {
    const one = gatewayTotals({ models: { 'claude-opus-5-5': u(1, 1000, 500) } }, DEFAULT_PRICES);
    assert.deepEqual(one.costEstimate, { usd: '0.014', source: 'gateway', model: 'claude-opus-5-5' });
    const unpriced = gatewayTotals(
      { models: { 'claude-opus-5-5': u(1, 1000, 500), 'someones-model': u(1, 10, 10) } },
      DEFAULT_PRICES,
    );
    assert.equal(unpriced.costEstimate, undefined);
    assert.equal(unpriced.costUsd, undefined);
    assert.equal(unpriced.tokenUsage.total, 1520);
  });

  it('no calls: zero usage, zero cost', () => {
    const none = gatewayTotals({ models: {} }, DEFAULT_PRICES);
    assert.deepEqual(none.tokenUsage, { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 });
    assert.deepEqual(none.costEstimate, { usd: '0', source: 'gateway' });
  });

  it('the CLI disagrees when it is off by more than 1,000 tokens and 20%', () => {
    const t = (total: number) => ({ input: total, output: 0, cacheRead: 0, cacheWrite: 0, total });
    assert.equal(usageMismatch(t(10_000), undefined), undefined, 'no CLI figure');
    assert.equal(usageMismatch(t(10_000), t(8_001)), undefined, '19.99%');
    assert.equal(
      usageMismatch(t(10_000), t(7_999)),
      'the CLI reported 7999 tokens, the gateway measured 10000',
    );
    assert.equal(usageMismatch(t(3_000), t(2_001)), undefined, 'under 1,000 tokens apart');
    assert.equal(usageMismatch(t(0), t(5_000)), 'the CLI reported 5000 tokens, the gateway measured 0');
  });

  it('sameUsage compares every count', () => {
    const a = { input: 1, output: 2, cacheRead: 3, cacheWrite: 4, total: 10 };
    assert.ok(sameUsage(a, { ...a }));
    assert.ok(!sameUsage(undefined, a));
    for (const k of ['input', 'output', 'cacheRead', 'cacheWrite', 'total'] as const) {
      assert.ok(!sameUsage(a, { ...a, [k]: a[k] + 1 }), k);
    }
  });
});
