import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAgent } from '../api/index.ts';
import { buildRunClusterRoleBinding } from '../jobs/index.ts';
import { createFakeTransport, type FakeRequest } from '../kube/fake-transport.ts';
import { createRunBinding, deleteRunBindings } from './run-bindings.ts';

const forbidden = {
  status: 403,
  body: { kind: 'Status', reason: 'Forbidden', code: 403, message: 'forbidden' },
};
const list = (items: unknown[]) => ({
  status: 200,
  body: { kind: 'List', metadata: { resourceVersion: '5' }, items },
});
const item = (name: string, namespace?: string) => ({
  metadata: {
    name,
    ...(namespace !== undefined ? { namespace } : {}),
    labels: { 'agents.re-cinq.com/run-uid': 'u1' },
  },
});
const agentOf = (uid: string) => {
  const r = parseAgent({
    metadata: {
      name: 'a',
      namespace: 'team',
      uid,
      resourceVersion: '1',
      creationTimestamp: '2026-12-01T00:00:00Z',
    },
    spec: { stationRef: 's' },
  });
  assert.ok(r.ok);
  return r.value;
};
const what = (r: FakeRequest) => `${r.method} ${r.path}`;

describe('deleteRunBindings (the cleanup of a run, issue 9 §6)', () => {
  it('deletes the ClusterRoleBindings first, then the RoleBindings, selected by the run uid', async () => {
    const t = createFakeTransport({
      request: (req) => {
        if (req.method === 'GET' && req.path.endsWith('/clusterrolebindings')) return list([item('c1')]);
        if (req.method === 'GET' && req.path.endsWith('/rolebindings')) return list([item('r1', 'team')]);
        return { status: 200, body: {} };
      },
    });
    const r = await deleteRunBindings(t, 'team', 'u1', undefined);
    assert.ok(r.ok);
    assert.deepEqual(r.value.unverified, []);
    assert.deepEqual(t.requests.map(what), [
      'GET /apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
      'DELETE /apis/rbac.authorization.k8s.io/v1/clusterrolebindings/c1',
      'GET /apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings',
      'DELETE /apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings/r1',
    ]);
    assert.equal(t.requests[0]?.query.labelSelector, 'agents.re-cinq.com/run-uid=u1');
  });

  it('a kind it may not list is reported, not retried forever; the other kind is still cleaned', async () => {
    const t = createFakeTransport({
      request: (req) => {
        if (req.method === 'GET' && req.path.endsWith('/rolebindings') && req.path.includes('namespaces'))
          return forbidden;
        if (req.method === 'GET') return list([item('c1')]);
        return { status: 200, body: {} };
      },
    });
    const r = await deleteRunBindings(t, 'team', 'u1', undefined);
    assert.ok(r.ok);
    assert.deepEqual(
      r.value.deleted.map((b) => b.name),
      ['c1'],
    );
    assert.equal(r.value.unverified.length, 1);
    assert.match(
      r.value.unverified[0] ?? '',
      /^RoleBindings agents\.re-cinq\.com\/run-uid=u1 cannot be listed/,
    );
  });

  it('other failures stop it (retried)', async () => {
    const t = createFakeTransport({ request: () => ({ status: 500, body: { message: 'boom' } }) });
    const r = await deleteRunBindings(t, 'team', 'u1', undefined);
    assert.ok(!r.ok);
  });
});

describe('createRunBinding: a name collision is reported with the object found', () => {
  const binding = buildRunClusterRoleBinding(agentOf('u1'), 'reader');
  const existing = (labels: Record<string, string>, deleting = false) =>
    createFakeTransport({
      request: (req) =>
        req.method === 'POST'
          ? { status: 409, body: { kind: 'Status', reason: 'AlreadyExists', code: 409, message: 'exists' } }
          : {
              status: 200,
              body: {
                metadata: {
                  name: binding.metadata.name,
                  labels,
                  ...(deleting ? { deletionTimestamp: '2026-12-01T00:00:00Z' } : {}),
                },
              },
            },
    });
  const opts = { fieldManager: 'test' };

  it('409 → the binding of that name read back and reported as found (labels, deleting), for the core to judge', async () => {
    const labels = { ...binding.metadata.labels, 'agents.re-cinq.com/run-uid': 'u0' };
    const t = existing(labels, true);
    assert.deepEqual(await createRunBinding(t, binding, opts), {
      kind: 'found',
      found: {
        key: `ClusterRoleBinding /${binding.metadata.name}`,
        uid: '',
        deleting: true,
        labels,
        annotations: {},
      },
    });
    assert.deepEqual(
      t.requests.map((r) => r.method),
      ['POST', 'GET'],
    );
  });

  it('403 and 422 from the create → refused with the answer', async () => {
    const t = createFakeTransport({ request: () => forbidden });
    const r = await createRunBinding(t, binding, opts);
    assert.equal(r.kind, 'refused');
    assert.match(r.kind === 'refused' ? r.message : '', /^ClusterRoleBinding .* \(ClusterRole reader\): /);
  });
});
