import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SpendLedger } from '../../api/index.ts';
import { EMPTY_LEDGER, hourKey, ledgerItems, sameLedger, writeLedger } from './ledger.ts';
import {
  capForGrant,
  exhaustedAction,
  formatDollars,
  microsToUsd,
  perRunCap,
  usdToMicros,
  windowLimits,
  windowMs,
} from './rules.ts';
import { exhaustedLimits, exhaustedMessage, freesAt, inWindow, type SpendItem, spentIn } from './window.ts';

const H = 3_600_000;
const T = Date.parse('2026-01-10T00:00:00.000Z');
const item = (station: string, atMs: number, usd: number, tokens = 0): SpendItem => ({
  station,
  atMs,
  usdMicros: usd * 1_000_000,
  tokens,
});

describe('budget money: decimal strings in micro-dollars', () => {
  it('reads and writes decimal USD exactly', () => {
    assert.equal(usdToMicros('0'), 0);
    assert.equal(usdToMicros('2.5'), 2_500_000);
    assert.equal(usdToMicros('0.000125'), 125);
    assert.equal(usdToMicros('10'), 10_000_000);
    assert.equal(usdToMicros('0.0000005'), 1, 'the seventh decimal rounds');
    assert.ok(Number.isNaN(usdToMicros('1e3')));
    assert.ok(Number.isNaN(usdToMicros('-1')));
    assert.equal(microsToUsd(2_500_000), '2.5');
    assert.equal(microsToUsd(125), '0.000125');
    assert.equal(microsToUsd(0), '0');
    assert.equal(microsToUsd(10_000_000), '10');
    assert.equal(formatDollars(12_300_000), '$12.30');
    assert.equal(formatDollars(125), '$0.000125');
  });
  it('sums without float drift: 0.1 ten times is 1', () => {
    let m = 0;
    for (let i = 0; i < 10; i++) m += usdToMicros('0.1');
    assert.equal(microsToUsd(m), '1');
  });
});

describe('budget rules: the stricter of policy and Station', () => {
  it('per-run cap: the smaller of each kind; either alone; neither → none', () => {
    assert.deepEqual(perRunCap({ perRun: { usd: '5', tokens: 100 } }, { perRun: { usd: '2' } }), {
      usdMicros: 2_000_000,
      tokens: 100,
    });
    assert.deepEqual(perRunCap({ perRun: { usd: '1' } }, { perRun: { usd: '2', tokens: 50 } }), {
      usdMicros: 1_000_000,
      tokens: 50,
    });
    assert.deepEqual(perRunCap(undefined, { perRun: { tokens: 7 } }), { tokens: 7 });
    assert.equal(perRunCap(undefined, undefined), undefined);
    assert.equal(perRunCap({ windows: [] }, {}), undefined);
    assert.deepEqual(capForGrant({ usdMicros: 2_500_000, tokens: 9 }), { usd: '2.5', tokens: 9 });
    assert.equal(capForGrant(undefined), undefined);
  });
  it('window limits: all of the policy and the Station apply; the policy scope defaults to Station', () => {
    const limits = windowLimits(
      {
        name: 'p',
        budgets: {
          windows: [
            { window: 'day', usd: '100' },
            { scope: 'Namespace', window: 'month', tokens: 1000 },
            { window: 'hour' },
          ],
        },
      },
      { name: 's', budgets: { windows: [{ window: 'day', usd: '10' }] } },
    );
    assert.deepEqual(limits, [
      { scope: 'Station', window: 'day', source: 'AgentPolicy p', usdMicros: 100_000_000 },
      { scope: 'Namespace', window: 'month', source: 'AgentPolicy p', tokens: 1000 },
      { scope: 'Station', window: 'day', source: 'Station s', usdMicros: 10_000_000 },
    ]);
    assert.deepEqual(windowLimits(undefined, { name: 's' }), []);
  });
  it('Fail when either says Fail, else Wait', () => {
    assert.equal(exhaustedAction(undefined, undefined), 'Wait');
    assert.equal(exhaustedAction({ whenExhausted: 'Wait' }, { whenExhausted: 'Fail' }), 'Fail');
    assert.equal(exhaustedAction({ whenExhausted: 'Fail' }, undefined), 'Fail');
    assert.equal(exhaustedAction({ whenExhausted: 'Wait' }, {}), 'Wait');
  });
  it('windows: an hour, 24 hours, 720 hours of the given hour', () => {
    assert.equal(windowMs('hour', H), H);
    assert.equal(windowMs('day', H), 24 * H);
    assert.equal(windowMs('month', 2000), 720 * 2000);
  });
});

