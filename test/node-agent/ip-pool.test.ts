import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IpPool } from './ip-pool.ts';

describe('IpPool', () => {
  it('hands out distinct loopback addresses and the same one again to the same owner', () => {
    const pool = new IpPool(2, 4);
    assert.equal(pool.allocate('a'), '127.0.0.2');
    assert.equal(pool.allocate('b'), '127.0.0.3');
    assert.equal(pool.allocate('a'), '127.0.0.2');
    assert.equal(pool.inUse, 2);
  });
  it('reuses freed addresses as late as possible and reports exhaustion', () => {
    const pool = new IpPool(2, 4);
    pool.allocate('a');
    pool.allocate('b');
    pool.release('a');
    assert.equal(pool.allocate('c'), '127.0.0.4', 'round-robin: not the just-freed .2');
    assert.equal(pool.allocate('d'), '127.0.0.2');
    assert.equal(pool.allocate('e'), undefined);
    pool.release('b');
    pool.release('nobody');
    assert.equal(pool.allocate('e'), '127.0.0.3');
  });
  it('starts round-robin where told', () => {
    const pool = new IpPool(2, 4, 4);
    assert.deepEqual(
      [pool.allocate('a'), pool.allocate('b'), pool.allocate('c')],
      ['127.0.0.4', '127.0.0.2', '127.0.0.3'],
    );
    assert.throws(() => new IpPool(2, 4, 5));
  });
  it('rejects ranges outside 127.0.0.1-254', () => {
    assert.throws(() => new IpPool(0, 10));
    assert.throws(() => new IpPool(10, 255));
    assert.throws(() => new IpPool(10, 5));
  });
});
