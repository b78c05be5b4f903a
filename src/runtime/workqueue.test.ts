import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { flushMicrotasks, ManualClock, systemClock } from './clock.ts';
import { createWorkQueue, type WorkResult } from './workqueue.ts';

interface Deferred {
  resolve: (r: WorkResult) => void;
}

/** A handler whose runs finish only when the test says so. */
function controlledHandler() {
  const calls: string[] = [];
  const running = new Map<string, Deferred[]>();
  let concurrent = 0;
  let maxConcurrent = 0;
  const perKeyActive = new Map<string, number>();
  let sameKeyOverlap = false;
  const handler = (key: string): Promise<WorkResult> => {
    calls.push(key);
    concurrent++;
    maxConcurrent = Math.max(maxConcurrent, concurrent);
    const active = (perKeyActive.get(key) ?? 0) + 1;
    perKeyActive.set(key, active);
    if (active > 1) sameKeyOverlap = true;
    return new Promise<WorkResult>((resolve) => {
      const list = running.get(key) ?? [];
      list.push({
        resolve: (r) => {
          concurrent--;
          perKeyActive.set(key, (perKeyActive.get(key) ?? 1) - 1);
          resolve(r);
        },
      });
      running.set(key, list);
    });
  };
  const finish = async (key: string, r: WorkResult = { kind: 'done' }): Promise<void> => {
    const d = running.get(key)?.shift();
    assert.ok(d, `no run of ${key} in progress`);
    d.resolve(r);
    await flushMicrotasks();
  };
  return { handler, calls, finish, stats: () => ({ maxConcurrent, sameKeyOverlap }) };
}

