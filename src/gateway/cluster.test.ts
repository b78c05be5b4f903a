// The gateway's reads of Secrets, against a fake API server on a manual clock: the credential key is waited for
// (never created) and refused when short; a namespace's agent-secrets is read by name, kept for a while, trimmed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeTransport, type FakeReply } from '../kube/fake-transport.ts';
import { ManualClock } from '../runtime/clock.ts';
import { createLogger } from '../shared/log.ts';
import { keepHmacKey, VENDOR_KEYS_TTL_MS, vendorKeys } from './cluster.ts';

const NOT_FOUND: FakeReply = { status: 404, body: { kind: 'Status', reason: 'NotFound', code: 404 } };
const b64 = (s: string | Uint8Array) => Buffer.from(s).toString('base64');

describe('keepHmacKey', () => {
  it('waits for the Secret the controller makes, refuses a short key, never creates one', async () => {
    let data: Record<string, string> | undefined;
    const transport = createFakeTransport({
      request: (req) =>
        req.path === '/api/v1/namespaces/ai-agents/secrets/agent-controller-gateway' && data !== undefined
          ? { status: 200, body: { metadata: { name: 'agent-controller-gateway' }, data } }
          : NOT_FOUND,
    });
    const clock = new ManualClock();
    const lines: string[] = [];
    const keys: Uint8Array[] = [];
    const stop = new AbortController();
    const loop = keepHmacKey({
      transport,
      namespace: 'ai-agents',
      clock,
      logger: createLogger('info', (l) => void lines.push(l)),
      signal: stop.signal,
      onKey: (k) => void keys.push(k),
    });
    await clock.advance(0);
    assert.deepEqual(keys, []);
    data = { 'hmac-key': b64(new Uint8Array(8).fill(1)) };
    await clock.advance(2000);
    assert.deepEqual(keys, [], 'an 8-byte key is refused');
    const key = new Uint8Array(32).fill(9);
    data = { 'hmac-key': b64(key) };
    await clock.advance(2000);
    assert.deepEqual(keys, [key]);
    stop.abort();
    await loop;
    assert.ok(
      transport.requests.every((r) => r.method === 'GET'),
      'only reads',
    );
    assert.ok(!lines.join('').includes(b64(key)), 'the key is never logged');
  });
});

describe('vendorKeys', () => {
  it('reads agent-secrets by name, keeps it for a while, trims the value, and answers undefined for a missing key', async () => {
    let value = 'sk-one\n';
    let exists = true;
    const transport = createFakeTransport({
      request: (req) =>
        req.path === '/api/v1/namespaces/team-a/secrets/agent-secrets' && exists
          ? { status: 200, body: { metadata: { name: 'agent-secrets' }, data: { K: b64(value) } } }
          : NOT_FOUND,
    });
    let now = 0;
    const keys = vendorKeys({ transport, now: () => now });
    assert.deepEqual(await keys.get('team-a', 'K'), { ok: true, value: 'sk-one' });
    value = 'sk-two';
    assert.deepEqual(await keys.get('team-a', 'K'), { ok: true, value: 'sk-one' }, 'kept');
    assert.deepEqual(await keys.get('team-a', 'OTHER'), { ok: true, value: undefined });
    now += VENDOR_KEYS_TTL_MS;
    assert.deepEqual(await keys.get('team-a', 'K'), { ok: true, value: 'sk-two' }, 'read again');
    assert.equal(transport.requests.length, 2);
    exists = false;
    now += VENDOR_KEYS_TTL_MS;
    assert.deepEqual(await keys.get('team-a', 'K'), { ok: true, value: undefined }, 'no Secret: no key');
    assert.deepEqual(await keys.get('team-a', 'K'), { ok: true, value: undefined });
    assert.equal(transport.requests.length, 3, 'an absent Secret is kept too');
    assert.deepEqual(await keys.get('team-b', 'K'), { ok: true, value: undefined });
    assert.equal(transport.requests.at(-1)?.path, '/api/v1/namespaces/team-b/secrets/agent-secrets');
  });
});
