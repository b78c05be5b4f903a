import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeObject } from '../kube/meta.ts';
import { Store } from './store.ts';

const obj = (name: string, rv: string, ns = 'n'): KubeObject => ({
  metadata: { name, namespace: ns, resourceVersion: rv },
});

describe('Store', () => {
  it('is not ready until the first replace, then resolves ready', async () => {
    const s = new Store<KubeObject>();
    assert.equal(s.hasSynced(), false);
    let ready = false;
    void s.ready.then(() => {
      ready = true;
    });
    s.upsert(obj('a', '1'));
    await Promise.resolve();
    assert.equal(ready, false);
    s.replace([]);
    await s.ready;
    assert.equal(s.hasSynced(), true);
  });

  it('upserts by namespace/name and reports added vs modified with the old object', () => {
    const s = new Store<KubeObject>();
    assert.deepEqual(s.upsert(obj('a', '1')), { type: 'added', object: obj('a', '1') });
    assert.deepEqual(s.upsert(obj('a', '2')), {
      type: 'modified',
      old: obj('a', '1'),
      object: obj('a', '2'),
    });
    s.upsert(obj('a', '1', 'other'));
    assert.deepEqual(s.keys().sort(), ['n/a', 'other/a']);
    assert.equal(s.get('n/a')?.metadata.resourceVersion, '2');
    assert.deepEqual(s.delete('n/a'), obj('a', '2'));
    assert.equal(s.delete('n/a'), undefined);
    assert.equal(s.size, 1);
  });

  it('replaces everything on a relist and reports the difference', () => {
    const s = new Store<KubeObject>();
    s.replace([obj('keep', '1'), obj('change', '1'), obj('gone', '1')]);
    const changes = s.replace([obj('keep', '1'), obj('change', '2'), obj('new', '1')]);
    assert.deepEqual(changes, [
      { type: 'modified', old: obj('change', '1'), object: obj('change', '2') },
      { type: 'added', object: obj('new', '1') },
      { type: 'deleted', object: obj('gone', '1') },
    ]);
    assert.deepEqual(s.keys().sort(), ['n/change', 'n/keep', 'n/new']);
  });

  it('keeps the cached object of an unchanged resourceVersion across a relist (same identity)', () => {
    const s = new Store<KubeObject>();
    const first = obj('keep', '1');
    s.replace([first]);
    s.replace([obj('keep', '1')]);
    assert.equal(s.get('n/keep'), first);
    const changed = obj('keep', '2');
    s.replace([changed]);
    assert.equal(s.get('n/keep'), changed);
  });

  it('keys cluster-scoped objects by name', () => {
    const s = new Store<KubeObject>();
    s.upsert({ metadata: { name: 'node-1' } });
    assert.deepEqual(s.keys(), ['node-1']);
  });
});
