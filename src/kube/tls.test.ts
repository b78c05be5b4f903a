import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { describe, it } from 'node:test';
import { sameTls, tlsOptions } from './tls.ts';

describe('sameTls', () => {
  it('compares PEM strings and bytes by content', () => {
    assert.equal(sameTls({ ca: 'A', cert: 'B' }, { ca: 'A', cert: new TextEncoder().encode('B') }), true);
    assert.equal(sameTls({ ca: 'A' }, { ca: 'B' }), false);
    assert.equal(sameTls({ ca: 'A' }, { ca: 'A', rejectUnauthorized: false }), false);
    assert.equal(sameTls({}, {}), true);
  });
});

describe('tlsOptions', () => {
  it('passes PEM strings as they are, bytes as a Buffer, and leaves out what is not set', () => {
    const opts = tlsOptions({ ca: 'CA', key: new TextEncoder().encode('K'), servername: 'api' });
    assert.deepEqual(opts, { ca: 'CA', key: Buffer.from('K'), servername: 'api' });
    assert.ok(Buffer.isBuffer(opts.key));
    assert.deepEqual(tlsOptions({ rejectUnauthorized: false }), { rejectUnauthorized: false });
    assert.deepEqual(tlsOptions({}), {});
  });
});
