import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from './clock.ts';
import { createDelayedKeys, createReadyKeys } from './workqueue-keys.ts';

describe('createReadyKeys', () => {
  const drain = (ready: ReturnType<typeof createReadyKeys>) => {
    const out: [string, number][] = [];
    for (let next = ready.take(); next !== undefined; next = ready.take()) out.push([next.key, next.since]);
    return out;
  };

  it('takes urgent keys first, each lane in the order the keys became ready', () => {
    const ready = createReadyKeys();
    assert.equal(ready.add('a', false, 1), 'added');
    assert.equal(ready.add('u1', true, 2), 'added');
    assert.equal(ready.add('b', false, 3), 'added');
    assert.equal(ready.add('u2', true, 4), 'added');
    assert.equal(ready.size, 4);
    assert.deepEqual(drain(ready), [
      ['u1', 2],
      ['u2', 4],
      ['a', 1],
      ['b', 3],
    ]);
    assert.equal(ready.size, 0);
    assert.equal(ready.take(), undefined);
  });

  it('merges a second add, keeping the first time; an urgent one promotes an ordinary key to the urgent lane', () => {
    const ready = createReadyKeys();
    ready.add('a', false, 1);
    ready.add('b', false, 2);
    ready.add('u', true, 3);
    assert.equal(ready.add('a', false, 10), 'merged');
    assert.equal(ready.add('u', false, 11), 'merged', 'an ordinary add does not demote');
    assert.equal(ready.add('b', true, 12), 'merged');
    assert.equal(ready.size, 3);
    assert.deepEqual(drain(ready), [
      ['u', 3],
      ['b', 2],
      ['a', 1],
    ]);
  });

  it('has and clear see both lanes', () => {
    const ready = createReadyKeys();
    ready.add('a', false, 1);
    ready.add('u', true, 2);
    assert.deepEqual(
      ['a', 'u', 'x'].map((k) => ready.has(k)),
      [true, true, false],
    );
    ready.clear();
    assert.equal(ready.size, 0);
    assert.deepEqual(
      ['a', 'u'].map((k) => ready.has(k)),
      [false, false],
    );
  });
});

describe('createDelayedKeys', () => {
  it('fires each key once after its delay and forgets it', async () => {
    const clock = new ManualClock(0);
    const delayed = createDelayedKeys(clock);
    const fired: [string, number][] = [];
    delayed.schedule('a', 100, () => fired.push(['a', clock.now()]));
    delayed.schedule('b', 50, () => fired.push(['b', clock.now()]));
    assert.equal(delayed.size, 2);
    await clock.advance(99);
    assert.deepEqual(fired, [['b', 50]]);
    assert.equal(delayed.size, 1);
    await clock.advance(1);
    assert.deepEqual(fired, [
      ['b', 50],
      ['a', 100],
    ]);
    assert.equal(delayed.size, 0);
  });

  it('keeps the earliest due time per key: a later schedule is ignored, an earlier one replaces the wait', async () => {
    const clock = new ManualClock(0);
    const delayed = createDelayedKeys(clock);
    const fired: string[] = [];
    delayed.schedule('k', 100, () => fired.push('first@100'));
    delayed.schedule('k', 200, () => fired.push('later@200'));
    delayed.schedule('k', 100, () => fired.push('same@100'));
    await clock.advance(10);
    delayed.schedule('k', 30, () => fired.push('earlier@40'));
    assert.equal(delayed.size, 1);
    await clock.advance(1_000);
    assert.deepEqual(fired, ['earlier@40']);
  });

  it('cancel and cancelAll stop waits from firing', async () => {
    const clock = new ManualClock(0);
    const delayed = createDelayedKeys(clock);
    const fired: string[] = [];
    for (const k of ['a', 'b', 'c']) delayed.schedule(k, 10, () => fired.push(k));
    delayed.cancel('b');
    delayed.cancel('missing');
    assert.equal(delayed.size, 2);
    await clock.advance(10);
    assert.deepEqual(fired, ['a', 'c']);
    delayed.schedule('d', 10, () => fired.push('d'));
    delayed.cancelAll();
    assert.equal(delayed.size, 0);
    await clock.advance(100);
    assert.deepEqual(fired, ['a', 'c']);
  });
});