describe('budget windows: sums and roll-over', () => {
  it('an item counts while now − length < at; it leaves the window exactly at at + length', () => {
    assert.equal(inWindow(T, H, T + H - 1), true);
    assert.equal(inWindow(T, H, T + H), false);
    assert.equal(inWindow(T + 5, H, T), true, 'a future item counts');
    const items = [item('a', T, 1), item('a', T + H / 2, 2, 10), item('a', T - 1, 4)];
    assert.deepEqual(spentIn(items, H, T + H - 1), { usdMicros: 3_000_000, tokens: 10 });
    assert.deepEqual(spentIn(items, H, T + H), { usdMicros: 2_000_000, tokens: 10 });
    assert.deepEqual(spentIn(items, H, T + H + H / 2), { usdMicros: 0, tokens: 0 });
  });
  it('frees at the time enough of the oldest spend has left the window', () => {
    const items = [item('a', T + 10, 3), item('a', T, 4), item('a', T + 20, 3)];
    // 10 spent, limit 10: dropping the oldest (4) leaves 6 < 10.
    assert.equal(
      freesAt(items, (i) => i.usdMicros, 10_000_000, H, T + 30),
      T + H,
    );
    // limit 4: 10 → 6 → 3 < 4 at the second item's exit.
    assert.equal(
      freesAt(items, (i) => i.usdMicros, 4_000_000, H, T + 30),
      T + 10 + H,
    );
    // already under: now.
    assert.equal(
      freesAt(items, (i) => i.usdMicros, 11_000_000, H, T + 30),
      T + 30,
    );
  });
  const limits = windowLimits(undefined, {
    name: 'a',
    budgets: { windows: [{ window: 'day', usd: '10', tokens: 100 }] },
  });
  it('admission rows: under, at, over the limit', () => {
    const now = T + 2 * H;
    assert.deepEqual(exhaustedLimits(limits, [item('a', T, 9.99)], 'a', now, H), [], 'under');
    const at = exhaustedLimits(limits, [item('a', T, 10)], 'a', now, H);
    assert.equal(at.length, 1, 'at the limit it is spent');
    assert.deepEqual(
      { kind: at[0]?.kind, spent: at[0]?.spent, max: at[0]?.max, freesAtMs: at[0]?.freesAtMs },
      { kind: 'usd', spent: 10_000_000, max: 10_000_000, freesAtMs: T + 24 * H },
    );
    const over = exhaustedLimits(limits, [item('a', T, 4, 50), item('a', T + H, 8, 60)], 'a', now, H);
    assert.deepEqual(
      over.map((e) => [e.kind, e.freesAtMs]),
      // 12 ≥ 10 and 110 ≥ 100; once the older run (4, 50) leaves the day, 8 and 60 are under both.
      [
        ['usd', T + 24 * H],
        ['tokens', T + 24 * H],
      ],
    );
  });
  it('a Station limit counts its Station only; a Namespace limit counts every Station', () => {
    const items = [item('a', T, 6), item('b', T, 6)];
    assert.deepEqual(exhaustedLimits(limits, items, 'a', T + 1, H), []);
    const ns = windowLimits(
      { name: 'p', budgets: { windows: [{ scope: 'Namespace', window: 'hour', usd: '10' }] } },
      {
        name: 'a',
      },
    );
    const spent = exhaustedLimits(ns, items, 'a', T + 1, H);
    assert.equal(spent.length, 1);
    assert.equal(spent[0]?.spent, 12_000_000);
    assert.deepEqual(exhaustedLimits(ns, items, 'a', T + H, H), [], 'rolled over an hour later');
  });
  it('several spent limits: the one that frees last first', () => {
    const both = windowLimits(
      { name: 'p', budgets: { windows: [{ window: 'hour', usd: '1' }] } },
      { name: 'a', budgets: { windows: [{ window: 'day', usd: '1' }] } },
    );
    const spent = exhaustedLimits(both, [item('a', T, 2)], 'a', T + 1, H);
    assert.deepEqual(
      spent.map((e) => [e.limit.window, e.freesAtMs]),
      [
        ['day', T + 24 * H],
        ['hour', T + H],
      ],
    );
  });
  it('the message names the budget, its window, spent/limit and when it frees', () => {
    const [e] = exhaustedLimits(limits, [item('a', T, 12.3)], 'a', T + 1, H);
    assert.ok(e !== undefined);
    assert.equal(
      exhaustedMessage(e, 'team', 'a'),
      'Budget exhausted: the day budget of Station a (Station a): $12.30 of $10.00 spent in the last day; frees at 2026-01-11T00:00:00.000Z',
    );
  });
});

