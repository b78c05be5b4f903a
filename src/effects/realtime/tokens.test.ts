import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { constantTimeEqual } from '../../shared/constant-time.ts';
import { promptTokenSecret, promptTokens } from './tokens.ts';

const key = (fill: number) => new Uint8Array(32).fill(fill);

describe('realtime prompt tokens', () => {
  it('two replicas with the same key derive the same token; another uid or key gives another', () => {
    const a = promptTokens(key(7));
    const b = promptTokens(key(7));
    const other = promptTokens(key(8));
    const t = a.tokenFor('uid-1');
    assert.equal(t, b.tokenFor('uid-1'));
    assert.notEqual(t, a.tokenFor('uid-2'));
    assert.notEqual(t, other.tokenFor('uid-1'));
    assert.match(t, /^[A-Za-z0-9_-]{43}$/, 'base64url of a SHA-256 HMAC');
  });

  it('constantTimeEqual compares content and length', () => {
    assert.equal(constantTimeEqual('abc', 'abc'), true);
    assert.equal(constantTimeEqual('abc', 'abd'), false);
    assert.equal(constantTimeEqual('abc', 'ab'), false);
    assert.equal(constantTimeEqual('', ''), true);
  });

  it('the per-run Secret is owned by its Agent and holds the token under `token`', () => {
    const s = promptTokenSecret({ namespace: 'ns', name: 'a', uid: 'u' }, 'agent-prompt-a', 'T') as {
      metadata: { name: string; namespace: string; ownerReferences: Record<string, unknown>[] };
      stringData: Record<string, string>;
    };
    assert.equal(s.metadata.name, 'agent-prompt-a');
    assert.equal(s.metadata.namespace, 'ns');
    assert.deepEqual(s.metadata.ownerReferences, [
      {
        apiVersion: 'agents.re-cinq.com/v1alpha1',
        kind: 'Agent',
        name: 'a',
        uid: 'u',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    assert.deepEqual(s.stringData, { token: 'T' });
  });
});
