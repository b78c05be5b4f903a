import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isOlder } from './run-controller.ts';

const at = (resourceVersion: string) => ({ metadata: { resourceVersion } });

describe('isOlder', () => {
  it('compares etcd revisions as integers, never calling a non-integer version older', () => {
    assert.equal(isOlder(at('9'), at('10')), true, 'numerically, not as text');
    assert.equal(isOlder(at('10'), at('9')), false);
    assert.equal(isOlder(at('10'), at('10')), false);
    assert.equal(isOlder(at('123456789012345678901'), at('123456789012345678902')), true);
    assert.equal(isOlder(at('abc'), at('10')), false);
    assert.equal(isOlder(at('9'), at('')), false);
  });
});