describe('createWorkQueue', () => {
  it('merges duplicate adds of a waiting key', async () => {
    const clock = new ManualClock();
    const h = controlledHandler();
    const q = createWorkQueue({ clock, handler: h.handler });
    q.add('a');
    q.add('b');
    q.add('a');
    assert.equal(q.depth(), 2);
    q.start();
    await flushMicrotasks();
    await h.finish('a');
    await h.finish('b');
    assert.deepEqual(h.calls, ['a', 'b']);
  });

  it('never runs a key concurrently with itself; an add during processing runs it once more afterwards', async () => {
    const clock = new ManualClock();
    const h = controlledHandler();
    const q = createWorkQueue({ clock, handler: h.handler, concurrency: 4 });
    q.start();
    q.add('a');
    await flushMicrotasks();
    q.add('a');
    q.add('a');
    await flushMicrotasks();
    assert.deepEqual(h.calls, ['a']);
    assert.equal(q.active(), 1);
    await h.finish('a');
    assert.deepEqual(h.calls, ['a', 'a']);
    await h.finish('a');
    assert.deepEqual(h.calls, ['a', 'a']);
    assert.equal(h.stats().sameKeyOverlap, false);
  });

  it('limits concurrency across keys and processes in FIFO order', async () => {
    const clock = new ManualClock();
    const h = controlledHandler();
    const q = createWorkQueue({ clock, handler: h.handler, concurrency: 2 });
    for (const k of ['a', 'b', 'c', 'd']) q.add(k);
    q.start();
    await flushMicrotasks();
    assert.deepEqual(h.calls, ['a', 'b']);
    await h.finish('b');
    assert.deepEqual(h.calls, ['a', 'b', 'c']);
    await h.finish('a');
    await h.finish('c');
    await h.finish('d');
    assert.deepEqual(h.calls, ['a', 'b', 'c', 'd']);
    assert.equal(h.stats().maxConcurrent, 2);
  });

  it('keeps the earliest addAfter', async () => {
    const clock = new ManualClock();
    const h = controlledHandler();
    const q = createWorkQueue({ clock, handler: h.handler });
    q.start();
    q.addAfter('a', 10_000);
    q.addAfter('a', 3_000);
    q.addAfter('a', 8_000);
    assert.equal(q.delayed(), 1);
    await clock.advance(2_999);
    assert.deepEqual(h.calls, []);
    await clock.advance(1);
    assert.deepEqual(h.calls, ['a']);
    await h.finish('a');
    await clock.advance(20_000);
    assert.deepEqual(h.calls, ['a']);
  });

  it('lets an immediate add supersede a delayed one, and ignores addAfter for a ready key', async () => {
    const clock = new ManualClock();
    const h = controlledHandler();
    const q = createWorkQueue({ clock, handler: h.handler });
    q.addAfter('a', 5_000);
    q.add('a');
    assert.equal(q.delayed(), 0);
    q.addAfter('a', 1_000);
    assert.equal(q.delayed(), 0);
    q.start();
    await flushMicrotasks();
    await h.finish('a');
    await clock.advance(10_000);
    assert.deepEqual(h.calls, ['a']);
  });

  it('backs off a failing key exponentially and forgets failures on success', async () => {
    const clock = new ManualClock();
    const h = controlledHandler();
    const q = createWorkQueue({ clock, handler: h.handler });
    q.start();
    q.add('a');
    await flushMicrotasks();
    const times: number[] = [];
    const t0 = clock.now();
    for (let i = 0; i < 5; i++) {
      times.push(clock.now() - t0);
      await h.finish('a', { kind: 'retry' });
      assert.equal(q.numRequeues('a'), i + 1);
      const due = clock.nextDue();
      assert.ok(due !== undefined);
      await clock.advance(due - clock.now());
    }
    assert.deepEqual(times, [0, 5, 15, 35, 75]);
    await h.finish('a', { kind: 'done' });
    assert.equal(q.numRequeues('a'), 0);
  });

  it('caps the per-key delay at 1000 s', async () => {
    const clock = new ManualClock();
    const q = createWorkQueue({ clock, handler: async () => ({ kind: 'retry' }) });
    q.start();
    q.add('a');
    await flushMicrotasks();
    const delays: number[] = [];
    for (let i = 0; i < 21; i++) {
      const due = clock.nextDue();
      assert.ok(due !== undefined);
      delays.push(due - clock.now());
      await clock.advance(due - clock.now());
    }
    assert.deepEqual(delays.slice(0, 4), [5, 10, 20, 40]);
    assert.equal(delays[17], 655_360);
    assert.deepEqual(delays.slice(18), [1_000_000, 1_000_000, 1_000_000]);
  });

  it('requeues after the asked delay and forgets failures', async () => {
    const clock = new ManualClock();
    const h = controlledHandler();
    const q = createWorkQueue({ clock, handler: h.handler });
    q.start();
    q.add('a');
    await flushMicrotasks();
    await h.finish('a', { kind: 'retry' });
    await clock.advance(5);
    await h.finish('a', { kind: 'requeueAfter', ms: 15_000 });
    assert.equal(q.numRequeues('a'), 0);
    await clock.advance(14_999);
    assert.equal(h.calls.length, 2);
    await clock.advance(1);
    assert.equal(h.calls.length, 3);
  });

  it('treats a throwing handler as a retry', async () => {
    const clock = new ManualClock();
    let n = 0;
    const q = createWorkQueue({
      clock,
      handler: async () => {
        n++;
        throw new Error('boom');
      },
    });
    q.start();
    q.add('a');
    await flushMicrotasks();
    assert.equal(n, 1);
    assert.equal(q.numRequeues('a'), 1);
    await clock.advance(5);
    assert.equal(n, 2);
  });

  it('shutdown with drain finishes ready keys, drops delayed ones and refuses new adds', async () => {
    const clock = new ManualClock();
    const h = controlledHandler();
    const q = createWorkQueue({ clock, handler: h.handler });
    q.start();
    q.add('a');
    q.add('b');
    q.addAfter('c', 1000);
    await flushMicrotasks();
    let done = false;
    const stopped = q.shutdown({ drain: true }).then(() => {
      done = true;
    });
    q.add('d');
    await h.finish('a');
    assert.equal(done, false);
    await h.finish('b');
    await stopped;
    await clock.advance(5000);
    assert.deepEqual(h.calls, ['a', 'b']);
  });

  it('shutdown without drain waits only for running handlers', async () => {
    const clock = new ManualClock();
    const h = controlledHandler();
    const q = createWorkQueue({ clock, handler: h.handler });
    q.start();
    q.add('a');
    q.add('b');
    await flushMicrotasks();
    let done = false;
    const stopped = q.shutdown().then(() => {
      done = true;
    });
    await flushMicrotasks();
    assert.equal(done, false);
    await h.finish('a', { kind: 'retry' });
    await stopped;
    assert.deepEqual(h.calls, ['a']);
    assert.equal(q.delayed(), 0);
  });

  it('reports metrics hooks', async () => {
    const clock = new ManualClock();
    const h = controlledHandler();
    const seen: string[] = [];
    const q = createWorkQueue({
      clock,
      handler: h.handler,
      hooks: {
        onAdd: () => seen.push('add'),
        onRetry: () => seen.push('retry'),
        onQueueLatency: (ms) => seen.push(`wait:${ms}`),
        onWorkDuration: (ms) => seen.push(`work:${ms}`),
      },
    });
    q.add('a');
    await clock.advance(7);
    q.start();
    await flushMicrotasks();
    await clock.advance(3);
    await h.finish('a', { kind: 'retry' });
    assert.deepEqual(seen, ['add', 'wait:7', 'work:3', 'retry']);
  });

  it('yields to the event loop during a long pass of handlers that do no I/O', async () => {
    const total = 300;
    let done = 0;
    const doneWhenTimerFired: number[] = [];
    const q = createWorkQueue({
      clock: systemClock,
      concurrency: 4,
      sliceBudgetMs: 5,
      handler: async () => {
        const until = performance.now() + 1; // 1 ms of synchronous work, then done without I/O
        while (performance.now() < until) {
          // busy
        }
        done++;
        return { kind: 'done' };
      },
    });
    for (let i = 0; i < total; i++) q.add(`k${i}`);
    const ticker = setInterval(() => doneWhenTimerFired.push(done), 0);
    q.start();
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (done < total) return;
        clearInterval(check);
        resolve();
      }, 1);
    });
    clearInterval(ticker);
    await q.shutdown();
    // Timers ran while the pass was under way, not only before and after it.
    const during = doneWhenTimerFired.filter((n) => n > 0 && n < total);
    assert.ok(
      during.length >= 10,
      `timers fired mid-pass ${during.length} times: ${doneWhenTimerFired.join(',')}`,
    );
  });
});

