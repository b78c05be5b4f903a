import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock, systemClock } from './clock.ts';
import { anySignal } from './signals.ts';

describe('ManualClock', () => {
  it('fires timers in due order, only when advanced', async () => {
    const c = new ManualClock(0);
    const fired: string[] = [];
    c.setTimer(30, () => fired.push('b'));
    c.setTimer(10, () => fired.push('a'));
    const cancel = c.setTimer(20, () => fired.push('x'));
    cancel();
    await c.advance(9);
    assert.deepEqual(fired, []);
    await c.advance(25);
    assert.deepEqual(fired, ['a', 'b']);
    assert.equal(c.now(), 34);
  });
  it('resolves sleep with true when elapsed and false when aborted', async () => {
    const c = new ManualClock(0);
    const done = c.sleep(100);
    await c.advance(100);
    assert.equal(await done, true);
    const ctl = new AbortController();
    const aborted = c.sleep(100, ctl.signal);
    ctl.abort();
    assert.equal(await aborted, false);
    assert.equal(c.pending(), 0);
  });
  it('runs continuations of an awaited sleep before later timers', async () => {
    const c = new ManualClock(0);
    const order: string[] = [];
    void (async () => {
      await c.sleep(10);
      order.push('woke');
      c.setTimer(5, () => order.push('chained'));
    })();
    c.setTimer(12, () => order.push('later'));
    await c.advance(20);
    assert.deepEqual(order, ['woke', 'later', 'chained']);
  });
});

describe('systemClock', () => {
  it('sleep returns false at once for an aborted signal', async () => {
    const ctl = new AbortController();
    ctl.abort();
    assert.equal(await systemClock.sleep(10_000, ctl.signal), false);
  });
});

describe('anySignal', () => {
  it('aborts when any input aborts', () => {
    const a = new AbortController();
    const b = new AbortController();
    const both = anySignal(a.signal, undefined, b.signal);
    assert.equal(both.signal.aborted, false);
    b.abort();
    assert.equal(both.signal.aborted, true);
    both.dispose();
  });
  it('is aborted at once when an input already is', () => {
    const a = new AbortController();
    a.abort();
    assert.equal(anySignal(a.signal).signal.aborted, true);
  });
});
