import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAgent } from '../api/index.ts';
import { jobNameFor } from './names.ts';
import {
  buildRunBindings,
  buildRunClusterRoleBinding,
  LABEL_RUN_NAMESPACE,
  LABEL_RUN_UID,
  type ListedBinding,
  strayBindings,
} from './run-bindings.ts';

const parsed = parseAgent({
  apiVersion: 'agents.re-cinq.com/v1alpha1',
  kind: 'Agent',
  metadata: {
    name: 'fix-1',
    namespace: 'team-a',
    uid: 'uid-1',
    resourceVersion: '1',
    creationTimestamp: '2026-12-01T00:00:00Z',
  },
  spec: { stationRef: 'stn' },
});
assert.ok(parsed.ok);
const agent = parsed.value;

describe('run bindings (issue 9 §2)', () => {
  it('binds each ClusterRole to the run ServiceAccount: a RoleBinding owned by the Agent per role', () => {
    const [rb, crb] = buildRunBindings(agent, 'stn', {
      roles: ['pod-reader'],
      clusterRoles: ['node-reader'],
    });
    assert.ok(rb?.kind === 'RoleBinding');
    assert.equal(rb.metadata.namespace, 'team-a');
    assert.match(rb.metadata.name, /^agent-job-fix-1-[0-9a-f]{8}$/);
    assert.deepEqual(rb.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'pod-reader',
    });
    assert.deepEqual(rb.subjects, [
      { kind: 'ServiceAccount', name: jobNameFor('fix-1'), namespace: 'team-a' },
    ]);
    assert.equal(rb.metadata.ownerReferences[0].uid, 'uid-1');
    assert.equal(rb.metadata.ownerReferences[0].controller, true);
    assert.equal(rb.metadata.labels[LABEL_RUN_UID], 'uid-1');
    // A ClusterRoleBinding has no owner (a namespaced owner of a cluster-scoped object is never honoured): labels.
    assert.ok(crb?.kind === 'ClusterRoleBinding');
    assert.ok(!('ownerReferences' in crb.metadata));
    assert.ok(!('namespace' in crb.metadata));
    assert.deepEqual(crb.metadata.labels, {
      [LABEL_RUN_UID]: 'uid-1',
      [LABEL_RUN_NAMESPACE]: 'team-a',
      'agents.re-cinq.com/agent': 'fix-1',
    });
    assert.match(crb.metadata.name, /^agent-job-fix-1\.team-a\.[0-9a-f]{8}$/);
    assert.deepEqual(crb.subjects, rb.subjects);
  });

  it('names are stable per run and role, distinct across roles and across Agents of the same name', () => {
    const a = buildRunClusterRoleBinding(agent, 'r1').metadata.name;
    assert.equal(buildRunClusterRoleBinding(agent, 'r1').metadata.name, a);
    assert.notEqual(buildRunClusterRoleBinding(agent, 'r2').metadata.name, a);
    const again = { ...agent, metadata: { ...agent.metadata, uid: 'uid-2' } };
    assert.notEqual(buildRunClusterRoleBinding(again, 'r1').metadata.name, a);
  });

  it('the sweep removes bindings whose Agent is gone or finished without the finalizer, and nothing else', () => {
    const b = (name: string, uid?: string): ListedBinding => ({
      kind: 'ClusterRoleBinding',
      name,
      labels: uid === undefined ? {} : { [LABEL_RUN_UID]: uid },
    });
    const owners: Record<string, 'active' | 'finished' | 'gone'> = {
      u1: 'active',
      u2: 'finished',
      u3: 'gone',
    };
    const stray = strayBindings([b('a', 'u1'), b('b', 'u2'), b('c', 'u3'), b('d'), b('e', '')], (uid) =>
      owners[uid] === undefined ? 'gone' : (owners[uid] as 'active' | 'finished' | 'gone'),
    );
    assert.deepEqual(
      stray.map((x) => x.name),
      ['b', 'c'],
    );
  });
});