describe('createWorkQueue urgent keys', () => {
  it('takes urgent keys before ordinary ones, promotes a queued key, and keeps urgency across a busy key', async () => {
    const clock = new ManualClock(0);
    const order: string[] = [];
    let release: (() => void) | undefined;
    const q = createWorkQueue({
      clock,
      concurrency: 1,
      handler: async (key) => {
        order.push(key);
        if (key === 'busy' && release === undefined) await new Promise<void>((r) => (release = r));
        return { kind: 'done' };
      },
    });
    q.add('busy');
    q.start();
    await flushMicrotasks();
    q.add('a');
    q.add('b');
    q.add('c', true);
    q.add('b', true); // promoted
    q.add('busy', true); // busy now: runs again, urgently, after this run
    q.add('d');
    assert.equal(q.depth(), 4);
    release?.();
    for (let i = 0; i < 10; i++) await flushMicrotasks();
    assert.deepEqual(order, ['busy', 'c', 'b', 'busy', 'a', 'd']);
    await q.shutdown();
  });
});

describe('createWorkQueue reasons', () => {
  it('hands the handler the first reason since the key was last taken, and retry/requeue for its own re-adds', async () => {
    const clock = new ManualClock(0);
    const seen: string[] = [];
    let release: (() => void) | undefined;
    const results: WorkResult[] = [{ kind: 'done' }, { kind: 'retry' }, { kind: 'requeueAfter', ms: 100 }];
    const q = createWorkQueue({
      clock,
      handler: async (key, reason) => {
        seen.push(`${key}:${reason}`);
        if (key === 'busy' && release === undefined) await new Promise<void>((r) => (release = r));
        return key === 'x' ? (results.shift() ?? { kind: 'done' }) : { kind: 'done' };
      },
    });
    q.add('x', false, 'agent-changed');
    q.add('x', true, 'job-changed'); // merged: the first reason stays
    q.add('y'); // no reason given
    q.start();
    await flushMicrotasks();
    assert.deepEqual(seen, ['x:agent-changed', 'y:unspecified']);
    q.add('x', false, 'poll'); // this run of x fails: retried after 5 ms, then it asks for 100 ms
    await flushMicrotasks();
    assert.deepEqual(seen.slice(2), ['x:poll']);
    await clock.advance(5);
    await flushMicrotasks();
    assert.deepEqual(seen.slice(3), ['x:retry']);
    await clock.advance(100);
    await flushMicrotasks();
    assert.deepEqual(seen.slice(4), ['x:requeue']);
    // A key added while it is processed keeps that add's reason for its next run.
    q.add('busy', false, 'term-start');
    await flushMicrotasks();
    q.add('busy', false, 'station-changed');
    q.add('busy', false, 'policy-changed');
    release?.();
    for (let i = 0; i < 5; i++) await flushMicrotasks();
    assert.deepEqual(seen.slice(5), ['busy:term-start', 'busy:station-changed']);
    // A delayed add that fires carries its own reason.
    q.addAfter('z', 50, 'batch-ended');
    await clock.advance(50);
    await flushMicrotasks();
    assert.deepEqual(seen.slice(7), ['z:batch-ended']);
    await q.shutdown();
  });
});
