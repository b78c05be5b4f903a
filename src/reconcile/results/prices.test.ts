import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { costOf, DEFAULT_PRICES, formatUsd, metricModel, priceFor, withOverrides } from './prices.ts';

const usage = (input: number, output: number, cacheRead = 0, cacheWrite = 0) => ({
  input,
  output,
  cacheRead,
  cacheWrite,
  total: input + output + cacheRead + cacheWrite,
});

describe('the price table of cost estimates', () => {
  it('ships the published prices (USD per million tokens)', () => {
    assert.deepEqual(priceFor(DEFAULT_PRICES, 'claude-opus-5-5'), {
      key: 'claude-opus-5-5',
      price: { inputPerMTok: 4, outputPerMTok: 20 },
    });
    assert.equal(priceFor(DEFAULT_PRICES, 'gpt-6-astra'), undefined, 'no price recorded: no estimate');
  });

  it('costs input, output and cache tokens; batch runs at half the rate', () => {
    const opus = { inputPerMTok: 4, outputPerMTok: 20 };
    assert.equal(costOf(opus, usage(1_000_000, 0), false), 4);
    assert.equal(costOf(opus, usage(0, 1_000_000), false), 20);
    // Cache reads at 10% of input, writes at 125%, unless the price names its own.
    assert.equal(costOf(opus, usage(0, 0, 1_000_000, 1_000_000), false), 0.4 + 5);
    assert.equal(
      costOf({ ...opus, cacheReadPerMTok: 1, cacheWritePerMTok: 2 }, usage(0, 0, 1e6, 1e6), false),
      3,
    );
    assert.equal(costOf(opus, usage(1_000_000, 1_000_000), true), 12);
  });

  it('overrides replace a shipped entry and add models; exact names win over globs, globs in order', () => {
    const table = withOverrides(
      DEFAULT_PRICES,
      new Map([
        ['claude-opus-5-5', { inputPerMTok: 5, outputPerMTok: 25 }],
        ['gpt-6*', { inputPerMTok: 1, outputPerMTok: 2 }],
        ['gpt-*', { inputPerMTok: 9, outputPerMTok: 9 }],
        ['gpt-6-luna', { inputPerMTok: 0.5, outputPerMTok: 1 }],
      ]),
    );
    assert.equal(priceFor(table, 'claude-opus-5-5')?.price.inputPerMTok, 5);
    assert.equal(priceFor(table, 'gpt-6-astra')?.key, 'gpt-6*');
    assert.equal(priceFor(table, 'gpt-5.5')?.key, 'gpt-*');
    assert.equal(priceFor(table, 'gpt-6-luna')?.key, 'gpt-6-luna');
    assert.equal(priceFor(table, 'gpt.6')?.key, undefined, 'a dot in a glob is literal');
  });

  it('formats USD as a plain decimal (no exponent, at most 6 places) and bounds the metric label', () => {
    assert.equal(formatUsd(0.0123), '0.0123');
    assert.equal(formatUsd(12), '12');
    assert.equal(formatUsd(1e-9), '0');
    assert.equal(formatUsd(Number.NaN), '0');
    assert.equal(formatUsd(1234.5678919), '1234.567892');
    assert.equal(metricModel(DEFAULT_PRICES, 'claude-opus-5-5'), 'claude-opus-5-5');
    assert.equal(metricModel(DEFAULT_PRICES, 'anything-a-user-typed'), 'other');
    assert.equal(metricModel(DEFAULT_PRICES, undefined), 'other');
  });
});
