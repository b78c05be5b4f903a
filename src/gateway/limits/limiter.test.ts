import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { createGatewayLimiterMetrics } from '../../metrics/gateway-limits.ts';
import { createLogger } from '../../shared/log.ts';
import { type Admission, createRateLimiter, type KeyId } from './limiter.ts';

/** A clock whose time moves only when told, firing due timers in order. */
function manualClock(start: number) {
  let now = start;
  let seq = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  return {
    now: () => now,
    setTimer(ms: number, fn: () => void) {
      const id = seq++;
      timers.set(id, { at: now + ms, fn });
      return () => void timers.delete(id);
    },
    advance(ms: number) {
      const end = now + ms;
      for (;;) {
        const due = [...timers.entries()]
          .filter(([, t]) => t.at <= end)
          .sort((a, b) => a[1].at - b[1].at || a[0] - b[0]);
        const first = due[0];
        if (first === undefined) break;
        timers.delete(first[0]);
        now = Math.max(now, first[1].at);
        first[1].fn();
      }
      now = end;
    },
  };
}

const ID: KeyId = { namespace: 'team-a', vendor: 'anthropic', key: 'ANTHROPIC_API_KEY' };

function setup(maxWaitMs = 30_000) {
  const clock = manualClock(1_000_000);
  const registry = new Registry();
  const metrics = createGatewayLimiterMetrics(registry);
  const saturated: { id: KeyId; until: number }[] = [];
  const limiter = createRateLimiter({
    now: clock.now,
    setTimer: clock.setTimer,
    maxWaitMs,
    metrics,
    logger: createLogger('error', () => undefined),
    saturated: (id, until) => saturated.push({ id, until }),
  });
  return { clock, limiter, metrics, registry, saturated };
}

/** Settles promises' continuations. */
const flush = () => new Promise((r) => setImmediate(r));

