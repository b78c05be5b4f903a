import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rateLimited } from './answer.ts';
import { parseRateLimits, RATE_LIMITS_ANNOTATION } from './config.ts';
import { DEFAULT_OUTPUT_TOKENS, estimateTokens, measuredTokens } from './estimate.ts';

describe('the 429 of a call that waited its longest, in each vendor’s shape', () => {
  const headers = { 'retry-after': '13', 'retry-after-ms': '13000' };
  it('Anthropic: rate_limit_error', () => {
    assert.deepEqual(rateLimited('anthropic', 12_001, 'busy'), {
      status: 429,
      headers,
      body: { type: 'error', error: { type: 'rate_limit_error', message: 'agent gateway: busy' } },
    });
  });
  it('OpenAI: rate_limit_exceeded', () => {
    assert.deepEqual(rateLimited('openai', 12_001, 'busy'), {
      status: 429,
      headers,
      body: {
        error: { message: 'agent gateway: busy', type: 'requests', param: null, code: 'rate_limit_exceeded' },
      },
    });
  });
  it('Gemini: RESOURCE_EXHAUSTED with RetryInfo', () => {
    assert.deepEqual(rateLimited('gemini', 12_001, 'busy'), {
      status: 429,
      headers,
      body: {
        error: {
          code: 429,
          message: 'agent gateway: busy',
          status: 'RESOURCE_EXHAUSTED',
          details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '13s' }],
        },
      },
    });
  });
  it('at least one second', () => {
    assert.equal(rateLimited('openai', 0, 'x').headers['retry-after'], '1');
  });
});

describe('configured limits: the annotation of agent-secrets', () => {
  it('reads limits per key name', () => {
    const p = parseRateLimits(
      JSON.stringify({
        ANTHROPIC_API_KEY: { requestsPerMinute: 50, tokensPerMinute: 40_000 },
        OPENAI_API_KEY: { requestsPerMinute: 3 },
      }),
    );
    assert.deepEqual(p.problems, []);
    assert.deepEqual(Object.fromEntries(p.byKey), {
      ANTHROPIC_API_KEY: { requestsPerMinute: 50, tokensPerMinute: 40_000 },
      OPENAI_API_KEY: { requestsPerMinute: 3 },
    });
  });
  it('none: no limits, no problem', () => {
    assert.equal(parseRateLimits(undefined).byKey.size, 0);
    assert.deepEqual(parseRateLimits('').problems, []);
  });
  it('a value that is not JSON, or not an object, is ignored and reported', () => {
    for (const text of ['{', '[1]', '"x"', 'null']) {
      const p = parseRateLimits(text);
      assert.equal(p.byKey.size, 0);
      assert.equal(p.problems.length, 1);
      assert.ok(p.problems[0]?.startsWith(RATE_LIMITS_ANNOTATION));
    }
  });
  it('a bad entry is left out and reported; the good ones stay', () => {
    const p = parseRateLimits(
      JSON.stringify({
        A: { requestsPerMinute: 0 },
        B: { requestsPerMinute: 1.5 },
        C: { requestsPerMinute: '5' },
        D: { rpm: 5 },
        E: { tokensPerMinute: 1000 },
      }),
    );
    assert.deepEqual([...p.byKey.keys()], ['E']);
    assert.equal(p.problems.length, 4);
    assert.match(p.problems[0] ?? '', /\["A"\]/);
  });
});

describe('the token estimate charged at admission', () => {
  it('input from the size (4 bytes a token) plus the maximum output the call asks for', () => {
    assert.equal(estimateTokens('anthropic-messages', 400, { max_tokens: 1000 }), 1100);
    assert.equal(estimateTokens('openai-responses', 400, { max_output_tokens: 50 }), 150);
    assert.equal(estimateTokens('openai-chat', 400, { max_completion_tokens: 20, max_tokens: 99 }), 120);
    assert.equal(estimateTokens('openai-chat', 400, { max_tokens: 99 }), 199);
    assert.equal(estimateTokens('gemini', 401, { generationConfig: { maxOutputTokens: 7 } }), 108);
  });
  it('no maximum stated: the default output; no usage on the route: nothing', () => {
    assert.equal(estimateTokens('anthropic-messages', 40, {}), 10 + DEFAULT_OUTPUT_TOKENS);
    assert.equal(estimateTokens('anthropic-messages', 40, undefined), 10 + DEFAULT_OUTPUT_TOKENS);
    assert.equal(estimateTokens(undefined, 4000, { max_tokens: 5 }), 0);
  });
  it('measured: everything but cache reads', () => {
    assert.equal(measuredTokens({ input: 10, output: 20, cacheRead: 1000, cacheWrite: 5 }), 35);
  });
});
