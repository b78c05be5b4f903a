import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { namespacePrefix } from './namespace.ts';
import { PollTimeoutError, pollUntil } from './poll.ts';

describe('pollUntil', () => {
  it('returns the first defined value and treats throws as "not yet"', async () => {
    let calls = 0;
    const value = await pollUntil(
      () => {
        calls++;
        if (calls === 1) throw new Error('transient');
        return calls >= 3 ? `done after ${calls}` : undefined;
      },
      { intervalMs: 1 },
    );
    assert.equal(value, 'done after 3');
  });
  it('fails at the deadline with the description and the last observation', async () => {
    await assert.rejects(
      pollUntil(
        (observe) => {
          observe({ phase: 'Pending' });
          return undefined;
        },
        { timeoutMs: 30, intervalMs: 5, description: 'the pod to run' },
      ),
      (e: unknown) =>
        e instanceof PollTimeoutError && /the pod to run/.test(e.message) && /Pending/.test(e.message),
    );
  });
});

describe('namespacePrefix', () => {
  it('makes DNS labels', () => {
    assert.equal(namespacePrefix('Foundation Job!'), 'foundation-job');
    assert.equal(namespacePrefix('---'), 'test');
    assert.equal(namespacePrefix('a'.repeat(60)).length, 40);
    assert.equal(namespacePrefix(`${'a'.repeat(39)}-b`), 'a'.repeat(39));
  });
});
