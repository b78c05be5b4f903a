import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { S3Client } from '../store/s3/index.ts';
import { checkPrefix, S3SessionStore, sessionPrefix, turnKey, turnOfKey } from './store.ts';

const ref = { namespace: 'team-a', uid: '0b6c7f8e-1111-2222-3333-444455556666' };

describe('session store keys', () => {
  it('names turns <prefix>sessions/<namespace>/<uid>/turn-<NNNNNN>.tar.gz', () => {
    assert.equal(sessionPrefix('', ref), 'sessions/team-a/0b6c7f8e-1111-2222-3333-444455556666/');
    assert.equal(
      turnKey('prod/', ref, 7),
      'prod/sessions/team-a/0b6c7f8e-1111-2222-3333-444455556666/turn-000007.tar.gz',
    );
    assert.equal(
      turnKey('', ref, 999_999),
      'sessions/team-a/0b6c7f8e-1111-2222-3333-444455556666/turn-999999.tar.gz',
    );
  });

  it('reads the turn back from a key of the same session only', () => {
    const p = sessionPrefix('', ref);
    assert.equal(turnOfKey(p, `${p}turn-000012.tar.gz`), 12);
    assert.equal(turnOfKey(p, `${p}turn-000000.tar.gz`), undefined);
    assert.equal(turnOfKey(p, `${p}turn-12.tar.gz`), undefined);
    assert.equal(turnOfKey(p, `${p}notes.txt`), undefined);
    assert.equal(turnOfKey(p, `${p}sub/turn-000001.tar.gz`), undefined);
    assert.equal(turnOfKey(p, 'sessions/team-b/x/turn-000001.tar.gz'), undefined);
  });

  it('accepts an empty prefix or one ending in /', () => {
    assert.equal(checkPrefix(''), undefined);
    assert.equal(checkPrefix('prod/'), undefined);
    assert.equal(checkPrefix('a/b/'), undefined);
    assert.match(checkPrefix('prod') ?? '', /end with \//);
    assert.match(checkPrefix('/prod/') ?? '', /start with \//);
    assert.match(checkPrefix('../') ?? '', /segment/);
  });

  it('refuses a bad reference or turn before any request', async () => {
    // Nothing listens on port 1: a request would be a NetworkError, not `invalid`.
    const store = new S3SessionStore({
      client: new S3Client({
        endpoint: 'http://127.0.0.1:1',
        bucket: 'b',
        region: 'us-east-1',
        credentials: { accessKeyId: 'a', secretAccessKey: 's' },
      }),
      prefix: '',
    });
    const archive = new Uint8Array(1);
    const meta = { sessionId: 's', vendor: 'claude' };
    for (const r of [
      await store.saveTurn({ namespace: 'Team', uid: ref.uid }, 1, archive, meta),
      await store.saveTurn({ namespace: 'team-a', uid: '../x' }, 1, archive, meta),
      await store.saveTurn(ref, 0, archive, meta),
      await store.saveTurn(ref, 1_000_000, archive, meta),
      await store.saveTurn(ref, 1.5, archive, meta),
      await store.saveTurn(ref, 1, archive, { sessionId: 'é', vendor: 'claude' }),
      await store.loadTurn(ref, -1),
      await store.copyTurn(ref, 1, { namespace: 'x', uid: '' }),
      await store.deleteSession({ namespace: '', uid: ref.uid }),
    ])
      assert.equal(!r.ok && r.error.kind, 'invalid');
    const network = await store.listTurns(ref);
    assert.equal(!network.ok && network.error.kind, 's3');
    assert.equal(!network.ok && network.error.kind === 's3' && network.error.s3.code, 'NetworkError');
  });
});
