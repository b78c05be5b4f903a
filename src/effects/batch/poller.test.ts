import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../runtime/clock.ts';
import { createLogger } from '../../shared/log.ts';
import { ok } from '../../shared/result.ts';
import type { BatchProvider, BatchState, BatchVendor } from '../../vendors/batch/port.ts';
import { createBatchPoller } from './poller.ts';
import { createBatchRuntime } from './runtime.ts';
import type { SecretReader } from './secrets.ts';

const PERIOD = 10_000;
const quiet = createLogger('error', () => {});

/** A vendor whose checks are counted; `ended` ids end, everything else stays in progress. */
function countingVendor(ended: Set<string>, slowMs = 0, clock?: ManualClock) {
  const checks = new Map<string, number[]>();
  let inFlight = 0;
  let maxInFlight = 0;
  const vendor: BatchVendor = {
    provider: 'anthropic',
    submit: async () => ok({ id: 'x' }),
    async check(id) {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      checks.set(id, [...(checks.get(id) ?? []), clock?.now() ?? 0]);
      if (slowMs > 0 && clock) await clock.sleep(slowMs);
      inFlight--;
      const state: BatchState = ended.has(id)
        ? { kind: 'ended', id, outcome: { kind: 'succeeded', lines: ['{}'] } }
        : { kind: 'inProgress', id };
      return ok(state);
    },
    cancel: async () => ok(undefined),
    cleanup: async () => ok({ kind: 'done' as const }),
    find: async () => ok({ kind: 'absent' as const }),
  };
  return { vendor, checks, maxInFlight: () => maxInFlight };
}

const secrets: SecretReader = {
  read: async () => ok(new Map([['ANTHROPIC_API_KEY', 'k']])),
  forget: () => {},
};

function setup(opts: { ended?: Set<string>; slowMs?: number; random?: () => number } = {}) {
  const clock = new ManualClock(0);
  const v = countingVendor(opts.ended ?? new Set(), opts.slowMs ?? 0, clock);
  const vendors = { anthropic: v.vendor, openai: v.vendor, gemini: v.vendor } as Record<
    BatchProvider,
    BatchVendor
  >;
  const runtime = createBatchRuntime({
    baseUrls: { anthropic: 'http://a', openai: 'http://o', gemini: 'http://g' },
    secrets,
    vendors,
  });
  const woken: string[] = [];
  let seed = 0;
  const poller = createBatchPoller({
    runtime,
    clock,
    random: opts.random ?? (() => (seed++ % 100) / 100),
    periodMs: PERIOD,
    logger: quiet,
    onEnded: (key) => woken.push(key),
  });
  const track = (i: number) =>
    poller.track(`uid-${i}`, {
      key: `ns/a${i}`,
      namespace: 'ns',
      provider: 'anthropic',
      batchId: `b${i}`,
      secretKey: 'ANTHROPIC_API_KEY',
      render: () => ({ sessionId: `uid-${i}`, model: 'm', prompt: 'p', structured: false, durationMs: 0 }),
    });
  return { clock, poller, woken, track, ...v };
}

describe('batch poller', () => {
  it('polls each batch once per period, spread over the period, only while active', async () => {
    const t = setup();
    for (let i = 0; i < 100; i++) t.track(i);
    await t.clock.advance(3 * PERIOD);
    assert.equal(t.checks.size, 0, 'a standby polls nothing');
    t.poller.setActive(true);
    await t.clock.advance(PERIOD);
    assert.equal(t.checks.size, 100, 'every batch polled in the first period');
    const firsts = [...t.checks.values()].map((times) => times[0] ?? 0);
    const seconds = new Set(firsts.map((ms) => Math.floor(ms / 1000)));
    assert.ok(seconds.size >= 8, `first polls spread over the period, got ${seconds.size} distinct seconds`);
    await t.clock.advance(2 * PERIOD);
    for (const [id, times] of t.checks) {
      assert.ok(times.length >= 2 && times.length <= 3, `${id} polled ${times.length} times in 3 periods`);
      for (let k = 1; k < times.length; k++) {
        assert.ok((times[k] ?? 0) - (times[k - 1] ?? 0) >= PERIOD, `${id}: at most once per period`);
      }
    }
    t.poller.stop();
  });

  it('keeps at most 8 checks in flight', async () => {
    const t = setup({ slowMs: 2000, random: () => 0 });
    for (let i = 0; i < 40; i++) t.track(i);
    t.poller.setActive(true);
    await t.clock.advance(PERIOD);
    assert.equal(t.maxInFlight(), 8);
    assert.equal(t.checks.size, 40, 'all polled within the period despite the bound');
    t.poller.stop();
  });

  it('wakes the Agent once when its batch ended, keeps the observation, and stops polling it', async () => {
    const t = setup({ ended: new Set(['b1']) });
    t.track(1);
    t.track(2);
    t.poller.setActive(true);
    await t.clock.advance(3 * PERIOD);
    assert.deepEqual(t.woken, ['ns/a1']);
    assert.equal(t.checks.get('b1')?.length, 1);
    assert.equal(t.poller.observation('uid-1')?.kind, 'ended');
    assert.equal(t.poller.observation('uid-2')?.kind, 'inProgress');
    t.poller.untrack('uid-2');
    const before = t.checks.get('b2')?.length ?? 0;
    await t.clock.advance(3 * PERIOD);
    assert.equal(t.checks.get('b2')?.length, before, 'an untracked batch is not polled');
    assert.equal(t.poller.size, 1);
    t.poller.stop();
  });
});
