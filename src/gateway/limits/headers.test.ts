import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DEFAULT_BLOCK_MS,
  geminiRetryDelayMs,
  observeAnswer,
  parseDurationMs,
  parseRetryAfter,
} from './headers.ts';

const NOW = Date.parse('2026-12-07T06:00:00Z');
const from = (h: Record<string, string>) => (name: string) => h[name];

describe('learning from the vendors’ answers', () => {
  it('durations as OpenAI and Google write them', () => {
    assert.equal(parseDurationMs('6m0s'), 360_000);
    assert.equal(parseDurationMs('1s'), 1000);
    assert.equal(parseDurationMs('20ms'), 20);
    assert.equal(parseDurationMs('1h2m3.5s'), 3_723_500);
    assert.equal(parseDurationMs('32s'), 32_000);
    assert.equal(parseDurationMs('0.5s'), 500);
    assert.equal(parseDurationMs(''), undefined);
    assert.equal(parseDurationMs('soon'), undefined);
    assert.equal(parseDurationMs('5'), undefined);
  });

  it('retry-after: seconds or an HTTP date', () => {
    assert.equal(parseRetryAfter('30', NOW), NOW + 30_000);
    assert.equal(parseRetryAfter('1.5', NOW), NOW + 1500);
    assert.equal(parseRetryAfter('Mon, 07 Dec 2026 06:01:00 GMT', NOW), NOW + 60_000);
    assert.equal(parseRetryAfter('later', NOW), undefined);
    assert.equal(parseRetryAfter('-1', NOW), undefined);
  });

  it('Anthropic: requests and the tightest of tokens, input and output tokens, reset an RFC 3339 time', () => {
    const o = observeAnswer(
      'anthropic',
      200,
      from({
        'anthropic-ratelimit-requests-limit': '50',
        'anthropic-ratelimit-requests-remaining': '49',
        'anthropic-ratelimit-requests-reset': '2026-12-07T06:00:01Z',
        'anthropic-ratelimit-tokens-remaining': '30000',
        'anthropic-ratelimit-tokens-reset': '2026-12-07T06:00:10Z',
        'anthropic-ratelimit-input-tokens-remaining': '0',
        'anthropic-ratelimit-input-tokens-reset': '2026-12-07T06:00:20Z',
        'anthropic-ratelimit-output-tokens-remaining': '8000',
        'anthropic-ratelimit-output-tokens-reset': '2026-12-07T06:00:05Z',
      }),
      undefined,
      NOW,
    );
    assert.deepEqual(o, {
      requests: { remaining: 49, resetAt: NOW + 1000 },
      tokens: { remaining: 0, resetAt: NOW + 20_000 },
    });
  });

  it('OpenAI: x-ratelimit-remaining-* and reset durations from now', () => {
    const o = observeAnswer(
      'openai',
      200,
      from({
        'x-ratelimit-limit-requests': '60',
        'x-ratelimit-remaining-requests': '59',
        'x-ratelimit-reset-requests': '1s',
        'x-ratelimit-limit-tokens': '150000',
        'x-ratelimit-remaining-tokens': '149984',
        'x-ratelimit-reset-tokens': '6m0s',
      }),
      undefined,
      NOW,
    );
    assert.deepEqual(o, {
      requests: { remaining: 59, resetAt: NOW + 1000 },
      tokens: { remaining: 149_984, resetAt: NOW + 360_000 },
    });
  });

  it('a 429 blocks the key until retry-after-ms, else retry-after (seconds or a date)', () => {
    assert.equal(
      observeAnswer('anthropic', 429, from({ 'retry-after': '12' }), undefined, NOW).blockedUntil,
      NOW + 12_000,
    );
    assert.equal(
      observeAnswer('openai', 429, from({ 'retry-after': 'Mon, 07 Dec 2026 06:00:30 GMT' }), undefined, NOW)
        .blockedUntil,
      NOW + 30_000,
    );
    assert.equal(
      observeAnswer('openai', 429, from({ 'retry-after-ms': '1500', 'retry-after': '9' }), undefined, NOW)
        .blockedUntil,
      NOW + 1500,
    );
    // Not a 429: retry-after is not a block.
    assert.equal(
      observeAnswer('anthropic', 529, from({ 'retry-after': '12' }), undefined, NOW).blockedUntil,
      undefined,
    );
  });

  it('Gemini: a 429 names RetryInfo.retryDelay in error.details', () => {
    const body = {
      error: {
        code: 429,
        message: 'Resource has been exhausted',
        status: 'RESOURCE_EXHAUSTED',
        details: [
          { '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [] },
          { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '32s' },
        ],
      },
    };
    assert.equal(geminiRetryDelayMs(body), 32_000);
    assert.equal(observeAnswer('gemini', 429, from({}), body, NOW).blockedUntil, NOW + 32_000);
    assert.equal(geminiRetryDelayMs({ error: { code: 429 } }), undefined);
    assert.equal(geminiRetryDelayMs('not json'), undefined);
  });

  it('a 429 naming no time: until the used-up window resets, else a short default block', () => {
    const withWindow = observeAnswer(
      'openai',
      429,
      from({ 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '20s' }),
      undefined,
      NOW,
    );
    assert.equal(withWindow.blockedUntil, NOW + 20_000);
    assert.equal(observeAnswer('gemini', 429, from({}), undefined, NOW).blockedUntil, NOW + DEFAULT_BLOCK_MS);
  });

  it('a block is never in the past nor more than an hour away', () => {
    assert.equal(
      observeAnswer(
        'anthropic',
        429,
        from({ 'retry-after': 'Mon, 07 Dec 2026 05:00:00 GMT' }),
        undefined,
        NOW,
      ).blockedUntil,
      NOW,
    );
    assert.equal(
      observeAnswer('anthropic', 429, from({ 'retry-after': '999999' }), undefined, NOW).blockedUntil,
      NOW + 3_600_000,
    );
  });
});
