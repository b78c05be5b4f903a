import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findNul, hasNul, nulInPod } from './nul.ts';

describe('findNul', () => {
  it('finds the first string with a NUL, naming array items by their name', () => {
    assert.equal(findNul({ a: 'x', b: ['y', 'z\u0000'] }), 'b[1]');
    assert.equal(
      findNul({
        spec: {
          containers: [
            {
              name: 'agent',
              env: [
                { name: 'A', value: 'ok' },
                { name: 'B', value: '\u0000' },
              ],
            },
          ],
        },
      }),
      'spec.containers[agent].env[B].value',
    );
    assert.equal(findNul({ 'k\u0000': 'v' }), 'k\u0000');
    assert.equal(findNul([{ name: 'n\u0000' }]), '[0].name');
  });

  it('finds nothing in clean values of any shape', () => {
    for (const v of [null, 1, true, 'text', [], {}, { a: [{ b: 'c\u0001' }] }])
      assert.equal(findNul(v), undefined);
  });

  it('hasNul and the message', () => {
    assert.equal(hasNul('a\u0000'), true);
    assert.equal(hasNul('a\u0001'), false);
    assert.match(nulInPod('x.y'), /^the run pod's x\.y contains a NUL character \(U\+0000\)/);
  });
});
