import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runPool } from './http.ts';

/** A task whose completion the test controls, to observe how many run at once. */
function gate() {
  let open!: () => void;
  const done = new Promise<void>((r) => {
    open = r;
  });
  return { done, open };
}

describe('runPool', () => {
  it('never has more than `concurrency` tasks in flight and starts them in index order', async () => {
    const started: number[] = [];
    const gates = Array.from({ length: 7 }, gate);
    let inFlight = 0;
    let peak = 0;
    const pool = runPool(7, 3, async (i) => {
      started.push(i);
      inFlight++;
      peak = Math.max(peak, inFlight);
      await gates[i]?.done;
      inFlight--;
    });
    await Promise.resolve();
    assert.deepEqual(started, [0, 1, 2]);
    for (const g of gates) {
      g.open();
      await new Promise((r) => setImmediate(r));
    }
    const errors = await pool;
    assert.equal(errors.size, 0);
    assert.deepEqual(started, [0, 1, 2, 3, 4, 5, 6]);
    assert.equal(peak, 3);
  });

  it('a failing task does not stop the others; its error is returned by index', async () => {
    const ran: number[] = [];
    const errors = await runPool(4, 2, async (i) => {
      ran.push(i);
      if (i === 1) throw new Error('nope');
    });
    assert.deepEqual(ran, [0, 1, 2, 3]);
    assert.deepEqual([...errors.keys()], [1]);
  });

  it('an aborted signal stops starting new tasks', async () => {
    const ac = new AbortController();
    const ran: number[] = [];
    await runPool(
      10,
      1,
      async (i) => {
        ran.push(i);
        if (i === 2) ac.abort();
      },
      ac.signal,
    );
    assert.deepEqual(ran, [0, 1, 2]);
  });

  it('zero tasks resolve at once', async () => {
    assert.equal((await runPool(0, 5, async () => assert.fail('no task expected'))).size, 0);
  });
});
