import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../runtime/clock.ts';
import { createLogger } from '../../shared/log.ts';
import { err, ok } from '../../shared/result.ts';
import {
  type BatchProvider,
  type BatchState,
  type BatchVendor,
  LIST_PAGE_SIZE,
} from '../../vendors/batch/port.ts';
import { createBatchPoller, LIST_THRESHOLD, spreadOverPeriod } from './poller.ts';
import { createBatchRuntime } from './runtime.ts';
import type { SecretReader } from './secrets.ts';

const PERIOD = 10_000;
const quiet = createLogger('error', () => {});

/** How the counting vendor's list behaves: `hide` ids are never listed; `fail` answers every page with a 503. */
interface ListBehaviour {
  hide?: Set<string>;
  fail?: boolean;
  /** Unrelated batches of the account listed before ours (newest first). */
  others?: number;
}

/** A vendor whose checks and list pages are counted; `ended` ids end, everything else stays in progress. */
function countingVendor(ended: Set<string>, slowMs = 0, clock?: ManualClock, list: ListBehaviour = {}) {
  const checks = new Map<string, number[]>();
  const listed: (string | undefined)[] = [];
  const known = new Set<string>();
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
    async listPage(cursor) {
      listed.push(cursor);
      if (list.fail) return err({ kind: 'unavailable', status: 503, message: 'HTTP 503 overloaded' });
      const all = [
        ...Array.from({ length: list.others ?? 0 }, (_, i) => ({ id: `other-${i}`, ended: true })),
        ...[...known].filter((id) => !list.hide?.has(id)).map((id) => ({ id, ended: ended.has(id) })),
      ];
      const start = cursor === undefined ? 0 : Number(cursor);
      const next = start + LIST_PAGE_SIZE < all.length ? String(start + LIST_PAGE_SIZE) : undefined;
      return ok({ batches: all.slice(start, start + LIST_PAGE_SIZE), next });
    },
  };
  return { vendor, checks, listed, known, maxInFlight: () => maxInFlight };
}

const secrets: SecretReader = {
  read: async () => ok(new Map([['ANTHROPIC_API_KEY', 'k']])),
  forget: () => {},
};

