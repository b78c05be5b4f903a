import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { refusal } from './refusals.ts';

describe('refusals in the vendors’ error shapes', () => {
  it('Anthropic: {type: error, error: {type, message}}', () => {
    assert.deepEqual(refusal('anthropic', 'credential', 'no credential'), {
      status: 401,
      headers: {},
      body: {
        type: 'error',
        error: { type: 'authentication_error', message: 'agent gateway: no credential' },
      },
    });
    const model = refusal('anthropic', 'model', 'm');
    assert.equal(model.status, 403);
    assert.deepEqual(model.body, {
      type: 'error',
      error: { type: 'permission_error', message: 'agent gateway: m' },
    });
    assert.equal(refusal('anthropic', 'route', 'r').status, 404);
    assert.deepEqual(refusal('anthropic', 'route', 'r').body, {
      type: 'error',
      error: { type: 'not_found_error', message: 'agent gateway: r' },
    });
  });

  it('OpenAI: {error: {message, type, param, code}}', () => {
    assert.deepEqual(refusal('openai', 'run_ended', 'ended'), {
      status: 401,
      headers: {},
      body: {
        error: {
          message: 'agent gateway: ended',
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_api_key',
        },
      },
    });
    assert.deepEqual(refusal('openai', 'model', 'm').body, {
      error: {
        message: 'agent gateway: m',
        type: 'invalid_request_error',
        param: null,
        code: 'model_not_allowed',
      },
    });
  });

  it('Gemini: {error: {code, message, status}}', () => {
    assert.deepEqual(refusal('gemini', 'unknown_run', 'gone'), {
      status: 401,
      headers: {},
      body: { error: { code: 401, message: 'agent gateway: gone', status: 'UNAUTHENTICATED' } },
    });
    assert.deepEqual(refusal('gemini', 'model', 'm').body, {
      error: { code: 403, message: 'agent gateway: m', status: 'PERMISSION_DENIED' },
    });
  });

  it('asks for a retry only when it cannot decide now', () => {
    for (const vendor of ['anthropic', 'openai', 'gemini'] as const) {
      const r = refusal(vendor, 'unavailable', 'starting');
      assert.equal(r.status, 503);
      assert.deepEqual(r.headers, { 'retry-after': '2' });
      assert.deepEqual(refusal(vendor, 'credential', 'x').headers, {});
    }
    assert.deepEqual(refusal('anthropic', 'unavailable', 's').body, {
      type: 'error',
      error: { type: 'overloaded_error', message: 'agent gateway: s' },
    });
  });

  it('a run over its cap: the status each CLI takes as final, the message as given', () => {
    const m = 'budget exceeded: the run has used 1200 tokens of its cap of 1000 tokens';
    assert.deepEqual(refusal('anthropic', 'budget', m), {
      status: 402,
      headers: {},
      body: { type: 'error', error: { type: 'billing_error', message: `agent gateway: ${m}` } },
    });
    assert.deepEqual(refusal('openai', 'budget', m), {
      status: 400,
      headers: {},
      body: {
        error: {
          message: `agent gateway: ${m}`,
          type: 'invalid_request_error',
          param: null,
          code: 'budget_exceeded',
        },
      },
    });
    assert.deepEqual(refusal('gemini', 'budget', m), {
      status: 403,
      headers: {},
      body: { error: { code: 403, message: `agent gateway: ${m}`, status: 'PERMISSION_DENIED' } },
    });
  });
});
