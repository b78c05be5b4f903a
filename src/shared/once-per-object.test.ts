import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { oncePerObject } from './once-per-object.ts';

describe('oncePerObject', () => {
  it('runs once per object, again for a new object, and always for non-objects', () => {
    let calls = 0;
    const f = oncePerObject((v) => {
      calls++;
      return typeof v === 'object' ? 'obj' : String(v);
    });
    const a = { x: 1 };
    assert.equal(f(a), 'obj');
    assert.equal(f(a), 'obj');
    assert.equal(calls, 1);
    assert.equal(f({ x: 1 }), 'obj');
    assert.equal(calls, 2);
    assert.equal(f(7), '7');
    assert.equal(f(7), '7');
    assert.equal(calls, 4);
  });
});