describe('the rate limiter of a key', () => {
  it('lets calls go at once while the key has capacity', async () => {
    const { limiter } = setup();
    const signal = new AbortController().signal;
    for (let i = 0; i < 3; i++) {
      const a = await limiter.admit(ID, { requestsPerMinute: 3 }, 'run-a', 0, signal);
      assert.equal(a.kind, 'go');
      assert.equal(a.waitedMs, 0);
    }
  });

  it('is fair: a run with one call waiting is served in the first round, not behind a run with ten', async () => {
    const { clock, limiter } = setup(600_000);
    const signal = new AbortController().signal;
    const limits = { requestsPerMinute: 6 }; // one every 10 s once the burst is spent
    for (let i = 0; i < 6; i++) await limiter.admit(ID, limits, 'warm', 0, signal);
    const released: string[] = [];
    const wait = (run: string, n: number) =>
      limiter.admit(ID, limits, run, 0, signal).then((a) => {
        assert.equal(a.kind, 'go');
        released.push(`${run}${n}`);
      });
    const many = Array.from({ length: 10 }, (_, i) => wait('busy', i));
    const single = wait('single', 0);
    assert.equal(limiter.waiting(ID), 11);
    clock.advance(10_000);
    await flush();
    clock.advance(10_000);
    await flush();
    assert.deepEqual(released, ['busy0', 'single0']);
    for (let i = 0; i < 9; i++) {
      clock.advance(10_000);
      await flush();
    }
    await Promise.all([...many, single]);
    assert.deepEqual(released, ['busy0', 'single0', ...Array.from({ length: 9 }, (_, i) => `busy${i + 1}`)]);
  });

  it('round-robin over three runs, each in its turn', async () => {
    const { clock, limiter } = setup(600_000);
    const signal = new AbortController().signal;
    const limits = { requestsPerMinute: 60 };
    for (let i = 0; i < 60; i++) await limiter.admit(ID, limits, 'warm', 0, signal);
    const released: string[] = [];
    const all: Promise<unknown>[] = [];
    for (const [run, n] of [
      ['a', 3],
      ['b', 2],
      ['c', 1],
    ] as const)
      for (let i = 0; i < n; i++)
        all.push(limiter.admit(ID, limits, run, 0, signal).then(() => released.push(run)));
    for (let i = 0; i < 6; i++) {
      clock.advance(1000);
      await flush();
    }
    await Promise.all(all);
    assert.deepEqual(released, ['a', 'b', 'c', 'a', 'b', 'a']);
  });

  it('a call that waited its longest is refused with the time the key has capacity again', async () => {
    const { clock, limiter, saturated, registry } = setup(5000);
    const signal = new AbortController().signal;
    const limits = { requestsPerMinute: 1 };
    await limiter.admit(ID, limits, 'a', 0, signal);
    const waiting = limiter.admit(ID, limits, 'a', 0, signal);
    clock.advance(5000);
    const a = (await waiting) as Extract<Admission, { kind: 'refused' }>;
    assert.equal(a.kind, 'refused');
    assert.equal(a.waitedMs, 5000);
    assert.equal(a.retryAfterMs, 55_000);
    assert.deepEqual(saturated, [{ id: ID, until: 1_000_000 + 60_000 }]);
    assert.equal(limiter.waiting(ID), 0);
    const text = await registry.metrics();
    assert.match(text, /gateway_throttled_total\{namespace="team-a",vendor="anthropic",reason="queued"\} 1/);
    assert.match(text, /gateway_throttled_total\{namespace="team-a",vendor="anthropic",reason="refused"\} 1/);
    assert.match(text, /gateway_limiter_wait_seconds_count\{namespace="team-a",vendor="anthropic"\} 1/);
  });

  it('a 429 blocks the key: calls wait for its time, or are refused at once when it is past the longest wait', async () => {
    const { clock, limiter, saturated, registry } = setup(10_000);
    const signal = new AbortController().signal;
    const first = await limiter.admit(ID, {}, 'a', 0, signal);
    assert.equal(first.kind, 'go');
    if (first.kind !== 'go') return;
    first.ticket.observe({ blockedUntil: clock.now() + 4000 });
    assert.deepEqual(saturated, [{ id: ID, until: clock.now() + 4000 }]);
    assert.match(
      await registry.metrics(),
      /gateway_key_saturated\{namespace="team-a",vendor="anthropic",key="ANTHROPIC_API_KEY"\} 1/,
    );
    const second = limiter.admit(ID, {}, 'b', 0, signal);
    clock.advance(3999);
    await flush();
    assert.equal(limiter.waiting(ID), 1);
    clock.advance(1);
    const a = await second;
    assert.equal(a.kind, 'go');
    assert.equal(a.waitedMs, 4000);
    if (a.kind !== 'go') return;
    a.ticket.observe({ blockedUntil: clock.now() + 60_000 });
    const refused = await limiter.admit(ID, {}, 'c', 0, signal);
    assert.deepEqual(refused, { kind: 'refused', retryAfterMs: 60_000, waitedMs: 0 });
    clock.advance(60_000);
    assert.match(
      await registry.metrics(),
      /gateway_key_saturated\{namespace="team-a",vendor="anthropic",key="ANTHROPIC_API_KEY"\} 1/,
    );
    assert.equal((await limiter.admit(ID, {}, 'c', 0, signal)).kind, 'go');
  });

  it('a client that goes away leaves the queue; the next run is served', async () => {
    const { clock, limiter } = setup(120_000);
    const limits = { requestsPerMinute: 1 };
    await limiter.admit(ID, limits, 'a', 0, new AbortController().signal);
    const gone = new AbortController();
    const leaving = limiter.admit(ID, limits, 'a', 0, gone.signal);
    const staying = limiter.admit(ID, limits, 'b', 0, new AbortController().signal);
    gone.abort();
    assert.equal((await leaving).kind, 'refused');
    assert.equal(limiter.waiting(ID), 1);
    clock.advance(60_000);
    assert.equal((await staying).kind, 'go');
  });

  it('tokens: settling with the measured usage frees what the estimate held', async () => {
    const { clock, limiter } = setup();
    const signal = new AbortController().signal;
    const limits = { tokensPerMinute: 1000 };
    const a = await limiter.admit(ID, limits, 'a', 900, signal);
    assert.equal(a.kind, 'go');
    let next = false;
    const b = limiter.admit(ID, limits, 'b', 500, signal).then((x) => {
      next = true;
      return x;
    });
    await flush();
    assert.equal(next, false);
    if (a.kind === 'go') a.ticket.settle(100);
    await flush();
    assert.equal(next, true);
    assert.equal((await b).kind, 'go');
    assert.equal(clock.now(), 1_000_000);
  });

  it('keys are apart: another namespace, vendor or key name has its own limiter', async () => {
    const { limiter } = setup(1000);
    const signal = new AbortController().signal;
    const limits = { requestsPerMinute: 1 };
    await limiter.admit(ID, limits, 'a', 0, signal);
    for (const other of [
      { ...ID, namespace: 'team-b' },
      { ...ID, vendor: 'openai' as const },
      { ...ID, key: 'OTHER_KEY' },
    ])
      assert.equal((await limiter.admit(other, limits, 'a', 0, signal)).kind, 'go');
  });
});
