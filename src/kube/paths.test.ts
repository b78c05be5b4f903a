import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { apiVersionOf, listQuery, queryString, resourcePath, watchQuery } from './paths.ts';
import { CONFIG_MAPS, JOBS, LEASES, NAMESPACES } from './resources.ts';

const AGENTS = {
  group: 'agents.re-cinq.com',
  version: 'v1alpha1',
  plural: 'agents',
  kind: 'Agent',
  namespaced: true,
};

describe('resourcePath', () => {
  it('builds core-group collection, object and subresource paths', () => {
    assert.equal(resourcePath(CONFIG_MAPS, { namespace: 'ns1' }), '/api/v1/namespaces/ns1/configmaps');
    assert.equal(
      resourcePath(CONFIG_MAPS, { namespace: 'ns1', name: 'cm' }),
      '/api/v1/namespaces/ns1/configmaps/cm',
    );
    assert.equal(
      resourcePath({ ...CONFIG_MAPS, plural: 'pods' }, { namespace: 'a', name: 'p', subresource: 'log' }),
      '/api/v1/namespaces/a/pods/p/log',
    );
  });
  it('builds named-group paths, namespaced and across all namespaces', () => {
    assert.equal(resourcePath(JOBS, { namespace: 'x' }), '/apis/batch/v1/namespaces/x/jobs');
    assert.equal(resourcePath(JOBS), '/apis/batch/v1/jobs');
    assert.equal(
      resourcePath(AGENTS, { namespace: 'x', name: 'a1', subresource: 'status' }),
      '/apis/agents.re-cinq.com/v1alpha1/namespaces/x/agents/a1/status',
    );
    assert.equal(
      resourcePath(LEASES, { namespace: 'kube-system', name: 'l' }),
      '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l',
    );
  });
  it('addresses cluster-scoped objects without a namespace segment', () => {
    assert.equal(resourcePath(NAMESPACES, { name: 'default' }), '/api/v1/namespaces/default');
    assert.throws(() => resourcePath(NAMESPACES, { namespace: 'x', name: 'y' }), /cluster-scoped/);
  });
  it('refuses a subresource without a name', () => {
    assert.throws(() => resourcePath(JOBS, { namespace: 'x', subresource: 'status' }), /needs a name/);
  });
  it('refuses an empty name (the path of the collection: a DELETE would delete them all)', () => {
    assert.throws(() => resourcePath(AGENTS, { namespace: 'x', name: '' }), /empty agents name/);
    assert.throws(() => resourcePath(AGENTS, { namespace: 'x', name: '', subresource: 'status' }), /empty/);
  });
  it('percent-encodes path segments', () => {
    assert.equal(
      resourcePath(CONFIG_MAPS, { namespace: 'a b', name: 'x/y' }),
      '/api/v1/namespaces/a%20b/configmaps/x%2Fy',
    );
  });
  it('derives apiVersion', () => {
    assert.equal(apiVersionOf(CONFIG_MAPS), 'v1');
    assert.equal(apiVersionOf(JOBS), 'batch/v1');
  });
});

describe('queryString', () => {
  it('is empty for no or only-undefined values', () => {
    assert.equal(queryString(undefined), '');
    assert.equal(queryString({ a: undefined }), '');
  });
  it('encodes values and keeps order', () => {
    assert.equal(
      queryString({ labelSelector: 'app=x,tier in (a,b)', limit: 5, watch: true }),
      '?labelSelector=app%3Dx%2Ctier%20in%20(a%2Cb)&limit=5&watch=true',
    );
  });
  it('encodes continue tokens with reserved characters', () => {
    assert.equal(
      queryString({ continue: 'eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzfQ==' }),
      '?continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzfQ%3D%3D',
    );
  });
});

describe('listQuery / watchQuery', () => {
  it('leaves out empty selectors and tokens', () => {
    assert.deepEqual(JSON.parse(JSON.stringify(listQuery({ labelSelector: '', limit: 500, continue: '' }))), {
      limit: 500,
    });
  });
  it('carries every list option', () => {
    assert.equal(
      queryString(
        listQuery({ labelSelector: 'a=b', fieldSelector: 'metadata.name=x', limit: 2, continue: 'tok' }),
      ),
      '?labelSelector=a%3Db&fieldSelector=metadata.name%3Dx&limit=2&continue=tok',
    );
  });
  it('asks for bookmarks by default and carries rv and timeout', () => {
    assert.equal(
      queryString(watchQuery({ resourceVersion: '123', timeoutSeconds: 310, labelSelector: 'x=y' })),
      '?watch=1&labelSelector=x%3Dy&resourceVersion=123&allowWatchBookmarks=true&timeoutSeconds=310',
    );
    assert.equal(
      queryString(watchQuery({ allowWatchBookmarks: false })),
      '?watch=1&allowWatchBookmarks=false',
    );
  });
});
