import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTombstones } from './execute.ts';

describe('tombstones of Agents this controller deleted', () => {
  it('remembers a uid until its DELETED event removes it', () => {
    let now = 0;
    const t = createTombstones(() => now, 1000);
    assert.equal(t.has('u1'), false);
    t.add('u1');
    assert.equal(t.has('u1'), true);
    now = 500;
    assert.equal(t.has('u1'), true);
    t.remove('u1');
    assert.equal(t.has('u1'), false);
  });

  it('forgets a uid after the ttl in case the event was missed', () => {
    let now = 0;
    const t = createTombstones(() => now, 1000);
    t.add('u2');
    now = 1000;
    assert.equal(t.has('u2'), false);
  });
});