function setup(
  opts: {
    ended?: Set<string>;
    slowMs?: number;
    random?: () => number;
    listing?: boolean;
    list?: ListBehaviour;
  } = {},
) {
  const clock = new ManualClock(0);
  const v = countingVendor(opts.ended ?? new Set(), opts.slowMs ?? 0, clock, opts.list);
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
  const polled: {
    key: string;
    batchId: string;
    startMs: number;
    endMs: number;
    result: string;
    error?: string | undefined;
  }[] = [];
  let seed = 0;
  const poller = createBatchPoller({
    runtime,
    clock,
    random: opts.random ?? (() => (seed++ % 100) / 100),
    periodMs: PERIOD,
    logger: quiet,
    onEnded: (key) => woken.push(key),
    onPolled: (batch, startMs, endMs, result, error) =>
      polled.push({ key: batch.key, batchId: batch.batchId, startMs, endMs, result, error }),
    listing: opts.listing ?? false,
  });
  const track = (i: number) => {
    v.known.add(`b${i}`);
    poller.track(`uid-${i}`, {
      key: `ns/a${i}`,
      namespace: 'ns',
      provider: 'anthropic',
      batchId: `b${i}`,
      secretKey: 'ANTHROPIC_API_KEY',
      render: () => ({ sessionId: `uid-${i}`, model: 'm', prompt: 'p', structured: false, durationMs: 0 }),
    });
  };
  return { clock, poller, woken, polled, track, ...v };
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
  describe('list sweeps', () => {
    const checksTotal = (t: ReturnType<typeof setup>) =>
      [...t.checks.values()].reduce((n, times) => n + times.length, 0);

    it('250 pending batches cost one sweep of 3 pages per period and no check of their own', async () => {
      const t = setup({ listing: true });
      for (let i = 0; i < 250; i++) t.track(i);
      t.poller.setActive(true);
      await t.clock.advance(3 * PERIOD - 1);
      assert.equal(checksTotal(t), 0, 'no batch polled on its own');
      assert.equal(t.listed.length, 9, `3 sweeps × 3 pages, got ${t.listed.length}`);
      assert.deepEqual(t.listed.slice(0, 3), [undefined, '100', '200'], 'pages in cursor order');
      t.poller.stop();
    });

    it('a batch seen ended is checked at once (its result) and woken; the rest stay swept', async () => {
      const t = setup({ listing: true, ended: new Set(['b3']) });
      for (let i = 0; i < 20; i++) t.track(i);
      t.poller.setActive(true);
      await t.clock.advance(PERIOD - 1);
      assert.deepEqual([...t.checks.keys()], ['b3']);
      assert.deepEqual(t.woken, ['ns/a3']);
      assert.equal(t.poller.observation('uid-3')?.kind, 'ended');
      await t.clock.advance(2 * PERIOD);
      assert.equal(t.checks.get('b3')?.length, 1, 'an ended batch is not polled again');
      t.poller.stop();
    });

    it('100 batches seen ended together are all read within a tick, not 8 per tick', async () => {
      const ended = new Set(Array.from({ length: 100 }, (_, i) => `b${i}`));
      const t = setup({ listing: true, ended });
      for (let i = 0; i < 100; i++) t.track(i);
      t.poller.setActive(true);
      await t.clock.advance(600);
      assert.equal(t.woken.length, 100, `woken after 600 ms: ${t.woken.length}`);
      assert.equal(t.maxInFlight() <= 8, true, 'still at most 8 checks at once');
      t.poller.stop();
    });

    it('a batch the list does not show is polled on its own, once per period', async () => {
      const t = setup({ listing: true, list: { hide: new Set(['b7']) } });
      for (let i = 0; i < 20; i++) t.track(i);
      t.poller.setActive(true);
      await t.clock.advance(3 * PERIOD);
      assert.deepEqual([...t.checks.keys()], ['b7']);
      const times = t.checks.get('b7') ?? [];
      assert.ok(times.length >= 2 && times.length <= 3, `b7 polled ${times.length} times in 3 periods`);
      t.poller.stop();
    });

    it('a failing list falls back to polls one by one, and sweeps again the next period', async () => {
      const t = setup({ listing: true, list: { fail: true } });
      for (let i = 0; i < 20; i++) t.track(i);
      t.poller.setActive(true);
      await t.clock.advance(2 * PERIOD);
      assert.equal(t.checks.size, 20, 'every batch polled on its own after the failed sweep');
      assert.ok(t.listed.length >= 2, 'the sweep is tried again the next period');
      t.poller.stop();
    });

    it('stops paging after ceil(n / page) + 1 pages when the account lists many other batches first', async () => {
      const t = setup({ listing: true, list: { others: 5 * LIST_PAGE_SIZE } });
      for (let i = 0; i < 20; i++) t.track(i);
      t.poller.setActive(true);
      await t.clock.advance(PERIOD - 1);
      assert.equal(t.listed.length, 2, 'bounded: 20 batches → at most 2 pages');
      assert.equal(t.checks.size, 20, 'not seen within the bound: polled on their own');
      t.poller.stop();
    });

    it(`below ${LIST_THRESHOLD} batches in a group, or with listing off, nothing is listed`, async () => {
      const few = setup({ listing: true });
      for (let i = 0; i < LIST_THRESHOLD - 1; i++) few.track(i);
      few.poller.setActive(true);
      await few.clock.advance(2 * PERIOD);
      assert.equal(few.listed.length, 0);
      assert.equal(few.checks.size, LIST_THRESHOLD - 1);
      few.poller.stop();
      const off = setup({ listing: false });
      for (let i = 0; i < 50; i++) off.track(i);
      off.poller.setActive(true);
      await off.clock.advance(PERIOD);
      assert.equal(off.listed.length, 0);
      assert.equal(off.checks.size, 50);
      off.poller.stop();
    });
  });
});

describe('batch poller: each poll reported for the run spans (issue 10 §5)', () => {
  it('reports every poll of a batch on its own with its timing and result', async () => {
    const t = setup({ ended: new Set(['b1']), slowMs: 40 });
    t.poller.setActive(true);
    t.track(0);
    t.track(1);
    await t.clock.advance(PERIOD);
    t.poller.stop();
    const byBatch = (id: string) => t.polled.filter((p) => p.batchId === id);
    assert.ok(byBatch('b0').length >= 1);
    assert.ok(
      byBatch('b0').every((p) => p.result === 'pending' && p.key === 'ns/a0' && p.error === undefined),
    );
    assert.deepEqual(
      byBatch('b1').map((p) => p.result),
      ['ended'],
    );
    for (const p of t.polled)
      assert.equal(p.endMs - p.startMs, 40, 'from the start of the call to its answer');
  });
});

describe('spreadOverPeriod', () => {
  it('lands within the period that starts now, at whole milliseconds', () => {
    assert.deepEqual(
      [0, 0.25, 0.99999].map((r) => spreadOverPeriod(1_000, r, PERIOD)),
      [1_000, 3_500, 10_999],
    );
  });
});
