import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GATEWAY_VENDORS } from '../../api/gateway.ts';
import { createGatewayMetrics } from '../../metrics/gateway.ts';
import { createGatewayLimiterMetrics } from '../../metrics/gateway-limits.ts';
import { createLogger } from '../../shared/log.ts';
import { REFUSAL_REASONS } from '../refusals.ts';
import { matchRoute } from '../routes.ts';
import type { Observed } from './buckets.ts';
import { createRateLimitGate } from './gate.ts';
import type { Admission, KeyId, RateLimiter } from './limiter.ts';

const RUN = { namespace: 'team-a', name: 'r', uid: 'u-1' };

/** A limiter that records what it was asked and answers `answer`. */
function recordingLimiter(answer: 'go' | 'refused') {
  const asked: { id: KeyId; limits: unknown; run: string; tokens: number }[] = [];
  const observed: Observed[] = [];
  const settled: (number | undefined)[] = [];
  const limiter: RateLimiter = {
    admit: async (id, limits, run, tokens) => {
      asked.push({ id, limits, run, tokens });
      const a: Admission =
        answer === 'go'
          ? {
              kind: 'go',
              waitedMs: 0,
              ticket: { observe: (o) => observed.push(o), settle: (t) => settled.push(t) },
            }
          : { kind: 'refused', retryAfterMs: 4500, waitedMs: 30_000 };
      return a;
    },
    waiting: () => 0,
  };
  return { limiter, asked, observed, settled };
}

function gate(answer: 'go' | 'refused', annotation: string | undefined) {
  const r = recordingLimiter(answer);
  const metrics = createGatewayMetrics(REFUSAL_REASONS, GATEWAY_VENDORS, false);
  createGatewayLimiterMetrics(metrics.registry);
  const g = createRateLimitGate({
    limiter: r.limiter,
    annotation: () => annotation,
    replicas: 2,
    now: () => 1_000_000,
    metrics,
    logger: createLogger('error', () => undefined),
  });
  return { ...r, g, metrics };
}

const body = (json: unknown) => {
  const bytes = new TextEncoder().encode(JSON.stringify(json));
  return { bytes, json };
};

describe('the rate-limit gate of a call', () => {
  const route = matchRoute('anthropic', 'POST', '/v1/messages');
  assert.ok(route);
  const request = (signal = new AbortController().signal) => ({
    vendor: 'anthropic' as const,
    run: RUN,
    station: 'st',
    model: 'claude-x',
    keyName: 'ANTHROPIC_API_KEY',
    route,
    body: body({ max_tokens: 100, messages: [] }),
    signal,
  });

  it('asks the limiter for the key (namespace, vendor, key name), this replica’s share, the run, the estimate', async () => {
    const { g, asked } = gate('go', JSON.stringify({ ANTHROPIC_API_KEY: { requestsPerMinute: 10 } }));
    const held = await g.hold(request());
    assert.equal(held.kind, 'go');
    const sent = JSON.stringify({ max_tokens: 100, messages: [] }).length;
    assert.deepEqual(asked, [
      {
        id: { namespace: 'team-a', vendor: 'anthropic', key: 'ANTHROPIC_API_KEY' },
        limits: { requestsPerMinute: 5, tokensPerMinute: undefined },
        run: 'team-a/r/u-1',
        tokens: Math.ceil(sent / 4) + 100,
      },
    ]);
  });

  it('refused: 429 in the vendor’s shape with retry-after, counted as a call answered 429', async () => {
    const { g, metrics } = gate('refused', undefined);
    const held = await g.hold(request());
    assert.equal(held.kind, 'refused');
    if (held.kind !== 'refused') return;
    assert.equal(held.response.status, 429);
    assert.equal(held.response.headers.get('retry-after'), '5');
    const json = (await held.response.json()) as { error: { type: string; message: string } };
    assert.equal(json.error.type, 'rate_limit_error');
    assert.match(json.error.message, /ANTHROPIC_API_KEY of team-a is at its rate limit/);
    assert.match(
      await metrics.registry.metrics(),
      /gateway_requests_total\{namespace="team-a",station="st",model="claude-x",vendor="anthropic",code="429"\} 1/,
    );
  });

  it('learns from the answer’s headers; a 429’s body is read to learn from and passed on unchanged', async () => {
    const { g, observed } = gate('go', undefined);
    const held = await g.hold(request());
    assert.ok(held.kind === 'go');
    const ok = new Response('stream', {
      status: 200,
      headers: {
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-requests-reset': '1970-01-01T00:16:50Z',
      },
    });
    assert.equal(await held.answered(ok), ok);
    assert.deepEqual(observed[0], { requests: { remaining: 0, resetAt: 1_010_000 }, tokens: undefined });
    const text = JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } });
    const limited = await held.answered(new Response(text, { status: 429, headers: { 'retry-after': '7' } }));
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('retry-after'), '7');
    assert.equal(await limited.text(), text);
    assert.equal(observed[1]?.blockedUntil, 1_007_000);
  });

  it('settles with the measured tokens; a refused call gives its estimate back; unknown usage keeps it', async () => {
    const { g, settled } = gate('go', undefined);
    const held = await g.hold(request());
    assert.ok(held.kind === 'go');
    held.ended(200, { input: 10, output: 20, cacheRead: 500, cacheWrite: 3 });
    held.ended(429, undefined);
    held.ended(200, undefined);
    assert.deepEqual(settled, [33, 0, undefined]);
  });

  it('a bad annotation is ignored: no limits', async () => {
    const { g, asked } = gate('go', '{"ANTHROPIC_API_KEY": {"requestsPerMinute": -1}}');
    await g.hold(request());
    assert.deepEqual(asked[0]?.limits, { requestsPerMinute: undefined, tokensPerMinute: undefined });
  });
});
