import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseQuantity } from './quantity.ts';

describe('parseQuantity', () => {
  const rows: [string, number | undefined][] = [
    ['2', 2],
    ['500m', 0.5],
    ['0.5', 0.5],
    ['.5', 0.5],
    ['1k', 1000],
    ['256Mi', 256 * 2 ** 20],
    ['1.5Gi', 1.5 * 2 ** 30],
    ['2G', 2e9],
    ['1e3', 1000],
    ['1E-3', 0.001],
    [' 4Ki ', 4096],
    ['', undefined],
    ['Gi', undefined],
    ['1.5.2', undefined],
    ['2X', undefined],
    ['1mi', undefined],
    ['-', undefined],
  ];
  for (const [text, expected] of rows) {
    it(`${JSON.stringify(text)} → ${expected}`, () => assert.equal(parseQuantity(text), expected));
  }
  it('nano and micro suffixes', () => {
    assert.ok(Math.abs((parseQuantity('100n') ?? 0) - 1e-7) < 1e-15);
    assert.ok(Math.abs((parseQuantity('250u') ?? 0) - 2.5e-4) < 1e-12);
  });
  it('orders like the API server: 1Gi > 1G > 953Mi, 1500m > 1', () => {
    const q = (s: string) => parseQuantity(s) ?? Number.NaN;
    assert.ok(q('1Gi') > q('1G') && q('1G') > q('953Mi'));
    assert.ok(q('1500m') > q('1'));
  });
});
