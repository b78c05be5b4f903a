import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as v from 'valibot';
import { createFakeTransport, type FakeRequest } from './fake-transport.ts';
import { listAll } from './list.ts';
import { KubeObjectSchema } from './meta.ts';
import { CONFIG_MAPS } from './resources.ts';

const cm = (name: string) => ({ metadata: { name, namespace: 'n', resourceVersion: '1' }, data: {} });
const page = (names: string[], cont: string | undefined, rv = '100') => ({
  status: 200,
  body: {
    kind: 'ConfigMapList',
    metadata: { resourceVersion: rv, ...(cont ? { continue: cont } : {}) },
    items: names.map(cm),
  },
});

describe('listAll', () => {
  it('follows continue tokens with the page size and returns the list resourceVersion', async () => {
    const t = createFakeTransport({
      request: (req: FakeRequest) => {
        if (req.query.continue === undefined) return page(['a', 'b'], 't1');
        if (req.query.continue === 't1') return page(['c', 'd'], 't2');
        return page(['e'], undefined, '100');
      },
    });
    const r = await listAll(t, CONFIG_MAPS, KubeObjectSchema, {
      namespace: 'n',
      limit: 2,
      labelSelector: 'x=y',
    });
    assert.ok(r.ok);
    assert.deepEqual(
      r.value.items.map((i) => i.metadata.name),
      ['a', 'b', 'c', 'd', 'e'],
    );
    assert.equal(r.value.resourceVersion, '100');
    assert.equal(r.value.pages, 3);
    assert.equal(r.value.restarts, 0);
    assert.deepEqual(
      t.requests.map((q) => [q.query.limit, q.query.continue, q.query.labelSelector]),
      [
        [2, undefined, 'x=y'],
        [2, 't1', 'x=y'],
        [2, 't2', 'x=y'],
      ],
    );
    assert.equal(r.value.items[0]?.apiVersion, 'v1');
    assert.equal(r.value.items[0]?.kind, 'ConfigMap');
  });

  it('restarts from scratch when a continue token expired (410), discarding earlier pages', async () => {
    let expired = false;
    const t = createFakeTransport({
      request: (req) => {
        if (req.query.continue === undefined)
          return page(expired ? ['a2', 'b2'] : ['a', 'b'], 't1', expired ? '200' : '100');
        if (!expired) {
          expired = true;
          return {
            status: 410,
            body: {
              kind: 'Status',
              code: 410,
              reason: 'Expired',
              message: 'expired',
              metadata: { continue: 'inconsistent' },
            },
          };
        }
        return page(['c2'], undefined, '200');
      },
    });
    const r = await listAll(t, CONFIG_MAPS, KubeObjectSchema, { namespace: 'n', limit: 2 });
    assert.ok(r.ok);
    assert.deepEqual(
      r.value.items.map((i) => i.metadata.name),
      ['a2', 'b2', 'c2'],
    );
    assert.equal(r.value.restarts, 1);
    assert.equal(r.value.resourceVersion, '200');
    assert.ok(!t.requests.some((q) => q.query.continue === 'inconsistent'));
  });

  it('gives up after maxRestarts expired tokens', async () => {
    const t = createFakeTransport({
      request: (req) =>
        req.query.continue === undefined
          ? page(['a'], 't')
          : { status: 410, body: { kind: 'Status', code: 410, reason: 'Expired' } },
    });
    const r = await listAll(t, CONFIG_MAPS, KubeObjectSchema, { maxRestarts: 2 });
    assert.ok(!r.ok && r.error.kind === 'api' && r.error.code === 410);
    assert.equal(t.requests.length, 6);
  });

  it('skips and reports items that fail the schema', async () => {
    const t = createFakeTransport({
      request: () => ({
        status: 200,
        body: {
          metadata: { resourceVersion: '5' },
          items: [cm('good'), { metadata: { name: 'bad', namespace: 'n' }, data: 7 }],
        },
      }),
    });
    const schema = v.looseObject({ ...KubeObjectSchema.entries, data: v.record(v.string(), v.string()) });
    const r = await listAll(t, CONFIG_MAPS, schema);
    assert.ok(r.ok);
    assert.deepEqual(
      r.value.items.map((i) => i.metadata.name),
      ['good'],
    );
    assert.deepEqual(
      r.value.invalid.map((i) => [i.name, i.namespace]),
      [['bad', 'n']],
    );
  });

  it('passes other errors through and fails on a list without resourceVersion', async () => {
    const forbidden = createFakeTransport({
      request: () => ({ status: 403, body: { kind: 'Status', code: 403, reason: 'Forbidden' } }),
    });
    const r = await listAll(forbidden, CONFIG_MAPS, KubeObjectSchema);
    assert.ok(!r.ok && r.error.kind === 'api' && r.error.reason === 'Forbidden');
    const noRv = createFakeTransport({ request: () => ({ status: 200, body: { items: [] } }) });
    const r2 = await listAll(noRv, CONFIG_MAPS, KubeObjectSchema);
    assert.ok(!r2.ok && r2.error.kind === 'decode');
  });

  it('uses the object `reuse` returns instead of validating the item again', async () => {
    const t = createFakeTransport({ request: () => page(['a', 'b'], undefined) });
    const cached = { metadata: { name: 'a', namespace: 'n', resourceVersion: '1' }, marker: 'cached' };
    let validated = 0;
    const counting = v.pipe(
      KubeObjectSchema,
      v.transform((o) => {
        validated++;
        return o;
      }),
    );
    const r = await listAll(t, CONFIG_MAPS, counting, {
      namespace: 'n',
      reuse: (raw) => ((raw.metadata as { name?: string }).name === 'a' ? cached : undefined),
    });
    assert.ok(r.ok);
    assert.equal(r.value.items[0], cached, 'the very same object');
    assert.equal(r.value.items[1]?.metadata.name, 'b');
    assert.equal(validated, 1, 'only b was validated');
  });
});
