import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { headersFromSecretEnv, parseHeaderLines } from './headers.ts';

describe('header lines', () => {
  it('splits at the first colon, trims, drops blank lines', () => {
    assert.deepEqual(parseHeaderLines('Authorization: Bearer a:b\n\n  X-Team :  core  \r\n'), {
      headers: [
        ['Authorization', 'Bearer a:b'],
        ['X-Team', 'core'],
      ],
      dropped: 0,
    });
  });

  it('drops and counts malformed lines', () => {
    const r = parseHeaderLines('no colon here\nBad Name: x\nEmpty:\nOk: 1\nCtl: a\u0001b');
    assert.deepEqual(r.headers, [['Ok', '1']]);
    assert.equal(r.dropped, 4);
  });

  it('reads the env var named by headers_secret; unset gives no headers', () => {
    assert.deepEqual(headersFromSecretEnv({ S: 'A: 1' }, 'S').headers, [['A', '1']]);
    assert.deepEqual(headersFromSecretEnv({}, 'S'), { headers: [], dropped: 0 });
    assert.deepEqual(headersFromSecretEnv({ S: 'A: 1' }, undefined), { headers: [], dropped: 0 });
  });
});
