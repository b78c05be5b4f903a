import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  costAmount,
  encodeRunReport,
  MAX_COST_USD,
  MAX_TOKENS,
  parseRunReport,
  type RunResult,
  TERMINATION_MESSAGE_MAX_BYTES,
  tokenCount,
  usageOf,
} from './run-report.ts';

const bytes = (s: string): number => new TextEncoder().encode(s).length;
const USAGE = { input: 120, output: 45, cacheRead: 1000, cacheWrite: 300, total: 1465 };

describe('tokenCount, costAmount, usageOf', () => {
  it('believes finite non-negative numbers in range only (counts floored)', () => {
    assert.equal(tokenCount(12), 12);
    assert.equal(tokenCount(7.9), 7);
    assert.equal(tokenCount(0), 0);
    assert.equal(tokenCount(MAX_TOKENS), MAX_TOKENS);
    for (const bad of [-5, -0.5, 1e300, MAX_TOKENS + 1, Number.NaN, Number.POSITIVE_INFINITY, '12', null, {}])
      assert.equal(tokenCount(bad), undefined, String(bad));
    assert.equal(costAmount(0.0123), 0.0123);
    assert.equal(costAmount(0), 0);
    for (const bad of [-1, 1e300, MAX_COST_USD * 2, Number.NaN, '0.5', undefined])
      assert.equal(costAmount(bad), undefined, String(bad));
  });

  it('usageOf: unbelievable counts are 0; total given or the sum', () => {
    assert.deepEqual(usageOf({ input: 1, output: 2, cacheRead: 3, cacheWrite: 4 }), {
      input: 1,
      output: 2,
      cacheRead: 3,
      cacheWrite: 4,
      total: 10,
    });
    assert.deepEqual(usageOf({ input: -5, output: 1e300, cacheRead: '12', total: 99 }), {
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      total: 99,
    });
    assert.equal(usageOf({ input: MAX_TOKENS, output: MAX_TOKENS }).total, MAX_TOKENS, 'the sum is capped');
  });
});

describe('encodeRunReport / parseRunReport', () => {
  it('a small report round-trips', () => {
    const report: RunResult = {
      result: 'Fixed it.',
      usage: USAGE,
      costUsd: 0.0123,
      model: 'claude-opus-5-5',
    };
    const text = encodeRunReport(report);
    assert.equal(JSON.parse(text).v, 1);
    assert.deepEqual(parseRunReport(text), report);
    assert.deepEqual(parseRunReport(encodeRunReport({})), {});
  });

  it('a 20 KiB multi-byte answer is cut to fit 4096 bytes on a character boundary, marked truncated', () => {
    for (const unit of ['é', '中', '😀', 'a"\\\n\u0001']) {
      const answer = unit.repeat(Math.ceil(20480 / bytes(unit)));
      const report: RunResult = { result: answer, usage: USAGE, costUsd: 1.5, model: 'gemini-3.8-flash' };
      const text = encodeRunReport(report);
      assert.ok(
        bytes(text) <= TERMINATION_MESSAGE_MAX_BYTES,
        `${JSON.stringify(unit)}: ${bytes(text)} bytes`,
      );
      assert.ok(bytes(text) > TERMINATION_MESSAGE_MAX_BYTES - 16, `${JSON.stringify(unit)}: uses the room`);
      const back = parseRunReport(text);
      assert.equal(back?.resultTruncated, true);
      assert.ok(back?.result !== undefined && back.result.length > 0);
      assert.ok(answer.startsWith(back.result), 'a prefix of the answer');
      assert.ok(!back.result.includes('\ufffd'));
      assert.deepEqual(back.usage, USAGE, 'the numbers are never cut');
      assert.equal(back.costUsd, 1.5);
      assert.equal(back.model, 'gemini-3.8-flash');
    }
  });

  it("carries the CLI's error message, at most 512 characters, kept whole when a long answer is cut", () => {
    const back = parseRunReport(encodeRunReport({ result: 'API Error: 529', error: 'API Error: 529' }));
    assert.deepEqual(back, { result: 'API Error: 529', error: 'API Error: 529' });
    const long = parseRunReport(encodeRunReport({ error: '😀'.repeat(700) }));
    assert.equal(long?.error, '😀'.repeat(512));
    const both = encodeRunReport({ result: 'x'.repeat(20000), error: 'é'.repeat(512) });
    assert.ok(bytes(both) <= TERMINATION_MESSAGE_MAX_BYTES);
    const read = parseRunReport(both);
    assert.equal(read?.error, 'é'.repeat(512));
    assert.equal(read?.resultTruncated, true);
    // Not a string, or empty: no error.
    assert.deepEqual(parseRunReport('{"v":1,"error":42}'), {});
    assert.deepEqual(parseRunReport('{"v":1,"error":""}'), {});
  });

  it('an answer already cut stays marked truncated, even when it fits', () => {
    const back = parseRunReport(encodeRunReport({ result: 'short', resultTruncated: true }));
    assert.deepEqual(back, { result: 'short', resultTruncated: true });
  });

  it('any answer fits: the report is always within the limit and parses back to a prefix', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 3000 }), fc.boolean(), (answer, withUsage) => {
        const text = encodeRunReport({
          result: answer,
          ...(withUsage ? { usage: usageOf({ input: MAX_TOKENS, output: MAX_TOKENS }) } : {}),
          model: 'm'.repeat(300),
        });
        assert.ok(bytes(text) <= TERMINATION_MESSAGE_MAX_BYTES);
        const back = parseRunReport(text);
        assert.ok(back?.result !== undefined && answer.startsWith(back.result));
        assert.equal(back.resultTruncated === true, back.result !== answer);
        assert.equal(back.model?.length, 253);
      }),
      { numRuns: 300 },
    );
  });

  it('garbage is no report', () => {
    for (const bad of [
      undefined,
      '',
      'Init failed: git is not installed',
      '{',
      '{"v":2}',
      '{"v":"1"}',
      '{"result":"x"}',
      '[{"v":1}]',
      'null',
      ' {"v":1}',
      '\u0000',
    ]) {
      assert.equal(parseRunReport(bad), undefined, JSON.stringify(bad));
    }
  });

  it('a parsed report is clamped field by field; unknown fields are ignored', () => {
    const back = parseRunReport(
      JSON.stringify({
        v: 1,
        result: 42,
        resultTruncated: 'yes',
        usage: { input: -5, output: 1e300, cacheRead: '12', cacheWrite: 2.5, total: 'NaN' },
        costUsd: -0.01,
        model: 'x'.repeat(400),
        extra: { nested: true },
      }),
    );
    assert.deepEqual(back, {
      usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 2, total: 2 },
      model: 'x'.repeat(253),
    });
    assert.deepEqual(parseRunReport('{"v":1,"usage":"lots","model":"","costUsd":1e300}'), {});
  });
});