describe('budget ledger: SET entries, folds of gone runs, pruning', () => {
  const entry = (usd: string, tokens: number, at = T + 90_000, station = 's') => ({
    station,
    at: new Date(at).toISOString(),
    usd,
    tokens,
  });
  it('a SET replayed changes nothing; a larger figure replaces, never adds', () => {
    const once = writeLedger(EMPTY_LEDGER, { set: [{ uid: 'u1', entry: entry('1.5', 10) }], gone: [] }, T, H);
    const twice = writeLedger(once, { set: [{ uid: 'u1', entry: entry('1.5', 10) }], gone: [] }, T, H);
    assert.ok(sameLedger(once, twice));
    const more = writeLedger(twice, { set: [{ uid: 'u1', entry: entry('2', 20) }], gone: [] }, T, H);
    assert.deepEqual(more.runs.u1, entry('2', 20));
  });
  it('a gone run is folded into its hourly bucket once; folding again finds nothing', () => {
    const l = writeLedger(
      EMPTY_LEDGER,
      {
        set: [
          { uid: 'u1', entry: entry('1.5', 10) },
          { uid: 'u2', entry: entry('0.25', 5, T + 2 * H) },
        ],
        gone: [],
      },
      T,
      H,
    );
    const folded = writeLedger(l, { set: [], gone: ['u1', 'u2', 'u-unknown'] }, T, H);
    assert.deepEqual(folded.runs, {});
    assert.deepEqual(folded.hours, {
      s: {
        [new Date(T).toISOString()]: { usd: '1.5', tokens: 10 },
        [new Date(T + 2 * H).toISOString()]: { usd: '0.25', tokens: 5 },
      },
    });
    assert.ok(
      sameLedger(folded, writeLedger(folded, { set: [], gone: ['u1', 'u2'] }, T, H)),
      'replayed fold',
    );
    // Two runs of one hour share the bucket.
    const again = writeLedger(
      folded,
      { set: [{ uid: 'u3', entry: entry('1', 1, T + 10) }], gone: ['u3'] },
      T,
      H,
    );
    assert.deepEqual(again.hours.s?.[new Date(T).toISOString()], { usd: '2.5', tokens: 11 });
  });
  it('bucket keys are the start of the (compressed) hour', () => {
    assert.equal(hourKey(T + 1999, 2000), new Date(T).toISOString());
    assert.equal(hourKey(T + 2000, 2000), new Date(T + 2000).toISOString());
  });
  it('drops what is older than a month and an hour', () => {
    const old = T - 721 * H - 1;
    const l: SpendLedger = {
      runs: { old: entry('1', 1, old), young: entry('1', 1, T - 700 * H) },
      hours: { s: { [new Date(old - H).toISOString()]: { usd: '1', tokens: 1 } } },
    };
    const pruned = writeLedger(l, { set: [], gone: [] }, T, H);
    assert.deepEqual(Object.keys(pruned.runs), ['young']);
    assert.deepEqual(pruned.hours, {});
  });
  it('items: entries of live runs are left out (their Agents count), buckets sit at their hour end', () => {
    const l: SpendLedger = {
      runs: { live: entry('5', 5), gone: entry('1', 2) },
      hours: { s: { [new Date(T).toISOString()]: { usd: '3', tokens: 4 } } },
    };
    assert.deepEqual(ledgerItems(l, new Set(['live']), H), [
      { station: 's', atMs: T + 90_000, usdMicros: 1_000_000, tokens: 2 },
      { station: 's', atMs: T + H - 1, usdMicros: 3_000_000, tokens: 4 },
    ]);
  });
  it('the deletion path keeps the total: live run counted from its Agent, then from its entry, then its bucket', () => {
    const live = new Map([['u1', item('s', T + 10, 2, 7)]]);
    const sum = (xs: readonly SpendItem[]) => spentIn(xs, 24 * H, T + H);
    const before = sum([...live.values(), ...ledgerItems(EMPTY_LEDGER, new Set(['u1']), H)]);
    const recorded = writeLedger(
      EMPTY_LEDGER,
      {
        set: [
          { uid: 'u1', entry: { station: 's', at: new Date(T + 10).toISOString(), usd: '2', tokens: 7 } },
        ],
        gone: [],
      },
      T + H,
      H,
    );
    const during = sum([...live.values(), ...ledgerItems(recorded, new Set(['u1']), H)]);
    const afterDelete = sum(ledgerItems(recorded, new Set(), H));
    const folded = sum(ledgerItems(writeLedger(recorded, { set: [], gone: ['u1'] }, T + H, H), new Set(), H));
    for (const s of [during, afterDelete, folded]) assert.deepEqual(s, before);
    assert.deepEqual(before, { usdMicros: 2_000_000, tokens: 7 });
  });
});
