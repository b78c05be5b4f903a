import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFakeTransport } from './fake-transport.ts';
import { KubeObjectSchema } from './meta.ts';
import {
  deleteObject,
  deleteOptionsBody,
  escapeJsonPointer,
  mergePatch,
  patchStatus,
  withResourceVersion,
} from './patch.ts';
import { CONFIG_MAPS, JOBS } from './resources.ts';

describe('withResourceVersion', () => {
  it('adds the precondition without touching the input', () => {
    const patch = { metadata: { labels: { a: 'b' } }, data: { x: '1' } };
    const out = withResourceVersion(patch, '42');
    assert.deepEqual(out, { metadata: { labels: { a: 'b' }, resourceVersion: '42' }, data: { x: '1' } });
    assert.deepEqual(patch, { metadata: { labels: { a: 'b' } }, data: { x: '1' } });
  });
  it('returns the patch as is without a version', () => {
    const patch = { data: {} };
    assert.equal(withResourceVersion(patch, undefined), patch);
  });
});

describe('deleteOptionsBody', () => {
  it('defaults to Background propagation without preconditions', () => {
    assert.deepEqual(deleteOptionsBody({}), {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      propagationPolicy: 'Background',
    });
  });
  it('carries resourceVersion and uid preconditions', () => {
    assert.deepEqual(deleteOptionsBody({ resourceVersion: '7', uid: 'u', propagationPolicy: 'Foreground' }), {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      propagationPolicy: 'Foreground',
      preconditions: { resourceVersion: '7', uid: 'u' },
    });
  });
});

describe('escapeJsonPointer', () => {
  it('escapes ~ and /', () => assert.equal(escapeJsonPointer('a/b~c'), 'a~1b~0c'));
});

describe('patch requests', () => {
  it('sends a merge patch with the resourceVersion in metadata', async () => {
    const t = createFakeTransport({
      request: () => ({ status: 200, body: { metadata: { name: 'c', resourceVersion: '8' } } }),
    });
    const r = await mergePatch(
      t,
      CONFIG_MAPS,
      { namespace: 'n', name: 'c' },
      { data: { a: '1' } },
      KubeObjectSchema,
      {
        resourceVersion: '7',
      },
    );
    assert.ok(r.ok);
    const req = t.requests[0];
    assert.equal(req?.method, 'PATCH');
    assert.equal(req?.path, '/api/v1/namespaces/n/configmaps/c');
    assert.equal(req?.contentType, 'application/merge-patch+json');
    assert.deepEqual(req?.body, { data: { a: '1' }, metadata: { resourceVersion: '7' } });
  });
  it('patches status on the status subresource', async () => {
    const t = createFakeTransport({ request: () => ({ status: 200, body: { metadata: {} } }) });
    await patchStatus(t, JOBS, { namespace: 'n', name: 'j' }, { phase: 'x' }, KubeObjectSchema, {
      resourceVersion: '3',
    });
    assert.equal(t.requests[0]?.path, '/apis/batch/v1/namespaces/n/jobs/j/status');
    assert.deepEqual(t.requests[0]?.body, { status: { phase: 'x' }, metadata: { resourceVersion: '3' } });
  });
  it('reports a 409 Conflict as an error value', async () => {
    const t = createFakeTransport({
      request: () => ({
        status: 409,
        body: { kind: 'Status', reason: 'Conflict', code: 409, message: 'modified' },
      }),
    });
    const r = await mergePatch(t, CONFIG_MAPS, { namespace: 'n', name: 'c' }, {}, KubeObjectSchema, {
      resourceVersion: '1',
    });
    assert.ok(!r.ok && r.error.kind === 'api' && r.error.reason === 'Conflict');
  });
  it('deletes with a DeleteOptions body', async () => {
    const t = createFakeTransport({ request: () => ({ status: 200, body: {} }) });
    const r = await deleteObject(t, JOBS, { namespace: 'n', name: 'j' }, { resourceVersion: '5' });
    assert.ok(r.ok);
    assert.equal(t.requests[0]?.method, 'DELETE');
    assert.deepEqual(t.requests[0]?.body, {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      propagationPolicy: 'Background',
      preconditions: { resourceVersion: '5' },
    });
  });
});
