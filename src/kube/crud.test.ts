import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createObject } from './crud.ts';
import { isAlreadyExists } from './errors.ts';
import { createFakeTransport } from './fake-transport.ts';
import { KubeObjectSchema } from './meta.ts';
import { SECRETS } from './resources.ts';

const secret = { metadata: { name: 's', namespace: 'ns' }, type: 'Opaque' };
const created = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'ns', uid: 'u' } };

describe('createObject', () => {
  it('POSTs the object with its apiVersion and kind, and the field manager, and no dryRun by default', async () => {
    const t = createFakeTransport({ request: () => ({ status: 201, body: created }) });
    const r = await createObject(t, SECRETS, 'ns', secret, KubeObjectSchema, { fieldManager: 'fm' });
    assert.ok(r.ok);
    assert.equal(t.requests.length, 1);
    const [req] = t.requests;
    assert.equal(req?.method, 'POST');
    assert.equal(req?.path, '/api/v1/namespaces/ns/secrets');
    assert.deepEqual(req?.query, { fieldManager: 'fm' });
    assert.deepEqual(req?.body, { apiVersion: 'v1', kind: 'Secret', ...secret });
  });

  it('with dryRun asks the API server for dryRun=All (nothing stored); a taken name is still AlreadyExists', async () => {
    const t = createFakeTransport({
      request: (req) =>
        req.query.dryRun === 'All'
          ? {
              status: 409,
              body: {
                kind: 'Status',
                reason: 'AlreadyExists',
                code: 409,
                message: 'secrets "s" already exists',
              },
            }
          : { status: 201, body: created },
    });
    const r = await createObject(t, SECRETS, 'ns', secret, KubeObjectSchema, { dryRun: true });
    assert.ok(!r.ok);
    assert.ok(isAlreadyExists(r.error));
    assert.deepEqual(t.requests[0]?.query, { fieldManager: undefined, dryRun: 'All' });
  });

  it('dryRun: false sends no dryRun', async () => {
    const t = createFakeTransport({ request: () => ({ status: 201, body: created }) });
    assert.ok((await createObject(t, SECRETS, 'ns', secret, KubeObjectSchema, { dryRun: false })).ok);
    assert.equal(t.requests[0]?.query.dryRun, undefined);
  });
});
